"""What the default persona says on its own: 43 caller turns, graded by their rubrics.

    .venv/bin/python -m bench.conversation                 # or: ./dev bench conversation
    .venv/bin/python -m bench.conversation --baseline-ref 68dfe15 --repeat 2
    BENCH_JUDGE_URL=http://host:8080/v1 BENCH_JUDGE_MODEL=m .venv/bin/python -m bench.conversation

A fresh organization's default persona (no facts, the default instructions,
greeting, temperature and reply length, and its take_message action) answers each turn of
`bench/chat_turns.py` in a fresh call, as a typed caller turn answered by the
engine's `VoiceCall` in text-only mode (the prompt, retrieval and guard of a
voice call; no audio); with `--per-call N`, N turns in a row in one call, in the
set's order, as a caller with several questions asks them (the history, and the
agent's own earlier lines, in the prompt). The rules of `chat_turns.py` grade each reply:
relevant-or-honest, about languages, over 3 sentences, invented numbers.

`--baseline-ref REF` grades the same turns, in the same run and on the same
model, with the engine of an earlier commit (its tree from `git archive`, with
this benchmark beside it), so a change is reported beside the code it replaced.

A judge, when `BENCH_JUDGE_URL` (an OpenAI-compatible endpoint; `BENCH_JUDGE_MODEL`,
`BENCH_JUDGE_KEY`) is set, also grades each reply against its rubric, and the
agreement of judge and rules is reported. The rules are the figure of record: a
judge is another model's opinion, and there is none on this machine.

Writes bench/results/conversation-<time>.json and conversation-latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .baseline import report_passes, run_at
from .chat_dev_turns import DEV_TURNS
from .chat_turns import GREETING, HONEST, LANGUAGE_TALK, TURNS, ChatTurn
from .engine_setup import persona_llm, setup_django

SETS = {"held-out": TURNS, "dev": DEV_TURNS}
ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
MAX_SENTENCES = 3


@dataclass
class Graded:
    text: str
    kind: str
    reply: str
    about_languages: bool
    sentences: int
    invented: list[str]
    relevant: bool
    honest: bool
    ok: bool
    first_token_ms: float | None
    judge: bool | None = None


def sentences_in(text: str) -> int:
    parts = [p for p in re.split(r"(?<=[.!?])\s+", text.strip()) if re.search(r"\w", p)]
    return len(parts)


def said_again(turn: ChatTurn, reply: str, said_before: str) -> bool:
    """A request to repeat answered with the agent's own last words, said again.
    The rubrics were written for a fresh call, where those words are the greeting;
    in a call they may be any earlier line (`--per-call`)."""
    before = " ".join(re.findall(r"\w+", said_before.lower()))
    return (
        turn.kind == "repeat"
        and bool(before)
        and before in " ".join(re.findall(r"\w+", reply.lower()))
    )


def grade(
    turn: ChatTurn,
    reply: str,
    first_token_ms: float | None = None,
    said_before: str = GREETING,
) -> Graded:
    from voiceapp.engine.guard import numbers_in

    about_languages = bool(LANGUAGE_TALK.search(reply)) and not LANGUAGE_TALK.search(turn.text)
    sentences = sentences_in(reply)
    invented = (
        []
        if turn.knows_numbers
        else sorted(numbers_in(reply) - numbers_in(turn.text) - numbers_in(GREETING))
    )
    relevant = turn.relevant_in(reply) or said_again(turn, reply, said_before)
    honest = turn.honest_ok and bool(HONEST.search(reply))
    ok = (
        bool(reply.strip())
        and not about_languages
        and sentences <= MAX_SENTENCES
        and not invented
        and (relevant or honest)
    )
    return Graded(
        turn.text,
        turn.kind,
        reply,
        about_languages,
        sentences,
        invented,
        relevant,
        honest,
        ok,
        first_token_ms,
    )


def summary(graded: list[Graded]) -> dict[str, Any]:
    n = max(1, len(graded))
    first = [g.first_token_ms for g in graded if g.first_token_ms is not None]
    kinds = sorted({g.kind for g in graded})
    out: dict[str, Any] = {
        "turns": len(graded),
        "relevant_or_honest": round(sum(g.ok for g in graded) / n, 3),
        "relevant": round(sum(g.relevant for g in graded) / n, 3),
        "about_languages": sum(g.about_languages for g in graded),
        "over_3_sentences": sum(g.sentences > MAX_SENTENCES for g in graded),
        "invented_numbers": sum(bool(g.invented) for g in graded),
        "empty": sum(not g.reply.strip() for g in graded),
        "words_p50": statistics.median([len(g.reply.split()) for g in graded] or [0]),
        "first_token_p50_ms": round(statistics.median(first), 1) if first else None,
    }
    for kind in kinds:
        group = [g for g in graded if g.kind == kind]
        out[f"ok_{kind}"] = round(sum(g.ok for g in group) / len(group), 3)
    judged = [g for g in graded if g.judge is not None]
    if judged:
        out["judge_pass"] = round(sum(bool(g.judge) for g in judged) / len(judged), 3)
        out["judge_agrees_with_rules"] = round(
            sum(g.judge == g.ok for g in judged) / len(judged), 3
        )
    return out


def default_persona_config() -> Any:
    """The engine configuration of a fresh organization's default persona."""
    setup_django()
    from sessions.realtime.actions import BUILT_IN, TAKE_MESSAGE
    from voiceapp.engine.call import CallConfig
    from voiceapp.engine.models import default_voice
    from voiceapp.personas.models import Persona
    from voiceapp.personas.services import DEFAULT_INSTRUCTIONS

    # the default persona takes messages (persona_create_default): its decline offers one
    actions = (BUILT_IN[TAKE_MESSAGE],)
    # and answers general questions as a new persona does (an engine before the
    # setting, run with --baseline-ref, has neither the field nor the option)
    fields = {f.name: f for f in Persona._meta.get_fields()}
    general = (
        {"general_questions": fields["general_questions"].default}
        if "general_questions" in fields
        else {}
    )
    return CallConfig(
        voice=default_voice(),
        instructions=DEFAULT_INSTRUCTIONS,
        actions=actions,
        llm=persona_llm(tools=actions),
        speak=False,
        speculative=False,
        **general,
    )


