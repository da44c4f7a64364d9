"""An organization's SIP trunks and the phone numbers that reach its personas.

A trunk is who may send us calls (and, later, through whom we place them): a
carrier's or a PBX's addresses, or a username and password it answers a
digest challenge with. A phone number routes the calls dialled to it to one
persona; numbers are unique across the deployment, since the SIP server
routes an INVITE by its number before it knows the organization."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from voiceapp.personas.models import Persona
from voiceapp.tenants.models import Organization


class SipTrunk(models.Model):
    """Who may deliver calls to the organization's numbers.

    Authenticated by source address (`allowed_addresses`, addresses or CIDR
    networks) or by digest (`username` and the password, stored encrypted with
    `voiceapp.tenants.crypto`), or both: an INVITE from an allowed address is
    taken at once, any other must answer the digest challenge."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="sip_trunks")
    name = models.CharField(max_length=100)
    allowed_addresses = models.JSONField(
        default=list,
        blank=True,
        help_text="Addresses or CIDR networks the trunk sends from (203.0.113.7, 10.0.0.0/24).",
    )
    username = models.CharField(max_length=64, blank=True)
    password_encrypted = models.TextField(blank=True, editable=False)
    enabled = models.BooleanField(default=True)
    # Outbound calls go to this host:port (the carrier's or the PBX's SIP address), from
    # `caller_id`, answering its digest challenge with the username and password above.
    outbound_address = models.CharField(max_length=200, blank=True)
    caller_id = models.CharField(max_length=40, blank=True)
    # No outbound call is placed between these times of day, in `time_zone` (both empty: any time).
    quiet_hours_start = models.TimeField(null=True, blank=True)
    quiet_hours_end = models.TimeField(null=True, blank=True)
    time_zone = models.CharField(max_length=64, default="UTC")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "pk"]
        verbose_name = "SIP trunk"
        constraints = [
            models.UniqueConstraint(fields=["org", "name"], name="sip_trunk_name_per_org"),
            models.UniqueConstraint(
                fields=["username"],
                condition=~models.Q(username=""),
                name="sip_trunk_username_unique",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def uses_digest(self) -> bool:
        return bool(self.username and self.password_encrypted)


class PhoneNumber(models.Model):
    """A number (E.164, "+15551234567") or a SIP user ("sales") that reaches a persona.

    `trunk` limits which of the organization's trunks may deliver its calls;
    empty means any of them."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="phone_numbers")
    number = models.CharField(max_length=40, unique=True)
    persona = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="phone_numbers")
    trunk = models.ForeignKey(
        SipTrunk, on_delete=models.SET_NULL, null=True, blank=True, related_name="numbers"
    )
    label = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["number"]
        verbose_name = "phone number"

    def __str__(self) -> str:
        return self.number


class OutboundCall(models.Model):
    """A call we place: `POST /api/v1/calls/`, then the SIP server dials it through the
    trunk and records its progress here. Once answered, `call` is its call record."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        DIALING = "dialing", "Dialing"
        RINGING = "ringing", "Ringing"
        ANSWERED = "answered", "Answered by a person"
        VOICEMAIL = "voicemail", "Answered by voicemail"
        SCREENING = "screening", "Answered by a call-screening assistant"
        BUSY = "busy", "Busy"
        NO_ANSWER = "no_answer", "No answer"
        FAILED = "failed", "Failed"
        COMPLETED = "completed", "Completed"

    FINAL = frozenset({"busy", "no_answer", "failed", "completed"})

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="outbound_calls")
    persona = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="outbound_calls")
    trunk = models.ForeignKey(SipTrunk, on_delete=models.CASCADE, related_name="outbound_calls")
    to = models.CharField(max_length=40)
    variables = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    detail = models.CharField(max_length=200, blank=True)  # a SIP status, a reason
    call = models.ForeignKey(
        "calls.Call", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "created_at"])]

    def __str__(self) -> str:
        return f"call to {self.to} ({self.status})"
