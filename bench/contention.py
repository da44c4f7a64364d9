"""A reply's first words beside other work: what threads and priorities do to them.

    .venv/bin/python -m bench.contention            # or: ./dev bench contention
    .venv/bin/python -m bench.contention --repeat 12

On a 2-core machine several calls share the cores, so a turn's urgent work (reading
the caller's words into the LLM's context, making the reply's first clause) runs
beside other calls' work. Two measurements, each beside its baseline in the same run:

- **LLM prompt reading, 1 or 2 threads** (`LLM_BATCH_THREADS`): the time to read a
  caller's turn (about 40 new tokens after a cached system prompt) and write one
  token, alone and beside 1 and 2 busy processes (each spins one core).
- **The first clause beside background clauses** (`BACKGROUND_NICE`): the time to
  make a 10-word first clause with Piper while two long clauses are being made in
  other threads, at the process's priority (as before) and at nice 10 (the
  background lane).

Prints a table and writes bench/results/contention-<time>.json.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import multiprocessing
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SYSTEM = (
    "You are the assistant of a small bakery on a phone call. Answer in one or two short "
    "sentences. If you do not know something, say so and offer to take a message."
)
FIRST_CLAUSE = "Hello, how can I help you today with your account?"
BACKGROUND_CLAUSE = (
    "We are open from seven in the morning until six in the evening on weekdays, "
    "and from eight until two on Saturdays."
)


def _spin(stop: Any) -> None:
    while not stop.is_set():
        pass


@contextmanager
def busy_cores(n: int) -> Iterator[None]:
    """`n` processes that each keep one core busy, for the duration."""
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    procs = [context.Process(target=_spin, args=(stop,), daemon=True) for _ in range(n)]
    for proc in procs:
        proc.start()
    try:
        time.sleep(0.2)
        yield
    finally:
        stop.set()
        for proc in procs:
            proc.join(5)


def _timed(run: Callable[[], None], repeat: int) -> dict[str, float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(1000.0 * (time.perf_counter() - started))
    return {
        "median_ms": round(statistics.median(times), 1),
        "max_ms": round(max(times), 1),
        "n": len(times),
    }


def _read_turn(llm: Any, turns: Iterator[int]) -> None:
    """Read one caller turn (after the cached system prompt) and write one token."""
    from voiceapp.engine.llm import LLMOptions

    n = next(turns)
    messages = [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"Hi, this is caller {n}. Could you tell me whether you "
            f"will have fresh sourdough bread and croissants on day {n * 7}?",
        },
    ]
    for _ in llm.stream(messages, LLMOptions(max_tokens=1, session="bench"), threading.Event()):
        pass


def _make_background(stop: threading.Event, nice: int) -> None:
    """Make a long clause again and again, at nice `nice`, until `stop`."""
    from voiceapp.engine.asr import lower_priority
    from voiceapp.engine.models import default_voice
    from voiceapp.engine.tts import PiperTTS, SpokenLines

    if nice:
        lower_priority(nice)
    tts = PiperTTS(threads=1)
    while not stop.is_set():
        tts.lines = SpokenLines()  # made each time, never replayed
        for _ in tts.synthesize(BACKGROUND_CLAUSE, default_voice(), stop):
            pass


def _make_first(tts: Any) -> None:
    from voiceapp.engine.models import default_voice
    from voiceapp.engine.tts import SpokenLines

    tts.lines = SpokenLines()  # made, not replayed
    for _ in tts.synthesize(FIRST_CLAUSE, default_voice(), threading.Event()):
        pass


def llm_prompt_reading(repeat: int) -> list[dict[str, Any]]:
    from voiceapp.engine.llm import LlamaLLM, LlamaSettings, default_llm_model_path

    rows = []
    for batch_threads in (2, 1):
        llm = LlamaLLM(
            LlamaSettings(
                model_path=default_llm_model_path(), batch_threads=batch_threads, contexts=1
            )
        )
        read = functools.partial(_read_turn, llm, itertools.count(1))
        read()  # the system prompt is cached from here on, as in a call
        for busy in (0, 1, 2):
            with busy_cores(busy):
                figures = _timed(read, repeat)
            rows.append({"batch_threads": batch_threads, "busy_cores": busy, **figures})
            print(
                f"  LLM prompt, {batch_threads} thread(s), {busy} busy core(s): "
                f"median {figures['median_ms']:.0f} ms, max {figures['max_ms']:.0f} ms"
            )
        llm.close()
    return rows


def first_clause_beside_background(repeat: int) -> list[dict[str, Any]]:
    from voiceapp.engine.models import default_voice
    from voiceapp.engine.tts import PiperTTS

    tts = PiperTTS(threads=1)
    tts.warm_up(default_voice())
    first = functools.partial(_make_first, tts)
    rows = []
    for nice in (0, 10):
        stop = threading.Event()
        threads = [
            threading.Thread(target=_make_background, args=(stop, nice), daemon=True)
            for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        time.sleep(1.0)  # both are loaded and making clauses
        figures = _timed(first, repeat)
        stop.set()
        for thread in threads:
            thread.join(30)
        rows.append({"background_nice": nice, **figures})
        print(
            f"  first clause beside 2 background clauses at nice {nice}: "
            f"median {figures['median_ms']:.0f} ms, max {figures['max_ms']:.0f} ms"
        )
    figures = _timed(first, repeat)
    rows.append({"background_nice": None, **figures})
    print(f"  first clause alone: median {figures['median_ms']:.0f} ms")
    return rows


def run(repeat: int) -> dict[str, Any]:
    """Both measurements, `repeat` timings per cell."""
    print(f"{os.cpu_count()} cores")
    return {
        "cores": os.cpu_count(),
        "repeat": repeat,
        "llm_prompt": llm_prompt_reading(repeat),
        "first_clause": first_clause_beside_background(repeat),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=10, help="timings per cell")
    args = parser.parse_args()
    report = run(args.repeat)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"contention-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
