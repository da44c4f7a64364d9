"""The embedded LLM's weights in other encodings: how fast each reads a turn and
writes a token, and how far its predictions are from the packaged file's.

    ./dev bench weights                        # Q8_0, F16 and Q4_0 against Q4_1
    ./dev bench weights --encodings Q8_0 --rounds 4

llama.cpp re-encodes the packaged Q4_1 file (`llama_model_quantize`, allowed to
re-quantize) into a temporary directory. Each round, every encoding in turn (so
a busy moment of the machine falls on all of them): reset, read a fixed head,
then time reading a caller's turn (its new tokens) and writing tokens one at a
time, with one thread, as the worker does. Closeness: on two texts, the mean KL
divergence of each position's next-token distribution from the packaged file's,
and how often the top token is the same. Medians are printed and written to
bench/results/weights-<time>.json. docs/PERFORMANCE.md has the figures.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from voiceapp.engine.llm import default_llm_model_path

RESULTS = Path(__file__).resolve().parent / "results"
ENCODINGS = ("Q8_0", "F16", "Q4_0")
HEAD = (
    "<|im_start|>system\nYou are the receptionist of a small bakery. Answer callers in one or "
    "two short sentences, kindly and plainly. If you do not know, say so and offer to take a "
    "message. The bakery opens at eight and closes at four, Tuesday to Saturday.<|im_end|>\n"
)
TURN = (
    "<|im_start|>user\nHi, I was wondering what time you open on Saturday, round {n}?"
    "<|im_end|>\n<|im_start|>assistant\n"
)
TEXTS = (
    HEAD + "<|im_start|>user\nCan I pay by card?<|im_end|>\n<|im_start|>assistant\n"
    "Yes, we take every card, and contactless too.<|im_end|>",
    "The quick brown fox jumps over the lazy dog. In 1492 Columbus sailed across the "
    "Atlantic Ocean. Water boils at one hundred degrees Celsius at sea level.",
)


def reencode(source: Path, encoding: str, directory: Path) -> Path:
    import llama_cpp

    target = directory / f"{source.stem}.as-{encoding}.gguf"
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{encoding}")
    params.allow_requantize = True
    params.nthread = 1
    quiet = logging.getLogger("llama-cpp-python")  # a line a tensor otherwise
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        failed = llama_cpp.llama_model_quantize(
            str(source).encode(), str(target).encode(), ctypes.byref(params)
        )
    finally:
        quiet.setLevel(level)
    if failed:
        raise RuntimeError(f"llama.cpp could not re-encode {source.name} as {encoding}")
    return target


def load(path: Path, *, logits_all: bool = False) -> Any:
    from llama_cpp import Llama

    return Llama(
        model_path=str(path),
        n_ctx=1024,
        n_threads=1,
        n_threads_batch=1,
        n_batch=256,
        logits_all=logits_all,
        verbose=False,
    )


def timed_round(llama: Any, n: int, written: int) -> tuple[int, float, float]:
    """(new tokens read, ms to read them, ms a written token) after the head."""
    head = llama.tokenize(HEAD.encode(), special=True)
    turn = llama.tokenize(TURN.format(n=n).encode(), add_bos=False, special=True)
    llama.reset()
    llama.eval(head)
    started = time.perf_counter()
    llama.eval(turn)
    read_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    for _ in range(written):
        llama.eval([llama.sample(temp=0)])
    return len(turn), read_ms, (time.perf_counter() - started) * 1000 / written


def log_probs(path: Path) -> list[tuple[list[int], np.ndarray]]:
    llama = load(path, logits_all=True)
    try:
        out = []
        for text in TEXTS:
            tokens = llama.tokenize(text.encode(), special=True)
            llama.reset()
            llama.eval(tokens)
            scores = np.array(llama.scores[: len(tokens)], dtype=np.float64)
            out.append((tokens, scores - np.logaddexp.reduce(scores, axis=1, keepdims=True)))
        return out
    finally:
        llama.close()


def closeness(reference: list[Any], other: list[Any]) -> dict[str, float]:
    pairs = [(a, b) for (_, a), (_, b) in zip(reference, other, strict=True)]
    kl = np.concatenate([np.sum(np.exp(a) * (a - b), axis=1) for a, b in pairs])
    same = np.concatenate([a.argmax(1) == b.argmax(1) for a, b in pairs])
    return {"mean_kl": float(kl.mean()), "same_top_token": float(same.mean()), "positions": len(kl)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    packaged = Path(args.model or default_llm_model_path())
    with tempfile.TemporaryDirectory(prefix="weights-") as tmp:
        files = {"packaged": packaged}
        for encoding in args.encodings:
            started = time.perf_counter()
            files[encoding] = reencode(packaged, encoding, Path(tmp))
            print(f"{encoding}: re-encoded in {time.perf_counter() - started:.1f} s", flush=True)
        models = {name: load(path) for name, path in files.items()}
        rounds: dict[str, list[tuple[int, float, float]]] = {name: [] for name in models}
        for n in range(args.rounds):
            for name, llama in models.items():
                rounds[name].append(timed_round(llama, n, args.written))
        for llama in models.values():
            llama.close()
        reference = log_probs(packaged)
        report: dict[str, Any] = {"rounds": args.rounds, "written": args.written, "encodings": {}}
        for name, path in files.items():
            read = [r[1] for r in rounds[name]]
            write = [r[2] for r in rounds[name]]
            report["encodings"][name] = {
                "file_mb": round(path.stat().st_size / 1e6, 1),
                "new_tokens": rounds[name][0][0],
                "read_ms": round(statistics.median(read), 1),
                "write_ms_per_token": round(statistics.median(write), 2),
                **({} if name == "packaged" else closeness(reference, log_probs(path))),
            }
    base = report["encodings"]["packaged"]
    print(
        f"\n{'weights':<10} {'MB':>6} {'read':>9} {'ratio':>6} {'write/tok':>10} {'ratio':>6} "
        f"{'mean KL':>8} {'same top':>9}"
    )
    for name, row in report["encodings"].items():
        read, write = row["read_ms"], row["write_ms_per_token"]
        print(
            f"{name:<10} {row['file_mb']:>6} {read:>7} ms {read / base['read_ms']:>6.2f} "
            f"{write:>7} ms {write / base['write_ms_per_token']:>6.2f} "
            f"{row.get('mean_kl', 0.0):>8.4f} {row.get('same_top_token', 1.0):>9.3f}"
        )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"weights-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return report


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--encodings", type=lambda s: tuple(s.split(",")), default=ENCODINGS)
    p.add_argument("--rounds", type=int, default=12, help="timed rounds of every encoding")
    p.add_argument("--written", type=int, default=10, help="tokens written a round")
    p.add_argument("--model", default="", help="a GGUF file (default: the packaged SmolLM2)")
    return p


if __name__ == "__main__":
    run(parser().parse_args())
