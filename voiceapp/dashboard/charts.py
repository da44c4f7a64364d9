"""Inline SVG charts for server-rendered pages: plain numbers in, coordinates out
(the template draws them; no JavaScript, nothing from a CDN)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Line:
    label: str
    colour: str
    segments: list[str]  # SVG polyline points, one string per run without gaps
    dots: list[tuple[float, float]]  # lone points (a run of one)


@dataclass(frozen=True)
class LineChart:
    width: int
    height: int
    lines: list[Line]
    y_ticks: list[tuple[float, str]]  # (y coordinate, label)
    x_ticks: list[tuple[float, str]]
    empty: bool
    pad_left: int = 44
    pad_bottom: int = 18
    plot_top: int = 6


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k at or above ``value``."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power  # pragma: no cover - the loop ends at 10


def line_chart(
    x_labels: Sequence[str],
    series: Sequence[tuple[str, str, Sequence[float | None]]],
    *,
    width: int = 400,
    height: int = 150,
    unit: str = "",
) -> LineChart:
    """One line per ``(label, colour, values)``, the values at evenly spaced x
    positions; None leaves a gap."""
    pad_left, pad_bottom, top = 44, 18, 6
    plot_w, plot_h = width - pad_left - 4, height - pad_bottom - top
    values = [v for _, _, vs in series for v in vs if v is not None]
    y_max = nice_ceiling(max(values, default=0))
    count = max(len(x_labels), 1)

    def x(i: int) -> float:
        return pad_left + (plot_w * i / (count - 1) if count > 1 else plot_w / 2)

    def y(v: float) -> float:
        return top + plot_h * (1 - v / y_max)

    lines = []
    for label, colour, vs in series:
        runs: list[list[tuple[float, float]]] = [[]]
        for i, v in enumerate(vs):
            if v is None:
                runs.append([])
            else:
                runs[-1].append((round(x(i), 1), round(y(v), 1)))
        lines.append(
            Line(
                label=label,
                colour=colour,
                segments=[" ".join(f"{a},{b}" for a, b in run) for run in runs if len(run) > 1],
                dots=[run[0] for run in runs if len(run) == 1],
            )
        )
    y_ticks = [(round(y(y_max * k / 4), 1), f"{y_max * k / 4:g}{unit}") for k in range(5)]
    every = max(1, math.ceil(count / 8))
    x_ticks = [(round(x(i), 1), text) for i, text in enumerate(x_labels) if i % every == 0]
    return LineChart(
        width=width,
        height=height,
        lines=lines,
        y_ticks=y_ticks,
        x_ticks=x_ticks,
        empty=not values,
        pad_left=pad_left,
        pad_bottom=pad_bottom,
        plot_top=top,
    )


def bar_heights(values: Sequence[float]) -> list[float]:
    """Each value as a percentage of the largest (0 for all when all are 0)."""
    top = max(values, default=0)
    return [100 * v / top if top else 0.0 for v in values]


# --- One call's turns: the waterfall and the table under it -------------------


@dataclass(frozen=True)
class Span:
    name: str  # the CallTurn field, in ms
    label: str
    colour: str


# A turn's spans as the call page names them: the waterfall's legend, its bars'
# titles and the table's columns all come from this one list, in this order.
# v2v is the marker on the waterfall; the others are its bars.
TURN_SPANS: tuple[Span, ...] = (
    Span("v2v_ms", "Voice to voice", "#0f172a"),
    Span("endpoint_ms", "End of turn", "#94a3b8"),
    Span("asr_ms", "ASR final", "#60a5fa"),
    Span("llm_queue_ms", "LLM queue", "#f59e0b"),
    Span("llm_first_token_ms", "LLM first token", "#a78bfa"),
    Span("first_clause_ms", "LLM to first clause", "#f472b6"),
    Span("tts_first_audio_ms", "TTS first audio", "#34d399"),
    Span("tool_ms", "Tool call", "#fb923c"),
)
V2V = TURN_SPANS[0]


@dataclass(frozen=True)
class Bar:
    label: str
    colour: str
    ms: int
    left: float  # % of the track
    width: float


@dataclass(frozen=True)
class TurnRow:
    number: int  # the turn's number on the page, 1 for the call's first response
    status: str
    v2v_ms: float | None
    v2v_left: float | None  # % of the track; None where no reply audio followed speech
    bars: list[Bar]  # widest first, so the narrower ones are drawn on top
    values: list[float | None]  # one per TURN_SPANS entry


def _ms(turn: object, name: str) -> float | None:
    value = getattr(turn, name, None)
    return float(value) if isinstance(value, int | float) else None


def turn_rows(turns: Sequence[object]) -> list[TurnRow]:
    """Every turn of a call, numbered in order, with its spans on one axis in ms
    after the caller stopped speaking: the end-of-turn wait, ASR, then the LLM
    (its queue and first token inside the time to its first clause), then TTS of
    that clause. Speculative work that overlapped the wait is drawn after it, so
    bars can reach past the v2v mark. A turn without caller speech (a greeting)
    starts at 0."""

    def get(turn: object, name: str) -> float:
        return _ms(turn, name) or 0.0

    def clause(turn: object) -> float:
        return get(turn, "first_clause_ms") or get(turn, "llm_first_token_ms")

    def extent(turn: object) -> float:
        spans = get(turn, "endpoint_ms") + get(turn, "asr_ms") + clause(turn)
        tool = get(turn, "endpoint_ms") + get(turn, "asr_ms") + get(turn, "tool_ms")
        return max(get(turn, "v2v_ms"), spans + get(turn, "tts_first_audio_ms"), tool)

    longest = max([extent(t) for t in turns] + [1.0])
    rows = []
    for number, turn in enumerate(turns, 1):
        llm_start = get(turn, "endpoint_ms") + get(turn, "asr_ms")
        starts = {
            "endpoint_ms": 0.0,
            "asr_ms": get(turn, "endpoint_ms"),
            "llm_queue_ms": llm_start,
            "llm_first_token_ms": llm_start,
            "first_clause_ms": llm_start,
            "tts_first_audio_ms": llm_start + clause(turn),
            "tool_ms": llm_start,
        }
        bars = []
        for span in TURN_SPANS[1:]:
            value = _ms(turn, span.name)
            if value is None:
                continue
            bars.append(
                Bar(
                    label=span.label,
                    colour=span.colour,
                    ms=round(value),
                    left=100 * starts[span.name] / longest,
                    width=100 * value / longest,
                )
            )
        v2v = _ms(turn, V2V.name)
        rows.append(
            TurnRow(
                number=number,
                status=str(getattr(turn, "status", "")),
                v2v_ms=v2v,
                v2v_left=None if v2v is None else 100 * v2v / longest,
                bars=sorted(bars, key=lambda b: -b.width),
                values=[_ms(turn, span.name) for span in TURN_SPANS],
            )
        )
    return rows
