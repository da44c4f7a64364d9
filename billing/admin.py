from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from billing.models import Invoice, InvoiceLine, Plan, Subscription, UsageRecord


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "slug",
        "included_seconds",
        "overage_price_per_minute",
        "currency",
        "max_concurrent_calls",
        "max_call_duration_s",
        "retention_days",
        "is_default",
    ]
    prepopulated_fields = {"slug": ("name",)}


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    list_display = [
        "org",
        "plan",
        "pending_plan",
        "period_start",
        "period_end",
        "remaining_seconds",
        "stripe_customer_id",
    ]
    list_select_related = ["org", "plan", "pending_plan"]
    search_fields = ["org__name", "org__slug", "stripe_customer_id"]
    raw_id_fields = ["org"]


@admin.register(UsageRecord)
class UsageRecordAdmin(admin.ModelAdmin):
    list_display = [
        "call_ref",
        "org",
        "ended_at",
        "billed_seconds",
        "included_seconds",
        "overage_seconds",
        "end_reason",
        "stripe_reported_at",
    ]
    list_filter = ["plan", "end_reason"]
    search_fields = ["call_ref", "org__slug"]
    date_hierarchy = "ended_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # the ledger is written by calls ending, never by hand

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class InvoiceLineInline(admin.TabularInline):
    model = InvoiceLine
    extra = 0
    can_delete = False
    readonly_fields = ["position", "description", "quantity", "unit", "unit_price", "amount"]


@admin.register(Invoice)
class InvoiceAdmin(admin.ModelAdmin):
    list_display = ["number", "org", "period_start", "plan_name", "billed_seconds", "total"]
    search_fields = ["number", "org__slug"]
    inlines = [InvoiceLineInline]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
