"""A pause inside a turn: do the words after it reach the transcript?

    .venv/bin/python -m bench.pauses                       # or: ./dev bench pauses
    .venv/bin/python -m bench.pauses --read 0,256 --pauses 0.4,0.7,1.0 --offsets 8
    .venv/bin/python -m bench.pauses --voices "piper joe" --sentences 0 --pauses 1.0

Callers stop mid-sentence ("What is the capital ... of Italy?"). The turn goes on,
and its final transcript is one reading of the whole turn, pause included. tiny.en
reads such audio by chance: the same words, starting a few ms later, come back
whole, cut after the pause ("What is the capital?") or misheard after it.

Each sentence here is said in two parts with a pause of each length between them,
in three voices (Piper joe; espeak-ng en-us and en-gb), +-1 LSB of dither, after
quiet of `--offsets` lengths 4 ms apart (the VAD's 32 ms chunks then cut the turn's
start at each 4 ms step). Every rendition goes through a `VoiceCall` that only
transcribes (no reply), fed as fast as it reads, with an end-of-turn wait longer
than the longest pause: the call's `pause_read_ms` (how long a pause inside a turn
is read at most; 0 keeps it whole) is the only thing that differs between arms.

Per arm it prints the WER against the spoken text, how many readings dropped what
was said after the pause (fewer than half of its words heard), and ASR time per
reading. Writes
bench/results/pauses-<time>.json and pauses-latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import time
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from voiceapp.engine.audio import resample
from voiceapp.engine.call import CallConfig, VoiceCall
from voiceapp.engine.frames import TranscriptFailed, TranscriptFinal
from voiceapp.engine.inference import Inference
from voiceapp.engine.models import ModelSettings, default_voice, load_inference
from voiceapp.engine.turns import TurnSettings
from voiceapp.engine.vad import SileroModel

from .latency import save_report, stats
from .wer import RecordingInference
from .wer_clips import RATE, _espeak, _piper, corpus_wer, dither, normalize

ROOT = Path(__file__).resolve().parent.parent
LEAD_S = 0.2  # quiet before the words (plus the offset)
END_WAIT_MS = 500  # the end-of-turn wait is the longest pause and this
OFFSET_STEP_MS = 4

# Where callers stop to think: after a verb or a preposition, before what they ask about.
SENTENCES: tuple[tuple[str, str], ...] = (
    ("What is the capital", "of Italy?"),
    ("I would like to order", "a birthday cake for Friday."),
    ("Can you tell me", "when the shop opens on Sunday?"),
    ("I need to change", "my delivery address."),
    ("Could you check", "the price of the blue coat?"),
    ("My name is", "Peter Brown."),
)
VOICES: dict[str, tuple[str, int] | None] = {
    "piper joe": None,
    "espeak en-us": ("en-us", 165),
    "espeak en-gb": ("en-gb", 150),
}


@dataclass(frozen=True)
class Rendition:
    voice: str
    sentence: int
    pause_s: float
    offset_ms: int
    samples: np.ndarray  # float32 at RATE, dithered

    @property
    def text(self) -> str:
        return " ".join(SENTENCES[self.sentence])


def _words(voice: str, text: str, cache: Path) -> np.ndarray:
    """`text` in `voice` at RATE, without the quiet around it."""
    spec = VOICES[voice]
    if spec is None:
        audio, rate = _piper(text, 1.0)
    else:
        audio, rate = _espeak(text, spec[0], spec[1], cache / "part.raw.wav")
    audio = resample(audio, rate, RATE)
    loud = np.nonzero(np.abs(audio) > 0.01)[0]
    return audio[max(0, loud[0] - RATE // 100) : loud[-1] + RATE // 50].astype(np.float32)


def renditions(
    voices: list[str], sentences: list[int], pauses: list[float], offsets: int, cache: Path
) -> list[Rendition]:
    """Each sentence in each voice, pause and start; quiet after it that ends the turn."""
    cache.mkdir(parents=True, exist_ok=True)
    tail_s = max(pauses) + (END_WAIT_MS + 500) / 1000
    out: list[Rendition] = []
    for voice in voices:
        for n in sentences:
            first, second = SENTENCES[n]
            a, b = _words(voice, first, cache), _words(voice, second, cache)
            for pause_s in pauses:
                for k in range(offsets):
                    offset_ms = k * OFFSET_STEP_MS
                    lead = np.zeros(int((LEAD_S + offset_ms / 1000) * RATE), np.float32)
                    gap = np.zeros(int(pause_s * RATE), np.float32)
                    tail = np.zeros(int(tail_s * RATE), np.float32)
                    spoken = np.concatenate([lead, a, gap, b, tail])
                    seed = zlib.crc32(f"{voice}|{n}|{pause_s}|{k}".encode())
                    out.append(Rendition(voice, n, pause_s, offset_ms, dither(spoken, seed)))
    return out


def dropped_after_pause(rendition: Rendition, heard: str) -> bool:
    """Fewer than half of the words said after the pause were heard: the reading stopped
    at the pause ("What is the capital?") or made noise of what came after it ("...
    capital? A Viddly."), where a misheard word ("on" for "of") only costs WER."""
    said = normalize(SENTENCES[rendition.sentence][1])
    heard_words = set(normalize(heard))
    return 2 * sum(w in heard_words for w in said) < len(said)


async def read_turn(
    models: Inference, vad: SileroModel, config: CallConfig, audio: np.ndarray
) -> str:
    """The call's final transcript of `audio` ("" when the turn was rejected)."""
    call = VoiceCall(config, models, vad)
    try:
        step = RATE // 50
        for i in range(0, len(audio), step):
            call.push_samples(audio[i : i + step], RATE)
            await asyncio.sleep(0)
        heard: list[str] = []
        async with asyncio.timeout(30):
            async for frame in call.frames():
                if isinstance(frame, TranscriptFinal):
                    heard.append(frame.text)
                    break
                if isinstance(frame, TranscriptFailed):
                    break
        return " ".join(heard)
    finally:
        await call.close()


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    pauses = [float(p) for p in args.pauses.split(",")]
    arms = [int(r) for r in args.read.split(",")]
    voices = [v.strip() for v in args.voices.split(",")] if args.voices else list(VOICES)
    unknown = set(voices) - set(VOICES)
    if unknown:
        raise SystemExit(f"unknown voices {sorted(unknown)}; known: {list(VOICES)}")
    if args.sentences:
        sentences = [int(n) for n in args.sentences.split(",")]
    else:
        sentences = list(range(len(SENTENCES)))
    print("rendering ...", flush=True)
    cache = ROOT / "bench" / ".cache" / "pauses"
    items = renditions(voices, sentences, pauses, args.offsets, cache)
    print("loading models ...", flush=True)
    models = load_inference(ModelSettings())
    recorder = RecordingInference(models)
    vad = SileroModel()
    longest_ms = int(1000 * max(pauses))
    base = CallConfig(
        voice=default_voice(),
        create_response=False,
        speak=False,
        partial_interval_ms=0,
        turns=TurnSettings().with_silence(longest_ms + END_WAIT_MS),
    )
    results: dict[str, list[dict[str, Any]]] = {}
    summary: dict[str, Any] = {}
    for read_ms in arms:
        config = replace(base, pause_read_ms=read_ms)
        rows: list[dict[str, Any]] = []
        started = time.monotonic()
        for item in items:
            recorder.readings.clear()
            heard = await read_turn(recorder, vad, config, item.samples)
            finals = recorder.readings  # captions are off: every reading is the turn's
            rows.append(
                {
                    "voice": item.voice,
                    "sentence": item.sentence,
                    "pause_s": item.pause_s,
                    "offset_ms": item.offset_ms,
                    "heard": heard,
                    "dropped_after_pause": dropped_after_pause(item, heard),
                    "asr_ms": finals[-1]["ms"] if finals else None,
                    "asr_audio_s": finals[-1]["audio_s"] if finals else None,
                }
            )
        arm = f"read_{read_ms}" if read_ms else "whole"
        results[arm] = rows
        summary[arm] = arm_summary(items, rows, voices, pauses)
        print(
            f"{arm}: {len(rows)} readings in {time.monotonic() - started:.0f} s, "
            f"WER {summary[arm]['wer']:.3f}, dropped after the pause "
            f"{summary[arm]['dropped_after_pause']}/{len(rows)}",
            flush=True,
        )
    models.close()
    print(table(summary, voices, pauses))
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "sentences": [" ... ".join(SENTENCES[n]) for n in sentences],
        "voices": voices,
        "pauses_s": pauses,
        "offsets_ms": [k * OFFSET_STEP_MS for k in range(args.offsets)],
        "summary": summary,
        "readings": results,
    }


