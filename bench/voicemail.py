"""Answering-machine detection on our own recorded greetings (bench/voicemail_cases.py).

    .venv/bin/python -m bench.voicemail          # or: ./dev bench voicemail

Feeds each case to `telephony.sip.answering.AnsweringDetector` in 20 ms pieces,
as RTP brings them, with the real Silero VAD and Whisper (tiny.en), and reports
per kind how many were told right and how long after the answer each decision
came; for voicemail greetings, when `BeepDetector` said the greeting was over,
against where the beep ended. Writes bench/results/voicemail-<time>.json and
voicemail-latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import numpy as np

from telephony.sip.answering import Answer, AnsweringDetector, BeepDetector
from voiceapp.engine.audio import float_to_pcm16
from voiceapp.engine.models import ModelSettings, load_inference
from voiceapp.engine.vad import SileroModel

from .latency import save_report, stats
from .voicemail_cases import CASES, HELD_OUT, RATE, Case, answered

ROOT = Path(__file__).resolve().parent.parent
PIECE = RATE // 50  # 20 ms


async def classify(case: Case, cache: Path, vad: SileroModel, transcribe: Any) -> dict[str, Any]:
    audio, beep_end = answered(case, cache)
    detector = AnsweringDetector(vad, transcribe)
    answer: Answer | None = None
    fed = 0
    while answer is None and fed < len(audio):
        detector.push(float_to_pcm16(audio[fed : fed + PIECE]))
        fed += PIECE
        answer = await detector.step()
    row: dict[str, Any] = {
        "case": case.name,
        "kind": case.kind,
        "voice": case.voice,
        "said": case.text,
        "decided": answer.kind if answer else None,
        "decided_at_s": round(answer.at_s, 2) if answer else None,
        "transcript": answer.transcript if answer else "",
    }
    if answer is not None and answer.beep_heard:  # the beep ended the deciding
        row["greeting_over_at_s"] = round(fed / RATE, 2)
        row["by"] = "beep"
        row["beep_end_s"] = round(beep_end, 2) if beep_end else None
    elif answer is not None and answer.kind == "voicemail":
        beeps = BeepDetector(vad)
        while fed < len(audio):
            piece = audio[fed : fed + PIECE]
            fed += PIECE
            if beeps.push(float_to_pcm16(piece)):
                break
        row["greeting_over_at_s"] = round(fed / RATE, 2)
        row["by"] = "beep" if beeps.beep_at is not None else "quiet"
        row["beep_end_s"] = round(beep_end, 2) if beep_end else None
    return row


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cache = ROOT / "bench" / ".cache" / "voicemail"
    models = load_inference(ModelSettings())
    vad = SileroModel()

    async def transcribe(samples: np.ndarray) -> str:
        result = await models.transcribe(samples, "en")
        return str(result.text or result.discarded)

    rows = [await classify(case, cache, vad, transcribe) for case in CASES]
    held_out = [await classify(case, cache, vad, transcribe) for case in HELD_OUT]
    summary = {"dev": figures(rows, CASES), "held_out": figures(held_out, HELD_OUT)}
    return {"mode": "voicemail", "summary": summary, "cases": rows + held_out}


def figures(rows: list[dict[str, Any]], cases: list[Case]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for kind in ("human", "voicemail", "screening", "ivr"):
        mine = [r for r in rows if r["kind"] == kind]
        right = [r for r in mine if _right(r)]
        summary[kind] = {
            "cases": len(mine),
            "right": len(right),
            "decided_at_s": stats(
                [r["decided_at_s"] for r in mine if r["decided_at_s"] is not None]
            ),
        }
    voicemail = [r for r in rows if r.get("greeting_over_at_s") is not None]
    late = [
        round(r["greeting_over_at_s"] - r["beep_end_s"], 2)
        for r in voicemail
        if r.get("beep_end_s") is not None and r["by"] == "beep"
    ]
    summary["beep"] = {
        "voicemail_cases_with_beep": sum(1 for c in cases if c.beep and c.kind == "voicemail"),
        "found_by_beep": sum(1 for r in voicemail if r["by"] == "beep"),
        "found_by_quiet": sum(1 for r in voicemail if r["by"] == "quiet"),
        "after_beep_end_s": stats(late),
    }
    summary["accuracy"] = round(sum(1 for r in rows if _right(r)) / len(rows), 3)
    return summary


def _right(row: dict[str, Any]) -> bool:
    return row["decided"] == row["kind"] or (row["kind"], row["decided"]) == ("human", "silence")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args = parser.parse_args(argv)
    report = asyncio.run(run(args))
    for row in report["cases"]:
        right = row["decided"] == row["kind"] or (row["kind"], row["decided"]) == (
            "human",
            "silence",
        )
        print(
            f"{'ok ' if right else 'BAD'} {row['case']:15s} {row['kind']:9s} -> "
            f"{row['decided']!s:9s} at {row['decided_at_s']} s  {row['transcript'][:60]!r}"
        )
    save_report(report, "voicemail", "voicemail-latest.json")


if __name__ == "__main__":
    main()