async def answer(call: Any, text: str) -> tuple[str, float | None]:
    """The reply to the caller's `text`. A reply that only called a tool (a message
    taken) has no words, and is graded so; the words the engine says after the
    call are waited for, so that they do not pass for the next turn's reply."""
    from voiceapp.engine.frames import ResponseDone

    call.add_message("user", text)
    call.create_response()
    done: ResponseDone | None = None
    while True:
        frame = await call.next_frame(60.0 if done is None else 10.0)
        if frame is None:
            if done is not None:
                return done.text, done.latency.get("llm_first_token_ms")
            raise RuntimeError(f"no reply to {text!r}")
        if isinstance(frame, ResponseDone):
            done = done or frame
            if frame.text or frame.status != "completed":
                return done.text, done.latency.get("llm_first_token_ms")


async def run_turns(
    repeat: int, turns: tuple[ChatTurn, ...] = TURNS, per_call: int = 1
) -> list[Graded]:
    """Each turn in a fresh call after the greeting, or `per_call` turns in a row in
    one call (the set's order), as a caller with several questions asks them."""
    from voiceapp.engine.call import VoiceCall
    from voiceapp.engine.models import ModelSettings, load_inference
    from voiceapp.engine.vad import SileroModel

    config = default_persona_config()
    models = load_inference(ModelSettings())
    vad = SileroModel()
    graded: list[Graded] = []
    for _ in range(repeat):
        for start in range(0, len(turns), per_call):
            call = VoiceCall(config, models, vad)
            call.add_message("assistant", GREETING)
            said = GREETING
            try:
                for turn in turns[start : start + per_call]:
                    reply, first = await answer(call, turn.text)
                    graded.append(grade(turn, reply, first, said))
                    said = reply or said
            finally:
                await call.close()
    return graded


