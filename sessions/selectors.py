from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.shortcuts import get_object_or_404
from django.utils import timezone

from sessions.models import Call, CallAnalysis, CallerMessage, CallItem, CallRecording, CallTurn
from voiceapp.personas.models import Persona
from voiceapp.tenants.models import Organization


def day_bounds(start: date, end: date) -> tuple[datetime, datetime]:
    """``[start 00:00, end + 1 day 00:00)`` in UTC: whole days, both ends included."""
    return (
        datetime.combine(start, time.min, tzinfo=UTC),
        datetime.combine(end + timedelta(days=1), time.min, tzinfo=UTC),
    )


def call_list(
    *,
    org: Organization,
    persona_id: int | None = None,
    persona: Persona | None = None,
    start: date | None = None,
    end: date | None = None,
    end_reason: str | None = None,
    text: str | None = None,
) -> QuerySet[Call]:
    """The organization's calls, newest first; ``start``/``end`` are UTC days
    (inclusive) the call started in; ``text`` is found in any transcript entry,
    ignoring case."""
    calls = Call.objects.filter(org=org).select_related("persona")
    if end_reason:
        calls = calls.filter(end_reason=end_reason)
    if text:
        said = CallItem.objects.filter(call=OuterRef("pk"), text__icontains=text)
        calls = calls.filter(Exists(said))
    if persona is not None:
        persona_id = persona.pk
    if persona_id:
        calls = calls.filter(persona_id=persona_id)
    if start is not None:
        calls = calls.filter(started_at__gte=day_bounds(start, start)[0])
    if end is not None:
        calls = calls.filter(started_at__lt=day_bounds(end, end)[1])
    return calls.order_by("-started_at", "-id")


def caller_message_list(*, org: Organization, unread_only: bool = False) -> QuerySet[CallerMessage]:
    """The organization's messages from callers, newest first."""
    messages = CallerMessage.objects.filter(org=org)
    if unread_only:
        messages = messages.filter(read_at=None)
    return messages.order_by("-created_at", "-pk")


def caller_message_get(*, org: Organization, pk: int) -> CallerMessage:
    return get_object_or_404(CallerMessage.objects.filter(org=org), pk=pk)


def caller_message_unread_count(*, org: Organization) -> int:
    return CallerMessage.objects.filter(org=org, read_at=None).count()


def call_get(*, org: Organization, pk: str) -> Call:
    return get_object_or_404(Call.objects.filter(org=org), pk=pk)


def call_get_with_transcript(*, org: Organization, pk: str) -> Call:
    """One call with its transcript (``items``) and turns prefetched, in order."""
    calls = Call.objects.filter(org=org).select_related("persona")
    calls = calls.prefetch_related(
        Prefetch("items", queryset=CallItem.objects.order_by("at_s", "pk")),
        Prefetch("turns", queryset=CallTurn.objects.order_by("at_s", "pk")),
    )
    return get_object_or_404(calls, pk=pk)


def call_recording_find(*, org: Organization, call_pk: str) -> CallRecording | None:
    """The recording of one of the org's calls, if it has one."""
    return CallRecording.objects.filter(call__org=org, call_id=call_pk).first()


def call_recording_get(*, org: Organization, call_pk: str) -> CallRecording:
    """The recording of one of the org's calls; 404 for another org's or none."""
    return get_object_or_404(CallRecording.objects.filter(call__org=org), call_id=call_pk)


# --- Usage -----------------------------------------------------------------------


@dataclass(frozen=True)
class PersonaUsage:
    persona: str | None  # the slug; None for calls whose persona was deleted
    seconds: int
    calls: int


@dataclass(frozen=True)
class DayUsage:
    date: date
    seconds: int
    calls: int


@dataclass(frozen=True)
class UsageSummary:
    start: date
    end: date
    seconds: int
    calls: int
    tool_calls: int = 0  # actions the agent took in those calls
    by_persona: list[PersonaUsage] = field(default_factory=list)
    by_day: list[DayUsage] = field(default_factory=list)


