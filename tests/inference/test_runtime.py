"""Django glue: persona -> call config, and the embedded worker."""

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from channels.layers import InMemoryChannelLayer

from tests.support.clips import Clip, words
from voiceapp.engine.devices import cuda_devices
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.knowledge import Fact
from voiceapp.inference import runtime
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_fact_create, persona_update

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def persona(make_tenant: Callable[..., Any]) -> Persona:
    tenant = make_tenant("Runtime Clinic")
    return Persona.objects.select_related("voice").get(org=tenant.org, slug="assistant")


def test_call_config_follows_the_persona(persona: Persona) -> None:
    # given a persona with its own turn-taking and reply settings
    persona = persona_update(
        persona=persona,
        end_of_turn_silence_ms=800,
        vad_threshold=0.6,
        max_reply_tokens=50,
        temperature=0.3,
        interruptions_enabled=False,
        asr_model="base",
        general_questions=True,
    )
    # when the engine config is built
    config = runtime.call_config_from_persona(persona, output_sample_rate=16000)
    # then it carries the persona's values
    assert config.instructions == persona.instructions
    assert config.voice.model_path == persona.voice.model_path
    assert config.turns.end_of_turn_ms == 800 and config.turns.threshold == 0.6
    assert config.turns.complete_end_of_turn_ms == 720
    assert config.turns.incomplete_end_of_turn_ms == 1600
    assert config.llm.max_tokens == 50 and config.llm.temperature == 0.3
    assert config.llm.backend == "local"
    assert config.interruptions_enabled is False
    assert config.output_sample_rate == 16000
    assert config.greeting == persona.greeting
    assert config.asr_model == "base"
    assert config.general_questions is True


def test_a_new_persona_declines_general_questions(persona: Persona) -> None:
    # a business's agent on the embedded model keeps to the business by default
    assert persona.general_questions is False
    config = runtime.call_config_from_persona(persona, output_sample_rate=24000)
    assert config.general_questions is False


def test_call_config_carries_the_facts_in_order(persona: Persona) -> None:
    # given a persona with facts, placed out of creation order
    persona_fact_create(persona=persona, answer="Main Street 1.", position=2)
    persona_fact_create(
        persona=persona, question="When are you open?", answer="9 to 5.", position=1
    )
    # when the engine config is built
    config = runtime.call_config_from_persona(persona)
    # then it holds them as the engine's facts, in the persona's order
    assert config.facts == (
        Fact(answer="9 to 5.", question="When are you open?"),
        Fact(answer="Main Street 1.", question=""),
    )


def test_call_config_without_facts(persona: Persona) -> None:
    assert runtime.call_config_from_persona(persona).facts == ()


def test_replies_are_kept_short_unless_the_persona_was_given_a_longer_budget(
    persona: Persona,
) -> None:
    assert runtime.call_config_from_persona(persona).max_sentences == 3
    longer = persona_update(persona=persona, max_reply_tokens=300)
    assert runtime.call_config_from_persona(longer).max_sentences > 100


def test_the_pause_a_turn_is_read_with_is_the_operators_setting(
    persona: Persona, settings: Any
) -> None:
    # by default a pause between a turn's words is read as 256 ms at most
    assert runtime.call_config_from_persona(persona).pause_read_ms == 256
    # and ASR_PAUSE_READ_MS=0 has every pause read whole
    settings.ASR_PAUSE_READ_MS = 0
    assert runtime.call_config_from_persona(persona).pause_read_ms == 0


def test_the_llm_reads_the_callers_words_unless_the_operator_turns_it_off(
    persona: Persona, settings: Any
) -> None:
    # by default the embedded LLM reads the caller's words as the captions bring them
    assert runtime.call_config_from_persona(persona).read_words_so_far is True
    # and LLM_READ_CAPTIONS=0 leaves them all to the turn's request
    settings.LLM_READ_CAPTIONS = False
    assert runtime.call_config_from_persona(persona).read_words_so_far is False


def test_a_clause_is_made_in_windows_unless_the_operator_turns_it_off(settings: Any) -> None:
    # by default the models are loaded to make a clause's audio in windows
    assert runtime.model_settings().tts_windowed is True
    # and TTS_WINDOWED=0 has each sentence made whole
    settings.TTS_WINDOWED = False
    assert runtime.model_settings().tts_windowed is False


async def test_embedded_worker_serves_the_in_memory_layer(
    settings: Any, monkeypatch: pytest.MonkeyPatch, models: LocalInference, clips: dict[str, Clip]
) -> None:
    # given the embedded default: no Redis, the worker inside this process
    settings.INFERENCE_EMBEDDED = True
    monkeypatch.setattr(runtime, "_local", models)
    layer = InMemoryChannelLayer()
    # when the call loop's client transcribes
    client = await runtime.get_inference(layer)
    try:
        transcript = await client.transcribe(clips["capital"].at(16000), "en")
    finally:
        await runtime.stop_embedded()
    # then the in-process worker answered
    assert {"capital", "france"} <= words(transcript.text)


def test_embedded_server_loads_the_models_at_start(tmp_path: Path) -> None:
    # given the embedded default (no DATABASE_URL, no REDIS_URL), as `./dev run` starts it
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "INFERENCE_EMBEDDED", "PRELOAD_MODELS")
    }
    env.update(DEBUG="1", DATA_DIR=str(tmp_path))
    script = (
        "import time, voiceapp.asgi as app\n"
        "from voiceapp.inference import runtime\n"
        "assert app.preload is not None\n"
        "app.preload.join(120)\n"
        "print('loaded', runtime._local is not None, runtime._vad is not None)\n"
    )
    # when the ASGI application is imported (daphne does this at start)
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    # then the models load in the background, before any call asks for them
    assert done.returncode == 0, done.stderr[-2000:]
    assert "loaded True True" in done.stdout
    assert "loading the voice models in the background" in done.stderr


@pytest.mark.skipif(cuda_devices() > 0, reason="a machine without a GPU")
def test_a_worker_asked_for_a_missing_gpu_refuses_to_start_saying_why() -> None:
    # given a separate worker configured for the GPU, on a machine without one
    env = {**os.environ, "INFERENCE_DEVICE": "cuda"}
    # when it starts
    done = subprocess.run(
        [sys.executable, "manage.py", "inference_worker"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # then it exits at once with what to change, not a traceback
    assert done.returncode == 1
    assert "CommandError: INFERENCE_DEVICE=cuda, but CTranslate2 finds no CUDA device" in (
        done.stderr
    )
    assert "Use INFERENCE_DEVICE=cpu or auto" in done.stderr
    assert "Traceback" not in done.stderr and "WORKER READY" not in done.stdout
