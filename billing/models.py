"""Plans, each organization's subscription to one, and the usage ledger.

The ledger (`UsageRecord`) is the source of truth for what a call cost: one row
per call, unique on the call's id, written in the same transaction as the
call's end and the subscription's decrement."""

from __future__ import annotations

from decimal import Decimal

from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone

from sessions.models import Call
from voiceapp.personas.models import Persona
from voiceapp.tenants.models import Organization


class Plan(models.Model):
    name = models.CharField(max_length=80)
    slug = models.SlugField(max_length=40, unique=True)
    included_seconds = models.PositiveIntegerField(
        help_text="Call seconds included in each monthly period."
    )
    overage_price_per_minute = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        default=Decimal("0"),
        validators=[MinValueValidator(Decimal("0"))],
        help_text="Price of each minute past the included seconds. 0: a hard cap, calls stop.",
    )
    currency = models.CharField(max_length=3, default="USD")
    max_concurrent_calls = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Calls in progress at once. Empty: ORG_MAX_CONCURRENT_CALLS.",
    )
    max_call_duration_s = models.PositiveIntegerField(
        "max call duration (s)",
        null=True,
        blank=True,
        validators=[MinValueValidator(10)],
        help_text="No call runs longer, whatever its persona allows. Empty: the persona's limit.",
    )
    retention_days = models.PositiveIntegerField(
        default=30,
        help_text="Days a call's transcript and timings are kept after it ends (0: forever). "
        "The usage ledger and invoices are kept regardless.",
    )
    is_default = models.BooleanField(
        default=False, help_text="New organizations start on this plan."
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["included_seconds", "name"]

    def __str__(self) -> str:
        return self.name

    @property
    def allows_overage(self) -> bool:
        return self.overage_price_per_minute > 0


class Subscription(models.Model):
    """An organization's plan and what is left of its included seconds this period."""

    org = models.OneToOneField(Organization, on_delete=models.CASCADE, related_name="subscription")
    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="subscriptions")
    # Takes effect when the current period ends.
    pending_plan = models.ForeignKey(
        Plan, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    remaining_seconds = models.IntegerField(
        help_text="Included seconds left in the current period."
    )
    # The period whose 80 % usage email went out (at most one per period).
    alert_sent_for = models.DateTimeField(null=True, blank=True)
    stripe_customer_id = models.CharField(
        max_length=255,
        blank=True,
        help_text="The organization's Stripe customer (cus_…). Empty: its usage is not "
        "sent to Stripe.",
    )

    def __str__(self) -> str:
        return f"{self.org} on {self.plan}"


class UsageRecord(models.Model):
    """What one call used and how it was billed. One per call, ever."""

    call_ref = models.UUIDField(help_text="The call's id; kept if the call is deleted.")
    call = models.OneToOneField(
        Call, null=True, blank=True, on_delete=models.SET_NULL, related_name="usage"
    )
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="usage_records")
    persona = models.ForeignKey(
        Persona, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="+")
    period_start = models.DateTimeField()
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField()
    end_reason = models.CharField(max_length=20, blank=True)
    billed_seconds = models.PositiveIntegerField(help_text="The duration, rounded up.")
    included_seconds = models.PositiveIntegerField()
    overage_seconds = models.PositiveIntegerField()
    asr_seconds = models.FloatField(default=0.0)
    llm_input_tokens = models.PositiveIntegerField(default=0)
    llm_output_tokens = models.PositiveIntegerField(default=0)
    tts_characters = models.PositiveIntegerField(default=0)
    tool_calls = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    # When Stripe accepted this row's meter event; null: not sent (yet).
    stripe_reported_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-ended_at"]
        constraints = [
            models.UniqueConstraint(fields=["call_ref"], name="usage_record_one_per_call")
        ]
        indexes = [models.Index(fields=["org", "period_start"])]

    def __str__(self) -> str:
        return f"{self.billed_seconds} s for call {self.call_ref}"


class Invoice(models.Model):
    """The bill for one organization's closed period, built from the ledger."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="invoices")
    number = models.CharField(max_length=80, unique=True)
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    plan_name = models.CharField(max_length=80)
    currency = models.CharField(max_length=3)
    calls = models.PositiveIntegerField()
    billed_seconds = models.PositiveIntegerField()
    included_seconds = models.PositiveIntegerField(help_text="Of the plan's, used.")
    plan_included_seconds = models.PositiveIntegerField()
    overage_seconds = models.PositiveIntegerField()
    total = models.DecimalField(max_digits=12, decimal_places=2)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-period_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["org", "period_start"], name="invoice_one_per_org_period"
            )
        ]

    def __str__(self) -> str:
        return self.number


class InvoiceLine(models.Model):
    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="lines")
    position = models.PositiveSmallIntegerField()
    description = models.CharField(max_length=200)
    quantity = models.DecimalField(max_digits=14, decimal_places=2)
    unit = models.CharField(max_length=20)
    unit_price = models.DecimalField(max_digits=12, decimal_places=4)
    amount = models.DecimalField(max_digits=12, decimal_places=2)

    class Meta:
        ordering = ["position"]

    def __str__(self) -> str:
        return f"{self.description}: {self.amount}"
