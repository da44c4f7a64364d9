from __future__ import annotations

import pytest

from voiceapp.dashboard.charts import bar_heights, line_chart, nice_ceiling


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, 1.0), (0.7, 1.0), (1, 1.0), (1.5, 2.0), (2.2, 2.5), (430, 500.0), (1001, 2000.0)],
)
def test_nice_ceiling(value: float, expected: float) -> None:
    assert nice_ceiling(value) == expected


def test_line_chart_scales_and_breaks_at_gaps() -> None:
    chart = line_chart(
        ["a", "b", "c", "d", "e"],
        [("p50", "#000", [100.0, 200.0, None, 500.0, None])],
        width=144,
        height=124,
    )

    # plot: x from 44 to 140 (step 24), y from 6 (500 ms, the scale's top) to 106 (0 ms)
    (line,) = chart.lines
    assert line.segments == ["44.0,86.0 68.0,66.0"]
    assert line.dots == [(116.0, 6.0)]
    assert chart.y_ticks[0] == (106.0, "0") and chart.y_ticks[-1] == (6.0, "500")
    assert [text for _, text in chart.x_ticks] == ["a", "b", "c", "d", "e"]
    assert not chart.empty


def test_line_chart_without_values_is_empty() -> None:
    chart = line_chart(["a", "b"], [("p50", "#000", [None, None])])

    assert chart.empty and chart.lines[0].segments == [] and chart.lines[0].dots == []


def test_bar_heights() -> None:
    assert bar_heights([0, 5, 10]) == [0.0, 50.0, 100.0]
    assert bar_heights([0, 0]) == [0.0, 0.0]
