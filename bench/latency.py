"""Voice-to-voice latency of the engine, measured as a client.

    .venv/bin/python -m bench            # or: ./dev bench
    .venv/bin/python -m bench --repeat 1 --workers 1

Starts separate inference worker processes on Redis, then streams spoken
questions in real time (20 ms chunks of 24 kHz PCM16, as the realtime
transport does) into `VoiceCall`s and times, from the outside, the end of the
user's speech (measured on the audio) to the first reply audio frame. In the
same run it measures a sequential baseline (whole ASR, then the whole LLM
reply, then the whole TTS, no speculation) on the same audio, and two calls
at once. Writes bench/results/latency-<time>.json, latest.json and a PNG
chart of the spans per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from voiceapp.engine.call import CallConfig, VoiceCall
from voiceapp.engine.frames import ResponseDone, TranscriptFinal, TTSAudio
from voiceapp.engine.llm import LLMOptions
from voiceapp.engine.models import default_voice
from voiceapp.engine.tracing import SPAN_NAMES
from voiceapp.engine.turns import TurnSettings
from voiceapp.engine.vad import SileroModel
from voiceapp.inference.client import ChannelsInference
from voiceapp.inference.protocol import redis_hosts

from .questions import RATE, Question, load_questions

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
CHUNK = RATE // 50  # 20 ms
WORKER_CMD = (sys.executable, "-m", "voiceapp.inference.worker")
LEAD_SILENCE_S = 0.4
SPANS = SPAN_NAMES

INSTRUCTIONS = (
    "You are the friendly voice assistant of a small neighbourhood shop. "
    "Help callers with their questions."
)


def bench_config(*, sequential: bool) -> CallConfig:
    """The default persona's turn-taking (500 ms end of turn) and a 60-token reply cap."""
    return CallConfig(
        voice=default_voice(),
        instructions=INSTRUCTIONS,
        llm=LLMOptions(max_tokens=60, temperature=0.0),
        turns=TurnSettings().with_silence(500),
        speculative=not sequential,
        sequential=sequential,
    )


def start_workers(
    n: int, redis_url: str, prefix: str, logs: Path, *extra: str
) -> list[subprocess.Popen[bytes]]:
    procs = []
    for i in range(n):
        log = logs / f"worker-{i}.log"
        with log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    [*WORKER_CMD, "--redis-url", redis_url, "--prefix", prefix, *extra],
                    cwd=ROOT,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
    deadline = time.monotonic() + 120
    for i, proc in enumerate(procs):
        log = logs / f"worker-{i}.log"
        while "WORKER READY" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"worker {i} failed to start:\n{log.read_text()}")
            time.sleep(0.2)
    return procs


async def shut_down(clients: list[ChannelsInference], procs: list[subprocess.Popen[bytes]]) -> None:
    """End the clients' reply readers, then the worker processes."""
    for client in clients:
        await client.close()
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


async def talk(
    call: VoiceCall,
    label: str,
    questions: list[Question],
    *,
    start_delay_s: float = 0.0,
) -> list[dict[str, Any]]:
    """Ask each question in turn, in real time, and time the replies from outside."""
    frames: asyncio.Queue[tuple[float, Any]] = asyncio.Queue()

    async def read() -> None:
        async for frame in call.frames():
            frames.put_nowait((time.monotonic(), frame))

    reader = asyncio.create_task(read())
    silence = np.zeros(CHUNK, dtype=np.float32)
    clock = time.monotonic()

    async def tick(samples: np.ndarray) -> None:
        nonlocal clock
        call.push_samples(samples, RATE)
        clock += len(samples) / RATE
        await asyncio.sleep(max(0.0, clock - time.monotonic()))

    records: list[dict[str, Any]] = []
    try:
        for _ in range(int(start_delay_s * 50)):
            await tick(silence)
        for q in questions:
            audio = np.concatenate([np.zeros(int(LEAD_SILENCE_S * RATE), np.float32), q.samples])
            started = clock
            for i in range(0, len(audio), CHUNK):
                await tick(audio[i : i + CHUNK])
            speech_end = started + LEAD_SILENCE_S + q.speech_end_s
            segment_ends = [started + LEAD_SILENCE_S + e for e in q.segment_ends_s]
            first_audio: float | None = None
            transcript = ""
            done: ResponseDone | None = None
            deadline = time.monotonic() + 20
            while done is None and time.monotonic() < deadline:
                await tick(silence)
                while not frames.empty():
                    at, frame = frames.get_nowait()
                    if isinstance(frame, TTSAudio) and first_audio is None:
                        first_audio = at
                    elif isinstance(frame, TranscriptFinal):
                        transcript = frame.text
                    elif isinstance(frame, ResponseDone):
                        done = frame
            records.append(
                {
                    "call": label,
                    "question": q.name,
                    "voice": q.voice,
                    "asked": q.text,
                    "transcript": transcript,
                    "reply": done.text if done else None,
                    "status": done.status if done else "timeout",
                    # From the end of the speech the reply followed: the whole question, or
                    # its first part when the pause in it ended the turn early.
                    "v2v_client_ms": None
                    if first_audio is None
                    else round(1000 * (first_audio - _answered_end(segment_ends, first_audio)), 1),
                    "answered_before_the_end": first_audio is not None and first_audio < speech_end,
                    "spans": dict(done.latency) if done else {},
                    "timeline": dict(done.timeline) if done else {},
                    "output_tokens": (done.usage or {}).get("output_tokens") if done else None,
                }
            )
            print(
                f"  {label:>10} {q.name:<14} v2v {records[-1]['v2v_client_ms']!s:>7} ms  "
                f"{transcript!r} -> {(done.text if done else '')[:60]!r}",
                flush=True,
            )
            # Wait until the call is quiet (a question cut at a pause can start a second turn)
            extra = 0
            quiet_since = time.monotonic()
            while time.monotonic() - quiet_since < 2.0 and time.monotonic() < deadline + 20:
                await tick(silence)
                while not frames.empty():
                    _, frame = frames.get_nowait()
                    quiet_since = time.monotonic()
                    extra += isinstance(frame, ResponseDone)
            records[-1]["extra_responses"] = extra
            # The pause inside a question can end the turn early (silence-based endpointing):
            # such a split turn has no single speech end to time from; counted apart.
            records[-1]["split_turn"] = bool(extra or records[-1]["answered_before_the_end"])
    finally:
        reader.cancel()
        await call.close()
    return records


