"""Grounded replies in a live call, with the real models: facts used, declines, the guard."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from bench.bakery import FACTS, INSTRUCTIONS, declined
from tests.support.clips import piper_clip, silence
from tests.support.engine_calls import collect_until, fast_config, feed
from tests.support.inference import RecordingInference
from voiceapp.engine.call import VoiceCall
from voiceapp.engine.frames import (
    ErrorFrame,
    Frame,
    LLMToken,
    ResponseDone,
    TranscriptFinal,
    TTSAudio,
)
from voiceapp.engine.guard import _foreign
from voiceapp.engine.inference import InferenceError, LocalInference

MakeCall = Callable[..., VoiceCall]


def done(frame: Frame) -> bool:
    return isinstance(frame, ResponseDone)


def bakery(**overrides: object) -> dict[str, object]:
    return {"instructions": INSTRUCTIONS, "facts": FACTS, "speak": False, **overrides}


async def ask_text(call: VoiceCall, text: str) -> tuple[ResponseDone, list[Frame]]:
    call.add_message("user", text)
    call.create_response()
    frames = await collect_until(call, done, timeout_s=60)
    last = frames[-1]
    assert isinstance(last, ResponseDone)
    return last, frames


async def test_a_question_a_fact_answers_gets_the_fact_as_written(new_call: MakeCall) -> None:
    call = new_call(**bakery())

    result, frames = await ask_text(call, "What time do you open on Saturday?")

    assert result.status == "completed"
    assert result.text == "On Saturday we open at 8 am and close at 2 pm. We are closed on Sundays."
    assert "".join(f.text for f in frames if isinstance(f, LLMToken)) == result.text
    assert result.latency["llm_first_token_ms"] is None  # no LLM round trip for it
    assert (result.usage["input_tokens"], result.usage["output_tokens"]) == (0, 0)
    # the history keeps the caller's words, not the prompt they were sent in
    assert call.history[-2] == {"role": "user", "content": "What time do you open on Saturday?"}


async def test_a_spoken_question_is_answered_from_the_facts(new_call: MakeCall) -> None:
    call = new_call(**bakery(speak=True))
    question = piper_clip("What time do you open on Saturday?")
    audio = np.concatenate([silence(0.3).at(24000), question.at(24000), silence(1.5).at(24000)])

    feeding = feed(call, audio, 24000, realtime=False)
    await feeding
    frames = await collect_until(call, done, timeout_s=60)

    transcript = [f for f in frames if isinstance(f, TranscriptFinal)]
    assert transcript and "saturday" in transcript[0].text.lower()
    result = frames[-1]
    assert isinstance(result, ResponseDone)
    assert "8 am" in result.text, (transcript[0].text, result.text)
    assert any(isinstance(f, TTSAudio) for f in frames)


@pytest.mark.parametrize("question", ["Who owns the bakery?", "How many employees do you have?"])
async def test_a_question_no_fact_answers_is_declined_without_numbers(
    new_call: MakeCall, question: str
) -> None:
    call = new_call(**bakery())

    result, _ = await ask_text(call, question)

    assert declined(result.text), result.text


async def test_late_in_a_call_an_unanswerable_question_is_still_declined(
    new_call: MakeCall,
) -> None:
    # After a run of answers from the facts, the small model would follow its own
    # pattern ("We do not sell coffee.") instead of declining.
    call = new_call(**bakery())
    for question in ("What is your address?", "Do you deliver?", "Can I pay by card?"):
        await ask_text(call, question)

    result, _ = await ask_text(call, "Do you sell coffee?")

    assert declined(result.text), result.text


async def test_the_llm_is_given_the_facts_when_it_phrases_them(
    models: LocalInference, vad_model
) -> None:
    # A persona's own (larger) LLM phrases the facts: direct answers are off.
    recorder = RecordingInference(models)
    call = VoiceCall(fast_config(**bakery(direct_answers=False)), recorder, vad_model)
    try:
        result, _ = await ask_text(call, "What is your phone number?")
    finally:
        await call.close()

    sent = recorder.prompts[-1]
    assert sent[-1] == {
        "role": "user",
        "content": "Facts: Our phone number is 555-0142.\nCaller: What is your phone number?",
    }
    assert result.latency["llm_first_token_ms"] is not None
    assert result.usage["output_tokens"] > 0


async def test_a_reply_in_another_language_is_not_spoken(new_call: MakeCall) -> None:
    # SmolLM2 answers French with French; an English persona must not.
    call = new_call(instructions="You are a helpful assistant.", speak=False)

    result, _ = await ask_text(
        call, "Bonjour ! Comment allez-vous aujourd'hui ? Parlez-moi en français s'il vous plaît."
    )

    assert result.text
    assert not _foreign(result.text, "en"), result.text


async def test_a_looping_reply_is_cut_short(new_call: MakeCall) -> None:
    # Without a repetition penalty the model repeats the caller's loop.
    config = fast_config(instructions="You are a helpful assistant.", speak=False)
    call = new_call(replace(config, llm=replace(config.llm, repeat_penalty=1.0, max_tokens=120)))

    result, _ = await ask_text(call, "Repeat after me: no, no, no, no, no, no, no, no, no, no.")

    words = result.text.lower().replace(",", " ").replace(".", " ").split()
    assert words.count("no") <= 2, result.text
    assert result.usage["output_tokens"] < 120


class FirstTranscriptFails:
    """The real models, except that the first transcription fails (a worker lost)."""

    def __init__(self, inner: LocalInference) -> None:
        self.inner = inner
        self.failed = False

    async def transcribe(  # type: ignore[no-untyped-def]
        self, audio: np.ndarray, language: str, model: str = "tiny.en", *, partial: bool = False
    ):
        if not self.failed:
            self.failed = True
            raise InferenceError("worker went away", "worker_lost")
        return await self.inner.transcribe(audio, language, model, partial=partial)

    def generate(self, messages, options):  # type: ignore[no-untyped-def]
        return self.inner.generate(messages, options)

    def synthesize(self, text, voice, *, background=False):  # type: ignore[no-untyped-def]
        return self.inner.synthesize(text, voice, background=background)

    async def end_of_turn(self, text: str, previous_reply: str) -> float:
        return await self.inner.end_of_turn(text, previous_reply)


async def test_a_speculative_response_that_fails_is_never_announced(
    models: LocalInference, vad_model
) -> None:
    # given a speculative transcription (at the pause) that fails
    call = VoiceCall(fast_config(partial_interval_ms=0), FirstTranscriptFails(models), vad_model)
    question = piper_clip("What is the capital of France?")
    audio = np.concatenate([silence(0.3).at(24000), question.at(24000), silence(1.5).at(24000)])
    try:
        await feed(call, audio, 24000, realtime=False)
        frames = await collect_until(call, done, timeout_s=60)
    finally:
        await call.close()

    # then the client sees no error and no failed response: the turn is answered
    assert not [f for f in frames if isinstance(f, ErrorFrame)]
    result = frames[-1]
    assert isinstance(result, ResponseDone)
    assert result.status == "completed"
    assert "paris" in result.text.lower()