JUDGE_PROMPT = """You grade one reply of a voice assistant on a phone call. The assistant
works for a business but was told nothing about it: it cannot know the business's hours,
prices, address or stock, or the weather, so for those only an honest "I don't know"
(or an offer to help otherwise) is right. A good reply is short (at most 3 sentences),
relevant to what the caller said, true, says nothing about which languages it speaks
unless asked, and invents nothing.

The assistant said first: "{greeting}"
The caller said: "{caller}"
The reply was: "{reply}"

Answer with one word: PASS or FAIL."""


def judge_replies(graded: list[Graded]) -> None:
    """Each reply graded by the endpoint in BENCH_JUDGE_URL (PASS/FAIL)."""
    from voiceapp.engine.llm import HttpLLM, HttpLLMSettings, LLMOptions

    llm = HttpLLM(
        HttpLLMSettings(
            base_url=os.environ["BENCH_JUDGE_URL"],
            api_key=os.environ.get("BENCH_JUDGE_KEY", ""),
            model=os.environ.get("BENCH_JUDGE_MODEL", ""),
        )
    )
    options = LLMOptions(max_tokens=4, temperature=0.0)
    for g in graded:
        prompt = JUDGE_PROMPT.format(greeting=GREETING, caller=g.text, reply=g.reply)
        messages = [{"role": "user", "content": prompt}]
        verdict = "".join(llm.stream(messages, options, threading.Event())).strip().upper()
        g.judge = verdict.startswith("PASS")


def baseline_in(
    ref: str, repeat: int, turn_set: str = "held-out", per_call: int = 1
) -> dict[str, Any]:
    """The same turns graded with the engine of commit `ref`, in a child process."""
    args = ["--repeat", str(repeat), "--set", turn_set, "--per-call", str(per_call)]
    return run_at(ref, "bench.conversation", args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=1, help="rounds of all turns")
    parser.add_argument(
        "--baseline-ref", default="", help="also grade the engine of this commit (git ref)"
    )
    parser.add_argument(
        "--set",
        default="held-out",
        choices=sorted(SETS),
        help="the turns of record (held-out, chat_turns.py) or the development set",
    )
    parser.add_argument(
        "--per-call",
        type=int,
        default=1,
        help="turns asked in a row in one call (1: each turn in a fresh call)",
    )
    parser.add_argument("--write", default="", help=argparse.SUPPRESS)  # the baseline's child
    parser.add_argument("-v", "--verbose", action="store_true", help="print every failed reply")
    args = parser.parse_args()

    passes: dict[str, dict[str, Any]] = {}
    if args.baseline_ref:
        print(f"grading the engine of {args.baseline_ref} ...", flush=True)
        passes[f"at {args.baseline_ref}"] = baseline_in(
            args.baseline_ref, args.repeat, args.set, args.per_call
        )
    started = time.monotonic()
    graded = asyncio.run(run_turns(args.repeat, SETS[args.set], args.per_call))
    if os.environ.get("BENCH_JUDGE_URL") and not args.write:
        judge_replies(graded)
    result = {"summary": summary(graded), "replies": [asdict(g) for g in graded]}
    if args.write:  # the baseline's child: hand the result back, print nothing more
        Path(args.write).write_text(json.dumps(result))
        return
    passes["this tree"] = result
    print(f"graded {len(graded)} replies in {time.monotonic() - started:.0f} s")
    if args.verbose:
        for name, p in passes.items():
            for g in p["replies"]:
                if not g["ok"]:
                    print(f"  [{name}] miss ({g['kind']}) {g['text'][:60]!r} -> {g['reply']!r}")
    report_passes("conversation", vars(args), passes, latest=True)


if __name__ == "__main__":
    main()
