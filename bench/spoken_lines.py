"""What replaying a written line costs against synthesizing it (SpokenLines, tts.py).

    .venv/bin/python -m bench.spoken_lines          # or: ./dev bench lines
    .venv/bin/python -m bench.spoken_lines --rounds 5

Much of what an agent says is written, not generated: the greeting, the
decline, the lines of acts.py, a fact spoken as written. The writer cuts each
into clauses (ClauseChunker) and the worker's Piper voice speaks them one by
one. This bench says every such line of the default persona and of the bakery
bench's facts, clause by clause, on one Piper voice with one thread (as the
inference worker runs it), in rounds: in round 1 each clause is synthesized and
remembered as seen, in round 2 synthesized again and kept, from round 3 on
replayed. Per pass it reports the time to each clause's first audio and the
CPU-seconds spent, and the ratio of replayed to synthesized, measured in the
same run. Writes bench/results/spoken-lines-<time>.json and
spoken-lines-latest.json.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Any

from voiceapp.engine.chunker import ClauseChunker
from voiceapp.engine.intents import NO_PERSON
from voiceapp.engine.models import default_voice
from voiceapp.engine.planner import (
    CALM,
    CANNOT_CHECK,
    GOODBYE,
    HEARD,
    NO_GENERAL,
    NOT_A_PERSON,
    WELCOME,
    WELL,
)
from voiceapp.engine.prompt import DEFAULT_DECLINE
from voiceapp.engine.tts import PiperTTS, SpokenLines

from .bakery import FACTS
from .engine_setup import setup_django
from .latency import save_report


def written_lines() -> list[str]:
    """The lines an agent says as written: the default persona's, then facts."""
    setup_django()
    from voiceapp.personas.services import DEFAULT_GREETING

    lines = [DEFAULT_GREETING, DEFAULT_DECLINE, NO_PERSON, CANNOT_CHECK, NOT_A_PERSON]
    lines += [HEARD, WELCOME, GOODBYE, CALM, WELL, NO_GENERAL]
    return lines + [fact.answer for fact in FACTS]


def clauses(line: str) -> list[str]:
    chunker = ClauseChunker()
    return [*chunker.push(line), *chunker.flush()]


def speak(tts: PiperTTS, clause: str) -> tuple[float, float, float]:
    """(ms to the first audio, CPU-s, seconds of audio) for one clause."""
    voice = default_voice()
    rate = tts.sample_rate(voice)
    started, cpu = time.perf_counter(), time.process_time()
    first_ms = None
    samples = 0
    for chunk in tts.synthesize(clause, voice, threading.Event()):
        if first_ms is None:
            first_ms = (time.perf_counter() - started) * 1000
        samples += len(chunk)
    return first_ms or 0.0, time.process_time() - cpu, samples / rate


def run(args: argparse.Namespace) -> dict[str, Any]:
    tts = PiperTTS(threads=1, lines=SpokenLines())
    tts.warm_up(default_voice())
    said = [c for line in written_lines() for c in clauses(line)]
    rounds: list[dict[str, Any]] = []
    for n in range(1, args.rounds + 1):
        hits = tts.lines.hits
        results = [speak(tts, clause) for clause in said]
        first = [r[0] for r in results]
        rounds.append(
            {
                "round": n,
                "clauses": len(said),
                "replayed": tts.lines.hits - hits,
                "first_audio_ms_p50": round(statistics.median(first), 2),
                "first_audio_ms_max": round(max(first), 2),
                "cpu_s": round(sum(r[1] for r in results), 3),
                "audio_s": round(sum(r[2] for r in results), 1),
            }
        )
        print(rounds[-1])
    synthesized, replayed = rounds[1], rounds[-1]
    summary = {
        "clauses": len(said),
        "audio_s_per_pass": synthesized["audio_s"],
        "synthesized_first_audio_ms_p50": synthesized["first_audio_ms_p50"],
        "replayed_first_audio_ms_p50": replayed["first_audio_ms_p50"],
        "synthesized_cpu_s": synthesized["cpu_s"],
        "replayed_cpu_s": replayed["cpu_s"],
        "cpu_ratio_replayed_over_synthesized": round(
            replayed["cpu_s"] / max(synthesized["cpu_s"], 1e-9), 4
        ),
        "kept_mb": round(tts.lines.nbytes / 1e6, 1),
    }
    return {"summary": summary, "rounds": rounds, "lines": written_lines()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=4, help="passes over the lines (3 or more)")
    args = parser.parse_args(argv)
    if args.rounds < 3:
        parser.error("--rounds must be 3 or more: a line is replayed from its third time")
    save_report(run(args), "spoken-lines", "spoken-lines-latest.json")


if __name__ == "__main__":
    main()
