"""Conversation quality with the default model: grounded answers, declines, loops, language.

    .venv/bin/python -m bench.quality             # or: ./dev bench quality
    .venv/bin/python -m bench.quality --repeat 1 --passes grounded

Rosie's Bakery (bench/bakery.py; `--persona garage`: Kim's Garage, held out from
the retriever's tuning) is asked every question of its set, each in a
fresh call, as typed caller turns answered by the engine's `VoiceCall` in
text-only mode (the same prompt, retrieval and guard as a voice call; no audio).
Passes, in the same run on the same model:
- `baseline`: the facts written into the instructions and the plain prompt of
  earlier versions (no retrieval, no worked examples, no guard): what a business
  got before persona knowledge existed;
- `instructions`: the same instructions, with retrieval of the sentences that
  state facts and the guard;
- `grounded`: the facts as structured persona knowledge.
Then one long call per pass (every question in turn) for language drift, loops
and declines late in a call. Last, the LLM's first-token time on the turns that
still reach it (small talk between fact questions): today's plain prompt against
the grounded one, two calls interleaved turn by turn so both see the same machine.
Writes bench/results/quality-<persona>-<time>.json and quality-<persona>-latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from voiceapp.engine.call import CallConfig, VoiceCall
from voiceapp.engine.frames import ResponseDone
from voiceapp.engine.guard import _foreign
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.llm import LLMOptions
from voiceapp.engine.models import ModelSettings, default_voice, load_inference
from voiceapp.engine.vad import SileroModel

from . import bakery, garage
from .bakery import Question, declined, grounded

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PASSES = ("baseline", "instructions", "grounded")
PERSONAS = {"bakery": bakery, "garage": garage}  # garage: held out from tuning
persona = bakery


def instructions_with_facts() -> str:
    lines = "\n".join(f"- {f.answer}" for f in persona.FACTS)
    return f"{persona.INSTRUCTIONS}\n\nFacts:\n{lines}"


def pass_config(name: str, *, temperature: float, max_tokens: int) -> CallConfig:
    """The persona as each pass sees it (persona defaults: 120 tokens, temperature 0.6)."""
    base = CallConfig(
        voice=default_voice(),
        llm=LLMOptions(max_tokens=max_tokens, temperature=temperature),
        speak=False,
        speculative=False,
    )
    if name == "baseline":
        return replace(
            base,
            instructions=instructions_with_facts(),
            grounding=False,
            llm=replace(base.llm, repeat_penalty=1.0),
        )
    if name == "instructions":
        return replace(base, instructions=instructions_with_facts())
    return replace(base, instructions=persona.INSTRUCTIONS, facts=persona.FACTS)


@dataclass
class Answer:
    question: str
    answerable: bool
    reply: str
    ok: bool
    first_token_ms: float | None
    tokens: int


@dataclass
class PassResult:
    name: str
    answers: list[Answer] = field(default_factory=list)
    long_call: list[Answer] = field(default_factory=list)

    def rate(self, answerable: bool, answers: list[Answer] | None = None) -> float:
        group = [a for a in (answers or self.answers) if a.answerable is answerable]
        return sum(a.ok for a in group) / max(1, len(group))

    def summary(self) -> dict[str, Any]:
        long_first = [a.first_token_ms for a in self.long_call if a.first_token_ms is not None]
        loops = [a for a in self.answers + self.long_call if _looks_looped(a.reply)]
        foreign = [a for a in self.long_call if _foreign(a.reply, "en")]
        return {
            "grounded_rate": round(self.rate(True), 3),
            "declined_rate": round(self.rate(False), 3),
            "long_call_grounded_rate": round(self.rate(True, self.long_call), 3),
            "long_call_declined_rate": round(self.rate(False, self.long_call), 3),
            "long_call_first_token_p50_ms": _p(long_first, 50),
            "long_call_first_token_p95_ms": _p(long_first, 95),
            "replies_over_40_words": sum(len(a.reply.split()) > 40 for a in self.answers),
            "looped_replies": len(loops),
            "non_english_replies_in_long_call": len(foreign),
        }


def _p(values: list[float], q: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 1)
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1], 1)


def _looks_looped(reply: str) -> bool:
    words = reply.lower().split()
    return len(words) >= 12 and len(set(words)) < len(words) / 3


def _grade(question: Question, reply: str) -> bool:
    return grounded(question, reply) if question.answerable else declined(reply)


async def ask(call: VoiceCall, question: Question) -> Answer:
    call.add_message("user", question.text)
    call.create_response()
    while True:
        frame = await call.next_frame(60.0)
        if frame is None:
            raise RuntimeError(f"no reply to {question.text!r}")
        if isinstance(frame, ResponseDone):
            reply = frame.text
            return Answer(
                question.text,
                question.answerable,
                reply,
                _grade(question, reply),
                frame.latency.get("llm_first_token_ms"),
                int(frame.usage.get("output_tokens", 0)),
            )


async def run_pass(
    name: str, models: LocalInference, vad: SileroModel, args: argparse.Namespace
) -> PassResult:
    config = pass_config(name, temperature=args.temperature, max_tokens=args.max_tokens)
    result = PassResult(name)
    questions = [*persona.ANSWERABLE, *persona.UNANSWERABLE]
    for _ in range(args.repeat):
        for question in questions:
            call = VoiceCall(config, models, vad)
            try:
                result.answers.append(await ask(call, question))
            finally:
                await call.close()
    call = VoiceCall(config, models, vad)
    try:
        for question in questions:
            result.long_call.append(await ask(call, question))
    finally:
        await call.close()
    return result


LISTEN_S = 2.0
SMALL_TALK = (
    "Hello, can you hear me?",
    "How are you today?",
    "Thanks, that's helpful.",
    "Are you a robot?",
    "Sorry, I was distracted for a second.",
    "Okay, great.",
    "What's your name?",
    "Thank you very much, goodbye.",
)


async def first_token_ab(
    models: LocalInference, vad: SileroModel, args: argparse.Namespace
) -> dict[str, Any]:
    """LLM first-token ms of today's plain prompt against the grounded one, in one run.

    Two calls take turns on the same model, each a conversation of fact questions
    and small talk. The grounded call answers the fact questions as written, so the
    LLM serves only its small talk; the first token is compared on those turns.
    """
    configs = {
        "plain": pass_config("baseline", temperature=0.0, max_tokens=40),
        "grounded": pass_config("grounded", temperature=0.0, max_tokens=40),
    }
    calls = {name: VoiceCall(config, models, vad) for name, config in configs.items()}
    times: dict[str, list[float]] = {name: [] for name in calls}
    turns = args.latency_turns
    try:
        for i in range(turns):
            fact_question = persona.ANSWERABLE[i % len(persona.ANSWERABLE)]
            chat = Question(SMALL_TALK[i % len(SMALL_TALK)])
            # Alternate which call goes first, so neither always finds the model warm.
            order = list(calls.items()) if i % 2 == 0 else list(reversed(calls.items()))
            for name, call in order:
                await ask(call, fact_question)
                # The caller hears the reply before speaking again (a voice call, not a
                # chat): about as long as a short spoken answer.
                await asyncio.sleep(LISTEN_S)
                answer = await ask(call, chat)
                if answer.first_token_ms is not None:
                    times[name].append(answer.first_token_ms)
    finally:
        for call in calls.values():
            await call.close()
    out: dict[str, Any] = {n: {"p50_ms": _p(t, 50), "p95_ms": _p(t, 95)} for n, t in times.items()}
    plain, grounded_p50 = out["plain"]["p50_ms"], out["grounded"]["p50_ms"]
    if plain is not None and grounded_p50 is not None:
        out["p50_difference_ms"] = round(grounded_p50 - plain, 1)
    out["turns"] = times
    return out


def print_table(results: list[PassResult]) -> None:
    keys = list(results[0].summary())
    print(f"\n{'':36}" + "".join(f"{r.name:>14}" for r in results))
    for key in keys:
        row = "".join(f"{r.summary()[key]!s:>14}" for r in results)
        print(f"{key:36}{row}")


async def main_async(args: argparse.Namespace) -> None:
    global persona
    persona = PERSONAS[args.persona]
    started = time.monotonic()
    models = load_inference(ModelSettings())
    vad = SileroModel()
    print(f"models loaded in {time.monotonic() - started:.1f} s")
    results = []
    for name in args.passes:
        t0 = time.monotonic()
        result = await run_pass(name, models, vad, args)
        results.append(result)
        print(f"pass {name}: {time.monotonic() - t0:.0f} s  {result.summary()}")
        for a in result.answers:
            if not a.ok and args.verbose:
                print(f"   miss [{'A' if a.answerable else 'U'}] {a.question!r} -> {a.reply!r}")
    print_table(results)
    latency = await first_token_ab(models, vad, args) if args.latency_turns else {}
    if latency:
        print(
            f"\nLLM first token on {args.latency_turns} small-talk turns (p50 / p95 ms): "
            f"plain prompt {latency['plain']['p50_ms']} / {latency['plain']['p95_ms']}, "
            f"grounded prompt {latency['grounded']['p50_ms']} / {latency['grounded']['p95_ms']}, "
            f"difference of the p50s {latency.get('p50_difference_ms')}"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    report = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "settings": vars(args),
        "persona": args.persona,
        "questions": {
            "answerable": len(persona.ANSWERABLE),
            "unanswerable": len(persona.UNANSWERABLE),
        },
        "passes": {
            r.name: {
                "summary": r.summary(),
                "answers": [vars(a) for a in r.answers],
                "long_call": [vars(a) for a in r.long_call],
            }
            for r in results
        },
        "first_token": latency,
    }
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"quality-{args.persona}"
    for path in (RESULTS / f"{name}-{stamp}.json", RESULTS / f"{name}-latest.json"):
        path.write_text(json.dumps(report, indent=2))
    print(f"\nwrote {RESULTS / f'{name}-{stamp}.json'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--persona", choices=sorted(PERSONAS), default="bakery")
    parser.add_argument("--repeat", type=int, default=2, help="fresh-call rounds per pass")
    parser.add_argument("--passes", nargs="+", choices=PASSES, default=list(PASSES))
    parser.add_argument("--temperature", type=float, default=0.6, help="the persona default")
    parser.add_argument("--max-tokens", type=int, default=120, help="the persona default")
    parser.add_argument(
        "--latency-turns", type=int, default=12, help="small-talk turns timed (0: skip)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print every miss")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
