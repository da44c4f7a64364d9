from __future__ import annotations

from types import SimpleNamespace

import pytest

from voiceapp.dashboard.charts import bar_heights, line_chart, nice_ceiling, turn_rows


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


def test_turn_rows_number_every_turn_and_place_each_span() -> None:
    # given a greeting (no caller speech) and a measured answer, in ms
    greeting = SimpleNamespace(status="cancelled", tts_first_audio_ms=80.0)
    answer = SimpleNamespace(
        status="completed",
        v2v_ms=500.0,
        endpoint_ms=200.0,
        asr_ms=100.0,
        llm_queue_ms=5.0,
        llm_first_token_ms=50.0,
        first_clause_ms=100.0,
        tts_first_audio_ms=100.0,
    )

    # when they are laid out
    first, second = turn_rows([greeting, answer])

    # then both are numbered, in order; only the answer has a v2v mark
    assert (first.number, first.v2v_left, second.number) == (1, None, 2)
    assert second.v2v_left == 100.0  # the longest extent: 500 ms
    assert first.values == [None, None, None, None, None, None, 80.0, None]
    # and each span starts where it follows from, the LLM's three at the LLM's start
    place = {bar.label: (bar.left, bar.width) for bar in second.bars}
    assert place == {
        "End of turn": (0.0, 40.0),
        "ASR final": (40.0, 20.0),
        "LLM queue": (60.0, 1.0),
        "LLM first token": (60.0, 10.0),
        "LLM to first clause": (60.0, 20.0),
        "TTS first audio": (80.0, 20.0),
    }
    # and narrower bars come later, so they are drawn on top of wider ones
    assert [bar.label for bar in second.bars][-1] == "LLM queue"
    assert [bar.width for bar in second.bars] == sorted(
        (b.width for b in second.bars), reverse=True
    )


def test_a_turn_that_calls_a_tool_has_its_bar_from_the_llms_start() -> None:
    call = SimpleNamespace(status="completed", endpoint_ms=200.0, asr_ms=100.0, tool_ms=100.0)
    (row,) = turn_rows([call])
    place = {bar.label: (bar.left, bar.width) for bar in row.bars}
    assert place["Tool call"] == (75.0, 25.0)  # starts after 300 ms of 400 ms
    assert row.values[-1] == 100.0
