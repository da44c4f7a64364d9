"""A load generator: concurrent WebSocket and WebRTC callers until the knee.

    .venv/bin/python -m bench.load                     # or: ./dev bench load
    .venv/bin/python -m bench.load --max 8 --max-calls 1000    # admission off: find the knee
    .venv/bin/python -m bench.load --steps 2,4,8 --keep-going  # the default pool: refusals

Runs the production topology on this machine (bench/topology.py: daphne and a
separate `manage.py inference_worker` on Redis, a throwaway Postgres database;
`--database sqlite` for a SQLite file),
then steps the number of simultaneous callers N = 1, 2, 3, ... up to `--max`.
At each step N callers start (a `--stagger-s` apart), alternating between the
stock `openai` SDK over `/v1/realtime` and an aiortc peer over
`/v1/realtime/calls` (`--transports`), and each speaks `--questions` of the
benchmark's spoken questions (bench/questions.py) at real-time pace, waiting
for each reply to play out before the next.

Per step it reports, per transport and together: voice-to-voice latency on the
client's clock (the last voiced sample sent -> the first reply audio received:
the first `response.output_audio.delta` on a WebSocket, the first loud frame of
the agent's track over WebRTC), refusals by code (`server_busy`,
`concurrency_limit`, ...), turns left unanswered, late and missing audio
frames; per process (web, worker, and this generator) the CPU used, as a share
of one core, and the resident memory; and the cost: CPU-seconds per
call-minute. The knee is the largest N such that every step up to N answered
every turn, refused nothing and kept the client's v2v p95 within
`--budget-ms`. Writes bench/results/load-<time>.json and load-latest.json.
docs/CAPACITY.md explains each figure and how to size a cluster from them.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from av import AudioFrame

from voiceapp.engine.tracing import SPAN_NAMES
from voiceapp.inference.capacity import ADVERTISE_EVERY_S

from .latency import save_report, stats
from .profile import PerfRecorder, split_by_stage, top_libraries
from .questions import RATE as WS_RATE
from .questions import Question, load_questions
from .rtc import FRAME, Client, loopback_only
from .rtc import RATE as RTC_RATE
from .topology import ROOT, Topology, add_database_argument
from .ws import LOUD, ask, prompt_of

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
TURN_TIMEOUT_S = 60.0
STAGES = ("asr", "llm", "tts")
# what the workers served, from their running totals (caption: live captions)
SERVICE_TOTALS = ("asr", "caption", "eou", "llm", "tts")
ADVERT_WAIT_S = ADVERTISE_EVERY_S + 0.5
KNEE = (
    "the largest N such that every step with 1..N simultaneous callers answered every "
    "turn, refused no call, had no caller fail, and kept the client-measured v2v p95 "
    "(all transports together) within the budget"
)


# ----- processes, read from /proc ---------------------------------------------


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc/<pid>/stat."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime (fields 14, 15)


def proc_rss_mb(pid: int) -> float:
    """Resident memory of a process in MiB, from /proc/<pid>/statm."""
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE / 2**20


class ProcessMeter:
    """CPU and memory of named processes between `start()` and `stop()`, sampled
    every `every_s` for the peak memory."""

    def __init__(self, pids: dict[str, int], every_s: float = 0.5) -> None:
        self.pids = pids
        self.every_s = every_s
        self._cpu0: dict[str, float] = {}
        self._rss_peak: dict[str, float] = {}
        self._t0 = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._cpu0 = {name: proc_cpu_s(pid) for name, pid in self.pids.items()}
        self._rss_peak = {name: proc_rss_mb(pid) for name, pid in self.pids.items()}
        self._task = asyncio.ensure_future(self._sample())

    async def _sample(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            for name, pid in self.pids.items():
                self._rss_peak[name] = max(self._rss_peak[name], proc_rss_mb(pid))

    async def stop(self) -> tuple[float, dict[str, dict[str, float]]]:
        """Seconds since `start()`, and each process's figures over them."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        wall = time.monotonic() - self._t0
        out = {}
        for name, pid in self.pids.items():
            cpu = proc_cpu_s(pid) - self._cpu0[name]
            out[name] = {
                "cpu_s": round(cpu, 3),
                "cpu_share": round(cpu / wall, 4) if wall > 0 else 0.0,
                "rss_mb_peak": round(max(self._rss_peak[name], proc_rss_mb(pid)), 1),
                "rss_mb_end": round(proc_rss_mb(pid), 1),
            }
        return wall, out


