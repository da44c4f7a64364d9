"""Where the models run: a CUDA GPU when one is present, the CPU otherwise.

`INFERENCE_DEVICE` says where the worker should run: `auto` (the GPU when this
machine and these builds can use one, else the CPU), `cpu`, or `cuda`. Three
per-model settings override it when they are set: `ASR_DEVICE`, `ASR_COMPUTE_TYPE`
and `LLM_GPU_LAYERS` (the end-of-utterance model follows the LLM: both are llama.cpp
with the same weights).

A GPU that was asked for and is missing stops the worker at start. The worker never
falls back to the CPU on its own: a worker sized for a GPU would be several times
slower on its cores, and admission would plan on the wrong figures. Only `auto`
chooses by what it finds. Piper is the one exception: it runs on the GPU where
ONNX Runtime has the CUDA provider (the `onnxruntime-gpu` package), and on the CPU
otherwise, with a warning, because one voice costs a few tens of ms per clause on
the CPU either way.

`plan_devices` is the whole decision. It is pure: it takes the settings and what
the machine offers (`probe_machine`), so tests can cover a GPU machine without one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

INFERENCE_DEVICES = ("auto", "cpu", "cuda")
ASR_DEVICES = ("cpu", "cuda", "auto")
CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"


class DeviceError(RuntimeError):
    """The configured device cannot be used on this machine or with this build."""


@dataclass(frozen=True, slots=True)
class MachineOffer:
    """What this machine and the installed builds can run the models on."""

    cuda_devices: int  # CUDA devices CTranslate2 (faster-whisper's runtime) sees
    llama_gpu_offload: bool  # llama-cpp-python was built with a GPU backend
    onnx_providers: tuple[str, ...]  # onnxruntime.get_available_providers()


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """The device settings as configured; empty or None means "follow INFERENCE_DEVICE"."""

    inference_device: str = "auto"
    asr_device: str = ""
    asr_compute_type: str = "default"
    llm_gpu_layers: int | None = None


@dataclass(frozen=True, slots=True)
class DevicePlan:
    """Where each model of a worker runs."""

    asr_device: str  # faster-whisper's device: cpu or cuda
    asr_compute_type: str
    llm_gpu_layers: int  # llama.cpp layers offloaded: 0 none, -1 all
    eou_gpu_layers: int
    tts_providers: tuple[str, ...]  # ONNX Runtime providers for Piper, in order
    # why a model stays on the CPU although a GPU is there (logged as warnings)
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def tts_device(self) -> str:
        return "cuda" if self.tts_providers[0] == CUDA_PROVIDER else "cpu"

    def as_dict(self) -> dict[str, Any]:
        """The plan for capacity adverts, /metrics and benchmark results."""
        return {
            "asr_device": self.asr_device,
            "asr_compute_type": self.asr_compute_type,
            "llm_gpu_layers": self.llm_gpu_layers,
            "eou_gpu_layers": self.eou_gpu_layers,
            "tts_providers": list(self.tts_providers),
        }

    def describe(self) -> str:
        return (
            f"ASR on {self.asr_device} ({self.asr_compute_type}), "
            f"LLM layers on the GPU: {_layers(self.llm_gpu_layers)}, "
            f"EOU layers on the GPU: {_layers(self.eou_gpu_layers)}, "
            f"TTS on {self.tts_device} ({', '.join(self.tts_providers)})"
        )


def _layers(n: int) -> str:
    return "all" if n == -1 else str(n)


def cuda_devices() -> int:
    """CUDA devices CTranslate2 (faster-whisper's runtime) can use here."""
    try:
        import ctranslate2

        return int(ctranslate2.get_cuda_device_count())
    except Exception as exc:  # a CUDA driver that fails to load counts as none
        log.info("no CUDA device for CTranslate2: %s", exc)
        return 0


def probe_machine() -> MachineOffer:
    """What this machine offers, asked of the three runtimes themselves."""
    import llama_cpp
    import onnxruntime

    return MachineOffer(
        cuda_devices=cuda_devices(),
        llama_gpu_offload=bool(llama_cpp.llama_supports_gpu_offload()),
        onnx_providers=tuple(onnxruntime.get_available_providers()),
    )


def asr_compute_type(requested: str, device: str) -> str:
    """ASR_COMPUTE_TYPE, or the device's natural one when it is `default`: int8 on
    the CPU, float16 on a GPU."""
    if requested and requested != "default":
        return requested
    return "float16" if device == "cuda" else "int8"


def _choice(value: str, choices: tuple[str, ...], name: str) -> str:
    value = value.strip().lower()
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


def _no_cuda(setting: str) -> DeviceError:
    return DeviceError(
        f"{setting}=cuda, but CTranslate2 finds no CUDA device here (is the NVIDIA "
        "driver visible to this process, and are the CUDA 12 cuBLAS and cuDNN 9 "
        f"libraries installed?). Use {setting}=cpu or auto."
    )


def _cpu_only_llama(setting: str, fix: str) -> DeviceError:
    return DeviceError(
        f"{setting}, but this llama-cpp-python was built for the CPU only. Rebuild it "
        f'with CMAKE_ARGS="-DGGML_CUDA=on" (docs/GPU.md), or set {fix}.'
    )


def plan_devices(request: DeviceRequest, offer: MachineOffer) -> DevicePlan:
    """Where each model runs, for these settings on a machine that offers `offer`.

    Raises DeviceError when a GPU is asked for (`cuda`, or GPU layers) that this
    machine or build cannot give, and ValueError for a setting out of range."""
    mode = _choice(request.inference_device, INFERENCE_DEVICES, "INFERENCE_DEVICE")
    gpu = offer.cuda_devices > 0
    if mode == "cuda" and not gpu:
        raise _no_cuda("INFERENCE_DEVICE")
    notes: list[str] = []

    asr_setting, asr_wanted = "INFERENCE_DEVICE", mode
    if request.asr_device.strip():
        asr_setting = "ASR_DEVICE"
        asr_wanted = _choice(request.asr_device, ASR_DEVICES, asr_setting)
    if asr_wanted == "cuda" and not gpu:
        raise _no_cuda(asr_setting)
    asr = "cuda" if asr_wanted != "cpu" and gpu else "cpu"

    if request.llm_gpu_layers is not None:
        layers = request.llm_gpu_layers
        if layers < -1:
            raise ValueError(
                f"LLM_GPU_LAYERS must be -1 (all), 0 (none) or a layer count, not {layers}"
            )
        if layers != 0 and not offer.llama_gpu_offload:
            raise _cpu_only_llama(f"LLM_GPU_LAYERS={layers}", "LLM_GPU_LAYERS=0")
    elif mode == "cuda":
        if not offer.llama_gpu_offload:
            raise _cpu_only_llama(
                "INFERENCE_DEVICE=cuda", "LLM_GPU_LAYERS=0 to keep the LLM on the CPU"
            )
        layers = -1
    elif mode == "auto" and gpu:
        layers = -1 if offer.llama_gpu_offload else 0
        if not offer.llama_gpu_offload:
            notes.append("LLM and EOU on the CPU: llama-cpp-python was built for the CPU only")
    else:
        layers = 0

    tts_gpu = mode != "cpu" and gpu and CUDA_PROVIDER in offer.onnx_providers
    if mode != "cpu" and gpu and not tts_gpu:
        notes.append(f"TTS on the CPU: ONNX Runtime here has no {CUDA_PROVIDER} (onnxruntime-gpu)")
    tts = (CUDA_PROVIDER, CPU_PROVIDER) if tts_gpu else (CPU_PROVIDER,)

    return DevicePlan(
        asr_device=asr,
        asr_compute_type=asr_compute_type(request.asr_compute_type, asr),
        llm_gpu_layers=layers,
        eou_gpu_layers=layers,
        tts_providers=tts,
        notes=tuple(notes),
    )
