"""When a reply's first clause is out: cut as its mark arrives, against a token later.

    ./dev bench first-clause                 # every turn of the default persona's set
    ./dev bench first-clause --rounds 2

The chunker ends a reply's first clause as its full stop, question mark or comma
arrives (`ChunkerSettings.first_at_mark`), where a boundary used to wait for the
whitespace that the LLM's next token brings. Both chunkers read the same token
stream here: the embedded model (one thread, as a worker writes) answers each
caller turn of bench/chat_turns.py with the default persona's prompt, greedily, and
each chunker's first clause is timed on that one stream. So the difference is
paired, with no run-to-run noise: ms earlier per reply (0 where the first clause ends
at its seventh word, with no mark to cut at), and the tokens each waited for. Medians
are printed and written to bench/results/first-clause-<time>.json; docs/PERFORMANCE.md
has the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.conversation import default_persona_config
from voiceapp.engine.chunker import ChunkerSettings, ClauseChunker, joined_words

RESULTS = Path(__file__).resolve().parent / "results"


def first_clauses(stream: Any, messages: list[Any]) -> dict[str, Any] | None:
    """Each chunker's first clause on one token stream: when (ms after the first
    token) and after how many tokens. None: the reply ended before either had one."""
    joined = joined_words([m["content"] for m in messages])
    chunkers = {
        "at_mark": ClauseChunker(ChunkerSettings(), joined),
        "next_token": ClauseChunker(ChunkerSettings(first_at_mark=False), joined),
    }
    found: dict[str, dict[str, Any]] = {}
    started = None
    tokens = 0
    for delta in stream:
        if not isinstance(delta, str):
            continue
        now = time.perf_counter()
        started = started or now
        tokens += 1
        for name, chunker in chunkers.items():
            if name not in found:
                clauses = chunker.push(delta)
                if clauses:
                    found[name] = {
                        "ms": round(1000 * (now - started), 1),
                        "tokens": tokens,
                        "clause": clauses[0],
                    }
        if len(found) == len(chunkers):
            return found
    return None


def run(args: argparse.Namespace) -> dict[str, Any]:
    from bench.chat_turns import TURNS
    from voiceapp.engine.call import prompt_builder
    from voiceapp.engine.llm import LlamaLLM, LlamaSettings, default_llm_model_path

    config = default_persona_config()
    prompt = prompt_builder(config)
    llm = LlamaLLM(LlamaSettings(model_path=default_llm_model_path(), threads=1))
    options = replace(config.llm, max_tokens=40, temperature=0.0)
    rows = []
    for _ in range(args.rounds):
        for turn in TURNS[: args.turns or None]:
            messages = prompt.messages([{"role": "user", "content": turn.text}])
            found = first_clauses(llm.stream(messages, options, threading.Event()), messages)
            if found is not None:
                rows.append({"turn": turn.text, **found})
    earlier = [r["next_token"]["ms"] - r["at_mark"]["ms"] for r in rows]
    report: dict[str, Any] = {
        "rounds": args.rounds,
        "replies": len(rows),
        "earlier_in": sum(1 for r in rows if r["at_mark"]["tokens"] < r["next_token"]["tokens"]),
        "earlier_ms_median": round(statistics.median(earlier), 1),
        "earlier_ms_mean": round(statistics.mean(earlier), 1),
        "first_clause_ms_median": {
            name: round(statistics.median(r[name]["ms"] for r in rows), 1)
            for name in ("next_token", "at_mark")
        },
        "tokens_mean": {
            name: round(statistics.mean(r[name]["tokens"] for r in rows), 2)
            for name in ("next_token", "at_mark")
        },
        "rows": rows,
    }
    print(
        f"{report['replies']} replies: the first clause came earlier in "
        f"{report['earlier_in']}, by {report['earlier_ms_median']} ms at the median "
        f"(mean {report['earlier_ms_mean']}); ms after the first token, median: "
        f"{report['first_clause_ms_median']}; tokens, mean: {report['tokens_mean']}"
    )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"first-clause-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return report


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=1, help="rounds of every turn")
    p.add_argument("--turns", type=int, default=0, help="only the set's first N turns (0: all)")
    return p


def main(argv: list[str] | None = None) -> None:
    run(parser().parse_args(argv))


if __name__ == "__main__":
    main()
