"""Voice-to-voice latency of a phone call next to WebSocket and WebRTC, in one run.

    .venv/bin/python -m bench.phone               # or: ./dev bench phone
    .venv/bin/python -m bench.phone --repeat 2

Runs the production topology (daphne, a separate inference worker, Redis, a
throwaway Postgres) plus `manage.py sip_server`, gives the persona a number
and a loopback trunk through the API, then asks the benchmark's spoken
questions three ways, one call each:

- WebSocket: the `openai` SDK streams 24 kHz PCM16; v2v is from the last voiced
  sample sent to the first reply sample over 2 % of full scale (bench/load.py).
- WebRTC: an aiortc peer sends Opus; the same v2v on the agent's track.
- Phone: baresip (Debian's, a SIP user agent nobody here wrote) dials the
  number, plays the questions as G.711 (PCMU) from a WAV with `REPLY_GAP_S`
  after each, and records what it hears. v2v is read off that recording: from
  each question's last voiced sample (its place in the WAV) to the first reply
  sample over 2 % of full scale. Both the WAV and the recording start when the
  call's audio starts, so the figure carries baresip's own jitter buffer, as a
  phone does, and about one 20 ms frame of alignment error.

The server's own spans (`v2v_ms` and the rest, from the call records) are kept
beside each, so the transport's share shows. Writes bench/results/phone-<time>.json
and phone-latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

from voiceapp.engine.audio import resample

from .baresip import Baresip, call_wav, free_sip_port
from .latency import save_report, stats
from .load import CallerResult, Turn, rtc_caller, topology_env, ws_caller
from .questions import RATE, Question, load_questions
from .rtc import loopback_only
from .topology import ROOT, Topology, _free_port, _wait_line

LOUD = 0.02
LEAD_S = 1.0
REPLY_GAP_S = 9.0  # after each question: the reply (60 tokens at most) and a pause
NUMBER = "+15550100100"


def _api(topo: Topology, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        f"{topo.base_url}/api/v1/{path}",
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Authorization": f"Bearer {topo.key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read() or b"null")


def start_sip_server(topo: Topology, workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    persona = _api(topo, "GET", "personas/")[0]
    trunk = _api(
        topo, "POST", "sip-trunks/", {"name": "loopback", "allowed_addresses": ["127.0.0.1"]}
    )
    _api(
        topo,
        "POST",
        "phone-numbers/",
        {"number": NUMBER, "persona": persona["id"], "trunk": trunk["id"]},
    )
    port = _free_port()
    log = workdir / "sip.log"
    proc = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "sip_server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--rtp-ports",
            "34000-34999",
        ],
        cwd=ROOT,
        env=topo.env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    _wait_line(log, "SIP READY", proc, 120)
    return proc, port


def phone_timeline(questions: list[Question]) -> tuple[list[np.ndarray], list[float]]:
    """The WAV's pieces at RATE and each question's speech end, in seconds from its start."""
    parts: list[np.ndarray] = [np.zeros(int(LEAD_S * RATE), np.float32)]
    ends: list[float] = []
    at = LEAD_S
    for question in questions:
        parts.append(question.samples)
        ends.append(at + question.speech_end_s)
        at += len(question.samples) / RATE
        parts.append(np.zeros(int(REPLY_GAP_S * RATE), np.float32))
        at += REPLY_GAP_S
    return parts, ends


def replies_in(heard: np.ndarray, rate: int, ends: list[float]) -> list[float | None]:
    """For each speech end, ms to the first loud sample heard before the next question."""
    out: list[float | None] = []
    for i, end in enumerate(ends):
        stop = ends[i + 1] if i + 1 < len(ends) else end + REPLY_GAP_S
        window = np.abs(heard[int(end * rate) : int(stop * rate)])
        loud = np.flatnonzero(window > LOUD)
        out.append(round(1000 * loud[0] / rate, 1) if len(loud) else None)
    return out


async def phone_caller(
    port: int, questions: list[Question], workdir: Path
) -> tuple[CallerResult, list[float]]:
    """One call that asks every question; returns the turns and the questions' speech ends."""
    parts, ends = phone_timeline(questions)
    wav = call_wav(workdir / "questions.wav", parts, RATE)
    phone = Baresip(workdir / "baresip", caller="+15550100999", port=free_sip_port())
    started = time.monotonic()
    call = await phone.call(
        f"sip:{NUMBER}@127.0.0.1:{port}", wav, timeout_s=ends[-1] + REPLY_GAP_S + 60
    )
    result = CallerResult("phone", connected_s=time.monotonic() - started)
    if not call.established:
        result.error = call.output[-500:]
        return result, ends
    heard, rate = call.heard()
    v2v = replies_in(resample(heard, rate, 16000), 16000, ends)
    for question, ms in zip(questions, v2v, strict=True):
        result.turns.append(Turn(question.name, ms is not None, ms, {}, audible_v2v_ms=ms))
    return result, ends


