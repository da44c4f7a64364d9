"""Voice-to-voice latency of the widget in headless Chromium: WebRTC against the
WebSocket fallback, on the same spoken questions in the same run.

    .venv/bin/python -m bench.browser                  # or: ./dev bench browser
    .venv/bin/python -m bench.browser --questions 2    # shorter
    .venv/bin/python -m bench.browser --questions 3 --rounds 2   # WebRTC, WS, WS, WebRTC

Starts the production topology on this machine (bench/topology.py: daphne and a
separate inference worker on Redis, WebRTC media on loopback), serves a
customer's page with the one-line widget snippet from another port
(bench/pagehost.py), and calls from it in headless Chromium whose fake
microphone plays one WAV: a few spoken questions (Piper and espeak-ng voices,
bench/questions.py) separated by long silences, 48 kHz mono PCM16 with +-1 LSB
of dither (digital zero is not what a microphone gives, and changes what
Chromium sends). One call per transport and round, a fresh browser each, so each
call hears the file from its start: the widget over WebRTC and with
`data-transport="websocket"`, alternating ABBA over `--rounds`, after one
warm-up question over /v1/realtime that neither transport counts.

Times are taken on the page's own audio clock by an init script
(bench/browser_probe.js) that taps the widget's AudioContext: the end of each
question on the microphone stream the widget sends (after Chromium's audio
processing), and the first audible reply sample the page plays (the remote
WebRTC track the widget's <audio> element plays, or the widget's WebSocket
player node). v2v = first reply sample over 2 % of full scale - end of the
last 10 ms window of the question over -40 dBFS. Beside it: the server's own
spans for the same turn (response.done's `latency`, as the page received it),
so client - server is the transports' and the browser's share; for WebRTC,
the peer's getStats() (NetEq's jitter buffer, concealment, playout delay).
Writes bench/results/browser-<time>.json and browser-latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voiceapp.engine.audio import resample

from .latency import save_report, stats
from .load import proc_cpu_s
from .pagehost import CHROMIUM, PageHost, chromium_args, serve_pages
from .questions import RATE as QUESTION_RATE
from .questions import Question, load_questions
from .topology import ROOT, Topology, add_database_argument

MIC_RATE = 48000
PROBE = Path(__file__).with_name("browser_probe.js")
TRANSPORTS = ("webrtc", "websocket")
# Spoken in this order, the voices alternating; "paused" is left out: a reply to
# its first half would be timed from the middle of the question.
ORDER = ("capital", "weather", "book", "space", "hours", "password_long", "email_long")
QUESTION_GAP_S = 1.2  # mic runs closer than this are one question
WIDGET = "window.voiceAgentWidgets && window.voiceAgentWidgets[0]"
INSTRUCTIONS = "You are a helpful assistant. Answer in one short sentence."


# ----- the microphone ---------------------------------------------------------


@dataclass(frozen=True)
class MicFile:
    path: Path
    seconds: float
    questions: list[dict[str, Any]]  # name, voice, text, speech_end_s (in the file)


def write_mic_wav(
    path: Path, questions: list[Question], lead_s: float, gap_s: float, seed: int = 1
) -> MicFile:
    """`questions` spoken one after another, `lead_s` of silence first and `gap_s`
    after each, as 48 kHz mono PCM16 with +-1 LSB of dither throughout."""
    pieces = [np.zeros(int(lead_s * MIC_RATE), np.float32)]
    at = lead_s
    placed = []
    for q in questions:
        speech = resample(q.samples, QUESTION_RATE, MIC_RATE)
        pieces += [speech, np.zeros(int(gap_s * MIC_RATE), np.float32)]
        placed.append(
            {
                "name": q.name,
                "voice": q.voice,
                "text": q.text,
                "speech_end_s": round(at + q.speech_end_s, 3),
            }
        )
        at += len(speech) / MIC_RATE + gap_s
    audio = np.concatenate(pieces)
    pcm = np.round(np.clip(audio, -1, 1) * 32767).astype(np.int32)
    pcm += np.random.default_rng(seed).integers(-1, 2, size=len(pcm))
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(MIC_RATE)
        wav.writeframes(np.clip(pcm, -32768, 32767).astype("<i2").tobytes())
    return MicFile(path, len(audio) / MIC_RATE, placed)


# ----- what the page saw, turned into turns ---------------------------------


def _to_page_ms(clock: list[list[float]], ctx_s: float) -> float:
    """An AudioContext time as performance.now(), from the stamp nearest to it."""
    ctx_at, page_at, *_ = min(clock, key=lambda c: abs(c[0] - ctx_s))
    return page_at + 1000 * (ctx_s - ctx_at)


def turns_from(probe: dict[str, Any]) -> list[dict[str, Any]]:
    """One turn per question heard on the microphone: its end, the first loud reply
    sample after it (before the next question), and the server's figures for it.

    `probe` is what bench/browser_probe.js gathered: `mic` and `out` runs ([start,
    end], AudioContext seconds), `events` (performance.now() ms), `clock` stamps."""
    questions: list[list[float]] = []
    for start, end in probe["mic"]:
        if questions and start - questions[-1][1] < QUESTION_GAP_S:
            questions[-1][1] = end
        else:
            questions.append([start, end])
    clock = probe["clock"]
    events = probe["events"]
    turns = []
    for i, (start, end) in enumerate(questions):
        until = questions[i + 1][0] if i + 1 < len(questions) else float("inf")
        replies = [r for r in probe["out"] if end < r[0] < until]
        early = [r for r in probe["out"] if start <= r[0] <= end]
        turn: dict[str, Any] = {
            "speech_s": round(end - start, 3),
            "answered": bool(replies),
            "reply_during_question": bool(early),
            "client_v2v_ms": round(1000 * (replies[0][0] - end), 1) if replies else None,
            "server": {},
        }
        if clock:
            end_ms = _to_page_ms(clock, end)
            until_ms = _to_page_ms(clock, until) if until != float("inf") else float("inf")
            heard = [
                e
                for e in events
                if e["type"] == "conversation.item.input_audio_transcription.completed"
                and _to_page_ms(clock, start) < e["t"] < until_ms
            ]
            done = [
                e
                for e in events
                if e["type"] == "response.done"
                and e.get("latency")
                and end_ms < e["t"] < until_ms
                and e.get("status") == "completed"
            ]
            deltas = [
                e for e in events if e["type"] == "response.output_audio.delta" and e["t"] > end_ms
            ]
            turn["transcript"] = heard[0]["transcript"] if heard else ""
            if done:
                turn["server"] = done[0]["latency"]
            if replies and deltas and deltas[0]["t"] < until_ms:
                # WebSocket: the first delta's arrival against the first sample played
                turn["first_delta_ms"] = round(deltas[0]["t"] - end_ms, 1)
        server_v2v = turn["server"].get("v2v_ms")
        if turn["client_v2v_ms"] is not None and server_v2v is not None:
            turn["overhead_ms"] = round(turn["client_v2v_ms"] - server_v2v, 1)
        turns.append(turn)
    return turns


def jitter_figures(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """NetEq's figures over the call, from the last getStats() sample of the inbound
    audio (Chromium sums them over every sample it played)."""
    rows = [s for s in samples if s.get("inbound")]
    if not rows:
        return {}
    last = rows[-1]
    inbound = last["inbound"]
    emitted = inbound.get("jitterBufferEmittedCount") or 0
    out: dict[str, Any] = {"samples_emitted": emitted}
    if emitted:
        for name, key in (
            ("jitter_buffer_ms", "jitterBufferDelay"),
            ("jitter_buffer_target_ms", "jitterBufferTargetDelay"),
            ("jitter_buffer_minimum_ms", "jitterBufferMinimumDelay"),
        ):
            if key in inbound:
                out[name] = round(1000 * inbound[key] / emitted, 1)
    received = inbound.get("totalSamplesReceived") or 0
    if received:
        for name, key in (
            ("concealed_share", "concealedSamples"),
            ("inserted_for_deceleration_share", "insertedSamplesForDeceleration"),
            ("removed_for_acceleration_share", "removedSamplesForAcceleration"),
        ):
            if key in inbound:
                out[name] = round(inbound[key] / received, 4)
    for key in ("packetsReceived", "packetsLost", "jitter"):
        if key in inbound:
            out[key] = inbound[key]
    playout = last.get("playout") or {}
    if playout.get("totalSamplesCount"):
        out["playout_delay_ms"] = round(
            1000 * playout["totalPlayoutDelay"] / playout["totalSamplesCount"], 1
        )
    if last.get("rtt_s") is not None:
        out["rtt_ms"] = round(1000 * last["rtt_s"], 1)
    # the jitter buffer while replies played: between consecutive samples, the delay
    # added per sample emitted, where the stretch carried audio
    per_window = []
    for a, b in itertools.pairwise(rows):
        n = b["inbound"].get("jitterBufferEmittedCount", 0) - a["inbound"].get(
            "jitterBufferEmittedCount", 0
        )
        d = b["inbound"].get("jitterBufferDelay", 0) - a["inbound"].get("jitterBufferDelay", 0)
        if n > 0:
            per_window.append(1000 * d / n)
    if per_window:
        out["jitter_buffer_ms_windows"] = stats(per_window)
    return out


def summarize(turns: list[dict[str, Any]]) -> dict[str, Any]:
    answered = [t for t in turns if t["client_v2v_ms"] is not None]
    with_server = [t for t in answered if t.get("overhead_ms") is not None]
    return {
        "questions": len(turns),
        "answered": len(answered),
        "client_v2v_ms": stats([t["client_v2v_ms"] for t in answered]),
        "server_v2v_ms": stats([t["server"]["v2v_ms"] for t in with_server]),
        "overhead_ms": stats([t["overhead_ms"] for t in with_server]),
        **{
            f"server_{span}": stats([t["server"][span] for t in with_server if span in t["server"]])
            for span in ("endpoint_ms", "asr_ms", "llm_first_token_ms", "tts_first_audio_ms")
        },
        "first_delta_ms": stats([t["first_delta_ms"] for t in answered if "first_delta_ms" in t]),
    }


# ----- CPU: who had the machine during a call ----------------------------------


def machine_cpu_s() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from /proc/stat."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle, iowait
    clk = os.sysconf("SC_CLK_TCK")
    return (sum(ticks) - idle) / clk, sum(ticks) / clk


def chromium_pids(mic: Path) -> list[int]:
    """The browser playing `mic` and every process under it."""
    parents: dict[int, int] = {}
    roots = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        pid = int(proc.name)
        parents[pid] = int(stat[stat.rindex(")") + 2 :].split()[1])
        if str(mic).encode() in cmdline and b"--type=" not in cmdline:
            roots.append(pid)
    tree = set(roots)
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return sorted(tree)


class CpuMeter:
    """CPU seconds of the web process, the workers and the browser between `start()`
    and `stop()`, as shares of one core, and how busy the whole machine was."""

    def __init__(self, topo: Topology, mic: Path) -> None:
        self.topo = topo
        self.mic = mic

    def _read(self) -> dict[str, float]:
        out = {}
        for name, pid in self.topo.pids().items():
            out[name] = proc_cpu_s(pid)
        browser = 0.0
        for pid in chromium_pids(self.mic):
            try:
                browser += proc_cpu_s(pid)
            except OSError:  # gone meanwhile
                pass
        out["chromium"] = browser
        out["machine_busy"], out["machine_total"] = machine_cpu_s()
        return out

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._before = self._read()

    def stop(self) -> dict[str, float]:
        wall = time.monotonic() - self._t0
        after = self._read()
        shares = {
            name: round((after[name] - self._before[name]) / wall, 3)
            for name in after
            if not name.startswith("machine")
        }
        total = after["machine_total"] - self._before["machine_total"]
        busy = after["machine_busy"] - self._before["machine_busy"]
        shares["machine_busy_share"] = round(busy / total, 3) if total > 0 else 0.0
        return shares


# ----- one call in a browser ----------------------------------------------------


async def browser_call(
    playwright: Any, mic: MicFile, url: str, transport: str, wait_s: float, meter: CpuMeter
) -> dict[str, Any]:
    """Open the page in a fresh Chromium, call, listen for `wait_s`, hang up; what
    the probe saw and what the widget said."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    browser = await playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=chromium_args(mic.path)
    )
    console: list[str] = []
    try:
        context = await browser.new_context()
        page = await context.new_page()
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
        await page.add_init_script(path=str(PROBE))
        await page.goto(url)
        await page.locator("button.launcher").click()
        try:
            await page.wait_for_function(
                f"() => {{ const w = {WIDGET}; return !!w && w.state === 'listening'; }}",
                timeout=30_000,
            )
        except PlaywrightTimeout as exc:
            raise RuntimeError(f"the {transport} call did not connect: {console[-10:]}") from exc
        connected = time.monotonic()
        meter.start()
        # until the file has played once (the call connects while its lead silence plays)
        since_ms = await page.evaluate("() => performance.now() - window.__probe.micAt")
        await asyncio.sleep(max(0.0, wait_s - since_ms / 1000))
        # then the microphone is muted (the file would start again) and the last reply
        # may finish: the widget listens again once it has played and the response is done
        await page.evaluate(f"() => {WIDGET}.setMuted(true)")
        with contextlib.suppress(PlaywrightTimeout):
            await page.wait_for_function(
                f"() => {{ const w = {WIDGET}; return w.state === 'listening'"
                " && w.events[w.events.length - 1] !== 'response.created'; }",
                timeout=20_000,
            )
        seen_cpu = meter.stop()
        await page.evaluate("() => window.__probe.lastStats()")
        seen = await page.evaluate(
            "() => { const p = window.__probe;"
            f" const w = {WIDGET};"
            " return {mic: p.mic, out: p.out, events: p.events, stats: p.stats,"
            " clock: p.clock, errors: p.errors, mic_settings: p.micSettings || null,"
            " context: p.latency ? p.latency() : null,"
            " jitter_buffer_target: p.receiver ? p.receiver.jitterBufferTarget : null,"
            " widget: {transports: w.transports, states: w.states, state: w.state,"
            " output_peak: w.outputPeak, output_audible_ms: w.outputAudibleMs,"
            " jitter: w.call && w.call.jitter ? w.call.jitter : null}}; }"
        )
        seen["connected_s"] = round(time.monotonic() - connected, 1)
        seen["cpu"] = seen_cpu
        seen["connect_after_mic_ms"] = round(since_ms, 1)
        await page.locator("button.hangup").click()
        await context.close()
    finally:
        await browser.close()
    seen["console"] = console[-20:]
    return seen


