"""Django glue: models from settings, the client for this process, persona -> CallConfig."""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from django.conf import settings

from voiceapp.engine.call import CallConfig
from voiceapp.engine.inference import EndpointInference, Inference, LocalInference
from voiceapp.engine.knowledge import Fact
from voiceapp.engine.llm import LLM, HttpLLM, LLMError, LLMOptions, Message, PromptUsage
from voiceapp.engine.models import ModelSettings, load_inference
from voiceapp.engine.tts import VoiceSpec
from voiceapp.engine.turns import TurnSettings
from voiceapp.engine.vad import SileroModel

from .capacity import MemoryPoolRegistry, PoolRegistry, RedisPoolRegistry, default_max_calls
from .client import ChannelsInference, ClientSettings
from .protocol import KINDS
from .worker import InferenceWorker

if TYPE_CHECKING:
    from voiceapp.personas.models import Persona

log = logging.getLogger(__name__)

_models_lock = threading.Lock()
_local: LocalInference | None = None
_vad: SileroModel | None = None
_endpoint_executor: ThreadPoolExecutor | None = None
# Threads that stream from organizations' own LLM endpoints: one per reply in progress.
ENDPOINT_THREADS = 64
_embedded: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, tuple[InferenceWorker, asyncio.Task[None]]
] = weakref.WeakKeyDictionary()


memory_pool_registry = MemoryPoolRegistry()
_pool_registries: dict[tuple[int, str], PoolRegistry] = {}


def pool_registry() -> PoolRegistry:
    """Where workers advertise capacity: Redis when the deployment has it, else this
    process (the embedded worker). One Redis client per event loop."""
    if not settings.REDIS_URL:
        return memory_pool_registry
    key = (id(asyncio.get_running_loop()), settings.CHANNELS_PREFIX)
    registry = _pool_registries.get(key)
    if registry is None:
        registry = _pool_registries[key] = RedisPoolRegistry(
            settings.REDIS_URL, settings.CHANNELS_PREFIX
        )
    return registry


def new_worker(
    layer: Any, models: LocalInference, kinds: tuple[str, ...] = KINDS
) -> InferenceWorker:
    """A worker of this deployment: it advertises its capacity for admission control."""
    return InferenceWorker(
        layer,
        models,
        kinds=kinds,
        registry=pool_registry(),
        max_calls=settings.INFERENCE_MAX_CALLS
        or default_max_calls(settings.INFERENCE_CALLS_PER_CORE),
        wait_budget_ms=settings.INFERENCE_WAIT_BUDGET_MS,
    )


def model_settings() -> ModelSettings:
    return ModelSettings(
        asr_model_path=settings.ASR_MODEL_PATH,
        inference_device=settings.INFERENCE_DEVICE,
        asr_compute_type=settings.ASR_COMPUTE_TYPE,
        asr_device=settings.ASR_DEVICE,
        asr_threads=settings.ASR_THREADS,
        asr_replicas=settings.ASR_REPLICAS,
        caption_nice=settings.ASR_CAPTION_NICE,
        llm_model_path=settings.LLM_MODEL_PATH,
        llm_threads=settings.LLM_THREADS,
        llm_batch_threads=settings.LLM_BATCH_THREADS,
        llm_context_tokens=settings.LLM_CONTEXT_TOKENS,
        llm_gpu_layers=settings.LLM_GPU_LAYERS,
        llm_http_base_url=settings.LLM_HTTP_BASE_URL,
        llm_http_api_key=settings.LLM_HTTP_API_KEY,
        tts_threads=settings.TTS_THREADS,
        tts_windowed=settings.TTS_WINDOWED,
        background_nice=settings.BACKGROUND_NICE,
        llm_contexts=settings.LLM_CONTEXTS,
        llm_snapshot_mb=settings.LLM_SNAPSHOT_MB,
    )


def client_settings() -> ClientSettings:
    return ClientSettings(
        accept_timeout_s=settings.INFERENCE_ACCEPT_TIMEOUT_S,
        liveness_timeout_s=settings.INFERENCE_LIVENESS_TIMEOUT_S,
        request_timeout_s=settings.INFERENCE_REQUEST_TIMEOUT_S,
    )


def local_models() -> LocalInference:
    """The models of this process, loaded and warmed up on first use."""
    global _local
    with _models_lock:
        if _local is None:
            _local = load_inference(model_settings())
        return _local


def vad_model() -> SileroModel:
    global _vad
    with _models_lock:
        if _vad is None:
            _vad = SileroModel()
        return _vad


def preload_in_background() -> threading.Thread | None:
    """Embedded mode: load the models while the server starts, not on the first call."""
    if not (settings.INFERENCE_EMBEDDED and settings.PRELOAD_MODELS):
        return None

    def load() -> None:
        log.info("loading the voice models in the background (first call waits for them)")
        try:
            vad_model()
            local_models()
        except Exception:
            log.exception("loading the voice models failed; calls will retry on first use")

    thread = threading.Thread(target=load, name="preload-models", daemon=True)
    thread.start()
    return thread


