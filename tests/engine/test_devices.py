"""Model devices: the CPU by default, a GPU only where one is asked for and present."""

from __future__ import annotations

import time

import llama_cpp
import pytest

from voiceapp.engine.devices import (
    DeviceError,
    asr_compute_type,
    asr_device,
    cuda_devices,
    llm_gpu_layers,
)
from voiceapp.engine.models import ModelSettings, load_inference

HAS_CUDA = cuda_devices() > 0
GPU_BUILD = bool(llama_cpp.llama_supports_gpu_offload())


def test_the_cpu_is_the_default_and_auto_picks_what_is_there() -> None:
    # given the settings' defaults, and "auto"
    # then the default is the CPU, and auto is the GPU exactly when CTranslate2 sees one
    assert ModelSettings().asr_device == "cpu" and asr_device("cpu") == "cpu"
    assert asr_device("auto") == ("cuda" if HAS_CUDA else "cpu")
    assert asr_device(" CPU ") == "cpu"


def test_an_unknown_device_names_the_choices() -> None:
    with pytest.raises(ValueError, match="cpu, cuda, auto"):
        asr_device("tpu")


def test_compute_type_follows_the_device_unless_set() -> None:
    assert asr_compute_type("default", "cpu") == "int8"
    assert asr_compute_type("default", "cuda") == "float16"
    assert asr_compute_type("int8_float16", "cuda") == "int8_float16"


@pytest.mark.skipif(HAS_CUDA, reason="checks the refusal on a machine without a GPU")
def test_asking_for_a_missing_gpu_stops_the_worker_before_it_loads_anything() -> None:
    # given a worker configured for a GPU on a machine without one
    started = time.monotonic()
    # when it loads its models
    with pytest.raises(DeviceError, match="ASR_DEVICE=cuda") as refused:
        load_inference(ModelSettings(asr_device="cuda"), warm_up=False)
    # then it says what to do, at once (no model was loaded first)
    assert "ASR_DEVICE=cpu or auto" in str(refused.value)
    assert time.monotonic() - started < 2.0


@pytest.mark.skipif(GPU_BUILD, reason="checks the refusal with a CPU-only llama.cpp build")
def test_gpu_layers_need_a_gpu_build_of_llama_cpp() -> None:
    # given llama-cpp-python built for the CPU (as pip builds it here)
    # then offloading is refused with the rebuild to do, and 0 layers is fine
    with pytest.raises(DeviceError, match="GGML_CUDA"):
        llm_gpu_layers(-1)
    with pytest.raises(DeviceError, match="LLM_GPU_LAYERS=12"):
        load_inference(ModelSettings(llm_gpu_layers=12), warm_up=False)
    assert llm_gpu_layers(0) == 0


def test_a_negative_layer_count_other_than_all_is_refused() -> None:
    with pytest.raises(ValueError, match="-1 \\(all\\)"):
        llm_gpu_layers(-5)
