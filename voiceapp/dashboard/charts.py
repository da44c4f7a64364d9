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