def _answered_end(ends: list[float], first_audio: float) -> float:
    before = [e for e in ends if e <= first_audio]
    return before[-1] if before else ends[0]


def stats(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "p50": None, "p95": None, "p99": None, "mean": None}
    arr = np.array(values, dtype=float)
    return {
        "n": len(values),
        "p50": round(float(np.percentile(arr, 50)), 1),
        "p95": round(float(np.percentile(arr, 95)), 1),
        "p99": round(float(np.percentile(arr, 99)), 1),
        "mean": round(float(arr.mean()), 1),
        "max": round(float(arr.max()), 1),
    }


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in records if r["v2v_client_ms"] is not None and not r.get("split_turn")]
    out: dict[str, Any] = {
        "turns": len(records),
        "timed": len(ok),
        "failed": sum(r["v2v_client_ms"] is None for r in records),
        "split_turns": sum(bool(r.get("split_turn")) for r in records),
        "answered_before_the_end": sum(bool(r.get("answered_before_the_end")) for r in records),
        "extra_responses": sum(int(r.get("extra_responses", 0)) for r in records),
        "v2v_client_ms": stats([r["v2v_client_ms"] for r in ok]),
    }
    for span in SPANS:
        out[span] = stats([r["spans"][span] for r in ok if r["spans"].get(span) is not None])
    return out


