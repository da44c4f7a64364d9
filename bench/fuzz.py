"""The fuzz tests at length: realtime events, SDP offers and the REST API.

    .venv/bin/python -m bench.fuzz                    # or: ./dev bench fuzz
    .venv/bin/python -m bench.fuzz --events 20000 --offers 5000 --seed 42

Runs tests/sessions/test_realtime_fuzz.py (10,000 events by default: a live
daphne and inference worker, real speech between the events),
tests/sessions/test_webrtc_fuzz.py (5,000 mutated offers) and
tests/api/test_api_fuzz.py (100 examples per API operation) and
tests/dashboard/test_query_fuzz.py (random query strings) and
tests/telephony/test_sip_fuzz.py (5,000 mutated SIP messages) with one seed, on
Postgres and Redis as the test suite does (DATABASE_URL and REDIS_URL, else the
local ones), and prints what each fuzzer sent, what came back, and how long it
took. The exit status is pytest's.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from .suite import closing_line, run_pytest, suite_env

TESTS = {
    "realtime": "tests/sessions/test_realtime_fuzz.py",
    "sdp": "tests/sessions/test_webrtc_fuzz.py",
    "api": "tests/api/test_api_fuzz.py",
    "dashboard": "tests/dashboard/test_query_fuzz.py",
    "sip": "tests/telephony/test_sip_fuzz.py",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000, help="realtime fuzz events")
    parser.add_argument("--offers", type=int, default=5_000, help="mutated SDP offers")
    parser.add_argument("--sip-messages", type=int, default=5_000, help="mutated SIP messages")
    parser.add_argument("--api-examples", type=int, default=100, help="per API operation")
    parser.add_argument("--seed", type=int, default=random.randrange(2**32))
    parser.add_argument("--only", choices=sorted(TESTS), action="append", help="run only these")
    args = parser.parse_args()

    env = suite_env(
        {
            "FUZZ_EVENTS": str(args.events),
            "FUZZ_SDP_OFFERS": str(args.offers),
            "FUZZ_API_EXAMPLES": str(args.api_examples),
            "FUZZ_SIP_MESSAGES": str(args.sip_messages),
            "FUZZ_SEED": str(args.seed),
        }
    )
    print(
        f"fuzz: seed {args.seed}; {args.events} realtime events, {args.offers} SDP offers, "
        f"{args.api_examples} examples per API operation, {args.sip_messages} SIP messages",
        flush=True,
    )
    status = 0
    for name in args.only or list(TESTS):
        started = time.monotonic()
        run = run_pytest([TESTS[name]], env)
        took = time.monotonic() - started
        lines = run.stdout.splitlines()
        found = [ln for ln in lines if ln.startswith(("fuzz ", "  crash", "  logged"))]
        result = closing_line(lines)
        print(
            f"\n== {name}: {'ok' if run.returncode == 0 else 'FAILED'} in {took:.0f} s ({result})"
        )
        for line in dict.fromkeys(found):
            print(line[:2000])
        if run.returncode != 0:
            failures = [ln for ln in lines if ln.startswith("E ")]
            print("\n".join(failures[:20]))
            status = run.returncode
    return status


if __name__ == "__main__":
    sys.exit(main())
