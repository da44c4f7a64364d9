"""Quality of service over a range of days, for the dashboard's analytics page:
latency percentiles of every span (overall, per day, per persona), calls and
minutes per day, how calls ended and how replies ended.

Percentiles are computed here from the turns' stored spans, the same way on
Postgres and SQLite."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, timedelta

from django.db.models import Count

from sessions.models import Call, CallTurn
from sessions.selectors import UsageSummary, day_bounds, usage_summary
from voiceapp.engine.tracing import SPAN_NAMES
from voiceapp.personas.models import Persona
from voiceapp.tenants.models import Organization

STORED_SPANS = tuple(name for name in SPAN_NAMES if name != "send_ms")


def percentile(ordered: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) of sorted values, linearly interpolated
    between the closest ranks; None for no values."""
    if not ordered:
        return None
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class Percentiles:
    n: int
    p50: float | None
    p95: float | None
    p99: float | None

    @classmethod
    def of(cls, values: list[float]) -> Percentiles:
        ordered = sorted(values)
        return cls(
            n=len(ordered),
            p50=percentile(ordered, 50),
            p95=percentile(ordered, 95),
            p99=percentile(ordered, 99),
        )


@dataclass(frozen=True)
class DayLatency:
    date: date
    spans: dict[str, Percentiles]


@dataclass(frozen=True)
class PersonaQuality:
    persona: str | None  # slug; None: deleted personas
    name: str
    calls: int
    seconds: int
    turns: int
    v2v: Percentiles


@dataclass(frozen=True)
class CallAnalytics:
    start: date
    end: date
    usage: UsageSummary
    spans: dict[str, Percentiles]  # the whole range
    by_day: list[DayLatency]
    by_persona: list[PersonaQuality]
    end_reasons: list[tuple[str, int]]  # ("" for calls still live)
    reply_statuses: list[tuple[str, int]]  # completed / cancelled / failed


def call_analytics(
    *, org: Organization, start: date, end: date, persona: Persona | None = None
) -> CallAnalytics:
    """Everything the analytics page shows for the calls that started in
    ``[start, end]`` (UTC days), of one persona or all."""
    since, until = day_bounds(start, end)
    calls = Call.objects.filter(org=org, started_at__gte=since, started_at__lt=until)
    if persona is not None:
        calls = calls.filter(persona=persona)
    turns = CallTurn.objects.filter(call__in=calls).values_list(
        "call__started_at", "call__persona__slug", "call__persona_name", "status", *STORED_SPANS
    )

    overall: dict[str, list[float]] = defaultdict(list)
    per_day: dict[date, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    persona_v2v: dict[str | None, list[float]] = defaultdict(list)
    persona_turns: Counter[str | None] = Counter()
    names: dict[str | None, str] = {}
    statuses: Counter[str] = Counter()
    for started_at, slug, name, status, *values in turns.iterator(chunk_size=2000):
        day = started_at.astimezone(UTC).date()
        statuses[status] += 1
        persona_turns[slug] += 1
        names.setdefault(slug, name)
        for span, value in zip(STORED_SPANS, values, strict=True):
            if value is not None:
                overall[span].append(value)
                per_day[day][span].append(value)
        if values[0] is not None:  # v2v_ms
            persona_v2v[slug].append(values[0])

    usage = usage_summary(org=org, start=start, end=end, persona=persona)
    by_persona = []
    for row in usage.by_persona:
        by_persona.append(
            PersonaQuality(
                persona=row.persona,
                name=names.get(row.persona, row.persona or "deleted persona"),
                calls=row.calls,
                seconds=row.seconds,
                turns=persona_turns.get(row.persona, 0),
                v2v=Percentiles.of(persona_v2v.get(row.persona, [])),
            )
        )
    days = [start + timedelta(days=n) for n in range((end - start).days + 1)]
    reasons = calls.order_by().values("end_reason").annotate(n=Count("id"))
    return CallAnalytics(
        start=start,
        end=end,
        usage=usage,
        spans={span: Percentiles.of(overall[span]) for span in STORED_SPANS},
        by_day=[
            DayLatency(day, {s: Percentiles.of(per_day[day][s]) for s in STORED_SPANS})
            for day in days
        ],
        by_persona=by_persona,
        end_reasons=sorted(((r["end_reason"], r["n"]) for r in reasons), key=lambda r: -r[1]),
        reply_statuses=statuses.most_common(),
    )
