"""Word error rate of live transcripts against the same Whisper model offline.

    .venv/bin/python -m bench.wer                 # or: ./dev bench wer
    .venv/bin/python -m bench.wer --model base    # a persona's larger model
    .venv/bin/python -m bench.wer --only parking,count_piper --passes 2

The same clips (bench/wer_clips.py: 14 questions, several voices and speeds,
+-1 LSB dither) are read three ways by the same model:

  offline_default   faster-whisper's own `transcribe()` with its defaults on the
                    whole clip (beam 5, 30 s window), as a batch user would
  offline_window    our ASR backend on the whole clip with the full 30 s window
  live              one long call through the engine's `VoiceCall`: the clips
                    are streamed at real-time pace (20 ms chunks of 24 kHz
                    PCM16), the agent answers each question aloud, and the
                    turn's `TranscriptFinal` is scored; a turn rejected by the
                    engine (`TranscriptFailed`) scores as all words deleted.

Text on both sides is normalized the same way (lowercase, no punctuation,
digits as number words). Prints a table and writes
bench/results/wer-<time>.json and wer-latest.json. ASR time per final comes
from the turns' own spans (`asr_ms`).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from voiceapp.engine.asr import ASR_MODELS, DEFAULT_ASR_MODEL, Transcript, WhisperASR
from voiceapp.engine.audio import resample
from voiceapp.engine.call import CallConfig, VoiceCall
from voiceapp.engine.frames import ResponseDone, TranscriptFailed, TranscriptFinal
from voiceapp.engine.inference import AudioChunk, LocalInference, Stream, TokenStream
from voiceapp.engine.listener import PAUSE_READ_MS
from voiceapp.engine.llm import LLMOptions, Message
from voiceapp.engine.models import ModelSettings, default_voice, load_inference
from voiceapp.engine.tts import VoiceSpec
from voiceapp.engine.turns import TurnSettings
from voiceapp.engine.vad import SileroModel

from .latency import save_report, stats
from .wer_clips import RATE, WerClip, corpus_wer, dither, load_clips, word_errors

ROOT = Path(__file__).resolve().parent.parent
CHUNK = RATE // 50  # 20 ms
LEAD_SILENCE_S = 0.4
INSTRUCTIONS = (
    "You are the friendly voice assistant of a small neighbourhood shop. "
    "Help callers with their questions."
)


class RecordingInference:
    """The models as the call sees them, keeping every transcription it asks for."""

    def __init__(self, inner: LocalInference) -> None:
        self.inner = inner
        self.readings: list[dict[str, Any]] = []

    async def transcribe(
        self,
        audio: np.ndarray,
        language: str,
        model: str = DEFAULT_ASR_MODEL,
        *,
        partial: bool = False,
    ) -> Transcript:
        started = time.perf_counter()
        result = await self.inner.transcribe(audio, language, model, partial=partial)
        self.readings.append(
            {
                "audio_s": round(len(audio) / 16000, 2),
                "ms": round(1000 * (time.perf_counter() - started), 1),
                "text": result.text,
                "rejected": result.rejected,
                "avg_logprob": round(result.avg_logprob, 2),
                "no_speech_prob": round(result.no_speech_prob, 2),
            }
        )
        return result

    def generate(self, messages: list[Message], options: LLMOptions) -> TokenStream:
        return self.inner.generate(messages, options)

    def synthesize(
        self, text: str, voice: VoiceSpec, *, background: bool = False
    ) -> Stream[AudioChunk]:
        return self.inner.synthesize(text, voice, background=background)

    async def end_of_turn(self, text: str, previous_reply: str) -> float:
        return await self.inner.end_of_turn(text, previous_reply)


def live_config(asr_model: str, pause_read_ms: int = PAUSE_READ_MS) -> CallConfig:
    """The bench persona's turn-taking (as bench/latency.py) and short spoken replies."""
    return CallConfig(
        asr_model=asr_model,
        pause_read_ms=pause_read_ms,
        voice=default_voice(),
        instructions=INSTRUCTIONS,
        llm=LLMOptions(max_tokens=40, temperature=0.0),
        turns=TurnSettings().with_silence(500),
    )


