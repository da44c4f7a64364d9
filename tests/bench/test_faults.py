"""bench.faults: reading the fault tests' outcome lines into a summary."""

from bench.faults import first_seconds, summarize


def test_the_first_timing_of_an_outcome_line_is_read() -> None:
    line = "worker killed mid-reply: failed (worker_lost) 1.00 s after the kill"
    assert first_seconds(line) == 1.0
    assert first_seconds("network drop -> resumed session.created: 0.12 s (2 tries)") == 0.12
    assert first_seconds("") is None


def test_rounds_are_summarized_per_fault() -> None:
    # given three rounds of one fault, one of them failed without an outcome line
    rounds = [
        {"round": 1, "fault": "worker_kill", "passed": True,
         "outcome": "worker killed mid-reply: failed (worker_lost) 1.00 s after the kill"},
        {"round": 2, "fault": "worker_kill", "passed": True,
         "outcome": "worker killed mid-reply: failed (worker_lost) 1.40 s after the kill"},
        {"round": 3, "fault": "worker_kill", "passed": False, "outcome": ""},
    ]  # fmt: skip
    # when they are summarized
    row = summarize(rounds)["worker_kill"]
    # then the passes, the spread of the timing and the kinds of outcome are counted
    assert (row["rounds"], row["passed"]) == (3, 2)
    assert (row["seconds_min"], row["seconds_max"]) == (1.0, 1.4)
    assert row["outcomes"] == {
        "worker killed mid-reply: failed (worker_lost) N s after the kill": 2
    }


def test_outcome_kinds_keep_the_words_between_numbers() -> None:
    line = "network drop -> resumed session.created: 0.11 s (1 connection attempts)"
    rounds = [{"round": 1, "fault": "network_drop", "passed": True, "outcome": line}]
    kinds = summarize(rounds)["network_drop"]["outcomes"]
    assert kinds == {"network drop -> resumed session.created: N s (N connection attempts)": 1}