# ----- reply audio: late and missing frames ----------------------------------


class Playout:
    """A WebSocket reply played as it arrives: playback starts `slack_s` after the first
    delta and runs at real time. A delta that arrives after its turn to play stalls the
    player (counted, with the time lost) and playback resumes from it."""

    def __init__(self, slack_s: float) -> None:
        self.slack_s = slack_s
        self.start: float | None = None
        self.played_s = 0.0  # audio before the next delta
        self.chunks = 0
        self.late = 0
        self.stall_s = 0.0

    def on_audio(self, arrival: float, n_bytes: int) -> None:
        if self.start is None:
            self.start = arrival + self.slack_s
        due = self.start + self.played_s
        if arrival > due:
            self.late += 1
            self.stall_s += arrival - due
            self.start += arrival - due
        self.chunks += 1
        self.played_s += n_bytes / 2 / WS_RATE

    @property
    def ends_at(self) -> float:
        return (self.start or time.monotonic()) + self.played_s


@dataclass
class Turn:
    question: str
    answered: bool
    client_v2v_ms: float | None
    server: dict[str, Any]
    audio: dict[str, Any] = field(default_factory=dict)
    audible_v2v_ms: float | None = None  # to the first loud sample (WebRTC: = client_v2v_ms)
    status: str = ""  # the reply's response.done status
    transcript: str = ""  # what the server heard (WebSocket callers)
    timeline: dict[str, float] = field(default_factory=dict)  # response.timeline
    # the prompt the reply's LLM read and how much of it its context held (ws.prompt_of)
    prompt: dict[str, int | None] = field(default_factory=dict)


@dataclass
class CallerResult:
    transport: str
    refused: str | None = None  # the error code a refused call got
    error: str | None = None  # what went wrong otherwise
    connected_s: float = 0.0
    turns: list[Turn] = field(default_factory=list)
    frames: dict[str, Any] = field(default_factory=dict)  # WebRTC: the whole call's track


def questions_for(index: int, questions: list[Question], count: int) -> list[Question]:
    """Caller `index`'s questions: the set rotated, so callers say different things."""
    ring = itertools.islice(itertools.cycle(questions), index, None)
    return list(itertools.islice(ring, count))


# ----- a WebSocket caller ---------------------------------------------------


async def ws_caller(
    base_url: str, key: str, questions: list[Question], slack_s: float
) -> CallerResult:
    from openai import AsyncOpenAI

    result = CallerResult("websocket")
    client = AsyncOpenAI(base_url=f"{base_url}/v1", api_key=key, max_retries=0)
    async with client.realtime.connect(model="assistant") as conn:
        first = await conn.recv()
        if first.type == "error":
            result.refused = first.error.code or "error"
            return result
        connected = time.monotonic()
        try:
            for question in questions:
                playout = Playout(slack_s)
                try:
                    turn = await ask(conn, question, on_audio=playout.on_audio)
                except TimeoutError:
                    result.turns.append(Turn(question.name, False, None, {}))
                    break
                result.turns.append(
                    Turn(
                        question.name,
                        turn["client_v2v_ms"] is not None,
                        turn["client_v2v_ms"],
                        turn["server"],
                        audible_v2v_ms=turn.get("client_audible_v2v_ms"),
                        status=str(turn.get("status") or ""),
                        transcript=str(turn.get("transcript") or ""),
                        timeline=turn.get("timeline") or {},
                        prompt=turn.get("prompt") or {},
                        audio={
                            "chunks": playout.chunks,
                            "late": playout.late,
                            "stall_ms": round(1000 * playout.stall_s, 1),
                        },
                    )
                )
                # the caller listens to the reply before asking the next question
                await asyncio.sleep(max(0.0, playout.ends_at - time.monotonic()) + 0.5)
        finally:
            result.connected_s = time.monotonic() - connected
    return result


