"""A reply's clause made in windows against made whole: when its first sound comes,
what it costs, and whether it is the same audio.

    ./dev bench windows                      # 12 rounds, alone and beside a busy core
    ./dev bench windows --rounds 4 --busy 0

The agent's voice (engine/piper_graph.py) makes a clause's audio in windows of
latent frames, so its first 0.37 s can be heard after the acoustics and one small
window. Each round says every clause of `CLAUSES` (first clauses as the chunker
cuts them from the embedded model's replies, and a few longer ones) both ways, in
turn, with one thread as a worker does: ms to the first audio, ms to the last,
CPU-s. Closeness: each clause with the noise off, its windows joined against the
same frames made whole (the largest difference, in 16-bit steps). Medians and
ratios are printed and written to bench/results/windows-<time>.json;
docs/PERFORMANCE.md has the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.contention import busy_cores
from voiceapp.engine.models import default_voice
from voiceapp.engine.piper_graph import windows
from voiceapp.engine.tts import PiperTTS, SpokenLines, sentence_feeds

RESULTS = Path(__file__).resolve().parent / "results"
CLAUSES = (
    "The capital of France is Paris.",
    "Sure, here is a fun fact:",
    "I'm sorry, I can't help with that,",
    "Of course,",
    "That sounds like a lovely idea",
    "We open at eight on Saturdays,",
    "I can take a message for the owner,",
    "A good book to start with is",
    "Hello! How can I help you today?",
    "The weather today should be sunny and warm, with a light breeze in the afternoon.",
)


def say(tts: PiperTTS, clause: str, windowed: bool) -> tuple[float, float, float, int]:
    """(ms to the first audio, ms to the last, CPU-s, samples) for one clause."""
    voice = default_voice()
    started, cpu = time.perf_counter(), time.thread_time()
    first_ms = 0.0
    samples = 0
    for chunk in tts.synthesize(clause, voice, threading.Event(), windowed=windowed):
        if not samples:
            first_ms = (time.perf_counter() - started) * 1000
        samples += len(chunk)
    return first_ms, (time.perf_counter() - started) * 1000, time.thread_time() - cpu, samples


def closeness(tts: PiperTTS) -> dict[str, float]:
    """The windows joined against the whole, noise off, in 16-bit steps."""
    loaded = tts._voice(default_voice())
    assert loaded.windowed is not None, "this voice's graph was not cut"
    worst = 0.0
    for clause in CLAUSES:
        latent, mask = loaded.windowed.latent(
            sentence_feeds(loaded.piper, clause, 1.0, noise=False)
        )
        frames = latent.shape[2]
        whole = loaded.windowed.raw(latent, mask, 0, frames)
        parts = [loaded.windowed.raw(latent, mask, a, b) for a, b in windows(frames)]
        joined = np.concatenate(parts)
        assert joined.shape == whole.shape
        worst = max(worst, float(np.abs(joined - whole).max()) * 32768)
    return {"max_diff_lsb": round(worst, 3)}


def arm(tts: PiperTTS, rounds: int, busy: int) -> dict[str, Any]:
    timings: dict[bool, list[tuple[float, float, float, int]]] = {True: [], False: []}
    with busy_cores(busy):
        for _ in range(rounds):
            for clause in CLAUSES:
                for windowed in (True, False):
                    timings[windowed].append(say(tts, clause, windowed))
    out: dict[str, Any] = {"busy_cores": busy}
    for windowed, rows in timings.items():
        first = [r[0] for r in rows]
        out["windowed" if windowed else "whole"] = {
            "first_audio_ms_p50": round(statistics.median(first), 1),
            "first_audio_ms_p95": round(float(np.percentile(first, 95)), 1),
            "last_audio_ms_p50": round(statistics.median(r[1] for r in rows), 1),
            "cpu_s": round(sum(r[2] for r in rows), 3),
            "audio_s": round(sum(r[3] for r in rows) / tts.sample_rate(default_voice()), 1),
        }
    w, h = out["windowed"], out["whole"]
    out["ratio"] = {
        "first_audio_p50": round(w["first_audio_ms_p50"] / h["first_audio_ms_p50"], 2),
        "first_audio_p95": round(w["first_audio_ms_p95"] / h["first_audio_ms_p95"], 2),
        "cpu": round(w["cpu_s"] / h["cpu_s"], 2),
    }
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    tts = PiperTTS(threads=1, lines=SpokenLines(remember=0))  # nothing replayed
    tts.warm_up(default_voice())
    report: dict[str, Any] = {"rounds": args.rounds, "clauses": list(CLAUSES)}
    report.update(closeness(tts))
    report["arms"] = [arm(tts, args.rounds, busy) for busy in args.busy]
    print(f"\nwindows joined against the whole: at most {report['max_diff_lsb']} 16-bit steps")
    print(f"{'busy':>4} {'how':<9} {'first p50':>10} {'p95':>8} {'last p50':>9} {'CPU-s':>7}")
    for row in report["arms"]:
        for how in ("whole", "windowed"):
            r = row[how]
            print(
                f"{row['busy_cores']:>4} {how:<9} {r['first_audio_ms_p50']:>7} ms "
                f"{r['first_audio_ms_p95']:>5} ms {r['last_audio_ms_p50']:>6} ms {r['cpu_s']:>7}"
            )
        print(f"{'':>4} {'ratio':<9} {row['ratio']}")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"windows-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return report


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=12, help="rounds of every clause, both ways")
    p.add_argument(
        "--busy",
        type=lambda s: tuple(int(n) for n in s.split(",")),
        default=(0, 1),
        help="busy cores beside it, one arm each (comma-separated)",
    )
    return p


if __name__ == "__main__":
    run(parser().parse_args())
