"""Post-call analysis: are the fields right, is the verdict right, does the summary
say what happened?

    .venv/bin/python -m bench.analysis                   # the held-out calls
    .venv/bin/python -m bench.analysis --set dev -v      # the calls the rules were tuned on
    .venv/bin/python -m bench.analysis --endpoint http://127.0.0.1:8080/v1 --model NAME

The calls of `bench/analysis_cases.py` (three businesses, each with its own fields
and criterion of success) go through the analyst a call's end runs
(voiceapp/engine/analysis.py): the built-in rules, and with `--endpoint` an
OpenAI-compatible LLM as an organization's own endpoint would be. A field is right
when its value holds one of the accepted forms (digits only, for phone numbers) or
is empty when the call does not hold it; the verdict when it matches; the summary
when it names every word the case lists.

Writes bench/results/analysis-<time>.json.
"""

from __future__ import annotations

import argparse
import re
import time
from dataclasses import asdict, dataclass
from typing import Any

from .analysis_cases import DEV, HELD_OUT, PERSONAS, CallCase
from .baseline import report_passes
from .engine_setup import setup_django

SETS = {"held-out": HELD_OUT, "dev": DEV}


@dataclass(frozen=True, slots=True)
class Graded:
    persona: str
    fields_right: int
    fields: int
    wrong: dict[str, Any]  # field -> (what was written, what was accepted)
    success_right: bool
    summary_right: bool
    summary: str


def field_right(name: str, value: Any, accepted: tuple[str, ...] | None) -> bool:
    if accepted is None:
        return value is None or value == ""
    if value is None:
        return False
    text = str(value).lower()
    if "number" in name or "phone" in name:
        return re.sub(r"\D", "", text) in accepted
    return any(form in text for form in accepted)


def grade(case: CallCase, analyst: Any) -> Graded:
    from voiceapp.engine.analysis import Line

    persona = next(p for p in PERSONAS if p.key == case.persona)
    lines = [Line(role, text) for role, text in case.turns]
    result = analyst.analyze(lines, persona.schema, persona.success_criterion)
    wrong = {
        name: (result.fields.get(name), accepted)
        for name, accepted in case.fields.items()
        if not field_right(name, result.fields.get(name), accepted)
    }
    summary = result.summary.lower()
    return Graded(
        persona=case.persona,
        fields_right=len(case.fields) - len(wrong),
        fields=len(case.fields),
        wrong=wrong,
        success_right=result.success is case.success,
        summary_right=all(w in summary for w in case.summary_words),
        summary=result.summary,
    )


def summary(graded: list[Graded]) -> dict[str, Any]:
    n = max(1, len(graded))
    return {
        "calls": len(graded),
        "fields_right": round(
            sum(g.fields_right for g in graded) / sum(g.fields for g in graded), 3
        ),
        "calls_all_fields_right": round(sum(not g.wrong for g in graded) / n, 3),
        "verdict_right": round(sum(g.success_right for g in graded) / n, 3),
        "summary_names_all": round(sum(g.summary_right for g in graded) / n, 3),
    }


def analysts(args: argparse.Namespace) -> dict[str, Any]:
    from voiceapp.engine.analysis import LLMAnalyst, RulesAnalyst
    from voiceapp.engine.embedder import shared_encoder
    from voiceapp.engine.llm import HttpLLM, HttpLLMSettings, LLMOptions

    rules = RulesAnalyst(shared_encoder())
    out: dict[str, Any] = {"rules": rules}
    if args.endpoint:
        llm = HttpLLM(
            HttpLLMSettings(base_url=args.endpoint, api_key=args.api_key, model=args.model)
        )
        options = LLMOptions(max_tokens=400, temperature=0.0, model=args.model)
        out[f"llm {args.model}"] = LLMAnalyst(llm, options, rules)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", default="held-out", choices=sorted(SETS))
    parser.add_argument("--endpoint", default="", help="an OpenAI-compatible base URL")
    parser.add_argument("--model", default="", help="the endpoint's model name")
    parser.add_argument("--api-key", default="", help="the endpoint's key")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every miss")
    args = parser.parse_args()
    setup_django()
    passes: dict[str, dict[str, Any]] = {}
    for label, analyst in analysts(args).items():
        started = time.monotonic()
        graded = [grade(case, analyst) for case in SETS[args.set]]
        print(f"{label}: {len(graded)} calls in {time.monotonic() - started:.1f} s")
        if args.verbose:
            for g in graded:
                if g.wrong or not g.success_right or not g.summary_right:
                    print(
                        f"  [{label}] {g.persona}: wrong {g.wrong}; verdict "
                        f"{'right' if g.success_right else 'WRONG'}; summary {g.summary!r}"
                    )
        passes[label] = {"summary": summary(graded), "calls": [asdict(g) for g in graded]}
    report_passes("analysis", {k: v for k, v in vars(args).items() if k != "api_key"}, passes)


if __name__ == "__main__":
    main()
