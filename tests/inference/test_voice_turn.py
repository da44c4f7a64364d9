"""`manage.py voice_turn`: a recorded question in, a spoken reply out."""

import json
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from tests.support.audio_files import dithered_silence, sox_wav
from tests.support.clips import Clip, espeak_clip, words
from voiceapp.engine.audio import VAD_RATE, read_wav, resample, write_wav
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.turns import TurnSettings
from voiceapp.engine.vad import CHUNK_MS, SileroModel, StreamingVAD
from voiceapp.inference import runtime
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_update

LONG_STORIES = (
    "You are a storyteller. Whatever you are asked, you tell a long, detailed story "
    "of many sentences."
)
LONG_REPLY_TOKENS = 150  # the model fills them all: about 40 s of speech
# Longer than the old command's whole wait (20 s + the question + 5 s) at real-time playout.
LONG_REPLY_S = 30.0


@pytest.fixture
def embedded(settings: Any, monkeypatch: pytest.MonkeyPatch, models: LocalInference) -> None:
    settings.INFERENCE_EMBEDDED = True
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    monkeypatch.setattr(runtime, "_local", models)


@pytest.fixture
def assistant(make_tenant: Callable[..., Any]) -> Persona:
    """An organization's default persona, answering deterministically."""
    tenant = make_tenant("Turn Dental")
    persona = Persona.objects.get(org=tenant.org, slug="assistant")
    return persona_update(persona=persona, temperature=0.0)  # a 135M model drifts when sampling


def voice_turn(persona: Persona, question: Path, reply: Path, **options: Any) -> dict[str, Any]:
    out = StringIO()
    call_command(
        "voice_turn",
        persona=persona.slug,
        org=persona.org.slug,
        input=str(question),
        out=str(reply),
        fast=True,
        stdout=out,
        **options,
    )
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


def voiced_ms(vad_model: SileroModel, clip: Clip, threshold: float) -> int:
    """The longest run of audio the VAD scores as speech, in ms."""
    probs = StreamingVAD(vad_model).process(clip.at(VAD_RATE))
    longest = run = 0
    for prob in probs:
        run = run + 1 if prob >= threshold else 0
        longest = max(longest, run)
    return longest * CHUNK_MS


def audio_levels(audio: np.ndarray) -> str:
    """Where the sound is, to tell a silent or clipped reply from a misread one."""
    quarters = np.array_split(np.abs(audio), 4)
    rms = [round(float(np.sqrt(np.mean(q**2))), 4) for q in quarters]
    return f"peak {float(np.max(np.abs(audio))):.3f}, rms by quarter {rms}"


def heard(models: LocalInference, path: Path) -> str:
    audio, rate = read_wav(path)
    return models.asr.transcribe(resample(audio, rate, 16000), "en").text


@pytest.mark.django_db
def test_voice_turn_answers_a_float_wav_question(
    embedded: None,
    assistant: Persona,
    models: LocalInference,
    clips: dict[str, Clip],
    tmp_path: Path,
) -> None:
    # given a question recorded as a 32-bit float, stereo, 48 kHz WAV
    capital = clips["capital"]
    question = sox_wav(
        tmp_path / "question.wav",
        capital.samples,
        capital.rate,
        out_rate=48000,
        encoding="floating-point",
        bits=32,
        channels=2,
    )
    reply = tmp_path / "reply.wav"
    # when the command runs
    result = voice_turn(assistant, question, reply)
    # then it prints the turn, the transcript, the reply and the spans
    assert result["turn"]["audio_end_ms"] > result["turn"]["audio_start_ms"] >= 0
    assert {"capital", "france"} <= words(result["transcript"])
    assert result["reply"] and result["status"] == "completed"
    assert result["latency"]["asr_ms"] is not None
    # and writes the reply as speech
    audio, rate = read_wav(reply)
    assert rate == 24000 and len(audio) > rate // 2
    assert abs(len(audio) / rate - result["reply_seconds"]) < 0.01
    transcript = models.asr.transcribe(resample(audio, rate, 16000), "en")
    loudness = audio_levels(audio)
    assert words(transcript.text) & words(result["reply"]), f"{transcript}, {loudness}"


