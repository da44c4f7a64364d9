"""Where the models run: the CPU by default, a CUDA GPU when the operator asks for one.

Asking for a GPU that is not there is an error at start, never a quiet fall back to
the CPU: a worker sized for a GPU would be several times slower on its cores, and
admission would be planned on the wrong figures. `auto` is the one setting that
chooses by what it finds.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

ASR_DEVICES = ("cpu", "cuda", "auto")


class DeviceError(RuntimeError):
    """The configured device cannot be used on this machine or with this build."""


def cuda_devices() -> int:
    """CUDA devices CTranslate2 (faster-whisper's runtime) can use here."""
    try:
        import ctranslate2

        return int(ctranslate2.get_cuda_device_count())
    except Exception as exc:  # a CUDA driver that fails to load counts as none
        log.info("no CUDA device for CTranslate2: %s", exc)
        return 0


def asr_device(requested: str) -> str:
    """The faster-whisper device for ASR_DEVICE: `cpu`, `cuda`, or `auto`."""
    requested = requested.strip().lower()
    if requested not in ASR_DEVICES:
        raise ValueError(f"ASR_DEVICE must be one of {', '.join(ASR_DEVICES)}, not {requested!r}")
    if requested == "cpu":
        return "cpu"
    found = cuda_devices()
    if requested == "auto":
        return "cuda" if found else "cpu"
    if not found:
        raise DeviceError(
            "ASR_DEVICE=cuda, but CTranslate2 finds no CUDA device here (is the NVIDIA "
            "driver visible to this process, and are the CUDA 12 cuBLAS and cuDNN 9 "
            "libraries installed?). Use ASR_DEVICE=cpu or auto."
        )
    return "cuda"


def asr_compute_type(requested: str, device: str) -> str:
    """ASR_COMPUTE_TYPE, or the device's natural one when it is `default`: int8 on
    the CPU, float16 on a GPU."""
    if requested and requested != "default":
        return requested
    return "float16" if device == "cuda" else "int8"


def llm_gpu_layers(requested: int) -> int:
    """LLM_GPU_LAYERS for llama.cpp: 0 keeps the model on the CPU, -1 offloads every
    layer. Offloading needs llama-cpp-python built with a GPU backend."""
    if requested == 0:
        return 0
    if requested < -1:
        raise ValueError(
            f"LLM_GPU_LAYERS must be -1 (all), 0 (none) or a layer count, not {requested}"
        )
    import llama_cpp

    if not llama_cpp.llama_supports_gpu_offload():
        raise DeviceError(
            f"LLM_GPU_LAYERS={requested}, but this llama-cpp-python was built for the CPU "
            'only. Rebuild it with CMAKE_ARGS="-DGGML_CUDA=on" (docs/GPU.md), or set '
            "LLM_GPU_LAYERS=0."
        )
    return requested