def offline(models: LocalInference, model_path: str, clips: list[WerClip]) -> dict[str, Any]:
    """The whole clip at once: faster-whisper's defaults, and our backend's full window."""
    from faster_whisper import WhisperModel

    batch = WhisperModel(model_path, device="cpu", compute_type="int8", cpu_threads=2)
    asr = models.asr
    assert isinstance(asr, WhisperASR)
    out: dict[str, Any] = {"offline_default": {}, "offline_window": {}}
    for clip in clips:
        audio16 = resample(clip.samples, RATE, 16000)
        segments, _ = batch.transcribe(audio16, language="en")
        out["offline_default"][clip.name] = " ".join(s.text.strip() for s in segments)
        out["offline_window"][clip.name] = asr.read(audio16, "en", full_window=True).text
    return out


async def live(
    models: LocalInference,
    vad: SileroModel,
    clips: list[WerClip],
    seed: int,
    asr_model: str,
    pause_read_ms: int = PAUSE_READ_MS,
) -> dict[str, Any]:
    """One long call: each clip in turn at real-time pace, the agent answering aloud."""
    recorder = RecordingInference(models)
    call = VoiceCall(live_config(asr_model, pause_read_ms), recorder, vad)
    frames: asyncio.Queue[Any] = asyncio.Queue()

    async def read() -> None:
        async for frame in call.frames():
            frames.put_nowait(frame)

    reader = asyncio.create_task(read())
    rng_seed = seed
    clock = time.monotonic()

    async def tick(samples: np.ndarray) -> None:
        nonlocal clock
        call.push_samples(samples, RATE)
        clock += len(samples) / RATE
        await asyncio.sleep(max(0.0, clock - time.monotonic()))

    def silence() -> np.ndarray:
        nonlocal rng_seed
        rng_seed += 1
        return dither(np.zeros(CHUNK, np.float32), rng_seed)

    texts: dict[str, str] = {}
    failures: dict[str, list[str]] = {}
    asr_ms: list[float] = []
    readings: dict[str, list[dict[str, Any]]] = {}
    try:
        for clip in clips:
            recorder.readings.clear()
            lead = dither(np.zeros(int(LEAD_SILENCE_S * RATE), np.float32), rng_seed)
            audio = np.concatenate([lead, clip.samples])
            for i in range(0, len(audio), CHUNK):
                await tick(audio[i : i + CHUNK])
            finals: list[str] = []
            reasons: list[str] = []
            quiet_since = time.monotonic()
            deadline = time.monotonic() + 30
            # Until the reply has been heard to its end (a polite caller: talking over the
            # agent is barge-in, tested elsewhere) and the call has been quiet for 1.5 s.
            answered = False
            while time.monotonic() < deadline and (
                time.monotonic() - quiet_since < 1.5 or not (answered or reasons)
            ):
                await tick(silence())
                while not frames.empty():
                    frame = frames.get_nowait()
                    if isinstance(frame, TranscriptFinal):
                        finals.append(frame.text)
                    elif isinstance(frame, TranscriptFailed):
                        reasons.append(frame.reason)
                    elif isinstance(frame, ResponseDone):
                        answered = answered or bool(finals)
                        if frame.latency.get("asr_ms") is not None:
                            asr_ms.append(float(frame.latency["asr_ms"]))  # type: ignore[arg-type]
                    else:
                        continue
                    quiet_since = time.monotonic()
            texts[clip.name] = " ".join(finals)
            readings[clip.name] = list(recorder.readings)
            if reasons:
                failures[clip.name] = reasons
            print(f"  live {clip.name:<14} {texts[clip.name]!r} {reasons or ''}", flush=True)
            for r in readings[clip.name]:
                print(f"       asr {r}", flush=True)
    finally:
        reader.cancel()
        await call.close()
    return {"texts": texts, "failures": failures, "asr_ms": asr_ms, "readings": readings}


