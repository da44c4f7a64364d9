"""Model devices: a GPU where one is usable, the CPU otherwise, and never a quiet fall
back to the CPU when a GPU was asked for."""

from __future__ import annotations

import time
from typing import Any

import pytest

from voiceapp.engine.devices import (
    CPU_PROVIDER,
    CUDA_PROVIDER,
    DeviceError,
    DevicePlan,
    DeviceRequest,
    MachineOffer,
    asr_compute_type,
    plan_devices,
    probe_machine,
)
from voiceapp.engine.models import ModelSettings, load_inference

THIS_MACHINE = probe_machine()

# what a machine offers: a GPU with GPU builds of llama.cpp and ONNX Runtime, a GPU
# with this project's pip builds (CPU-only llama.cpp, CPU onnxruntime), no GPU
GPU_BUILDS = MachineOffer(2, True, (CUDA_PROVIDER, CPU_PROVIDER))
GPU_CPU_BUILDS = MachineOffer(1, False, ("AzureExecutionProvider", CPU_PROVIDER))
NO_GPU = MachineOffer(0, False, (CPU_PROVIDER,))
NO_GPU_GPU_BUILDS = MachineOffer(0, True, (CUDA_PROVIDER, CPU_PROVIDER))

ALL_CPU = DevicePlan("cpu", "int8", 0, 0, (CPU_PROVIDER,))
ALL_GPU = DevicePlan("cuda", "float16", -1, -1, (CUDA_PROVIDER, CPU_PROVIDER))


def plan(offer: MachineOffer, **settings: Any) -> DevicePlan:
    return plan_devices(DeviceRequest(**settings), offer)


# --- auto: the GPU for each model that can use it ------------------------------------


def test_auto_is_the_default_and_puts_every_model_on_a_usable_gpu() -> None:
    # given the settings' defaults on a GPU machine with GPU builds
    assert ModelSettings().inference_device == DeviceRequest().inference_device == "auto"
    # then ASR, LLM, EOU and TTS all run on it
    assert plan(GPU_BUILDS) == ALL_GPU
    assert plan(GPU_BUILDS).notes == ()


def test_auto_without_a_gpu_is_all_cpu_even_with_gpu_builds() -> None:
    assert plan(NO_GPU) == ALL_CPU
    assert plan(NO_GPU_GPU_BUILDS) == ALL_CPU
    assert plan(NO_GPU).notes == ()


def test_auto_leaves_on_the_cpu_what_the_builds_cannot_offload_and_says_so() -> None:
    # given a GPU, but llama.cpp and ONNX Runtime built for the CPU
    got = plan(GPU_CPU_BUILDS)
    # then ASR goes to the GPU, the rest stays on the CPU, and the notes say why
    assert got == DevicePlan("cuda", "float16", 0, 0, (CPU_PROVIDER,))
    assert len(got.notes) == 2
    assert "llama-cpp-python was built for the CPU only" in got.notes[0]
    assert CUDA_PROVIDER in got.notes[1]


def test_tts_takes_the_cuda_provider_only_when_onnx_runtime_lists_it() -> None:
    # given a GPU and a GPU llama.cpp, but the CPU onnxruntime
    offer = MachineOffer(1, True, (CPU_PROVIDER,))
    # then only Piper stays on the CPU, under auto and under cuda
    for device in ("auto", "cuda"):
        got = plan(offer, inference_device=device)
        assert got.tts_providers == (CPU_PROVIDER,) and got.tts_device == "cpu"
        assert (got.asr_device, got.llm_gpu_layers, got.eou_gpu_layers) == ("cuda", -1, -1)
    # and with the provider listed, CUDA first and the CPU behind it for unsupported ops
    assert plan(GPU_BUILDS).tts_providers == (CUDA_PROVIDER, CPU_PROVIDER)


# --- cpu and cuda --------------------------------------------------------------------


def test_cpu_keeps_every_model_on_the_cpu_of_a_gpu_machine() -> None:
    assert plan(GPU_BUILDS, inference_device="cpu") == ALL_CPU
    assert plan(GPU_BUILDS, inference_device=" CPU ") == ALL_CPU
    assert plan(GPU_BUILDS, inference_device="cpu").notes == ()


def test_cuda_on_a_gpu_machine_puts_every_model_on_it() -> None:
    assert plan(GPU_BUILDS, inference_device="cuda") == ALL_GPU


@pytest.mark.parametrize("offer", [NO_GPU, NO_GPU_GPU_BUILDS])
def test_cuda_without_a_gpu_is_refused_with_what_to_do(offer: MachineOffer) -> None:
    with pytest.raises(DeviceError, match="INFERENCE_DEVICE=cuda, but CTranslate2") as refused:
        plan(offer, inference_device="cuda")
    assert "Use INFERENCE_DEVICE=cpu or auto" in str(refused.value)
    # and overriding ASR to the CPU does not make it start: the rest still wants the GPU
    with pytest.raises(DeviceError, match="INFERENCE_DEVICE=cuda"):
        plan(offer, inference_device="cuda", asr_device="cpu", llm_gpu_layers=0)


def test_cuda_with_a_cpu_only_llama_cpp_is_refused_unless_the_llm_is_kept_on_the_cpu() -> None:
    # given a GPU, but llama-cpp-python built for the CPU
    with pytest.raises(DeviceError, match="INFERENCE_DEVICE=cuda, but this llama-cpp") as refused:
        plan(GPU_CPU_BUILDS, inference_device="cuda")
    assert "GGML_CUDA" in str(refused.value) and "LLM_GPU_LAYERS=0" in str(refused.value)
    # then LLM_GPU_LAYERS=0 keeps the LLM on the CPU, deliberately
    got = plan(GPU_CPU_BUILDS, inference_device="cuda", llm_gpu_layers=0)
    assert (got.asr_device, got.llm_gpu_layers, got.eou_gpu_layers) == ("cuda", 0, 0)


