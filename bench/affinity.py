"""Time to first token of a growing conversation, with and without LLM worker affinity.

    .venv/bin/python -m bench.affinity            # or: ./dev bench affinity
    .venv/bin/python -m bench.affinity --turns 8

Starts two LLM-only inference worker processes on Redis and plays one call's
conversation (typed turns, so only the LLM is timed) twice: with the client's
affinity (each turn goes back to the worker holding the call's prompt cache)
and without it (every turn to the shared queue, as before affinity). Reports,
per pass, the time from request to first token for every turn after the first,
which worker served it, and the ratio of the medians. Writes
bench/results/affinity-<time>.json and affinity-latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
import uuid
from dataclasses import replace
from typing import Any

import numpy as np

from voiceapp.engine.llm import LLMOptions, Message
from voiceapp.inference.client import ChannelsInference, ClientSettings
from voiceapp.inference.protocol import redis_hosts

from .latency import RESULTS, bench_parser, save_report, shut_down, start_workers

INSTRUCTIONS = (
    "You are the voice assistant of the Riverside Community Library. The library opens "
    "at nine in the morning and closes at eight in the evening on weekdays, and at five "
    "on Saturdays; it is closed on Sundays. Members may borrow up to ten books for three "
    "weeks and renew them twice online or at the desk. The children's corner hosts a "
    "story hour every Wednesday at four. Meeting rooms can be booked a week ahead. "
    "Answer in one or two short sentences."
)
QUESTIONS = [
    "When do you open on Saturday?",
    "How many books can I borrow?",
    "Can I renew them online?",
    "Is there anything for children?",
    "Can I book a meeting room?",
    "Are you open on Sunday?",
    "How long can I keep a book?",
    "What time do you close on Monday?",
    "Where is the story hour held?",
    "Thank you, that is all.",
]


async def conversation(client: ChannelsInference, turns: int, label: str) -> list[dict[str, Any]]:
    session = f"{label}-{uuid.uuid4().hex[:8]}"
    options = LLMOptions(max_tokens=40, temperature=0.0, session=session)
    history: list[Message] = []
    records = []
    for n, question in enumerate((QUESTIONS * 3)[:turns]):
        history.append({"role": "user", "content": question})
        messages: list[Message] = [{"role": "system", "content": INSTRUCTIONS}, *history]
        started = time.monotonic()
        stream = client.generate(messages, replace(options))
        first: float | None = None
        reply = ""
        async for token in stream:
            if first is None:
                first = time.monotonic()
            reply += token
        assert first is not None, "no tokens"
        history.append({"role": "assistant", "content": reply.strip()})
        records.append(
            {
                "turn": n + 1,
                "first_token_ms": round(1000 * (first - started), 1),
                "worker": stream.worker,
                "prompt_chars": sum(len(m["content"]) for m in messages),
            }
        )
        print(f"  {label} turn {n + 1}: {records[-1]['first_token_ms']:7.1f} ms", flush=True)
    return records


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    later = [r["first_token_ms"] for r in records[1:]]
    workers = [r["worker"] for r in records]
    return {
        "turns_timed": len(later),
        "first_token_ms_p50": round(float(np.percentile(later, 50)), 1),
        "first_token_ms_max": round(float(max(later)), 1),
        "worker_changes": sum(a != b for a, b in itertools.pairwise(workers)),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from channels_redis.core import RedisChannelLayer

    prefix = f"bench-{uuid.uuid4().hex[:8]}-"
    logs = RESULTS / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    print("starting two LLM worker processes ...", flush=True)
    procs = start_workers(2, args.redis_url, prefix, logs, "--kinds", "llm")

    clients: list[ChannelsInference] = []

    def client(affinity: bool) -> ChannelsInference:
        layer = RedisChannelLayer(hosts=redis_hosts(args.redis_url), prefix=prefix, expiry=30)
        settings = ClientSettings(affinity_sessions=4096 if affinity else 0)
        clients.append(ChannelsInference(layer, settings))
        return clients[-1]

    try:
        await conversation(client(True), 2, "warmup")
        passes = {}
        for name, affinity in (("without_affinity", False), ("with_affinity", True)):
            print(name, flush=True)
            passes[name] = await conversation(client(affinity), args.turns, name)
    finally:
        await shut_down(clients, procs)
    result = {name: summary(records) for name, records in passes.items()}
    ratio = (
        result["with_affinity"]["first_token_ms_p50"]
        / result["without_affinity"]["first_token_ms_p50"]
    )
    return {
        "summary": {**result, "p50_ratio_with_over_without": round(ratio, 2)},
        "turns": passes,
    }


def main(argv: list[str] | None = None) -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--turns", type=int, default=10, help="turns per conversation")
    report = asyncio.run(run(parser.parse_args(argv)))
    save_report(report, "affinity", "affinity-latest.json")


if __name__ == "__main__":
    main()