def call_report(transport: str, seen: dict[str, Any]) -> dict[str, Any]:
    """One call's turns and figures."""
    report: dict[str, Any] = {
        "turns": turns_from(seen),
        "widget": seen["widget"],
        "mic_settings": seen["mic_settings"],
        "audio_context": seen["context"],
        "probe_errors": seen["errors"],
        "connect_after_mic_ms": seen["connect_after_mic_ms"],
        "cpu": seen["cpu"],  # shares of one core while the call was connected
        "console": seen["console"],
    }
    if seen["widget"]["transports"] != [transport]:
        report["error"] = f"the widget used {seen['widget']['transports']}, not {transport}"
    if transport == "webrtc":
        report["jitter"] = jitter_figures(seen["stats"])
        report["jitter_buffer_target"] = seen["jitter_buffer_target"]
        report["stats_series"] = seen["stats"]  # getStats() every 500 ms
    return report


def transport_report(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """A transport's calls, their turns summarized together."""
    return {
        "summary": summarize([t for c in calls for t in c["turns"]]),
        "calls": calls,
    }


# ----- the run ---------------------------------------------------------------------


def topology_env() -> dict[str, str]:
    return {
        "WEBRTC_LOOPBACK_ONLY": "1",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SESSION_START_RATE_LIMIT_PER_MIN": "100000",
        "INFERENCE_WAIT_BUDGET_MS": "1000000",
    }


def chromium_version() -> str:
    try:
        done = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=20)
        return done.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    by_name = {q.name: q for q in load_questions(ROOT / "bench" / ".cache")}
    chosen = [by_name[n] for n in (ORDER * 2)[: args.questions]]
    transports = args.transports.split(",")
    # ABBA...: a slow drift of the machine falls on both transports alike
    order = [
        t for r in range(args.rounds) for t in (transports if r % 2 == 0 else transports[::-1])
    ]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        mic = write_mic_wav(work / "mic.wav", chosen, args.lead_s, args.gap_s)
        warm_mic = write_mic_wav(work / "warm.wav", chosen[:1], args.lead_s, 5.0, seed=2)
        (work / "pages").mkdir()
        (work / "server").mkdir()
        with (
            Topology(work / "server", args.workers, topology_env(), args.database) as topo,
            serve_pages(work / "pages") as host,
        ):
            topo.patch_persona(
                {"instructions": INSTRUCTIONS, "temperature": 0.0, "max_reply_tokens": 40}
            )
            key = publishable_key(topo, host)
            calls: dict[str, list[dict[str, Any]]] = {t: [] for t in transports}
            meter = CpuMeter(topo, mic.path)
            async with async_playwright() as playwright:
                # The first turn of fresh workers is slow (the models' first run), and the
                # first widget call reads the persona's prompt into the LLM's cache: one
                # question from the widget first, which neither transport counts.
                print("warm-up: one question from the widget", flush=True)
                path = host.widget_page("warm", topo.base_url, key, "assistant")
                warm_seen = await browser_call(
                    playwright,
                    warm_mic,
                    host.url + path,
                    "warm-up",
                    warm_mic.seconds + 0.3,
                    CpuMeter(topo, warm_mic.path),
                )
                warm_up = turns_from(warm_seen)
                for transport in order:
                    attrs = {"transport": "websocket"} if transport == "websocket" else {}
                    path = host.widget_page(transport, topo.base_url, key, "assistant", **attrs)
                    print(f"{transport}: {len(chosen)} questions, {mic.seconds:.0f} s", flush=True)
                    seen = await browser_call(
                        playwright, mic, host.url + path, transport, mic.seconds + 0.3, meter
                    )
                    calls[transport].append(call_report(transport, seen))
                    print(format_call(transport, calls[transport][-1]), flush=True)
            results = {t: transport_report(c) for t, c in calls.items()}
            await asyncio.sleep(2)  # the web process writes its call records in the background
            records = topo.call_records()
    return {
        "mode": "browser",
        "machine": {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "chromium": chromium_version(),
            "load_average_before": [round(x, 2) for x in load_before],
        },
        "config": {
            "order": order,
            "questions": [q["name"] for q in mic.questions],
            "lead_s": args.lead_s,
            "gap_s": args.gap_s,
            "mic_seconds": round(mic.seconds, 2),
            "workers": args.workers,
            "database": args.database,
        },
        "mic": mic.questions,
        "warm_up": warm_up,
        "transports": results,
        "summary": summary(results),
        "call_records": records,
    }