async def _microphone(conn: Any, pcm: bytes, quiet: bytes, done: asyncio.Event) -> None:
    """Append `pcm` in 20 ms chunks at real-time pace, then `quiet` until `done`."""
    import base64

    started = time.monotonic()
    step = CHUNK * 2
    chunks = [pcm[i : i + step] for i in range(0, len(pcm), step)]
    n = 0
    while n < len(chunks) or not done.is_set():
        data = chunks[n] if n < len(chunks) else quiet
        await conn.send(
            {"type": "input_audio_buffer.append", "audio": base64.b64encode(data).decode()}
        )
        n += 1
        await asyncio.sleep(max(0.0, started + n * 0.02 - time.monotonic()))


async def live_ws(clips: list[WerClip], asr_model: str) -> dict[str, Any]:
    """One long call through /v1/realtime with the stock openai SDK (daphne + a worker)."""
    import tempfile

    from openai import AsyncOpenAI

    from voiceapp.engine.audio import float_to_pcm16

    from .topology import Topology

    texts: dict[str, str] = {}
    failures: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp, Topology(Path(tmp), 1) as topo:
        if asr_model != DEFAULT_ASR_MODEL:
            topo.patch_persona({"asr_model": asr_model})
        client = AsyncOpenAI(base_url=f"http://127.0.0.1:{topo.port}/v1", api_key=topo.key)
        async with client.realtime.connect(model="assistant") as conn:
            await conn.recv()  # session.created
            for clip in clips:
                lead = dither(np.zeros(int(LEAD_SILENCE_S * RATE), np.float32), 1)
                pcm = float_to_pcm16(np.concatenate([lead, clip.samples]))
                quiet = float_to_pcm16(dither(np.zeros(CHUNK, np.float32), 2))
                finals: list[str] = []
                reasons: list[str] = []
                done = asyncio.Event()
                sender = asyncio.ensure_future(_microphone(conn, pcm, quiet, done))
                try:
                    quiet_until = time.monotonic() + 30
                    while time.monotonic() < quiet_until:
                        try:
                            async with asyncio.timeout(max(0.1, quiet_until - time.monotonic())):
                                event = await conn.recv()
                        except TimeoutError:
                            break
                        data = event.model_dump()
                        kind = data["type"]
                        if kind == "conversation.item.input_audio_transcription.completed":
                            finals.append(data["transcript"])
                            quiet_until = time.monotonic() + 30  # its reply is coming
                            continue
                        if kind == "conversation.item.input_audio_transcription.failed":
                            reasons.append(str(data["error"]["code"]))
                        elif kind != "response.done":
                            continue
                        # the next question once the reply (or failure) is over, after 1.5 s
                        quiet_until = time.monotonic() + 1.5
                finally:
                    done.set()
                    await sender
                texts[clip.name] = " ".join(finals)
                if reasons:
                    failures[clip.name] = reasons
                print(f"  ws {clip.name:<14} {texts[clip.name]!r} {reasons or ''}", flush=True)
    return {"texts": texts, "failures": failures}


def score(clips: list[WerClip], texts: dict[str, str]) -> dict[str, Any]:
    per = {}
    for clip in clips:
        e = word_errors(clip.text, texts.get(clip.name, ""))
        per[clip.name] = {"errors": e.total, "deleted": e.deletions, "words": e.reference_words}
    return {
        "wer": round(corpus_wer([(c.text, texts.get(c.name, "")) for c in clips]), 4),
        "per_clip": per,
    }


