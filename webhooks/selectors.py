from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from sessions.models import Call, CallAnalysis, CallTurn
from voiceapp.tenants.models import Organization
from webhooks.models import EventType, WebhookDelivery, WebhookEndpoint


def webhook_endpoint_list(*, org: Organization) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(org=org)


def webhook_endpoint_get(*, org: Organization, pk: int) -> WebhookEndpoint:
    return get_object_or_404(webhook_endpoint_list(org=org), pk=pk)


def webhook_delivery_list(
    *, org: Organization, endpoint: WebhookEndpoint | None = None
) -> QuerySet[WebhookDelivery]:
    deliveries = WebhookDelivery.objects.filter(endpoint__org=org).select_related("endpoint")
    return deliveries.filter(endpoint=endpoint) if endpoint is not None else deliveries


def webhook_delivery_get(*, org: Organization, pk: int) -> WebhookDelivery:
    return get_object_or_404(webhook_delivery_list(org=org), pk=pk)


# The spans a turn stores (v2v_ms, asr_ms, ...), in the model's order.
SPANS = [f.name for f in CallTurn._meta.get_fields() if f.name.endswith("_ms")]


def _percentile(ordered: list[float], q: float) -> float:
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (position - low), 1)


def call_latency_summary(*, call: Call) -> dict[str, Any]:
    """p50 and p95 of each latency span over the call's turns (null: no turn had it)."""
    turns = list(call.turns.values(*SPANS))
    summary: dict[str, Any] = {"turns": len(turns)}
    for span in SPANS:
        values = sorted(float(t[span]) for t in turns if t[span] is not None)
        summary[span] = (
            {"p50": _percentile(values, 0.5), "p95": _percentile(values, 0.95)} if values else None
        )
    return summary


def call_event_data(*, call_id: str, event_type: str) -> tuple[Organization, dict[str, Any]]:
    """The `data` of a call.started, call.ended or call.analyzed event."""
    call = Call.objects.select_related("org", "persona").get(pk=call_id)
    data: dict[str, Any] = {
        "call_id": str(call.pk),
        "persona": call.persona.slug if call.persona is not None else None,
        "persona_name": call.persona_name,
        "transport": call.transport,
        "started_at": call.started_at.isoformat(),
    }
    if event_type == EventType.CALL_ENDED:
        data.update(
            ended_at=call.ended_at.isoformat() if call.ended_at else None,
            duration_s=call.duration_s,
            end_reason=call.end_reason,
            transcript=[
                {
                    "role": i.role,
                    "text": i.text,
                    "at_s": i.at_s,
                    "interrupted": i.interrupted,
                    **({"tool": i.tool} if i.tool else {}),
                }
                for i in call.items.all()
            ],
            latency=call_latency_summary(call=call),
        )
    if event_type == EventType.CALL_ANALYZED:
        analysis = CallAnalysis.objects.get(call=call)
        data.update(
            summary=analysis.summary,
            fields=analysis.fields,
            success=analysis.success,
            success_reason=analysis.success_reason,
            method=analysis.method,
        )
    return call.org, data