# --- per-model settings override INFERENCE_DEVICE ------------------------------------


def test_explicit_per_model_settings_win() -> None:
    # ASR on the CPU of a GPU machine, everything else on the GPU
    got = plan(GPU_BUILDS, asr_device="cpu")
    assert (got.asr_device, got.asr_compute_type, got.llm_gpu_layers) == ("cpu", "int8", -1)
    # ASR on the GPU under INFERENCE_DEVICE=cpu, with its own compute type
    got = plan(GPU_BUILDS, inference_device="cpu", asr_device="cuda", asr_compute_type="int8")
    assert (got.asr_device, got.asr_compute_type, got.llm_gpu_layers) == ("cuda", "int8", 0)
    assert got.tts_device == "cpu"
    # ASR_DEVICE=auto follows the machine whatever INFERENCE_DEVICE says
    assert plan(GPU_BUILDS, inference_device="cpu", asr_device="auto").asr_device == "cuda"
    assert plan(NO_GPU, inference_device="cpu", asr_device="auto").asr_device == "cpu"
    # a layer count for the LLM, and the EOU model with it, under cpu or auto
    for device in ("cpu", "auto"):
        got = plan(GPU_BUILDS, inference_device=device, llm_gpu_layers=12)
        assert (got.llm_gpu_layers, got.eou_gpu_layers) == (12, 12)
    # and the LLM kept on the CPU under auto
    assert plan(GPU_BUILDS, llm_gpu_layers=0).llm_gpu_layers == 0


def test_asr_device_cuda_without_a_gpu_names_its_own_setting() -> None:
    with pytest.raises(DeviceError, match="ASR_DEVICE=cuda") as refused:
        plan(NO_GPU, inference_device="cpu", asr_device="cuda")
    assert "Use ASR_DEVICE=cpu or auto" in str(refused.value)


def test_gpu_layers_need_a_gpu_build_of_llama_cpp() -> None:
    with pytest.raises(DeviceError, match=r"LLM_GPU_LAYERS=-1, but .* CPU only") as refused:
        plan(GPU_CPU_BUILDS, llm_gpu_layers=-1)
    assert "GGML_CUDA" in str(refused.value)


def test_settings_out_of_range_name_the_choices() -> None:
    with pytest.raises(ValueError, match="INFERENCE_DEVICE must be one of auto, cpu, cuda"):
        plan(GPU_BUILDS, inference_device="tpu")
    with pytest.raises(ValueError, match="ASR_DEVICE must be one of cpu, cuda, auto"):
        plan(GPU_BUILDS, asr_device="tpu")
    with pytest.raises(ValueError, match="-1 \\(all\\)"):
        plan(GPU_BUILDS, llm_gpu_layers=-5)


def test_compute_type_follows_the_device_unless_set() -> None:
    assert asr_compute_type("default", "cpu") == "int8"
    assert asr_compute_type("default", "cuda") == "float16"
    assert asr_compute_type("int8_float16", "cuda") == "int8_float16"


# --- the plan as the worker reports it -----------------------------------------------


def test_the_plan_reads_the_same_in_logs_adverts_and_results() -> None:
    assert ALL_GPU.as_dict() == {
        "asr_device": "cuda",
        "asr_compute_type": "float16",
        "llm_gpu_layers": -1,
        "eou_gpu_layers": -1,
        "tts_providers": [CUDA_PROVIDER, CPU_PROVIDER],
    }
    assert ALL_GPU.describe() == (
        "ASR on cuda (float16), LLM layers on the GPU: all, EOU layers on the GPU: all, "
        f"TTS on cuda ({CUDA_PROVIDER}, {CPU_PROVIDER})"
    )


# --- this machine, its real runtimes ---------------------------------------------------


@pytest.mark.skipif(THIS_MACHINE.cuda_devices > 0, reason="a machine without a GPU")
def test_auto_on_this_machine_is_all_cpu() -> None:
    # given this machine's runtimes, asked themselves (no GPU here; pip's llama.cpp and
    # onnxruntime are CPU builds)
    assert THIS_MACHINE.cuda_devices == 0
    assert CPU_PROVIDER in THIS_MACHINE.onnx_providers
    # then auto runs every model on the CPU
    assert plan_devices(DeviceRequest(inference_device="auto"), THIS_MACHINE) == ALL_CPU


@pytest.mark.skipif(THIS_MACHINE.cuda_devices > 0, reason="a machine without a GPU")
def test_asking_for_a_missing_gpu_stops_the_worker_before_it_loads_anything() -> None:
    # given a worker configured for a GPU on a machine without one
    started = time.monotonic()
    # when it loads its models
    with pytest.raises(DeviceError, match="INFERENCE_DEVICE=cuda") as refused:
        load_inference(ModelSettings(inference_device="cuda"), warm_up=False)
    # then it says what to do, at once (no model was loaded first)
    assert "INFERENCE_DEVICE=cpu or auto" in str(refused.value)
    with pytest.raises(DeviceError, match="ASR_DEVICE=cuda"):
        load_inference(ModelSettings(inference_device="cpu", asr_device="cuda"), warm_up=False)
    assert time.monotonic() - started < 2.0


@pytest.mark.skipif(THIS_MACHINE.llama_gpu_offload, reason="a CPU-only llama.cpp build")
def test_gpu_layers_with_this_cpu_build_stop_the_worker() -> None:
    with pytest.raises(DeviceError, match="LLM_GPU_LAYERS=12"):
        load_inference(ModelSettings(llm_gpu_layers=12), warm_up=False)