def with_server_spans(
    result: CallerResult, records: list[dict[str, Any]], transport: str, ends: list[float]
) -> None:
    """Give each phone turn the server's spans of the reply recorded after its question
    ended (the phone has no events). A turn's `at_s` counts from the call's start, as
    the question WAV does (to within the call's set-up)."""
    calls = [r for r in records if r["transport"] == transport]
    if not calls:
        return
    for record in calls[-1]["turns"]:
        spans = record.get("spans") or {}
        at = float(record.get("at_s") or 0.0)
        later = [i for i, end in enumerate(ends) if end <= at]
        if spans.get("v2v_ms") is None or not later:
            continue
        turn = result.turns[later[-1]]
        if not turn.server:
            turn.server = spans
            turn.status = str(record.get("status") or "")


def summary(result: CallerResult) -> dict[str, Any]:
    answered = [t for t in result.turns if t.answered and t.audible_v2v_ms is not None]
    server = [t.server.get("v2v_ms") for t in answered if t.server.get("v2v_ms") is not None]
    return {
        "turns": len(result.turns),
        "answered": len(answered),
        "refused": result.refused,
        "error": result.error,
        "client_audible_v2v_ms": stats([t.audible_v2v_ms for t in answered]),  # type: ignore[misc]
        "server_v2v_ms": stats(server),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    loopback_only()
    questions = load_questions(ROOT / "bench" / ".cache") * args.repeat
    env = topology_env(argparse.Namespace(max_calls=10, wait_budget_ms=1_000_000))
    with (
        tempfile.TemporaryDirectory() as tmp,
        Topology(Path(tmp), args.workers, env, args.database) as topo,
    ):
        sip, port = start_sip_server(topo, Path(tmp))
        try:
            results: dict[str, CallerResult] = {}
            print(f"{len(questions)} questions on each transport", flush=True)
            results["websocket"] = await ws_caller(topo.base_url, topo.key, questions, 0.1)
            print("websocket done", flush=True)
            results["webrtc"] = await rtc_caller(topo.base_url, topo.key, questions, 0.1)
            print("webrtc done", flush=True)
            results["phone"], ends = await phone_caller(port, questions, Path(tmp))
            print("phone done", flush=True)
            with_server_spans(results["phone"], topo.call_records(), "sip", ends)
        finally:
            sip.terminate()
            sip.wait(10)
    return {
        "mode": "phone",
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "workers": args.workers,
        "summary": {name: summary(result) for name, result in results.items()},
        "turns": {name: [t.__dict__ for t in result.turns] for name, result in results.items()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=1, help="ask the question set this often")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="postgres")
    args = parser.parse_args(argv)
    report = asyncio.run(run(args))
    path = save_report(report, "phone", "phone-latest.json")
    for name, row in report["summary"].items():
        v2v = row["client_audible_v2v_ms"]
        print(
            f"{name:9s} answered {row['answered']}/{row['turns']}: v2v p50 {v2v.get('p50')} ms, "
            f"p95 {v2v.get('p95')} ms (server p50 {row['server_v2v_ms'].get('p50')} ms)"
        )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
