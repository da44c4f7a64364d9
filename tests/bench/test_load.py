"""`./dev bench load` at CI size: the real topology (daphne, an inference worker on
Redis), one question per caller. It checks what the report says and that the pool's
refusals are counted, not how fast this machine is."""

from __future__ import annotations

import math
import os
import time
from typing import Any

import pytest

from bench.load import Playout, knee_of, parser, proc_cpu_s, proc_rss_mb, run
from voiceapp.engine.models import device_plan
from voiceapp.inference.runtime import model_settings


def ramp(*args: str) -> Any:
    # a loaded CI machine's queueing must not trip the wait budget: the count is under test
    base = ["--questions", "1", "--idle-s", "3", "--settle-s", "1", "--wait-budget-ms", "1000000"]
    return run(parser().parse_args([*base, *args]))


def positive(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


@pytest.mark.slow
@pytest.mark.timeout(280)
async def test_a_ramp_of_one_and_two_callers_reports_each_figure() -> None:
    # given a pool that admits every call, when one then two callers (a WebSocket
    # caller and a WebRTC one) each ask a question
    report = await ramp("--steps", "1,2", "--max-calls", "1000", "--keep-going", "--profile")

    # then each step has a v2v measured on the client's clock, per transport
    one, two = report["steps"]
    assert report["config"]["database"] == "postgres"  # the production topology's
    assert (one["calls"], two["calls"]) == (1, 2)
    assert set(two["by_transport"]) == {"websocket", "webrtc"}
    for step in (one, two):
        assert step["refused_calls"] == 0 and step["unanswered_turns"] == 0, step
        assert not step["errors"]
        for figures in step["by_transport"].values():
            v2v = figures["client_v2v_ms"]
            assert v2v["n"] == figures["turns"] == 1
            assert all(positive(v2v[p]) for p in ("p50", "p95", "p99"))
        # and the CPU and memory of the web and worker processes, and the cost per call-minute
        for name in ("web", "worker0"):
            assert positive(step["processes"][name]["cpu_s"]), (name, step["processes"])
            assert positive(step["processes"][name]["rss_mb_peak"])
            assert positive(step["cost"][f"{name}_cpu_s_per_call_min"])
        assert positive(step["call_minutes"])
    # and the reply audio was received and judged for lateness, on both transports
    assert two["audio"]["websocket"]["chunks"] > 0
    assert two["audio"]["webrtc"]["frames"] > 0
    assert two["audio"]["webrtc"]["late"] <= two["audio"]["webrtc"]["frames"]
    # and the servers' CPU is shared out between stages (perf samples), the models' own
    # among them, and the workers' totals say what they read and said
    for step in (one, two):
        profile = step["profile"]
        worker = profile["cpu_s"]["worker0"]
        assert worker["samples"] > 0 and positive(worker.get("asr"))
        assert positive(worker.get("tts")) and positive(worker.get("llm + eou"))
        assert positive(profile["cpu_s"]["web"].get("python"))
        stages = sum(v for k, v in worker.items() if k != "samples")
        assert stages == pytest.approx(step["processes"]["worker0"]["cpu_s"], rel=0.02, abs=0.05)
        served = profile["served"]
        assert served["asr"]["requests"] >= step["all"]["answered"], served
        assert served["caption"]["requests"] > 0 and served["tts"]["requests"] > 0, served
    # and the knee follows its definition: the steps that passed, in a row from 1
    passed = [s["calls"] for s in report["steps"] if s["passed"]]
    assert report["knee"]["calls"] == (2 if passed == [1, 2] else 1 if 1 in passed else 0)
    assert report["knee"]["definition"]
    # and where the worker's models ran, as the worker advertised it: the plan these
    # settings give on this machine
    expected = device_plan(model_settings()).as_dict()
    assert list(report["devices"].values()) == [expected]


@pytest.mark.slow
@pytest.mark.timeout(280)
async def test_a_pool_of_one_call_refuses_the_second_caller() -> None:
    # given a worker sized for one call, when two callers start a second apart
    report = await ramp("--steps", "2", "--max-calls", "1", "--stagger-s", "1", "--keep-going")

    # then one is answered and the other refused as server_busy
    [step] = report["steps"]
    assert step["refusals"] == {"server_busy": 1}, step
    assert step["all"]["answered"] == 1 and step["unanswered_turns"] == 0
    assert not step["passed"] and report["knee"]["calls"] == 0


def test_playout_counts_a_delta_that_arrives_after_its_turn_to_play() -> None:
    # given a reply whose deltas (100 ms of 24 kHz PCM16 each) are played as they
    # arrive, with 100 ms of slack
    playout = Playout(slack_s=0.1)
    tenth = 4800  # bytes
    # when three arrive at once, then one on time, then one 200 ms after its turn
    for arrival in (0.0, 0.0, 0.0, 0.35, 0.7):
        playout.on_audio(arrival, tenth)
    # then only the last is late, by 200 ms (its turn: 0.1 s + 4 x 0.1 s = 0.5 s)
    assert (playout.chunks, playout.late) == (5, 1)
    assert playout.stall_s == pytest.approx(0.2)
    # and playback resumed from it: the reply ends 100 ms of audio after it arrived
    assert playout.ends_at == pytest.approx(0.8)


def test_the_knee_is_the_last_of_the_steps_that_passed_in_a_row() -> None:
    steps = [{"calls": n, "passed": ok} for n, ok in ((1, True), (2, True), (3, False))]
    assert knee_of(steps) == 2
    # a step that passes after one that failed does not raise it
    assert knee_of([*steps, {"calls": 4, "passed": True}]) == 2
    assert knee_of([{"calls": 1, "passed": False}]) == 0


def test_cpu_and_memory_of_a_process_are_read_from_proc() -> None:
    # given this process's CPU time so far
    before = proc_cpu_s(os.getpid())
    # when it spins for 0.3 s
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    # then /proc counted about that much more, and it holds memory
    assert 0.2 <= proc_cpu_s(os.getpid()) - before <= 1.0
    assert proc_rss_mb(os.getpid()) > 10