def publishable_key(topo: Topology, host: PageHost) -> str:
    out = topo.manage(
        "create_publishable_key", "--org", topo.org_slug, "--origin", host.url, "--json"
    )
    return str(json.loads(out)["key"])


def summary(results: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for transport, r in results.items():
        s = r["summary"]
        out[transport] = {
            "answered": f"{s['answered']}/{s['questions']}",
            "client_v2v_p50": s["client_v2v_ms"]["p50"],
            "client_v2v_p95": s["client_v2v_ms"]["p95"],
            "server_v2v_p50": s["server_v2v_ms"]["p50"],
            "overhead_p50": s["overhead_ms"]["p50"],
        }
    rtc, ws = out.get("webrtc"), out.get("websocket")
    if rtc and ws and rtc["client_v2v_p50"] is not None and ws["client_v2v_p50"] is not None:
        out["webrtc_minus_websocket_p50_ms"] = round(
            rtc["client_v2v_p50"] - ws["client_v2v_p50"], 1
        )
    return out


def format_call(transport: str, r: dict[str, Any]) -> str:
    lines = [f"  {transport}: {sum(t['answered'] for t in r['turns'])}/{len(r['turns'])} answered"]
    if r.get("error"):
        lines.append(f"    error: {r['error']}")
    for t in r["turns"]:
        lines.append(
            f"    v2v {t['client_v2v_ms']!s:>7} ms  server {t['server'].get('v2v_ms')!s:>7} ms"
            f"  overhead {t.get('overhead_ms')!s:>6} ms  heard {t.get('transcript', '')!r}"
        )
    lines.append(f"    cpu (cores): {r['cpu']}")
    if r.get("jitter"):
        j = r["jitter"]
        lines.append(
            f"    NetEq: jitter buffer {j.get('jitter_buffer_ms')} ms (target"
            f" {j.get('jitter_buffer_target_ms')}, minimum {j.get('jitter_buffer_minimum_ms')}),"
            f" playout delay {j.get('playout_delay_ms')} ms, rtt {j.get('rtt_ms')} ms"
        )
    return "\n".join(lines)


def print_table(report: dict[str, Any]) -> None:
    print(
        f"{'transport':10} {'answered':>8} {'v2v p50':>8} {'v2v p95':>8}"
        f" {'server p50':>10} {'server p95':>10} {'over p50':>8} {'over p95':>8}"
    )
    for transport, r in report["transports"].items():
        s = r["summary"]
        c, v, o = s["client_v2v_ms"], s["server_v2v_ms"], s["overhead_ms"]
        print(
            f"{transport:10} {s['answered']:>4}/{s['questions']:<3} {c['p50']!s:>8} {c['p95']!s:>8}"
            f" {v['p50']!s:>10} {v['p95']!s:>10} {o['p50']!s:>8} {o['p95']!s:>8}"
        )
    diff = report["summary"].get("webrtc_minus_websocket_p50_ms")
    print(f"WebRTC - WebSocket, v2v p50: {diff} ms")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--questions", type=int, default=6, help="spoken questions per transport")
    p.add_argument("--transports", default=",".join(TRANSPORTS), help="called in this order")
    p.add_argument(
        "--rounds", type=int, default=1, help="calls per transport, in ABBA order (same file each)"
    )
    p.add_argument("--lead-s", type=float, default=3.0, help="silence before the first question")
    p.add_argument("--gap-s", type=float, default=9.0, help="silence after each question")
    p.add_argument("--workers", type=int, default=1, help="inference worker processes")
    add_database_argument(p)
    return p


def main(argv: list[str] | None = None) -> None:
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")
    report = asyncio.run(run(parser().parse_args(argv)))
    save_report(report, "browser", "browser-latest.json")
    print_table(report)


if __name__ == "__main__":
    main()