@pytest.mark.django_db
def test_a_long_reply_is_written_whole(
    embedded: None,
    assistant: Persona,
    models: LocalInference,
    clips: dict[str, Clip],
    tmp_path: Path,
) -> None:
    # given a persona that tells long stories, asked for one
    persona_update(
        persona=assistant,
        instructions=LONG_STORIES,
        max_reply_tokens=LONG_REPLY_TOKENS,
    )
    story = clips["story"]
    question = tmp_path / "question.wav"
    write_wav(question, story.samples, story.rate)
    reply = tmp_path / "reply.wav"
    # when the command runs (with room for a slow, shared machine: speed is not tested here)
    result = voice_turn(assistant, question, reply, timeout=300)
    # then the whole reply was generated and reported, though it takes long to say
    assert result["status"] == "completed"
    assert result["reply_seconds"] > LONG_REPLY_S
    # and the WAV holds all of it: its last seconds say the reply's last words
    audio, rate = read_wav(reply)
    assert abs(len(audio) / rate - result["reply_seconds"]) < 0.01
    ending = resample(audio[-6 * rate :], rate, 16000)
    last_words = words(" ".join(result["reply"].split()[-8:]))
    assert words(models.asr.transcribe(ending, "en").text) & last_words


@pytest.mark.django_db
@pytest.mark.parametrize("sound", ["silence", "noise", "hum"])
def test_non_speech_is_no_turn_and_no_reply(
    embedded: None,
    assistant: Persona,
    clips: dict[str, Clip],
    vad_model: SileroModel,
    tmp_path: Path,
    sound: str,
) -> None:
    # given a recording with no words in it: quiet, noise, or a hum the VAD takes for
    # speech (so the call transcribes it, and the ASR has to find no words)
    question = tmp_path / "question.wav"
    if sound == "silence":
        write_wav(question, dithered_silence(3.0, 16000), 16000)
    elif sound == "noise":
        write_wav(question, clips["pink"].samples, clips["pink"].rate)
    else:
        hum = espeak_clip("hmm, mmm, hmm", tmp_path, "hum")
        assert voiced_ms(vad_model, hum, assistant.vad_threshold) >= TurnSettings().min_speech_ms
        write_wav(question, hum.samples, hum.rate)
    reply = tmp_path / "reply.wav"
    # when the command runs, it succeeds
    result = voice_turn(assistant, question, reply)
    # and reports that there was no turn to answer, without writing a reply
    assert result["turn"] is None
    assert result["transcript"] is None and result["reply"] is None
    assert "error" not in result
    assert not reply.exists()


@pytest.mark.django_db
def test_unreadable_input_is_a_clear_error(assistant: Persona, tmp_path: Path) -> None:
    # given a text file named .wav, an empty file, a folder and a missing path
    text = tmp_path / "notes.wav"
    text.write_text("meeting notes, not a recording\n" * 20)
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    for path in (text, empty, tmp_path, tmp_path / "missing.wav"):
        # then the command stops with an error naming the file, and writes nothing
        with pytest.raises(CommandError, match=f"cannot read {path}"):
            voice_turn(assistant, path, tmp_path / "reply.wav")
    assert not (tmp_path / "reply.wav").exists()
    # and a reply that could not be written is found out before the models run
    with pytest.raises(CommandError, match="cannot write"):
        voice_turn(assistant, text, tmp_path / "missing" / "reply.wav")


@pytest.mark.django_db
def test_ambiguous_or_unknown_persona_is_a_clear_error(
    make_tenant: Callable[..., Any], tmp_path: Path
) -> None:
    make_tenant("One")
    make_tenant("Two")
    with pytest.raises(CommandError, match="ambiguous"):
        call_command("voice_turn", persona="assistant", input="x.wav", out=str(tmp_path / "r"))
    with pytest.raises(CommandError, match="no persona"):
        call_command("voice_turn", persona="nobody", input="x.wav", out=str(tmp_path / "r"))