def table(clips: list[WerClip], modes: dict[str, dict[str, str]]) -> str:
    """Word errors / reference words per clip and mode, and the corpus WER per mode."""
    names = list(modes)
    lines = [f"{'clip':<13} {'voice':<30}" + "".join(f"{n:>17}" for n in names)]
    for clip in clips:
        cells = []
        for n in names:
            e = word_errors(clip.text, modes[n].get(clip.name, ""))
            cells.append(f"{e.total}/{e.reference_words}")
        lines.append(f"{clip.name:<13} {clip.voice:<30}" + "".join(f"{c:>17}" for c in cells))
    wers = [corpus_wer([(c.text, modes[n].get(c.name, "")) for c in clips]) for n in names]
    lines.append(f"{'WER':<44}" + "".join(f"{w:>17.3f}" for w in wers))
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    clips = load_clips(ROOT / "bench" / ".cache" / "wer")
    if args.only:
        wanted = set(args.only.split(","))
        clips = [c for c in clips if c.name in wanted]
    settings = ModelSettings(asr_model=args.model)
    print(f"loading models (ASR: {args.model}) ...", flush=True)
    models = load_inference(settings)
    asr = models.asr
    assert isinstance(asr, WhisperASR)
    vad = SileroModel()
    print("offline ...", flush=True)
    modes: dict[str, dict[str, str]] = offline(models, asr.settings.model_path, clips)
    runs = []
    for p in range(args.passes):
        print(f"live, one call, pass {p + 1} ...", flush=True)
        runs.append(
            await live(
                models,
                vad,
                clips,
                seed=1000 * p,
                asr_model=args.model,
                pause_read_ms=args.pause_read_ms,
            )
        )
        modes[f"live_{p + 1}"] = runs[-1]["texts"]
    models.close()
    if args.ws:
        print("live, one call through /v1/realtime (openai SDK) ...", flush=True)
        ws_run = await live_ws(clips, args.model)
        modes["ws"] = ws_run["texts"]
    print(table(clips, modes))
    summary: dict[str, Any] = {n: score(clips, texts)["wer"] for n, texts in modes.items()}
    live_wers = [summary[f"live_{p + 1}"] for p in range(args.passes)]
    summary["live_mean"] = round(float(np.mean(live_wers)), 4)
    summary["live_minus_offline_window"] = round(
        summary["live_mean"] - summary["offline_window"], 4
    )
    summary["asr_ms_per_final"] = stats([x for r in runs for x in r["asr_ms"]])
    summary["rejected_turns"] = {f"live_{i + 1}": r["failures"] for i, r in enumerate(runs)}
    if args.ws:
        summary["rejected_turns"]["ws"] = ws_run["failures"]
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_avg_at_end": os.getloadavg(),
        },
        "asr_model": args.model,
        "pause_read_ms": args.pause_read_ms,
        "clips": [{"name": c.name, "voice": c.voice, "text": c.text} for c in clips],
        "summary": summary,
        "transcripts": modes,
        "scores": {n: score(clips, texts) for n, texts in modes.items()},
        "live_readings": [r["readings"] for r in runs],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--model", default=DEFAULT_ASR_MODEL, choices=ASR_MODELS, help="ASR model")
    parser.add_argument("--passes", type=int, default=1, help="live calls over all clips")
    parser.add_argument("--only", default="", help="comma-separated clip names")
    parser.add_argument(
        "--pause-read-ms",
        type=int,
        default=PAUSE_READ_MS,
        help="a pause inside a turn is read this long at most; 0 reads it whole",
    )
    parser.add_argument(
        "--ws", action="store_true", help="also one call through /v1/realtime (openai SDK)"
    )
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s", level=logging.WARNING)
    logging.getLogger("voiceapp.engine.call").setLevel(logging.INFO)
    report = asyncio.run(run(parser.parse_args(argv)))
    save_report(report, f"wer-{report['asr_model']}", f"wer-{report['asr_model']}-latest.json")


if __name__ == "__main__":
    main()