async def get_inference(layer: Any | None = None) -> ChannelsInference:
    """The client the call loop uses in this process.

    Embedded mode (INFERENCE_EMBEDDED, the default without REDIS_URL) also runs
    one inference worker inside this process, on this event loop, serving the
    same channel layer; otherwise separate `inference_worker` processes serve it.
    """
    from channels.layers import get_channel_layer

    layer = layer or get_channel_layer()
    if settings.INFERENCE_EMBEDDED:
        loop = asyncio.get_running_loop()
        if loop not in _embedded:
            models = await asyncio.to_thread(local_models)
            if loop not in _embedded:  # another call may have started it while models loaded
                worker = new_worker(layer, models)
                task = loop.create_task(worker.run())
                _embedded[loop] = (worker, task)
                await worker.ready.wait()
    return ChannelsInference(layer, client_settings())


async def stop_embedded() -> None:
    """Stop the embedded worker of this event loop (on shutdown)."""
    entry = _embedded.pop(asyncio.get_running_loop(), None)
    if entry is not None:
        entry[1].cancel()
        await asyncio.gather(entry[1], return_exceptions=True)


LONG_REPLY_SENTENCES = 1000  # no cap: max_reply_tokens bounds the reply


def call_config_from_persona(
    persona: Persona, *, output_sample_rate: int = 24000, own_llm: bool = False
) -> CallConfig:
    """The engine's plain configuration for a call with `persona`.

    Reads the persona's facts and its documents' passages: in async code, load the
    persona with `persona_get_for_call` (both prefetched), or this queries the
    database.
    `own_llm`: the call's LLM turns go to the organization's own endpoint; a larger
    model phrases the retrieved facts itself, while the small embedded one speaks
    them as written (`CallConfig.direct_answers`)."""
    from voiceapp.knowledge.selectors import persona_document_facts

    voice = persona.voice
    eot = int(persona.end_of_turn_silence_ms)
    # A reply is kept to three sentences, unless the business gave its persona a
    # longer reply budget than the default (a storyteller, a recipe line).
    default_tokens = type(persona)._meta.get_field("max_reply_tokens").default
    long_replies = int(persona.max_reply_tokens) > int(default_tokens)
    return CallConfig(
        voice=VoiceSpec(voice_id=voice.voice_id, model_path=voice.model_path),
        instructions=persona.instructions,
        facts=(
            *(Fact(answer=f.answer, question=f.question) for f in persona.facts.all()),
            *persona_document_facts(persona=persona),
        ),
        greeting=persona.greeting if persona.agent_speaks_first else "",
        language=persona.language or "en",
        llm=LLMOptions(
            max_tokens=int(persona.max_reply_tokens),
            temperature=float(persona.temperature),
            model=persona.llm_model,
            backend=persona.llm_backend,
        ),
        turns=TurnSettings(threshold=float(persona.vad_threshold)).with_silence(eot),
        interruptions_enabled=bool(persona.interruptions_enabled),
        output_sample_rate=output_sample_rate,
        direct_answers=not own_llm,
        embedded_llm=not own_llm,
        asr_model=persona.asr_model,
        pause_read_ms=settings.ASR_PAUSE_READ_MS,
        read_words_so_far=settings.LLM_READ_CAPTIONS,
        max_sentences=LONG_REPLY_SENTENCES if long_replies else 3,
        general_questions=bool(persona.general_questions),
    )


class _UnreadableKeyLLM:
    """An endpoint whose stored key cannot be decrypted: each turn fails, saying why."""

    def __init__(self, message: str) -> None:
        self.message = message

    def stream(
        self,
        messages: list[Message],
        options: LLMOptions,
        cancel: threading.Event,
        usage: PromptUsage | None = None,
    ) -> Iterator[str]:
        raise LLMError(self.message, "llm_endpoint_key_unreadable")


def persona_endpoint_llm(persona: Persona) -> LLM | None:
    """The LLM backend of `persona`'s own endpoint (or its org's default); None for
    the embedded workers. Reads the database."""
    from voiceapp.personas.selectors import persona_llm_endpoint
    from voiceapp.tenants.crypto import DecryptionError
    from voiceapp.tenants.services import llm_endpoint_http_settings

    endpoint = persona_llm_endpoint(persona=persona)
    if endpoint is None:
        return None
    try:
        return HttpLLM(llm_endpoint_http_settings(endpoint=endpoint))
    except DecryptionError as exc:
        log.error("LLM endpoint %s (org %s): %s", endpoint.pk, endpoint.org_id, exc)
        return _UnreadableKeyLLM(f"LLM endpoint “{endpoint.name}”: {exc}")


def endpoint_executor() -> ThreadPoolExecutor:
    global _endpoint_executor
    with _models_lock:
        if _endpoint_executor is None:
            _endpoint_executor = ThreadPoolExecutor(
                max_workers=ENDPOINT_THREADS, thread_name_prefix="llm-endpoint"
            )
        return _endpoint_executor


def route_llm(inference: Inference, llm: LLM | None) -> Inference:
    """`inference` with its LLM turns sent to `llm` (a persona's endpoint), if any."""
    if llm is None:
        return inference
    return EndpointInference(inference, llm, endpoint_executor())