def chart(results: dict[str, list[dict[str, Any]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stages = [
        ("asr_start", "asr_end", "ASR (final)", "#4c72b0"),
        ("llm_start", "llm_first_token", "LLM to first token", "#dd8452"),
        ("llm_first_token", "first_clause", "to first clause", "#f2b880"),
        ("tts_start", "tts_first_audio", "TTS first audio", "#55a868"),
        ("tts_first_audio", "first_audio_sent", "held until end of turn", "#c7c7c7"),
    ]
    fig, axes = plt.subplots(
        len(results), 1, figsize=(11, 2.2 + 0.32 * sum(len(r) for r in results.values())),
        squeeze=False,
    )  # fmt: skip
    for ax, (mode, records) in zip(axes[:, 0], results.items(), strict=True):
        labels = []
        for y, r in enumerate(records):
            t = r["timeline"]
            labels.append(f"{r['call']}:{r['question']}")
            for start, end, name, color in stages:
                if start in t and end in t and t[end] >= t[start]:
                    ax.barh(y, t[end] - t[start], left=t[start], color=color, height=0.6,
                            label=name if y == 0 else None)  # fmt: skip
            if "end_of_turn" in t:
                ax.plot([t["end_of_turn"]] * 2, [y - 0.4, y + 0.4], color="black", lw=1)
            if r["v2v_client_ms"] is not None:
                ax.plot(r["v2v_client_ms"], y, marker="v", color="crimson")
        ax.axvline(0, color="grey", lw=0.8, ls="--")
        ax.set_yticks(range(len(records)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_title(f"{mode}: ms after the end of the user's speech "
                     "(| end of turn, ▼ first audio at the client)", fontsize=9)  # fmt: skip
        ax.set_xlabel("ms")
    handles, names = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, names, loc="upper right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from channels_redis.core import RedisChannelLayer

    questions = load_questions(ROOT / "bench" / ".cache")
    prefix = f"bench-{uuid.uuid4().hex[:8]}-"
    logs = RESULTS / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    print(f"starting {args.workers} inference worker process(es) ...", flush=True)
    procs = start_workers(args.workers, args.redis_url, prefix, logs)
    vad = SileroModel()

    clients: list[ChannelsInference] = []

    def client() -> ChannelsInference:
        layer = RedisChannelLayer(hosts=redis_hosts(args.redis_url), prefix=prefix, expiry=30)
        clients.append(ChannelsInference(layer))
        return clients[-1]

    results: dict[str, list[dict[str, Any]]] = {}
    try:
        print("warm-up turn (not counted)", flush=True)
        await talk(
            VoiceCall(bench_config(sequential=False), client(), vad), "warmup", questions[:1]
        )
        asked = questions * args.repeat
        print("pipelined, one call", flush=True)
        results["pipelined_1call"] = await talk(
            VoiceCall(bench_config(sequential=False), client(), vad), "call1", asked
        )
        print("sequential baseline, one call", flush=True)
        results["sequential_1call"] = await talk(
            VoiceCall(bench_config(sequential=True), client(), vad), "seq1", asked
        )
        print("pipelined, two calls at once", flush=True)
        rotated = questions[len(questions) // 2 :] + questions[: len(questions) // 2]
        pair = await asyncio.gather(
            talk(VoiceCall(bench_config(sequential=False), client(), vad), "callA", asked),
            talk(
                VoiceCall(bench_config(sequential=False), client(), vad),
                "callB",
                rotated * args.repeat,
                start_delay_s=0.7,
            ),
        )
        results["pipelined_2calls"] = pair[0] + pair[1]
    finally:
        await shut_down(clients, procs)

    summary = {mode: summarize(records) for mode, records in results.items()}
    pipelined = summary["pipelined_1call"]["v2v_client_ms"]
    sequential = summary["sequential_1call"]["v2v_client_ms"]
    by_question: dict[str, list[float]] = {}
    for a, b in zip(results["pipelined_1call"], results["sequential_1call"], strict=True):
        if a["split_turn"] or b["split_turn"]:
            continue
        if a["v2v_client_ms"] and b["v2v_client_ms"]:
            by_question.setdefault(a["question"], []).append(
                a["v2v_client_ms"] / b["v2v_client_ms"]
            )
    ratios = [x for v in by_question.values() for x in v]
    summary["ratio_to_sequential"] = {
        "p50_over_p50": round(pipelined["p50"] / sequential["p50"], 3)
        if pipelined["p50"] and sequential["p50"]
        else None,
        "median_of_per_turn_ratios": round(float(np.median(ratios)), 3) if ratios else None,
    }
    two = summary["pipelined_2calls"]["v2v_client_ms"]
    summary["targets"] = {
        "one_call_p50_le_650": bool(pipelined["p50"] is not None and pipelined["p50"] <= 650),
        "one_call_p95_le_900": bool(pipelined["p95"] is not None and pipelined["p95"] <= 900),
        "ratio_le_0.5": bool(
            summary["ratio_to_sequential"]["p50_over_p50"] is not None
            and summary["ratio_to_sequential"]["p50_over_p50"] <= 0.5
        ),
        "two_calls_p95_le_1500": bool(two["p95"] is not None and two["p95"] <= 1500),
    }
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_avg_at_end": os.getloadavg(),
        },
        "setup": {
            "workers": args.workers,
            "repeat": args.repeat,
            "questions": [{"name": q.name, "voice": q.voice, "text": q.text} for q in questions],
            "config": {
                "end_of_turn_ms": 500,
                "complete_end_of_turn_ms": TurnSettings().with_silence(500).complete_end_of_turn_ms,
                "pause_ms": TurnSettings().pause_ms,
                "max_tokens": 60,
                "temperature": 0.0,
                "threads": {"asr": 2, "llm": 1, "llm_batch": 2, "tts": 1},
            },
        },
        "summary": summary,
        "turns": results,
    }


def bench_parser(doc: str | None) -> argparse.ArgumentParser:
    """The benchmarks' command line: their docstring as help, and the Redis to use."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument(
        "--redis-url", default=os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    )
    return parser


def save_report(report: dict[str, Any], name: str, latest: str) -> Path:
    """Write `report` as bench/results/<name>-<UTC time>.json and as `latest`; print it."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamped = RESULTS / f"{name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}.json"
    for path in (stamped, RESULTS / latest):
        path.write_text(json.dumps(report, indent=2, default=float))
    print(json.dumps(report["summary"], indent=2))
    print(f"wrote {stamped}")
    return stamped


def main(argv: list[str] | None = None) -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--workers", type=int, default=1, help="inference worker processes")
    parser.add_argument("--repeat", type=int, default=2, help="passes over the questions")
    report = asyncio.run(run(parser.parse_args(argv)))
    stamped = save_report(report, "latency", "latest.json")
    chart(report["turns"], stamped.with_suffix(".png"))
    chart(report["turns"], RESULTS / "latest.png")


__all__ = ["main"]
