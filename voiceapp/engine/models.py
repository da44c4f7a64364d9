"""Load the default (or configured) models once per process and warm them up."""

from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from .asr import (
    DEFAULT_ASR_MODEL,
    PAD_SECONDS,
    WhisperASR,
    WhisperSettings,
    asr_model_path,
)
from .devices import DevicePlan, DeviceRequest, MachineOffer, plan_devices, probe_machine
from .eou import EndOfTurnScorer, EndOfTurnSettings
from .inference import LocalInference
from .llm import LLM, HttpLLM, HttpLLMSettings, LlamaLLM, LlamaSettings, default_llm_model_path
from .tts import PiperTTS, VoiceSpec, default_voice_path

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """Deployment-wide model configuration; empty paths mean the packaged defaults."""

    asr_model_path: str = ""  # set: this CTranslate2 directory instead of `asr_model`
    asr_model: str = DEFAULT_ASR_MODEL  # a packaged model by name (asr.ASR_MODELS)
    asr_cache_dir: str = ""  # where a model that ships in parts is joined ("" = temp dir)
    inference_device: str = "auto"  # auto, cpu or cuda: where every model runs (devices.py)
    asr_compute_type: str = "default"  # int8 on the CPU, float16 on a GPU
    asr_device: str = ""  # cpu, cuda or auto; "" follows inference_device
    asr_threads: int = 1  # per replica
    asr_replicas: int = 2  # turns' readings at once (two calls' turns ending together)
    # Live captions read on an instance of their own at this nice value (0-19; on
    # the CPU only); -1: captions share the replicas above.
    caption_nice: int = 10
    llm_model_path: str = ""
    llm_threads: int = 1
    llm_batch_threads: int = 1  # see LlamaSettings.batch_threads
    llm_context_tokens: int = 2048
    llm_contexts: int = 2
    llm_snapshot_mb: int = 128  # see LlamaSettings.snapshot_bytes
    llm_gpu_layers: int | None = None  # 0 none, -1 all (a GPU build); None follows the device
    llm_http_base_url: str = ""  # set: use an OpenAI-compatible endpoint instead of llama.cpp
    llm_http_api_key: str = ""
    llm_http_model: str = ""
    tts_threads: int = 1
    tts_windowed: bool = True  # a clause made in windows (piper_graph.py); False: whole
    # Work nobody waits on yet runs in threads of this nice value: a reply's clauses
    # with its audio made ahead of them, and the rest of a reply once its first words
    # are written (inference.LocalInference); -1: everything alike.
    background_nice: int = 10
    eou_model: bool = True  # score end of turn with the local LLM (its own small context)
    warm_voice_path: str = ""  # voice to load and warm up at start ("" = packaged default)


def default_voice() -> VoiceSpec:
    return VoiceSpec(voice_id="en_US-joe-medium", model_path=default_voice_path())


def device_plan(settings: ModelSettings, offer: MachineOffer | None = None) -> DevicePlan:
    """Where the models of `settings` run on this machine (or on one offering `offer`)."""
    request = DeviceRequest(
        inference_device=settings.inference_device,
        asr_device=settings.asr_device,
        asr_compute_type=settings.asr_compute_type,
        llm_gpu_layers=settings.llm_gpu_layers,
    )
    return plan_devices(request, offer or probe_machine())


def load_inference(settings: ModelSettings, *, warm_up: bool = True) -> LocalInference:
    """Load ASR, LLM and TTS in this process; returns them behind `LocalInference`."""
    started = time.monotonic()
    cache_dir = settings.asr_cache_dir or Path(tempfile.gettempdir()) / "voiceapp-models"
    # the devices first: a GPU asked for and missing stops here, before any loading
    plan = device_plan(settings)
    log.info("devices (INFERENCE_DEVICE=%s): %s", settings.inference_device, plan.describe())
    for note in plan.notes:
        log.warning("%s", note)
    device, compute_type = plan.asr_device, plan.asr_compute_type

    def load_asr(name: str) -> WhisperASR:
        asr = WhisperASR(
            WhisperSettings(
                model_path=asr_model_path(name, cache_dir),
                compute_type=compute_type,
                device=device,
                cpu_threads=settings.asr_threads,
                num_workers=settings.asr_replicas,
                pad_seconds=PAD_SECONDS[name],
            )
        )
        if warm_up:
            asr.warm_up()
        return asr

    default_asr = WhisperSettings(
        model_path=settings.asr_model_path or asr_model_path(settings.asr_model, cache_dir),
        compute_type=compute_type,
        device=device,
        cpu_threads=settings.asr_threads,
        num_workers=settings.asr_replicas,
        pad_seconds=PAD_SECONDS.get(settings.asr_model, 2.0),
    )
    asr = WhisperASR(default_asr)
    # Live captions get an instance of their own: one replica whose thread yields the
    # cores to everything else (docs/CAPACITY.md, 2026-12-06).
    caption_asr = None
    if settings.caption_nice >= 0 and device == "cpu":
        caption_asr = WhisperASR(replace(default_asr, num_workers=1, nice=settings.caption_nice))
    http_llm: LLM | None = None
    if settings.llm_http_base_url:
        http_llm = HttpLLM(
            HttpLLMSettings(
                base_url=settings.llm_http_base_url,
                api_key=settings.llm_http_api_key,
                model=settings.llm_http_model,
            )
        )
    llm = LlamaLLM(
        LlamaSettings(
            model_path=settings.llm_model_path or default_llm_model_path(),
            context_tokens=settings.llm_context_tokens,
            threads=settings.llm_threads,
            batch_threads=settings.llm_batch_threads,
            contexts=settings.llm_contexts,
            snapshot_bytes=settings.llm_snapshot_mb * 1024 * 1024,
            gpu_layers=plan.llm_gpu_layers,
        )
    )
    tts = PiperTTS(
        threads=settings.tts_threads,
        providers=plan.tts_providers,
        windowed=settings.tts_windowed,
        cache_dir=Path(cache_dir) / "voices",
    )
    eou = None
    if settings.eou_model:
        eou = EndOfTurnScorer(
            EndOfTurnSettings(
                model_path=settings.llm_model_path or default_llm_model_path(),
                gpu_layers=plan.eou_gpu_layers,
            )
        )
    if warm_up:
        asr.warm_up()
        if caption_asr is not None:
            caption_asr.warm_up()
        llm.warm_up()
        voice = default_voice()
        if settings.warm_voice_path:
            voice = VoiceSpec("warm", settings.warm_voice_path)
        tts.warm_up(voice)
        if eou is not None:
            eou.warm_up()
    log.info("models loaded in %.1f s", time.monotonic() - started)
    return LocalInference(
        asr,
        llm,
        tts,
        http_llm=http_llm,
        eou=eou,
        llm_slots=llm.slots,
        asr_slots=settings.asr_replicas,
        asr_model=settings.asr_model,
        asr_loader=load_asr,
        devices=plan,
        caption_asr=caption_asr,
        background_nice=settings.background_nice,
    )
