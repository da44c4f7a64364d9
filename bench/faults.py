"""The fault tests, round after round: what each fault did to the calls, every time.

    .venv/bin/python -m bench.faults                  # or: ./dev bench faults
    .venv/bin/python -m bench.faults --rounds 10 --only worker_kill

Each round runs tests/faults/ (an inference worker SIGKILLed mid-reply, Redis
killed and restarted empty, Postgres cut off from daphne for 10 s, the
client's TCP connection reset, and a second web process behind haproxy
SIGKILLed under its call) on a fresh stack: daphne and two inference
workers on a private Redis, Postgres behind a proxy; and
tests/billing/test_kills.py with 100 calls (`--kill-calls`; the suite places
30), their call processes SIGKILLed at random, each call billed once. The suite runs each fault
once; here the rounds show how often each one is survived and how its figures
spread (the fail or fail-over time, the resume time, the buffered writes).
About two and a half minutes a round on two cores. It prints every round's outcome lines
and a summary, writes bench/results/faults-<time>.json, and exits non-zero if
any round failed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from typing import Any

from .suite import ROOT, closing_line, run_pytest, suite_env

# Each fault's test, and how the line it prints about what happened begins.
FAULTS = {
    "worker_kill": ("tests/faults/test_worker_kill.py", "worker killed mid-reply"),
    "redis_restart": ("tests/faults/test_redis_restart.py", "redis restart"),
    "postgres_outage": ("tests/faults/test_postgres_outage.py", "postgres outage"),
    "network_drop": ("tests/faults/test_network_drop.py", "network drop"),
    "web_kill": ("tests/faults/test_web_kill.py", "web process killed"),
    "billing_kills": ("tests/billing/test_kills.py", "random kills:"),
}
NUMBER = re.compile(r"(\d+\.\d+) s")


def first_seconds(line: str) -> float | None:
    """The first "N.NN s" figure of an outcome line (the fault's own timing)."""
    found = NUMBER.search(line)
    return float(found.group(1)) if found else None


def summarize(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per fault: rounds passed and failed, and the spread of its first timing."""
    out: dict[str, Any] = {}
    for name in dict.fromkeys(r["fault"] for r in rounds):
        mine = [r for r in rounds if r["fault"] == name]
        seconds = sorted(s for r in mine for s in [first_seconds(r["outcome"])] if s is not None)
        kinds = Counter(re.sub(r"\d+(?:\.\d+)?", "N", r["outcome"]) for r in mine if r["outcome"])
        out[name] = {
            "rounds": len(mine),
            "passed": sum(r["passed"] for r in mine),
            "seconds_min": seconds[0] if seconds else None,
            "seconds_max": seconds[-1] if seconds else None,
            "outcomes": dict(kinds),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the fault tests")
    parser.add_argument("--only", choices=sorted(FAULTS), action="append", help="these faults")
    parser.add_argument(
        "--kill-calls", type=int, default=100, help="calls a billing_kills round places"
    )
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    env = suite_env({"KILL_CALLS": str(args.kill_calls)})
    names = args.only or list(FAULTS)
    print(f"faults: {args.rounds} rounds of {', '.join(names)}", flush=True)
    rounds: list[dict[str, Any]] = []
    started = time.monotonic()
    for n in range(1, args.rounds + 1):
        t0 = time.monotonic()
        run = run_pytest([FAULTS[name][0] for name in names], env)
        lines = run.stdout.splitlines()
        failed = {
            ln.split()[1].split("::")[0] for ln in lines if ln.startswith(("FAILED ", "ERROR "))
        }
        outcomes: list[str] = []
        for name in names:
            path, label = FAULTS[name]
            outcome = next((ln for ln in lines if ln.startswith(label)), "")
            outcomes += [outcome] if outcome else []
            passed = run.returncode == 0 or (path not in failed and bool(outcome))
            rounds.append({"round": n, "fault": name, "passed": passed, "outcome": outcome})
        took = time.monotonic() - t0
        print(
            f"\n== round {n}: {'ok' if run.returncode == 0 else 'FAILED'} in {took:.0f} s "
            f"({closing_line(lines)})"
        )
        for line in outcomes:
            print(f"  {line}")
        if run.returncode != 0:
            print("\n".join(ln for ln in lines if ln.startswith("E "))[:4000])
    summary = summarize(rounds)
    print(f"\n{'fault':<16} {'passed':>8}  first timing (s) min-max  outcomes")
    for name, row in summary.items():
        spread = (
            f"{row['seconds_min']:.2f}-{row['seconds_max']:.2f}"
            if row["seconds_min"] is not None
            else "-"
        )
        kinds = "; ".join(f"{k} x{v}" for k, v in row["outcomes"].items())
        print(f"{name:<16} {row['passed']:>3}/{row['rounds']:<4}  {spread:<24} {kinds}")
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    out = results / f"faults-{time.strftime('%Y%m%d-%H%M%S')}.json"
    report = {"rounds": rounds, "summary": summary, "seconds": time.monotonic() - started}
    out.write_text(json.dumps(report, indent=2))
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0 if all(r["passed"] for r in rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
