"""Voice-to-voice latency through the WebSocket endpoint, measured as a client.

    .venv/bin/python -m bench.ws                 # or: ./dev bench ws
    .venv/bin/python -m bench.ws --repeat 2 --concurrent 2

Runs the production topology on this machine: daphne and a separate
`manage.py inference_worker` on Redis (REDIS_URL, default the local one), a
throwaway Postgres database for the org, persona and key (`--database sqlite`:
a SQLite file, as the embedded default has). Then the stock
`openai` SDK streams the benchmark's spoken questions in real time (20 ms
chunks of 24 kHz PCM16) and times, on the client's clock, the moment the last
voiced sample was sent to the arrival of the first `response.output_audio.delta`.
The server's own spans (`response.done` -> `response.latency`) are kept beside
it, so the transport's share shows as the difference. Writes
bench/results/ws-<time>.json and ws-latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from voiceapp.engine.audio import float_to_pcm16
from voiceapp.engine.tracing import SPAN_NAMES

from .latency import save_report, stats
from .questions import RATE, Question, load_questions, unseen_voice_questions
from .topology import ROOT, Topology, add_database_argument

CHUNK_S = 0.02


LOUD = 0.02  # reply audio louder than this (peak, full scale 1) is the agent speaking
ANSWER_WAIT_S = 60  # a question with no response.done by then is counted unanswered


async def ask(
    conn: Any, question: Question, on_audio: Callable[[float, int], None] | None = None
) -> dict[str, Any]:
    """Stream one spoken question like a microphone; time the reply as a client.

    `on_audio(arrival, n_bytes)` sees every `response.output_audio.delta` (24 kHz PCM16)."""
    lead = np.zeros(int(0.4 * RATE), dtype=np.float32)
    tail = np.zeros(int(2.0 * RATE), dtype=np.float32)
    audio = np.concatenate([lead, question.samples, tail])
    pcm = float_to_pcm16(audio)
    step = int(RATE * CHUNK_S) * 2
    speech_end_byte = int((len(lead) / RATE + question.speech_end_s) * RATE) * 2
    sent_end_at: float | None = None
    first_audio_at: float | None = None
    audible_at: float | None = None  # when the first loud sample plays, from the first delta
    samples_before = 0

    async def send() -> None:
        nonlocal sent_end_at
        started = time.monotonic()
        for n, i in enumerate(range(0, len(pcm), step)):
            await conn.send(
                {
                    "type": "input_audio_buffer.append",
                    "audio": base64.b64encode(pcm[i : i + step]).decode(),
                }
            )
            if sent_end_at is None and i + step >= speech_end_byte:
                sent_end_at = time.monotonic()
            await asyncio.sleep(max(0.0, started + (n + 1) * CHUNK_S - time.monotonic()))

    sender = asyncio.ensure_future(send())
    transcript = ""
    try:
        async with asyncio.timeout(ANSWER_WAIT_S):
            async for event in conn:
                if event.type == "conversation.item.input_audio_transcription.completed":
                    transcript = event.transcript
                elif event.type == "response.output_audio.delta":
                    arrival = time.monotonic()
                    if first_audio_at is None:
                        first_audio_at = arrival
                    chunk = base64.b64decode(event.delta)
                    if audible_at is None:
                        samples = np.frombuffer(chunk, dtype="<i2")
                        loud = np.flatnonzero(np.abs(samples) / 32768.0 > LOUD)
                        if len(loud):
                            audible_at = first_audio_at + (samples_before + loud[0]) / RATE
                        samples_before += len(samples)
                    if on_audio is not None:
                        on_audio(arrival, len(chunk))
                elif event.type == "response.done":
                    response = event.response.model_dump()
                    outputs = [o.get("type") for o in response.get("output") or []]
                    if first_audio_at is None and "function_call" in outputs:
                        continue  # an action the agent took: its words come in the next one
                    break
    except TimeoutError:
        # no reply came: counted as not answered (a turn split before it, say, left the
        # client one response behind), and the next question goes on
        response = {"status": "timeout"}
    finally:
        sender.cancel()
    client_v2v = audible_v2v = None
    if first_audio_at is not None and sent_end_at is not None:
        client_v2v = round(1000 * (first_audio_at - sent_end_at), 1)
    if audible_at is not None and sent_end_at is not None:
        audible_v2v = round(1000 * (audible_at - sent_end_at), 1)
    return {
        "question": question.name,
        "voice": question.voice,
        "transcript": transcript,
        "status": response.get("status"),
        "client_v2v_ms": client_v2v,
        # the first loud sample (> LOUD of full scale), played from the first delta: what
        # a WebRTC caller's v2v measures (its frames carry silence too)
        "client_audible_v2v_ms": audible_v2v,
        "server": response.get("latency") or {},
        "timeline": response.get("timeline") or {},
        "prompt": prompt_of(response.get("usage") or {}),
    }


def prompt_of(usage: dict[str, Any]) -> dict[str, int | None]:
    """The prompt the reply's LLM read, and how much of it its context held already:
    a long prompt read cold is a slow first token."""
    details = usage.get("input_token_details") or {}
    return {
        "input_tokens": usage.get("input_tokens"),
        "cached_tokens": details.get("cached_tokens"),
    }


async def call(
    base_url: str, key: str, questions: list[Question], repeat: int
) -> list[dict[str, Any]]:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key=key)
    turns = []
    async with client.realtime.connect(model="assistant") as conn:
        await conn.recv()  # session.created
        for _ in range(repeat):
            for question in questions:
                turns.append(await ask(conn, question))
                await asyncio.sleep(0.5)
    return turns


def summarize(turns: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [t for t in turns if t["client_v2v_ms"] is not None]
    out: dict[str, Any] = {
        "turns": len(turns),
        "answered": len(ok),
        # completed, cancelled (a turn split at a pause: its reply cut by the rest of
        # it), timeout (no reply at all)
        "statuses": dict(Counter(str(t["status"]) for t in turns)),
        "client_v2v_ms": stats([t["client_v2v_ms"] for t in ok]),
        # to the first sample over 2 % of full scale: what the caller hears begin
        "client_audible_v2v_ms": stats(
            [t["client_audible_v2v_ms"] for t in ok if t["client_audible_v2v_ms"] is not None]
        ),
    }
    for span in (*SPAN_NAMES[:-1], "asr_queue_ms"):  # response.latency leaves out send_ms
        values = [t["server"].get(span) for t in ok if t["server"].get(span) is not None]
        out[f"server_{span}"] = stats(values)
    # the turns whose question Whisper's full window read again (a doubtful short reading)
    out["asr_full_window_rereads"] = sum(1 for t in ok if t["server"].get("asr_reads") == 2)
    out["slowest"] = [_spans_of(t) for t in sorted(ok, key=lambda t: -t["client_v2v_ms"])[:3]]
    return out


def _spans_of(turn: dict[str, Any]) -> dict[str, Any]:
    """What a slow turn's spans say (the tail's lead)."""
    server = turn["server"]
    keep = ("endpoint_ms", "asr_ms", "asr_queue_ms", "asr_reads", "llm_first_token_ms")
    return {
        "question": turn["question"],
        "voice": turn["voice"],
        "transcript": turn["transcript"],
        "client_v2v_ms": turn["client_v2v_ms"],
        **{name: server.get(name) for name in keep},
        **turn.get("prompt", {}),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    questions = load_questions(ROOT / "bench" / ".cache")
    if args.voices == "wide":
        questions += unseen_voice_questions(ROOT / "bench" / ".cache" / "wer")
    with (
        tempfile.TemporaryDirectory() as tmp,
        Topology(Path(tmp), args.workers, database=args.database) as topo,
    ):
        base = f"http://127.0.0.1:{topo.port}/v1"
        devices = await topo.worker_devices()
        print(f"one call: {len(questions) * args.repeat} questions", flush=True)
        single = await call(base, topo.key, questions, args.repeat)
        print(f"{args.concurrent} calls at once", flush=True)
        together = await asyncio.gather(
            *(call(base, topo.key, questions, 1) for _ in range(args.concurrent))
        )
    concurrent = [t for turns in together for t in turns]
    return {
        "mode": "websocket",
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "workers": args.workers,
        "database": args.database,
        "voices": args.voices,
        # where each worker's models ran, from the worker's own capacity advert
        "devices": devices,
        "summary": {
            "one_call": summarize(single),
            f"{args.concurrent}_concurrent": summarize(concurrent),
        },
        "turns": {"one_call": single, "concurrent": concurrent},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2, help="passes over the questions")
    parser.add_argument("--concurrent", type=int, default=2, help="calls at once, second phase")
    parser.add_argument("--workers", type=int, default=1, help="inference worker processes")
    add_database_argument(parser)
    parser.add_argument(
        "--voices",
        choices=["default", "wide"],
        default="default",
        help="wide: also the WER benchmark's 12 questions (Piper x0.85-1.2, 7 espeak-ng accents)",
    )
    report = asyncio.run(run(parser.parse_args(argv)))
    save_report(report, "ws", "ws-latest.json")


if __name__ == "__main__":
    main()