def arm_summary(
    items: list[Rendition], rows: list[dict[str, Any]], voices: list[str], pauses: list[float]
) -> dict[str, Any]:
    def part(keep: list[int]) -> dict[str, Any]:
        pairs = [(items[i].text, rows[i]["heard"]) for i in keep]
        return {
            "wer": round(corpus_wer(pairs), 4),
            "dropped_after_pause": sum(rows[i]["dropped_after_pause"] for i in keep),
            "readings": len(keep),
        }

    everything = part(list(range(len(rows))))
    by_pause = {str(p): part([i for i, it in enumerate(items) if it.pause_s == p]) for p in pauses}
    by_voice = {v: part([i for i, it in enumerate(items) if it.voice == v]) for v in voices}
    asr_ms = [r["asr_ms"] for r in rows if r["asr_ms"] is not None]
    return {**everything, "by_pause": by_pause, "by_voice": by_voice, "asr_ms": stats(asr_ms)}


def table(summary: dict[str, Any], voices: list[str], pauses: list[float]) -> str:
    arms = list(summary)
    lines = [f"{'':<22}" + "".join(f"{a:>22}" for a in arms)]

    def row(label: str, get: Any) -> None:
        lines.append(f"{label:<22}" + "".join(f"{get(summary[a]):>22}" for a in arms))

    def cell(s: dict[str, Any]) -> str:
        return f"{s['wer']:.3f}  {s['dropped_after_pause']}/{s['readings']}"

    row("all (WER, dropped)", cell)
    for p in pauses:
        row(f"pause {p} s", lambda s, p=p: cell(s["by_pause"][str(p)]))
    for v in voices:
        row(v, lambda s, v=v: cell(s["by_voice"][v]))
    row("ASR ms p50/p95", lambda s: f"{s['asr_ms']['p50']}/{s['asr_ms']['p95']}")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--read", default="0,256", help="pause_read_ms of each arm (0: whole)")
    p.add_argument("--pauses", default="0.4,0.7,1.0", help="pause lengths, seconds")
    p.add_argument("--offsets", type=int, default=8, help="starts, 4 ms apart")
    p.add_argument("--voices", default="", help=f"comma-separated, of {list(VOICES)}")
    p.add_argument("--sentences", default="", help="comma-separated indexes into SENTENCES")
    return p


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure, print the table and write the results file; returns the report."""
    report = asyncio.run(measure(args))
    save_report(report, "pauses", "pauses-latest.json")
    return report


def main(argv: list[str] | None = None) -> None:
    run(parser().parse_args(argv))


if __name__ == "__main__":
    main()
