"""Django glue: persona -> call config, and the embedded worker."""

from collections.abc import Callable
from typing import Any

import pytest
from channels.layers import InMemoryChannelLayer

from tests.engine.conftest import Clip, words
from voiceapp.engine.inference import LocalInference
from voiceapp.inference import runtime
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_update


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
    )
    # when the engine config is built
    config = runtime.call_config_from_persona(persona, output_sample_rate=16000)
    # then it carries the persona's values
    assert config.instructions == persona.instructions
    assert config.voice.model_path == persona.voice.model_path
    assert config.turns.end_of_turn_ms == 800 and config.turns.threshold == 0.6
    assert config.turns.complete_end_of_turn_ms == 400
    assert config.turns.incomplete_end_of_turn_ms == 1600
    assert config.llm.max_tokens == 50 and config.llm.temperature == 0.3
    assert config.llm.backend == "local"
    assert config.interruptions_enabled is False
    assert config.output_sample_rate == 16000
    assert config.greeting == persona.greeting


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
