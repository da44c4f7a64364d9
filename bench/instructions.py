"""Facts written into a persona's instructions as prose: are they found and said?

    .venv/bin/python -m bench.instructions                 # the held-out personas
    .venv/bin/python -m bench.instructions --set dev --repeat 3 --baseline-ref REF -v

The personas of `bench/prose_heldout.py` (`--set held-out`: a yoga studio and
a driving school, written on 2026-12-07 before the changes after it) and of
`bench/prose.py` (`--set dev`: a bakery, a florist, a physio clinic, a hair
studio and a vet, which retrieval was tuned on) and of `bench/prose_dev2.py`
(`--set dev2`: a pizza takeaway, a swimming pool and a phone repair shop, written
on 2026-12-07 to find how unseen wording fails, and tuned on since) are asked each
of their questions in a fresh call, as typed caller turns answered by the engine's
`VoiceCall` in text-only mode with the persona defaults (temperature, reply
length). A question the prose answers is right when the reply holds one
accepted form of every required piece; one it does not answer is right when
the reply declines and states no number (bakery.py's rules). `retrieved` is
whether the sentence retrieval put first holds the answer (what the prompt
builder found, whatever the reply then said).

`--baseline-ref REF` grades the engine of an earlier commit in the same run.
Writes bench/results/instructions-<time>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .bakery import Question, declined, grounded
from .baseline import report_passes, run_at
from .engine_setup import persona_llm
from .prose import DEV, ProsePersona
from .prose_dev2 import DEV2
from .prose_heldout import HELD_OUT

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SETS = {"held-out": HELD_OUT, "dev": DEV, "dev2": DEV2}


@dataclass
class Graded:
    persona: str
    question: str
    answerable: bool
    reply: str
    ok: bool
    retrieved: bool | None  # None for a question the prose does not answer


def persona_config(persona: ProsePersona) -> Any:
    llm = persona_llm()
    from voiceapp.engine.call import CallConfig
    from voiceapp.engine.models import default_voice

    return CallConfig(
        voice=default_voice(),
        instructions=persona.instructions,
        llm=llm,
        speak=False,
        speculative=False,
    )


def first_retrieved(persona: ProsePersona, question: Question) -> bool:
    """Whether the best sentence retrieval finds for `question` holds its answer."""
    import inspect

    from voiceapp.engine.embedder import shared_encoder
    from voiceapp.engine.prompt import PromptBuilder

    # as a call builds it (an engine before hybrid retrieval takes no encoder)
    takes_encoder = "encoder" in inspect.signature(PromptBuilder).parameters
    extra = {"encoder": shared_encoder()} if takes_encoder else {}
    builder = PromptBuilder(instructions=persona.instructions, **extra)
    matches = builder.knowledge.retrieve(question.text)
    return bool(matches) and grounded(question, matches[0].fact.answer)


async def ask(call: Any, question: Question) -> str:
    from .quality import ask as ask_and_grade

    return (await ask_and_grade(call, question)).reply


async def run(personas: tuple[ProsePersona, ...], repeat: int) -> list[Graded]:
    from voiceapp.engine.call import VoiceCall
    from voiceapp.engine.models import ModelSettings, load_inference
    from voiceapp.engine.vad import SileroModel

    models = load_inference(ModelSettings())
    vad = SileroModel()
    graded: list[Graded] = []
    for _ in range(repeat):
        for persona in personas:
            config = persona_config(persona)
            for question in (*persona.answerable, *persona.unanswerable):
                call = VoiceCall(config, models, vad)
                try:
                    reply = await ask(call, question)
                finally:
                    await call.close()
                answerable = question.answerable
                ok = grounded(question, reply) if answerable else declined(reply)
                found = first_retrieved(persona, question) if answerable else None
                graded.append(Graded(persona.name, question.text, answerable, reply, ok, found))
    return graded


def summary(graded: list[Graded]) -> dict[str, Any]:
    answerable = [g for g in graded if g.answerable]
    other = [g for g in graded if not g.answerable]

    def rate(hits: int, of: list[Graded]) -> float:
        return round(hits / max(1, len(of)), 3)

    return {
        "questions": len(graded),
        "right": rate(sum(g.ok for g in graded), graded),
        "answered_right": rate(sum(g.ok for g in answerable), answerable),
        "retrieved_first": rate(sum(bool(g.retrieved) for g in answerable), answerable),
        "declined_right": rate(sum(g.ok for g in other), other),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", default="held-out", choices=sorted(SETS))
    parser.add_argument("--repeat", type=int, default=1, help="rounds of all questions")
    parser.add_argument("--baseline-ref", default="", help="also grade this commit's engine")
    parser.add_argument("--write", default="", help=argparse.SUPPRESS)  # the baseline's child
    parser.add_argument("-v", "--verbose", action="store_true", help="print every wrong reply")
    args = parser.parse_args()

    passes: dict[str, dict[str, Any]] = {}
    if args.baseline_ref:
        print(f"grading the engine of {args.baseline_ref} ...", flush=True)
        child = ["--set", args.set, "--repeat", str(args.repeat)]
        passes[f"at {args.baseline_ref}"] = run_at(args.baseline_ref, "bench.instructions", child)
    started = time.monotonic()
    graded = asyncio.run(run(SETS[args.set], args.repeat))
    result = {"summary": summary(graded), "replies": [asdict(g) for g in graded]}
    if args.write:  # the baseline's child: hand the result back
        Path(args.write).write_text(json.dumps(result))
        return
    passes["this tree"] = result
    print(f"graded {len(graded)} replies in {time.monotonic() - started:.0f} s")
    if args.verbose:
        for name, p in passes.items():
            for g in p["replies"]:
                if not g["ok"]:
                    print(f"  [{name}] {g['persona']}: {g['question']!r} -> {g['reply']!r}")
    report_passes("instructions", vars(args), passes)


if __name__ == "__main__":
    main()