def usage_summary(
    *, org: Organization, start: date, end: date, persona: Persona | None = None
) -> UsageSummary:
    """Billed usage of the calls that started in ``[start, end]`` (UTC days,
    inclusive), of one persona or all, from the billing ledger: each ended call
    counts its duration rounded up to the whole second, and stays counted after
    retention deletes the call itself.

    The one place usage is computed (the API and the dashboard read it)."""
    from billing.models import UsageRecord

    since, until = day_bounds(start, end)
    ended = UsageRecord.objects.filter(org=org, started_at__gte=since, started_at__lt=until)
    if persona is not None:
        ended = ended.filter(persona=persona)
    totals = ended.aggregate(
        seconds=Sum("billed_seconds"), calls=Count("id"), tool_calls=Sum("tool_calls")
    )
    by_persona = [
        PersonaUsage(persona=row["persona__slug"], seconds=row["seconds"], calls=row["calls"])
        for row in ended.values("persona__slug")
        .annotate(seconds=Sum("billed_seconds"), calls=Count("id"))
        .order_by("-seconds", "persona__slug")
    ]
    per_day = {
        row["day"]: row
        for row in ended.annotate(day=TruncDate("started_at", tzinfo=UTC))
        .values("day")
        .annotate(seconds=Sum("billed_seconds"), calls=Count("id"))
    }
    by_day = []
    for n in range((end - start).days + 1):
        day = start + timedelta(days=n)
        row = per_day.get(day)
        by_day.append(
            DayUsage(
                date=day, seconds=row["seconds"] if row else 0, calls=row["calls"] if row else 0
            )
        )
    return UsageSummary(
        start=start,
        end=end,
        seconds=totals["seconds"] or 0,
        calls=totals["calls"],
        tool_calls=totals["tool_calls"] or 0,
        by_persona=by_persona,
        by_day=by_day,
    )


# --- Deployment-wide figures (the metrics endpoint) -------------------------------


def call_counts_by_end_reason() -> dict[str, int]:
    """Ended calls of every organization, per end reason."""
    rows = (
        Call.objects.filter(ended_at__isnull=False)
        .order_by()
        .values("end_reason")
        .annotate(n=Count("id"))
    )
    return {row["end_reason"] or "unknown": row["n"] for row in rows}


def call_active_count(*, stale_after_s: float) -> int:
    """Calls not ended whose process reported within ``stale_after_s`` (older open
    calls belong to a dead process and wait for the reconciliation task)."""
    since = timezone.now() - timedelta(seconds=stale_after_s)
    return Call.objects.filter(ended_at=None, last_seen_at__gte=since).count()


@dataclass(frozen=True)
class Histogram:
    """Cumulative counts: ``buckets[i]`` turns at or below ``bounds[i]``."""

    bounds: tuple[float, ...]
    buckets: tuple[int, ...]
    count: int
    total: float


def turn_v2v_histogram(*, bounds_ms: tuple[float, ...]) -> Histogram:
    """Every stored turn's voice-to-voice latency, in one aggregate query."""
    turns = CallTurn.objects.filter(v2v_ms__isnull=False).order_by()
    aggregates = {
        f"le_{n}": Count("id", filter=Q(v2v_ms__lte=bound)) for n, bound in enumerate(bounds_ms)
    }
    row = turns.aggregate(count=Count("id"), total=Sum("v2v_ms"), **aggregates)
    return Histogram(
        bounds=bounds_ms,
        buckets=tuple(row[f"le_{n}"] for n in range(len(bounds_ms))),
        count=row["count"],
        total=row["total"] or 0.0,
    )


def call_analysis_find(*, call: Call) -> CallAnalysis | None:
    """What was written about the (already org-scoped) call after it ended, if yet."""
    return CallAnalysis.objects.filter(call=call).first()
