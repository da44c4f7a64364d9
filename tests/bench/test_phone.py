"""bench/phone.py's reading of a phone recording: where each reply starts."""

from __future__ import annotations

import numpy as np

from bench.load import CallerResult, Turn
from bench.phone import REPLY_GAP_S, replies_in, with_server_spans


def test_replies_are_found_after_each_question() -> None:
    rate = 16000
    ends = [1.0, 1.0 + REPLY_GAP_S + 2.0]
    heard = np.zeros(int((ends[1] + REPLY_GAP_S) * rate), np.float32)
    heard[int(1.25 * rate) : int(2.0 * rate)] = 0.3  # the first reply, 250 ms after
    heard[int(0.5 * rate) : int(0.9 * rate)] = 0.3  # an earlier sound: not a reply
    assert replies_in(heard, rate, ends) == [250.0, None]  # the second got no answer
    heard[int((ends[1] + 0.8) * rate)] = 0.01  # quieter than 2 % of full scale
    heard[int((ends[1] + 0.9) * rate)] = -0.5
    assert replies_in(heard, rate, ends) == [250.0, 900.0]


def test_server_spans_go_to_the_question_they_answer() -> None:
    result = CallerResult("phone", turns=[Turn("a", True, 300.0, {}), Turn("b", True, 400.0, {})])
    records = [
        {
            "transport": "websocket",
            "turns": [{"status": "completed", "at_s": 3, "spans": {"v2v_ms": 9}}],
        },
        {
            "transport": "sip",
            "turns": [
                {"status": "completed", "at_s": 12.5, "spans": {"v2v_ms": 380}},
                {"status": "completed", "at_s": 2.0, "spans": {"v2v_ms": 280}},
                {"status": "cancelled", "at_s": 11.0, "spans": {}},
            ],
        },
    ]
    with_server_spans(result, records, "sip", ends=[1.0, 11.5])
    assert [t.server.get("v2v_ms") for t in result.turns] == [280, 380]
