"""A benchmark's passes run on the engine of an earlier commit, in the same run.

`run_at(ref, module, args)` extracts commit `ref` (`git archive`) into a
temporary tree, puts today's `bench/` beside it (so both are graded by the
same benchmark), runs `python -m <module> <args> --write <file>` there, and
returns what the child wrote. The child imports `voiceapp` from the old tree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_at(ref: str, module: str, args: list[str]) -> dict[str, Any]:
    tree = Path(tempfile.mkdtemp(prefix="voiceapp-baseline-"))
    out = tree / "result.json"
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        shutil.rmtree(tree / "bench", ignore_errors=True)
        shutil.copytree(ROOT / "bench", tree / "bench", ignore=shutil.ignore_patterns("results"))
        subprocess.run(
            [sys.executable, "-m", module, *args, "--write", str(out)],
            cwd=tree,
            check=True,
            env={**os.environ, "PYTHONPATH": str(tree)},
        )
        return dict(json.loads(out.read_text()))
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def report_passes(
    name: str, settings: dict[str, Any], passes: dict[str, dict[str, Any]], *, latest: bool = False
) -> Path:
    """Print the passes' summaries side by side, and write them all to
    bench/results/<name>-<time>.json (and <name>-latest.json when `latest`)."""
    keys = list(next(iter(passes.values()))["summary"])
    print(f"\n{'':28}" + "".join(f"{label:>16}" for label in passes))
    for key in keys:
        row = "".join(f"{p['summary'].get(key)!s:>16}" for p in passes.values())
        print(f"{key:28}{row}")
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    report = {"when": time.strftime("%Y-%m-%dT%H:%M:%S"), "settings": settings, "passes": passes}
    stamped = results / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    for path in (stamped, results / f"{name}-latest.json")[: 2 if latest else 1]:
        path.write_text(json.dumps(report, indent=2))
    print(f"\nwrote {stamped}")
    return stamped
