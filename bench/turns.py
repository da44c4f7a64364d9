"""Whole turns and barge-in, measured as a client: before (old rules) and after, same run.

    .venv/bin/python -m bench.turns            # or: ./dev bench turns
    .venv/bin/python -m bench.turns --only turns|barge-in

Turns: sentences with a pause inside (two pieces joined by 300/450/600/700 ms of
dithered near-silence, +-1 LSB), counting from one to ten with 250-400 ms pauses,
and finished questions, spoken by Piper (joe) and espeak-ng and streamed in real
time (20 ms chunks of 24 kHz) into a `VoiceCall` with the default models in this
process. A paused utterance is *split* when a reply started before its last
piece was over, or it was answered more than once. For finished questions it
times, from the end of the speech (measured on the audio), the end of turn
(SpeechStopped) and the first reply audio (v2v). "before" judges the pause's
transcript by Whisper's punctuation; "after" by lexical cues and the LLM's
end-of-turn probability.

Barge-in: while a reply plays at real-time pace, a spoken question (or a short
"uh") is streamed over it; from the frames' arrival times it measures the time
from the first voiced input sample to the reply's last audio frame, whether the
question was answered, and whether a false interruption let the reply play on
to its end. "before" cancels after 250 ms of speech; "after" pauses on a 64 ms
onset. Writes bench/results/turns-<time>.json and turns-latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from voiceapp.engine.audio import read_wav, write_wav
from voiceapp.engine.call import CallConfig, VoiceCall
from voiceapp.engine.frames import (
    Frame,
    Interruption,
    ResponseDone,
    ResponseStarted,
    SpeechStopped,
    TranscriptFinal,
    TTSAudio,
)
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.llm import LLMOptions
from voiceapp.engine.models import ModelSettings, default_voice, load_inference
from voiceapp.engine.turns import TurnSettings
from voiceapp.engine.vad import SileroModel

from .latency import RESULTS, ROOT, bench_parser, save_report, stats
from .questions import ESPEAK, PIPER, RATE, _espeak, _piper, segment_ends, speech_end

CHUNK = RATE // 50  # 20 ms
PAUSES_MS = (300, 450, 600, 700)
COUNT_PAUSES_MS = (250, 300, 350, 400)
PAUSED = {
    "order": ("piper", "I would like to order", "a birthday cake for Friday."),
    "tell": ("piper", "Can you tell me", "when the shop opens on Sunday?"),
    "change": ("espeak", "I need to change", "the address on my account."),
    "capital": ("piper", "What is the capital", "of Italy?"),
    "looking": ("espeak", "I am looking for", "a present for my sister."),
}
FINISHED = {
    **{k: ("piper", v) for k, v in PIPER.items()},
    **{k: ("espeak", v) for k, v in ESPEAK.items()},
    "cake": ("piper", "I would like to order a birthday cake for Friday."),
    "parking": ("espeak", "Is there parking near the shop?"),
    "price": ("piper", "How much does the chocolate cake cost?"),
    "delivery": ("espeak", "Do you deliver on Saturdays?"),
    "thanks": ("piper", "Thank you, that was all I needed."),
}
NUMBERS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
STORY = (
    "Our bakery makes every cake by hand. We bake bread each morning at five, and the "
    "first loaves are ready at seven. On Saturdays we also sell pastries, tarts and "
    "cookies, and on Sundays we are closed so that the bakers can rest."
)
INSTRUCTIONS = "You are the friendly voice assistant of a small bakery. Help callers."


@dataclass(frozen=True)
class Utterance:
    name: str
    kind: str  # paused | counting | finished
    voice: str
    text: str
    samples: np.ndarray  # float32 at RATE
    segment_ends_s: tuple[float, ...]
    speech_end_s: float


def near_silence(ms: int, rng: np.random.Generator) -> np.ndarray:
    """Dithered digital silence: +-1 LSB of PCM16, as a quiet microphone gives."""
    return rng.integers(-1, 2, RATE * ms // 1000).astype(np.float32) / 32768.0


def build_set(cache: Path) -> list[Utterance]:
    cache.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    pieces: dict[tuple[str, str], np.ndarray] = {}

    def speak(voice: str, text: str) -> np.ndarray:
        key = (voice, text)
        if key not in pieces:
            path = cache / f"{voice}-{zlib.crc32(text.encode()):08x}.wav"
            if path.exists():
                pieces[key] = read_wav(path)[0]
            else:
                raw = _piper(text) if voice == "piper" else _espeak(text, cache / "raw.wav")
                write_wav(path, raw, RATE)
                pieces[key] = raw
        return pieces[key]

    def trimmed(voice: str, text: str) -> np.ndarray:
        """The piece without its leading and trailing silence, so pauses are exact."""
        audio = speak(voice, text)
        end = int(speech_end(audio, RATE) * RATE)
        start = int(speech_end(audio[::-1], RATE) * RATE)
        return audio[len(audio) - start : end]

    def make(name: str, kind: str, voice: str, text: str, parts: list[np.ndarray]) -> Utterance:
        samples = np.concatenate(parts)
        return Utterance(
            name,
            kind,
            voice,
            text,
            samples,
            segment_ends(samples, RATE, gap_s=0.2),
            speech_end(samples, RATE),
        )

    out: list[Utterance] = []
    for key, (voice, first, second) in PAUSED.items():
        for ms in PAUSES_MS:
            parts = [trimmed(voice, first), near_silence(ms, rng), trimmed(voice, second)]
            out.append(make(f"{key}-{ms}", "paused", voice, f"{first} ... {second}", parts))
    for voice in ("piper", "espeak"):
        parts = []
        for n, word in enumerate(NUMBERS):
            if n:
                parts.append(near_silence(COUNT_PAUSES_MS[n % len(COUNT_PAUSES_MS)], rng))
            parts.append(trimmed(voice, f"{word},"))
        out.append(make(f"count-{voice}", "counting", voice, ", ".join(NUMBERS), parts))
    for key, (voice, text) in FINISHED.items():
        out.append(make(key, "finished", voice, text, [trimmed(voice, text)]))
    return out


# "before": the punctuation rule and cancel-at-confirm barge-in; "two-bands": today's
# end-of-turn model with its earlier rule (every score below the threshold reads as
# unfinished); "after": the current code.
MODES = ("before", "two-bands", "after")


def turn_config(mode: str) -> CallConfig:
    """The default persona's turn-taking: 500 ms end of turn, and the product's wait after
    a finished one (a mode "after:250" waits 250 ms after a finished one instead)."""
    mode, _, finished_ms = mode.partition(":")
    turns = replace(
        TurnSettings().with_silence(500),
        hint_source="punctuation" if mode == "before" else "eou",
    )
    if finished_ms:
        turns = replace(turns, complete_end_of_turn_ms=int(finished_ms))
    if mode == "two-bands":
        turns = replace(turns, eou_unfinished_threshold=turns.eou_threshold)
    return CallConfig(
        voice=default_voice(),
        instructions=INSTRUCTIONS,
        llm=LLMOptions(max_tokens=40, temperature=0.0),
        turns=turns,
        barge_in_onset_ms=0 if mode == "before" else 64,
    )


class Client:
    """Streams audio into a call in real time and keeps every frame with its arrival time."""

    def __init__(self, call: VoiceCall) -> None:
        self.call = call
        self.frames: list[tuple[float, Frame]] = []
        self.clock = time.monotonic()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for frame in self.call.frames():
            self.frames.append((time.monotonic(), frame))

    async def play(self, samples: np.ndarray) -> float:
        """Stream `samples`; returns the wall time its first sample was due."""
        started = self.clock
        for i in range(0, len(samples), CHUNK):
            self.call.push_samples(samples[i : i + CHUNK], RATE)
            self.clock += len(samples[i : i + CHUNK]) / RATE
            await asyncio.sleep(max(0.0, self.clock - time.monotonic()))
        return started

    async def silence(self, seconds: float) -> None:
        await self.play(np.zeros(int(seconds * RATE), np.float32))

    async def until(self, predicate: Any, timeout_s: float, start: int = 0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(predicate(f) for _, f in self.frames[start:]):
                return True
            await self.silence(0.1)
        return False

    async def close(self) -> None:
        await self.call.close()
        await self._reader


async def ask(models: LocalInference, vad: SileroModel, mode: str, u: Utterance) -> dict[str, Any]:
    client = Client(VoiceCall(turn_config(mode), models, vad))
    try:
        await client.silence(0.4)
        started = await client.play(u.samples)
        await client.until(lambda f: isinstance(f, ResponseDone), 20)
        await client.silence(1.5)  # a second answer, if the turn was split
    finally:
        await client.close()
    last_end = started + u.segment_ends_s[-1]
    speech_end_at = started + u.speech_end_s
    stopped = [t for t, f in client.frames if isinstance(f, SpeechStopped)]
    replies = {f.response_id for _, f in client.frames if isinstance(f, ResponseStarted)}
    audio_at = [t for t, f in client.frames if isinstance(f, TTSAudio)]
    finals = [f.text for _, f in client.frames if isinstance(f, TranscriptFinal)]
    early = bool(audio_at and audio_at[0] < last_end) or bool(stopped and stopped[0] < last_end)
    return {
        "name": u.name,
        "kind": u.kind,
        "voice": u.voice,
        "asked": u.text,
        "transcripts": finals,
        "replies": len(replies),
        "split": early or len(replies) > 1,
        "end_of_turn_ms": round(1000 * (stopped[0] - speech_end_at), 1) if stopped else None,
        "v2v_ms": round(1000 * (audio_at[0] - speech_end_at), 1) if audio_at else None,
    }


async def barge_in(
    models: LocalInference, vad: SileroModel, mode: str, over: np.ndarray, after_s: float
) -> dict[str, Any]:
    """A reply plays; `over` is streamed `after_s` into it. Times the reply's audio stop."""
    config = replace(turn_config(mode), playback_lead_ms=300)
    client = Client(VoiceCall(config, models, vad))
    try:
        reply_id = client.call.say(STORY)
        await client.until(lambda f: isinstance(f, TTSAudio), 20)
        await client.silence(after_s)
        mark = len(client.frames)
        started = await client.play(over)
        onset = started + first_voiced_s(over)
        await client.until(
            lambda f: isinstance(f, ResponseDone) and f.response_id == reply_id, 30, mark
        )
        await client.until(
            lambda f: isinstance(f, ResponseDone) and f.response_id != reply_id, 20, mark
        )
    finally:
        await client.close()
    after = [(t, f) for t, f in client.frames if t >= onset]
    reply_audio = [(t, f) for t, f in client.frames if isinstance(f, TTSAudio)]
    own = [(t, f) for t, f in reply_audio if f.response_id == reply_id]
    before_onset = [t for t, _ in own if t < onset]
    gaps = np.diff([t for t, _ in own]) if len(own) > 1 else np.zeros(1)
    done = {f.response_id: f for _, f in client.frames if isinstance(f, ResponseDone)}
    samples = sum(len(f.pcm) // 2 for _, f in own)
    return {
        "mode": mode,
        "interrupted": any(isinstance(f, Interruption) for _, f in after),
        "reply_status": done[reply_id].status if reply_id in done else None,
        "reply_audio_s": round(samples / config.output_sample_rate, 2),
        "stop_after_onset_ms": round(1000 * (own[-1][0] - onset), 1) if own else None,
        "longest_gap_ms": round(1000 * float(gaps.max()), 1),
        "frames_before_onset": len(before_onset),
        "answered": [
            f.text
            for rid, f in done.items()
            if rid != reply_id and f.status == "completed" and f.text
        ],
        "transcripts": [f.text for _, f in after if isinstance(f, TranscriptFinal)],
        "pauses": client.call.stats["barge_in_pauses"],
        "false_interruptions": client.call.stats["false_interruptions"],
    }


def first_voiced_s(samples: np.ndarray) -> float:
    """Start of the first 10 ms frame louder than -40 dBFS."""
    frame = RATE // 100
    n = len(samples) // frame
    rms = np.sqrt(np.mean(samples[: n * frame].reshape(n, frame) ** 2, axis=1))
    loud = np.nonzero(rms > 0.01)[0]
    return float(loud[0] * frame / RATE) if len(loud) else 0.0


def summarize_turns(records: list[dict[str, Any]]) -> dict[str, Any]:
    held = [r for r in records if r["kind"] != "finished"]
    finished = [r for r in records if r["kind"] == "finished"]
    whole = [r for r in finished if not r["split"]]
    return {
        "paused_utterances": len(held),
        "split": sum(r["split"] for r in held),
        "split_by_pause_ms": {
            str(ms): sum(r["split"] for r in held if r["name"].endswith(f"-{ms}"))
            for ms in PAUSES_MS
        },
        "counting_split": sum(r["split"] for r in held if r["kind"] == "counting"),
        "finished_questions": len(finished),
        "finished_unanswered": sum(r["v2v_ms"] is None for r in finished),
        "end_of_turn_ms": stats([r["end_of_turn_ms"] for r in whole if r["end_of_turn_ms"]]),
        "v2v_ms": stats([r["v2v_ms"] for r in whole if r["v2v_ms"] is not None]),
    }


def summarize_barge(records: list[dict[str, Any]]) -> dict[str, Any]:
    real = [r for r in records if r["kind"] == "question"]
    false = [r for r in records if r["kind"] == "uh"]
    return {
        "interruptions": len(real),
        "cancelled": sum(r["reply_status"] == "cancelled" for r in real),
        "answered": sum(bool(r["answered"]) for r in real),
        "stop_after_onset_ms": stats(
            [r["stop_after_onset_ms"] for r in real if r["stop_after_onset_ms"] is not None]
        ),
        "false_onsets": len(false),
        "false_played_to_the_end": sum(r["reply_status"] == "completed" for r in false),
        "false_longest_gap_ms": stats([r["longest_gap_ms"] for r in false]),
    }


def table(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cache = ROOT / "bench" / ".cache" / "turns"
    utterances = build_set(cache)
    print(f"loading models; {len(utterances)} utterances", flush=True)
    models = load_inference(ModelSettings())
    vad = SileroModel()
    turns: dict[str, list[dict[str, Any]]] = {}
    barge: dict[str, list[dict[str, Any]]] = {}
    modes = tuple(args.modes.split(","))
    if args.only in ("", "turns"):
        await ask(models, vad, "after", utterances[-1])  # warm-up, not counted
        for mode in modes:
            turns[mode] = []
            for u in utterances:
                turns[mode].append(await ask(models, vad, mode, u))
                r = turns[mode][-1]
                print(f"  {mode:>6} {u.name:<16} split={r['split']!s:<5} "
                      f"eot={r['end_of_turn_ms']!s:>7} v2v={r['v2v_ms']!s:>7} "
                      f"{r['transcripts']}", flush=True)  # fmt: skip
    if args.only in ("", "barge-in"):
        question = _espeak("How is the weather today in London?", cache / "raw.wav")
        uh = _espeak("uh", cache / "raw.wav")
        other = _piper("Wait, do you have gluten free bread?")
        for mode in modes:
            barge[mode] = []
            for n, (kind, clip) in enumerate(
                [("question", question), ("question", other)] * args.barge_repeat
                + [("uh", uh)] * args.barge_repeat
            ):
                r = await barge_in(models, vad, mode, clip, 0.8 + 0.15 * n)
                r["kind"] = kind
                barge[mode].append(r)
                stop = r["stop_after_onset_ms"]
                print(f"  {mode:>6} {kind:<8} stop={stop!s:>7} ms status={r['reply_status']} "
                      f"answered={r['answered'][:1]}", flush=True)  # fmt: skip
    summary: dict[str, Any] = {}
    for mode in modes:
        summary[mode] = {}
        if mode in turns:
            summary[mode]["turns"] = summarize_turns(turns[mode])
        if mode in barge:
            summary[mode]["barge_in"] = summarize_barge(barge[mode])
    print_tables(summary, modes)
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_avg_at_end": os.getloadavg(),
        },
        "setup": {
            "paused": PAUSED,
            "pauses_ms": PAUSES_MS,
            "count_pauses_ms": COUNT_PAUSES_MS,
            "finished": FINISHED,
            "config": {
                "end_of_turn_ms": 500,
                "complete_end_of_turn_ms": {
                    m: turn_config(m).turns.complete_end_of_turn_ms for m in modes
                },
            },
        },
        "summary": summary,
        "turns": turns,
        "barge_in": barge,
    }


