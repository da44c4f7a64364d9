"""`bench load --profile`: perf samples of a process, put in stages by library."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from bench.profile import PerfRecorder, split_by_stage, stage_of

# numpy's own loops, then a pure-Python loop, each for about a second
BUSY = """
import time, numpy as np
a = np.random.default_rng(0).random(2_000_000)
t = time.monotonic()
while time.monotonic() - t < 1.2:
    np.sort(a)
t = time.monotonic()
n = 0
while time.monotonic() - t < 1.2:
    n += sum(range(1000))
"""


def test_a_library_counts_for_the_stage_of_its_process() -> None:
    onnx = "/venv/lib/python3.11/site-packages/onnxruntime/capi/libonnxruntime.so.1.20"
    assert stage_of("web", onnx) == "vad"  # Silero in the web process
    assert stage_of("worker", onnx) == "tts"  # Piper in a worker
    assert stage_of("worker", "/venv/.../ctranslate2.libs/libctranslate2-3f.so.4") == "asr"
    assert stage_of("worker", "/venv/.../llama_cpp/lib/libggml-cpu.so") == "llm + eou"
    assert stage_of("worker", "/tmp/perf-4242.map") == "asr"  # CTranslate2's JIT kernels
    assert stage_of("web", "/venv/.../soxr/cysoxr.cpython-311-x86_64-linux-gnu.so") == (
        "resampling"
    )
    assert stage_of("web", "/venv/.../av.libs/libavcodec-3a.so.61") == "codec"
    assert stage_of("web", "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0") == "python"
    assert stage_of("web", "[kernel.kallsyms]") == "kernel"
    assert stage_of("redis", "/usr/bin/redis-server") == "redis"
    assert stage_of("web", "/opt/something-new.so") == "other"


def test_a_recorded_process_has_its_cpu_split_between_numpy_and_python(tmp_path: Path) -> None:
    # given a process that sorts with numpy for about 1.2 s, then loops in Python as long
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    child = subprocess.Popen([sys.executable, "-c", BUSY])
    recorder = PerfRecorder({"web": child.pid}, tmp_path / "busy.perf")
    # when perf records it from its start to its end
    recorder.start()
    child.wait(timeout=60)
    samples = recorder.stop()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    split = split_by_stage(samples, recorder.pids, {"web": cpu_s})["web"]

    # then each loop shows as its stage, and the stages share out the process's CPU
    assert split["samples"] > 200, split
    assert split.get("numpy", 0) > 0.25 * cpu_s, split
    assert split.get("python", 0) > 0.25 * cpu_s, split
    stages = sum(v for k, v in split.items() if k != "samples")
    assert abs(stages - cpu_s) < 0.01 + 0.01 * cpu_s, (stages, cpu_s)
    # and the recording is removed once read
    assert not (tmp_path / "busy.perf").exists()
