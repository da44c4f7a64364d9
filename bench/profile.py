"""Where the servers' CPU goes, by stage: `perf record` samples of the running
processes, each sample put in the stage its library belongs to.

`./dev bench load --profile` records the web process, the inference workers and
Redis through each step. A sample says which process was on a core and in which
shared object: CTranslate2 is Whisper, llama.cpp is the LLM and the end-of-turn
scorer, ONNX Runtime is Piper in a worker and Silero VAD in the web process,
soxr is resampling, Opus and FFmpeg are encoding, libsrtp and OpenSSL are the
WebRTC media's encryption, and the interpreter itself is Python overhead. A
stage's CPU-seconds are its share of the process's samples times the CPU the
process used in the step (from /proc), so the stages add up to the process.

Samples in the interpreter cannot be told apart by library: they are the
Python code of whatever ran (the call loop, the channel layer, aiortc's
packetization, JSON), and show as one `python` stage per process.

perf comes from Debian's `linux-perf` package; it needs
`kernel.perf_event_paranoid` at most 2 for a process of the same user.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections import Counter
from pathlib import Path

SAMPLE_HZ = 499

# (pattern on the shared object's file name, stage) in order: the first match wins.
# Where a library serves several stages, the process decides (`_ROLE_STAGES`).
_LIBRARIES: tuple[tuple[str, str], ...] = (
    (r"ctranslate2|libiomp|libgomp|libmkl|dnnl|tokenizers", "asr"),
    # code generated at run time: CTranslate2's int8 matrix kernels (perf names
    # such memory perf-<pid>.map, or [JIT]); nothing else here generates code
    (r"^perf-\d+\.map$|/tmp/perf-\d+\.map|\[JIT\]", "jit"),
    (r"libllama|libggml|llama_cpp", "llama"),
    (r"onnxruntime", "onnx"),
    (r"espeak|piper_phonemize", "tts"),
    (r"soxr", "resampling"),
    (r"opus|libav|libswresample|libswscale|/av/|av\.libs|libvpx|libx264", "codec"),
    (r"srtp|libcrypto|libssl|_rust\.abi3|cryptography|libcrypt", "crypto"),
    (r"_multiarray|_umath|openblas|numpy|_pocketfft|scipy", "numpy"),
    (r"msgpack|redis|hiredis", "channel layer"),
    (r"psycopg|libpq", "database"),
    (r"kernel\.kallsyms|\[vdso\]|\[unknown\]", "kernel"),
    (r"libc\.so|libc-|libm\.so|libstdc\+\+|libgcc|ld-linux|libpthread", "libc"),
    (r"python|lib-dynload|_asyncio|_json|_struct", "python"),
)

# What an ONNX Runtime or llama.cpp sample is, in each kind of process.
_ROLE_STAGES = {
    "web": {"onnx": "vad", "llama": "llama", "jit": "other"},
    "worker": {"onnx": "tts", "llama": "llm + eou", "jit": "asr"},
}


def stage_of(role: str, dso: str) -> str:
    """The stage a sample in shared object `dso` counts for, in a process of `role`
    ("web", "worker" or "redis")."""
    if role == "redis":
        return "redis"
    for pattern, stage in _LIBRARIES:
        if re.search(pattern, dso):
            return _ROLE_STAGES.get(role, {}).get(stage, stage)
    return "other"


def role_of(name: str) -> str:
    """`worker0`, `worker1`, ... are workers."""
    return "worker" if name.startswith("worker") else name


_PID = re.compile(r"^\s*(\d+)\s")
_DSO = re.compile(r"\(([^()]*)\)\s*$")


def count_samples(script_output: str) -> Counter[tuple[int, str]]:
    """(pid, shared object) -> samples, from `perf script -F pid,ip,dso` text."""
    counts: Counter[tuple[int, str]] = Counter()
    pid: int | None = None
    for line in script_output.splitlines():
        head = _PID.match(line)
        if head:
            pid = int(head.group(1))
        tail = _DSO.search(line)
        if tail and pid is not None:
            counts[(pid, tail.group(1))] += 1
            pid = None
    return counts


def split_by_stage(
    counts: Counter[tuple[int, str]],
    pids: dict[str, int],
    cpu_s: dict[str, float],
) -> dict[str, dict[str, float]]:
    """Each process's CPU-seconds (`cpu_s`, by name) shared out between its stages in
    proportion to its samples; a process without samples gets none."""
    out: dict[str, dict[str, float]] = {}
    for name, pid in pids.items():
        mine = {dso: n for (p, dso), n in counts.items() if p == pid}
        total = sum(mine.values())
        if not total:
            continue
        by_stage: Counter[str] = Counter()
        for dso, n in mine.items():
            by_stage[stage_of(role_of(name), dso)] += n
        seconds = cpu_s.get(name, 0.0)
        out[name] = {stage: round(seconds * n / total, 3) for stage, n in by_stage.most_common()}
        out[name]["samples"] = total
    return out


def top_libraries(
    counts: Counter[tuple[int, str]], pids: dict[str, int], n: int = 12
) -> dict[str, dict[str, float]]:
    """Each process's `n` busiest shared objects (by file name), as shares of its samples."""
    out: dict[str, dict[str, float]] = {}
    for name, pid in pids.items():
        mine: Counter[str] = Counter()
        for (p, dso), count in counts.items():
            if p == pid:
                mine[os.path.basename(dso) or dso] += count
        total = sum(mine.values())
        if total:
            out[name] = {dso: round(c / total, 3) for dso, c in mine.most_common(n)}
    return out


class PerfUnavailable(RuntimeError):
    pass


def perf_path() -> str:
    path = shutil.which("perf")
    if path is None:
        raise PerfUnavailable("perf is not installed (Debian: apt-get install linux-perf)")
    return path


class PerfRecorder:
    """`perf record` of some processes, from `start` to `stop`."""

    def __init__(self, pids: dict[str, int], data: Path, hz: int = SAMPLE_HZ) -> None:
        self.pids = dict(pids)
        self.data = data
        self.hz = hz
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        perf = perf_path()
        pid_list = ",".join(str(p) for p in self.pids.values())
        self._proc = subprocess.Popen(
            [perf, "record", "-q", "-F", str(self.hz), "-o", str(self.data), "-p", pid_list],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def stop(self) -> Counter[tuple[int, str]]:
        """Stop recording; (pid, shared object) -> samples."""
        proc, self._proc = self._proc, None
        if proc is None:
            return Counter()
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        if not self.data.exists():
            raise PerfUnavailable(
                f"perf record wrote nothing: {err.decode(errors='replace')[:300]}"
            )
        script = subprocess.run(
            [perf_path(), "script", "-i", str(self.data), "-F", "pid,ip,dso"],
            capture_output=True,
            text=True,
            check=True,
        )
        os.unlink(self.data)
        return count_samples(script.stdout)