# ----- a WebRTC caller ------------------------------------------------------


class RtcCaller(Client):
    """An aiortc caller that keeps, of what it hears, only timing: the first loud
    frame after its speech ended, and each frame's lateness against the 20 ms
    cadence of its RTP timestamps."""

    def __init__(self) -> None:
        super().__init__()
        self.first_voice_at: float | None = None
        self.last_loud_at = 0.0
        self.offsets: list[float] = []  # arrival - RTP time, per frame
        self.missing = 0
        self._last_pts: int | None = None
        self._frame = asyncio.Event()

    async def reply_played(self, quiet_s: float) -> None:
        """Until the reply was heard and the track has been quiet for `quiet_s`
        (the server sends a frame every 20 ms, silence included)."""
        while self.first_voice_at is None or time.monotonic() - self.last_loud_at < quiet_s:
            self._frame.clear()
            await self._frame.wait()

    def on_frame(self, arrival: float, frame: AudioFrame) -> None:
        pts = int(frame.pts or 0)
        if self._last_pts is not None and pts > self._last_pts + FRAME:
            self.missing += (pts - self._last_pts) // FRAME - 1
        self._last_pts = pts if self._last_pts is None else max(pts, self._last_pts)
        self.offsets.append(arrival - pts / RTC_RATE)
        if np.abs(frame.to_ndarray()).max() / 32768.0 > LOUD:
            self.last_loud_at = arrival
            spoke = self.mic.marked_at
            if self.first_voice_at is None and spoke is not None and arrival > spoke:
                self.first_voice_at = arrival
        self._frame.set()

    def frame_report(self, slack_s: float) -> dict[str, Any]:
        offsets = np.array(self.offsets)
        if not len(offsets):
            return {"frames": 0, "late": 0, "missing": self.missing}
        lateness = offsets - offsets.min()
        return {
            "frames": len(offsets),
            "late": int((lateness > slack_s).sum()),
            "missing": self.missing,
            "lateness_p99_ms": round(1000 * float(np.percentile(lateness, 99)), 1),
        }


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _error_code(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return "error"


async def rtc_caller(
    base_url: str, key: str, questions: list[Question], slack_s: float
) -> CallerResult:
    result = CallerResult("webrtc")
    status, body = await asyncio.to_thread(
        _post,
        f"{base_url}/v1/realtime/client_secrets",
        json.dumps({"session": {"type": "realtime", "model": "assistant"}}).encode(),
        {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    if status != 200:
        result.refused = _error_code(body)
        return result
    secret = json.loads(body)["value"]
    peer = RtcCaller()
    try:
        status, body = await asyncio.to_thread(
            _post,
            f"{base_url}/v1/realtime/calls?model=assistant",
            (await peer.offer()).encode(),
            {"Authorization": f"Bearer {secret}", "Content-Type": "application/sdp"},
        )
        if status != 201:
            result.refused = _error_code(body)
            return result
        await peer.accept(body.decode())
        await peer.wait_for(lambda e: e.get("type") == "session.created", 20)
        connected = time.monotonic()
        try:
            for question in questions:
                result.turns.append(await _rtc_turn(peer, question))
                if not result.turns[-1].answered:
                    break
        finally:
            result.connected_s = time.monotonic() - connected
        result.frames = peer.frame_report(slack_s)
    finally:
        await peer.close()
    return result


async def _rtc_turn(peer: RtcCaller, question: Question) -> Turn:
    lead_s = 0.4
    audio = np.concatenate([np.zeros(int(lead_s * WS_RATE), np.float32), question.samples])
    samples = np.interp(
        np.arange(len(audio) * RTC_RATE // WS_RATE) * WS_RATE / RTC_RATE,
        np.arange(len(audio)),
        audio,
    ).astype(np.float32)
    start = len(peer.events)
    peer.first_voice_at = None
    peer.mic.say(samples, mark_s=lead_s + question.speech_end_s)
    try:
        _, done = await peer.wait_for(
            lambda e: e.get("type") == "response.done", TURN_TIMEOUT_S, start
        )
    except TimeoutError:
        return Turn(question.name, False, None, {})
    try:
        async with asyncio.timeout(30):
            await peer.reply_played(quiet_s=0.5)
    except TimeoutError:  # a reply without audio, or audio that never stopped
        return Turn(question.name, False, None, done["response"].get("latency") or {})
    spoke, heard = peer.mic.marked_at, peer.first_voice_at
    v2v = round(1000 * (heard - spoke), 1) if spoke is not None and heard is not None else None
    await asyncio.sleep(0.5)
    return Turn(
        question.name,
        v2v is not None,
        v2v,
        done["response"].get("latency") or {},
        audible_v2v_ms=v2v,
        status=str(done["response"].get("status") or ""),
        timeline=done["response"].get("timeline") or {},
        prompt=prompt_of(done["response"].get("usage") or {}),
    )


# ----- a step ---------------------------------------------------------------


def summarize_turns(turns: list[Turn]) -> dict[str, Any]:
    answered = [t for t in turns if t.answered and t.client_v2v_ms is not None]
    out: dict[str, Any] = {
        "turns": len(turns),
        "answered": len(answered),
        "client_v2v_ms": stats([float(t.client_v2v_ms or 0) for t in answered]),
        # to the first loud sample on both transports: the fair comparison between them
        "client_audible_v2v_ms": stats(
            [float(t.audible_v2v_ms) for t in answered if t.audible_v2v_ms is not None]
        ),
    }
    for span in SPAN_NAMES[:-1]:
        values = [t.server[span] for t in answered if t.server.get(span) is not None]
        out[f"server_{span}"] = stats(values)["p50"]
    return out


def audio_summary(callers: list[CallerResult]) -> dict[str, Any]:
    ws = [t.audio for c in callers if c.transport == "websocket" for t in c.turns if t.audio]
    rtc = [c.frames for c in callers if c.transport == "webrtc" and c.frames]
    return {
        "websocket": {
            "chunks": sum(a["chunks"] for a in ws),
            "late": sum(a["late"] for a in ws),
            "stall_ms": round(sum(a["stall_ms"] for a in ws), 1),
        },
        "webrtc": {
            "frames": sum(f["frames"] for f in rtc),
            "late": sum(f["late"] for f in rtc),
            "missing": sum(f["missing"] for f in rtc),
        },
    }


async def worker_adverts(topo: Topology) -> list[Any]:
    """The workers' capacity adverts, as published last."""
    from voiceapp.inference.capacity import RedisPoolRegistry

    registry = RedisPoolRegistry(topo.env["REDIS_URL"], topo.env["CHANNELS_PREFIX"])
    try:
        return await registry.adverts()
    finally:
        await registry.aclose()


async def worker_stages(topo: Topology) -> dict[str, dict[str, float]]:
    """Each kind's requests over the workers' last 30 s, from their capacity adverts."""
    adverts = await worker_adverts(topo)
    out: dict[str, dict[str, float]] = {}
    for kind in STAGES:
        rows = [a.stats.get(kind, {}) for a in adverts]
        requests = sum(r.get("requests", 0) for r in rows)
        service_s = sum(r.get("requests", 0) * r.get("service_mean_ms", 0) for r in rows) / 1000
        out[kind] = {
            "requests": requests,
            "service_s": round(service_s, 3),
            "wait_p95_ms": max((r.get("wait_p95_ms", 0.0) for r in rows), default=0.0),
        }
    return out


async def worker_totals(topo: Topology) -> dict[str, dict[str, float]]:
    """What the workers have served since they started, per kind."""
    adverts = await worker_adverts(topo)
    out: dict[str, dict[str, float]] = {}
    for kind in SERVICE_TOTALS:
        rows = [a.totals.get(kind, {}) for a in adverts]
        out[kind] = {
            field: round(sum(r.get(field, 0.0) for r in rows), 3)
            for field in ("requests", "service_s", "audio_s")
        }
    return out


def served_during(
    before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]
) -> dict[str, dict[str, float]]:
    return {
        kind: {
            field: round(after[kind][field] - before.get(kind, {}).get(field, 0.0), 3)
            for field in after[kind]
        }
        for kind in after
    }


def redis_pid() -> int | None:
    """The local redis-server's pid, if one runs here."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "redis-server":
                    return int(entry.name)
            except OSError:
                continue
    return None


def profile_report(
    samples: Any,
    pids: dict[str, int],
    processes: dict[str, dict[str, float]],
    served: dict[str, dict[str, float]],
    call_minutes: float,
) -> dict[str, Any]:
    """CPU-seconds per call-minute by process and stage (bench/profile.py), with the
    workers' ASR split into live captions and turns' readings, and llama.cpp into
    replies and end-of-turn scores, by their service time."""
    cpu_s = {name: f["cpu_s"] for name, f in processes.items()}
    by_stage = split_by_stage(samples, pids, cpu_s)
    per_min: dict[str, dict[str, float]] = {}
    for name, stages in by_stage.items():
        per_min[name] = {
            stage: round(seconds / call_minutes, 2) if call_minutes else 0.0
            for stage, seconds in stages.items()
            if stage != "samples"
        }
    partial = served.get("caption", {}).get("service_s", 0.0)
    asr = served.get("asr", {}).get("service_s", 0.0) + partial
    llm = served.get("llm", {}).get("service_s", 0.0)
    eou = served.get("eou", {}).get("service_s", 0.0)
    return {
        "cpu_s": by_stage,
        "cpu_s_per_call_min": per_min,
        "libraries": top_libraries(samples, pids),
        "served": served,
        "asr_partial_share": round(partial / asr, 3) if asr else None,
        "eou_share_of_llama": round(eou / (llm + eou), 3) if llm + eou else None,
    }


async def run_step(
    topo: Topology, calls: int, questions: list[Question], args: argparse.Namespace
) -> dict[str, Any]:
    transports = args.transports.split(",")
    pids = {**topo.pids(), "generator": os.getpid()}
    recorder = None
    if args.profile:
        redis = redis_pid()
        if redis is not None:
            pids["redis"] = redis
        served_before = await worker_totals(topo)
        recorder = PerfRecorder(
            {n: p for n, p in pids.items() if n != "generator"},
            Path(tempfile.gettempdir()) / f"bench-load-{os.getpid()}-{calls}.perf",
        )
        recorder.start()
    meter = ProcessMeter(pids)
    slack_s = args.slack_ms / 1000

    async def one(index: int) -> CallerResult:
        await asyncio.sleep(index * args.stagger_s)
        transport = transports[index % len(transports)]
        mine = questions_for(index + calls, questions, args.questions)
        make = ws_caller if transport == "websocket" else rtc_caller
        try:
            return await make(topo.base_url, topo.key, mine, slack_s)
        except Exception as exc:  # one caller's failure is a figure of the step
            return CallerResult(transport, error=f"{type(exc).__name__}: {exc}"[:300])

    meter.start()
    callers = await asyncio.gather(*(one(i) for i in range(calls)))
    wall_s, processes = await meter.stop()
    stages = await worker_stages(topo)
    report = step_report(calls, list(callers), processes, stages, wall_s, args)
    if recorder is not None:
        samples = await asyncio.to_thread(recorder.stop)
        await asyncio.sleep(ADVERT_WAIT_S)  # the workers' next advert has the step's totals
        served = served_during(served_before, await worker_totals(topo))
        report["profile"] = profile_report(
            samples, recorder.pids, processes, served, report["call_minutes"]
        )
    return report


def step_report(
    calls: int,
    callers: list[CallerResult],
    processes: dict[str, dict[str, float]],
    stages: dict[str, dict[str, float]],
    wall_s: float,
    args: argparse.Namespace,
) -> dict[str, Any]:
    turns = [t for c in callers for t in c.turns]
    refusals: dict[str, int] = {}
    for c in callers:
        if c.refused:
            refusals[c.refused] = refusals.get(c.refused, 0) + 1
    call_minutes = sum(c.connected_s for c in callers) / 60
    overall = summarize_turns(turns)
    p95 = overall["client_v2v_ms"]["p95"]
    unanswered = sum(not t.answered for t in turns)
    errors = [c.error for c in callers if c.error]
    passed = (
        not refusals
        and not errors
        and unanswered == 0
        and p95 is not None
        and p95 <= args.budget_ms
    )
    cost = {}
    if call_minutes > 0:
        for name, figures in processes.items():
            cost[f"{name}_cpu_s_per_call_min"] = round(figures["cpu_s"] / call_minutes, 2)
    service_total = sum(s["service_s"] for s in stages.values())
    worker_cpu = sum(f["cpu_s"] for n, f in processes.items() if n.startswith("worker"))
    if call_minutes > 0 and service_total > 0:
        for s in stages.values():
            share = s["service_s"] / service_total
            s["cpu_s_per_call_min"] = round(worker_cpu * share / call_minutes, 2)
    return {
        "calls": calls,
        "passed": passed,
        "wall_s": round(wall_s, 1),
        "call_minutes": round(call_minutes, 3),
        "all": overall,
        "by_transport": {
            name: summarize_turns([t for c in callers if c.transport == name for t in c.turns])
            for name in sorted({c.transport for c in callers})
        },
        "refusals": refusals,
        "refused_calls": sum(refusals.values()),
        "unanswered_turns": unanswered,
        "unanswered": [
            {
                "transport": c.transport,
                "question": t.question,
                "status": t.status,
                "heard": t.transcript,
            }
            for c in callers
            for t in c.turns
            if not t.answered
        ],
        "errors": errors,
        # each turn, for the slow ones' causes
        "turns": [
            {
                "caller": index,
                "transport": c.transport,
                "question": t.question,
                "status": t.status,
                "heard": t.transcript,
                "client_v2v_ms": t.client_v2v_ms,
                "server": {k: v for k, v in t.server.items() if v is not None},
                "timeline": t.timeline,
                "prompt": t.prompt,
            }
            for index, c in enumerate(callers)
            for t in c.turns
        ],
        "audio": audio_summary(callers),
        "processes": processes,
        "cost": cost,
        "stages": stages,
    }


# ----- the ramp ---------------------------------------------------------------


def knee_of(steps: list[dict[str, Any]]) -> int:
    knee = 0
    for step in sorted(steps, key=lambda s: s["calls"]):
        if not step["passed"]:
            break
        knee = step["calls"]
    return knee


async def idle_figures(topo: Topology, seconds: float) -> dict[str, dict[str, float]]:
    meter = ProcessMeter(topo.pids())
    meter.start()
    await asyncio.sleep(seconds)
    _, figures = await meter.stop()
    return figures


def topology_env(args: argparse.Namespace) -> dict[str, str]:
    return {
        "INFERENCE_MAX_CALLS": str(args.max_calls),
        "INFERENCE_WAIT_BUDGET_MS": str(args.wait_budget_ms),
        # only the pool refuses: the org's cap and the secret rate limit stay out of the way
        "ORG_MAX_CONCURRENT_CALLS": "10000",
        "SESSION_START_RATE_LIMIT_PER_MIN": "100000",
        "WEBRTC_LOOPBACK_ONLY": "1",
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    steps_wanted = (
        [int(n) for n in args.steps.split(",")] if args.steps else list(range(1, args.max + 1))
    )
    questions = load_questions(ROOT / "bench" / ".cache")
    loopback_only()
    steps: list[dict[str, Any]] = []
    load_before = os.getloadavg()
    with (
        tempfile.TemporaryDirectory() as tmp,
        Topology(Path(tmp), args.workers, topology_env(args), args.database) as topo,
    ):
        devices = await topo.worker_devices()
        idle = await idle_figures(topo, args.idle_s)
        for calls in steps_wanted:
            print(f"step: {calls} callers", flush=True)
            step = await run_step(topo, calls, questions, args)
            steps.append(step)
            print(format_step(step), flush=True)
            if not step["passed"] and not args.keep_going:
                break
            await asyncio.sleep(args.settle_s)
    knee = knee_of(steps)
    at_knee = next((s for s in steps if s["calls"] == knee), None)
    return {
        "mode": "load",
        "machine": {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "load_average_before": [round(x, 2) for x in load_before],
        },
        # where each worker's models ran, from the worker's own capacity advert
        "devices": devices,
        "config": {
            "max_calls": args.max_calls,
            "wait_budget_ms": args.wait_budget_ms,
            "workers": args.workers,
            "database": args.database,
            "transports": args.transports.split(","),
            "questions_per_caller": args.questions,
            "budget_ms": args.budget_ms,
            "slack_ms": args.slack_ms,
            "stagger_s": args.stagger_s,
        },
        "knee": {"calls": knee, "definition": KNEE.replace("the budget", f"{args.budget_ms} ms")},
        "idle": idle,
        "cost_at_knee": at_knee["cost"] if at_knee else {},
        "summary": {
            "knee": knee,
            "steps": [summary_row(s) for s in steps],
        },
        "steps": steps,
    }


def summary_row(step: dict[str, Any]) -> dict[str, Any]:
    v2v = step["all"]["client_v2v_ms"]
    procs = step["processes"]
    return {
        "calls": step["calls"],
        "passed": step["passed"],
        "v2v_p50": v2v["p50"],
        "v2v_p95": v2v["p95"],
        "v2v_p99": v2v["p99"],
        "refused": step["refused_calls"],
        "unanswered": step["unanswered_turns"],
        **{f"{name}_cpu": f["cpu_share"] for name, f in procs.items()},
        **{f"{name}_rss_mb": f["rss_mb_peak"] for name, f in procs.items()},
    }


def format_step(step: dict[str, Any]) -> str:
    lines = [
        f"  N={step['calls']} {'PASS' if step['passed'] else 'FAIL'}"
        f"  refused={step['refusals'] or 0}  unanswered={step['unanswered_turns']}"
        f"  call-min={step['call_minutes']}"
    ]
    for name, s in step["by_transport"].items():
        v = s["client_v2v_ms"]
        lines.append(
            f"    {name:9} v2v p50/p95/p99 {v['p50']}/{v['p95']}/{v['p99']} ms"
            f"  ({s['answered']}/{s['turns']} answered)"
        )
    audio = step["audio"]
    lines.append(
        f"    audio: ws late {audio['websocket']['late']}/{audio['websocket']['chunks']} chunks"
        f" (stall {audio['websocket']['stall_ms']} ms);"
        f" webrtc late {audio['webrtc']['late']}/{audio['webrtc']['frames']} frames,"
        f" missing {audio['webrtc']['missing']}"
    )
    for name, f in step["processes"].items():
        per_min = step["cost"].get(f"{name}_cpu_s_per_call_min")
        lines.append(
            f"    {name:9} cpu {100 * f['cpu_share']:.0f}% of a core  rss {f['rss_mb_peak']} MiB"
            f"  {per_min} cpu-s/call-min"
        )
    profile = step.get("profile")
    if profile:
        lines.append(
            "    cpu-s per call-min by stage"
            f" (ASR: {profile['asr_partial_share']} of it live captions;"
            f" llama: {profile['eou_share_of_llama']} of it end-of-turn scores):"
        )
        for name, stages in profile["cpu_s_per_call_min"].items():
            parts = ", ".join(f"{stage} {value}" for stage, value in stages.items())
            lines.append(f"      {name:8} {parts}")
    for error in step["errors"]:
        lines.append(f"    error: {error}")
    return "\n".join(lines)


def print_table(report: dict[str, Any]) -> None:
    header = (
        f"{'N':>3} {'ok':>4} {'p50':>7} {'p95':>7} {'p99':>7} {'refused':>7} "
        f"{'web cpu':>8} {'wrk cpu':>8} {'web MiB':>8} {'wrk MiB':>8} "
        f"{'web s/cm':>8} {'wrk s/cm':>8}"
    )
    print(header)
    for step in report["steps"]:
        v = step["all"]["client_v2v_ms"]
        p = step["processes"]
        workers = [f for n, f in p.items() if n.startswith("worker")]
        cost = step["cost"]
        worker_cost = sum(v for k, v in cost.items() if k.startswith("worker"))
        print(
            f"{step['calls']:>3} {'yes' if step['passed'] else 'no':>4} "
            f"{v['p50']!s:>7} {v['p95']!s:>7} {v['p99']!s:>7} {step['refused_calls']:>7} "
            f"{p['web']['cpu_share']:>8.2f} {sum(f['cpu_share'] for f in workers):>8.2f} "
            f"{p['web']['rss_mb_peak']:>8.0f} {sum(f['rss_mb_peak'] for f in workers):>8.0f} "
            f"{cost.get('web_cpu_s_per_call_min', '-')!s:>8} {round(worker_cost, 2)!s:>8}"
        )
    print(f"knee: {report['knee']['calls']} ({report['knee']['definition']})")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--max", type=int, default=6, help="ramp 1..MAX simultaneous callers")
    p.add_argument("--steps", default="", help="explicit steps instead, e.g. 2,4,8")
    p.add_argument(
        "--wait-budget-ms",
        type=float,
        default=250.0,
        help="INFERENCE_WAIT_BUDGET_MS for the worker (large: no refusal for queueing)",
    )
    p.add_argument(
        "--max-calls",
        type=int,
        default=0,
        help="INFERENCE_MAX_CALLS for the worker (0: its default, cores x calls per core; "
        "large: admission effectively off)",
    )
    p.add_argument("--workers", type=int, default=1, help="inference worker processes")
    add_database_argument(p)
    p.add_argument("--questions", type=int, default=3, help="questions each caller asks")
    p.add_argument("--transports", default="websocket,webrtc", help="callers cycle through these")
    p.add_argument("--budget-ms", type=float, default=900.0, help="v2v p95 budget of the knee")
    p.add_argument("--slack-ms", type=float, default=100.0, help="audio later than this is late")
    p.add_argument("--stagger-s", type=float, default=0.3, help="between callers' starts")
    p.add_argument("--settle-s", type=float, default=3.0, help="pause between steps")
    p.add_argument("--idle-s", type=float, default=5.0, help="idle measurement before the ramp")
    p.add_argument("--keep-going", action="store_true", help="run every step past the knee")
    p.add_argument(
        "--profile",
        action="store_true",
        help="record the servers with perf: CPU per call-minute by stage (bench/profile.py)",
    )
    return p


def main(argv: list[str] | None = None) -> None:
    report = asyncio.run(run(parser().parse_args(argv)))
    save_report(report, "load", "load-latest.json")
    print_table(report)


if __name__ == "__main__":
    main()