def print_tables(summary: dict[str, Any], modes: tuple[str, ...]) -> None:
    def cell(mode: str, *path: str) -> str:
        value: Any = summary[mode]
        for key in path:
            if not isinstance(value, dict) or key not in value:
                return "-"
            value = value[key]
        return str(value)

    rows: list[tuple[str, ...]] = [("", *modes)]
    for label, path in [
        ("paused utterances split", ("turns", "split")),
        ("  of which counting", ("turns", "counting_split")),
        ("  split by pause (ms)", ("turns", "split_by_pause_ms")),
        ("finished questions", ("turns", "finished_questions")),
        ("  end of turn p50 ms", ("turns", "end_of_turn_ms", "p50")),
        ("  end of turn p95 ms", ("turns", "end_of_turn_ms", "p95")),
        ("  v2v p50 ms", ("turns", "v2v_ms", "p50")),
        ("  v2v p95 ms", ("turns", "v2v_ms", "p95")),
        ("barge-in: reply cancelled", ("barge_in", "cancelled")),
        ("  question answered", ("barge_in", "answered")),
        ("  onset -> audio stop p50 ms", ("barge_in", "stop_after_onset_ms", "p50")),
        ("  onset -> audio stop max ms", ("barge_in", "stop_after_onset_ms", "max")),
        ("'uh': reply played to the end", ("barge_in", "false_played_to_the_end")),
        ("  longest audio gap p50 ms", ("barge_in", "false_longest_gap_ms", "p50")),
    ]:
        rows.append((label, *(cell(mode, *path) for mode in modes)))
    print(table(rows))


def _modes(value: str) -> str:
    def known(mode: str) -> bool:
        name, _, wait_ms = mode.partition(":")
        return name in MODES and (wait_ms or "0").isdigit()

    unknown = [m for m in value.split(",") if not known(m)]
    if unknown or not value:
        raise argparse.ArgumentTypeError(f"modes are {', '.join(MODES)}; not {unknown or value!r}")
    return value


def main(argv: list[str] | None = None) -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--only", choices=["", "turns", "barge-in"], default="")
    parser.add_argument("--barge-repeat", type=int, default=3, help="trials of each barge-in")
    parser.add_argument(
        "--modes",
        default="before,after",
        type=_modes,
        help=f"comma-separated, of {', '.join(MODES)}, each with an optional ':MS', the "
        "wait after a finished turn (default: the product's for 500 ms); default: before,after",
    )
    report = asyncio.run(run(parser.parse_args(argv)))
    save_report(report, "turns", "turns-latest.json")


if __name__ == "__main__":
    main()


__all__ = ["RESULTS", "main"]
