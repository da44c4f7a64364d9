"""The call loop end to end with the real models, on real audio."""

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.pauses import dropped_after_pause, read_turn, renditions
from bench.wer_clips import PAUSE_S, normalize, word_errors
from tests.support.clips import Clip, espeak_clip, join, piper_clip, silence, words
from tests.support.engine_calls import collect_until, fast_config, feed, wait_until
from tests.support.inference import LLMRequest, RecordingInference
from tests.support.models import prompt_tokens
from voiceapp.engine.asr import DEFAULT_ASR_MODEL, Transcript, WhisperASR
from voiceapp.engine.audio import AudioFormatError, float_to_pcm16, pcm16_to_float, resample
from voiceapp.engine.call import VoiceCall
from voiceapp.engine.eou import chat_prompt
from voiceapp.engine.frames import (
    Frame,
    Interruption,
    LLMToken,
    ResponseDone,
    ResponseStarted,
    SpeechStarted,
    SpeechStopped,
    TextClause,
    TranscriptFailed,
    TranscriptFinal,
    TranscriptPartial,
    TTSAudio,
)
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.llm import LlamaLLM
from voiceapp.engine.turns import TurnSettings
from voiceapp.engine.vad import SileroModel

MakeCall = Callable[..., VoiceCall]


def done(frame: Frame) -> bool:
    return isinstance(frame, ResponseDone)


def of(frames: list[Frame], kind: type) -> list:
    return [f for f in frames if isinstance(f, kind)]


async def ask(call: VoiceCall, clip: Clip, *, realtime: bool = False, rate: int = 24000) -> list:
    """Say `clip` followed by silence; return the frames up to the response's end."""
    audio = np.concatenate([silence(0.3).at(rate), clip.at(rate), silence(1.5).at(rate)])
    feeder = asyncio.create_task(feed(call, audio, rate, realtime=realtime))
    try:
        return await collect_until(call, done, timeout_s=40)
    finally:
        await feeder


async def test_spoken_question_is_answered_with_speech(
    new_call: MakeCall, models: LocalInference, clips: dict[str, Clip]
) -> None:
    # given a call and a question spoken at 24 kHz, as the realtime transport sends it
    call = new_call()
    # when the question is spoken
    frames = await ask(call, clips["capital"])
    # then the turn is detected, transcribed and answered
    kinds = [type(f) for f in frames]
    assert kinds.index(SpeechStarted) < kinds.index(SpeechStopped) < kinds.index(TranscriptFinal)
    assert kinds.index(TranscriptFinal) < kinds.index(ResponseStarted) < kinds.index(TTSAudio)
    transcript = of(frames, TranscriptFinal)[0].text
    assert {"capital", "france"} <= words(transcript)
    reply = of(frames, ResponseDone)[0]
    assert reply.status == "completed" and reply.text
    # and the reply audio is speech: ASR hears the reply's words in it
    audio = np.concatenate([pcm16_to_float(f.pcm) for f in of(frames, TTSAudio)])
    assert all(f.sample_rate == 24000 for f in of(frames, TTSAudio))
    # (a reply with a foreign name in it may read below the confidence bar
    # that guards callers' turns; its words are still there)
    heard = models.asr.transcribe(resample(audio, 24000, 16000), "en")
    assert len(words(heard.text or heard.discarded) & words(reply.text)) >= max(
        1, len(words(reply.text)) // 2
    )
    # and the history holds the turn; the spans are filled in
    assert call.history == [
        {"role": "user", "content": transcript},
        {"role": "assistant", "content": reply.text},
    ]
    for span in ("v2v_ms", "asr_ms", "llm_first_token_ms", "first_clause_ms", "tts_first_audio_ms"):
        assert reply.latency[span] is not None and reply.latency[span] >= 0, span


async def test_second_voice_stereo_48k_question(new_call: MakeCall, clips: dict[str, Clip]) -> None:
    # given an espeak-ng question as 48 kHz stereo PCM16 (WebRTC-like input)
    call = new_call()
    mono = np.concatenate(
        [silence(0.3).at(48000), clips["weather"].at(48000), silence(1.5).at(48000)]
    )
    pcm = float_to_pcm16(np.stack([mono, mono], axis=1).reshape(-1))

    # when pushed in 20 ms frames
    async def push() -> None:
        step = 48000 // 50 * 4  # 20 ms of 2-channel int16
        for i in range(0, len(pcm), step):
            call.push_audio(pcm[i : i + step], 48000, channels=2)
            await asyncio.sleep(0)

    feeder = asyncio.create_task(push())
    frames = await collect_until(call, done, timeout_s=40)
    await feeder
    # then it is understood
    assert {"weather", "london"} <= words(of(frames, TranscriptFinal)[0].text)


async def test_partial_transcripts_while_speaking(
    new_call: MakeCall, clips: dict[str, Clip]
) -> None:
    # given a long question spoken in real time
    call = new_call(partial_interval_ms=300)
    frames = await ask(call, clips["long"], realtime=True)
    # then partial transcripts arrived before the final one, growing with the speech
    partials = of(frames, TranscriptPartial)
    assert len(partials) >= 3
    kinds = [type(f) for f in frames]
    assert kinds.index(TranscriptPartial) < kinds.index(TranscriptFinal)
    assert {"table"} <= words(" ".join(p.text for p in partials))


async def test_each_live_caption_waits_longer_as_the_turn_grows(
    models: LocalInference, vad_model: SileroModel, clips: dict[str, Clip]
) -> None:
    # given a call whose readings are recorded, and a long question (7 s) in real time
    inference = RecordingInference(models)
    call = VoiceCall(fast_config(partial_interval_ms=300), inference, vad_model)
    try:
        frames = await ask(call, clips["long"], realtime=True)
    finally:
        await call.close()
    assert of(frames, TranscriptFinal)
    # then its captions read the turn so far, each at least 300 ms and a quarter of the
    # turn longer than the one before
    captions = [seconds for seconds, partial in inference.read if partial]
    assert len(captions) >= 4, captions
    for before, after in itertools.pairwise(captions):
        assert after - before >= max(0.3, 0.25 * before) - 0.04, captions
    # so it is read about half as often as every 300 ms (19-22 times, 70-85 s of audio
    # read; 11 times and 32 s with the growth)
    assert len(captions) <= 12, captions


async def test_the_llm_reads_the_callers_words_while_they_talk(
    models: LocalInference, vad_model: SileroModel, clips: dict[str, Clip]
) -> None:
    # given a text-only call whose LLM requests are seen, and a question in real time
    recorder = RecordingInference(models)
    call = VoiceCall(fast_config(speak=False, partial_interval_ms=300), recorder, vad_model)
    try:
        frames = await ask(call, clips["story"], realtime=True)
    finally:
        await call.close()
    # then the LLM read the live captions' words as the caller's open message
    captions = [f.text.strip().rstrip(" .,;:!?\u2026") for f in of(frames, TranscriptPartial)]
    reads = [r for r in recorder.llm if r.options.open_turn]
    assert reads and captions
    assert all(r.messages[-1]["content"] in captions for r in reads), (captions, reads)
    # and the turn's request, sent after them, read fewer new tokens than the caller's
    # words alone: their start was read while the caller talked
    turn = [r for r in recorder.llm if not r.options.open_turn and r.options.max_tokens > 1][-1]
    assert recorder.llm.index(turn) > recorder.llm.index(reads[-1])
    [final] = of(frames, TranscriptFinal)
    assert isinstance(models.llm, LlamaLLM)
    new_tokens = turn.stream.usage.input_tokens - turn.stream.usage.cached_tokens
    assert new_tokens < models.llm.count_tokens(final.text), (new_tokens, final.text)


async def test_speculative_response_is_cancelled_when_the_user_resumes(
    new_call: MakeCall, clips: dict[str, Clip]
) -> None:
    # given a question with a 600 ms pause mid-sentence ("What is the capital ... of Germany?")
    call = new_call(
        turns=TurnSettings(end_of_turn_ms=900, complete_end_of_turn_ms=900, pause_ms=96)
    )
    # when it is spoken in real time
    frames = await ask(call, clips["paused"], realtime=True)
    # then a speculative answer was started in the pause and cancelled on resume
    assert call.stats["speculative_started"] >= 2
    assert call.stats["speculative_cancelled"] >= 1
    # and only the full question was answered, once
    finals = of(frames, TranscriptFinal)
    assert len(finals) == 1 and {"capital", "germany"} <= words(finals[0].text)
    assert len(of(frames, ResponseStarted)) == 1
    assert len({f.response_id for f in of(frames, TTSAudio)}) == 1


@pytest.mark.parametrize("name", ["silence", "noise", "pink", "music", "clicks"])
async def test_non_speech_produces_no_turn(
    new_call: MakeCall, clips: dict[str, Clip], name: str
) -> None:
    # given a call hearing only noise, music, clicks or silence
    call = new_call()
    await feed(call, clips[name].at(24000), 24000, realtime=False)
    await asyncio.sleep(0.5)
    # then nothing happens: no speech, no transcript, no response
    frames = []
    while (frame := await call.next_frame(0.2)) is not None:
        frames.append(frame)
    assert frames == []


async def test_barge_in_stops_the_reply_and_truncates_history(
    new_call: MakeCall, models: LocalInference, clips: dict[str, Clip]
) -> None:
    # given a long reply being played at real-time pace
    call = new_call(playback_lead_ms=200, barge_in_min_ms=250)
    rate = 24000
    lead = np.concatenate([silence(0.3).at(rate), clips["story"].at(rate), silence(1.0).at(rate)])
    feeder = asyncio.create_task(feed(call, lead, rate, realtime=True))
    frames = await collect_until(call, lambda f: isinstance(f, TTSAudio), timeout_s=30)
    await feeder
    response_id = frames[-1].response_id
    await feed(call, silence(0.6).at(rate), rate, realtime=True)  # let some audio play
    # when the user talks over it
    barge = asyncio.create_task(feed(call, clips["weather"].at(rate), rate, realtime=True))
    after = await collect_until(call, lambda f: isinstance(f, Interruption), timeout_s=10)
    detected = time.monotonic()
    interruption = after[-1]
    # then the reply is interrupted: no more of its audio, and the model is free within 200 ms
    assert isinstance(interruption, Interruption) and interruption.response_id == response_id
    assert isinstance(models.llm, LlamaLLM)
    assert await wait_until(lambda: models.llm.busy() == 0, 0.2)  # type: ignore[attr-defined]
    assert time.monotonic() - detected < 0.25
    await barge
    later = []
    while (frame := await call.next_frame(0.5)) is not None:
        later.append(frame)
        if isinstance(frame, ResponseDone) and frame.response_id != response_id:
            break
    assert not [f for f in later if isinstance(f, TTSAudio) and f.response_id == response_id]
    cancelled = [f for f in later if isinstance(f, ResponseDone) and f.response_id == response_id]
    assert cancelled and cancelled[0].status == "cancelled"
    # and the history keeps only what was heard, a prefix of what was planned
    assistant = [m["content"] for m in call.history if m["role"] == "assistant"]
    planned = "".join(f.text for f in [*frames, *after] if isinstance(f, LLMToken))
    assert assistant and assistant[0] == interruption.heard_text
    assert len(assistant[0]) < len(planned.strip())
    assert interruption.audio_played_ms > 0


async def test_hang_up_mid_reply_keeps_what_was_heard(
    new_call: MakeCall, clips: dict[str, Clip]
) -> None:
    # given a long reply to a spoken question, being played at real-time pace
    call = new_call(playback_lead_ms=200)
    rate = 24000
    lead = np.concatenate([silence(0.3).at(rate), clips["story"].at(rate), silence(1.0).at(rate)])
    feeder = asyncio.create_task(feed(call, lead, rate, realtime=True))
    frames = await collect_until(call, lambda f: isinstance(f, TTSAudio), timeout_s=30)
    first_audio_at = time.monotonic()
    await feeder
    response_id = frames[-1].response_id
    await asyncio.sleep(max(0.0, first_audio_at + 1.0 - time.monotonic()))  # ~1 s is heard
    # when the caller hangs up
    closed_at = time.monotonic()
    await call.close()
    after = [frame async for frame in call.frames()]
    # then the reply ends as cut off, with the words its played audio said
    interruption = of(after, Interruption)[0]
    done = of(after, ResponseDone)[-1]
    assert interruption.response_id == done.response_id == response_id
    assert done.status == "cancelled" and done.text == interruption.heard_text
    planned = "".join(f.text for f in [*frames, *after] if isinstance(f, LLMToken)).strip()
    assert interruption.heard_text and len(interruption.heard_text) < len(planned)
    assert 500 <= interruption.audio_played_ms <= 1000 * (closed_at - first_audio_at) + 50
    # and nothing of it is sent after the cut; the turn keeps its spans
    assert not [f for f in after[after.index(interruption) :] if isinstance(f, TTSAudio)]
    assert done.latency["v2v_ms"] is not None and done.latency["v2v_ms"] > 0
    assert done.latency["tts_first_audio_ms"] is not None
    # and the history keeps only what was heard
    assert call.history[-1] == {"role": "assistant", "content": interruption.heard_text}


async def test_hang_up_during_the_greeting_keeps_what_was_heard(new_call: MakeCall) -> None:
    # given a greeting being played at real-time pace
    greeting = "Hello and welcome to the city library, I can help you find books and events."
    call = new_call(playback_lead_ms=200)
    greeting_id = call.say(greeting)
    await collect_until(call, lambda f: isinstance(f, TTSAudio), timeout_s=20)
    await asyncio.sleep(1.0)
    # when the caller hangs up
    await call.close()
    after = [frame async for frame in call.frames()]
    # then the greeting ends cancelled, holding the part that was played
    done = of(after, ResponseDone)[-1]
    assert done.response_id == greeting_id and done.status == "cancelled"
    assert done.text and greeting.startswith(done.text) and done.text != greeting
    assert of(after, Interruption)[0].heard_text == done.text
    assert call.history == [{"role": "assistant", "content": done.text}]


async def test_bad_audio_is_an_error_or_handled(new_call: MakeCall, clips: dict[str, Clip]) -> None:
    call = new_call()
    # NaN, odd bytes, impossible rates: clear errors, and the call goes on
    with pytest.raises(AudioFormatError):
        call.push_samples(np.array([np.nan] * 480, dtype=np.float32), 24000)
    with pytest.raises(AudioFormatError):
        call.push_audio(b"\x00" * 481, 24000)
    with pytest.raises(AudioFormatError):
        call.push_audio(b"\x00" * 480, 0)
    # empty input is a no-op
    call.push_audio(b"", 24000)
    # a loud, clipped question at 16 kHz is still understood
    clipped = np.clip(clips["capital"].at(16000) * 8.0, -1.0, 1.0)
    frames = await ask(call, Clip(clipped, 16000), realtime=True)
    assert {"capital", "france"} <= words(of(frames, TranscriptFinal)[0].text)


async def test_text_only_call_answers_without_synthesis(
    new_call: MakeCall, clips: dict[str, Clip]
) -> None:
    # given a call whose replies are read, not heard
    call = new_call(speak=False)
    # when a question is spoken
    frames = await ask(call, clips["capital"])
    # then the reply is text: clauses and tokens, no audio and no synthesis span
    reply = of(frames, ResponseDone)[0]
    assert reply.status == "completed" and reply.text
    assert not of(frames, TTSAudio)
    clauses = " ".join(c.text for c in of(frames, TextClause))
    assert words(clauses) == words(reply.text)
    assert reply.latency["tts_first_audio_ms"] is None
    assert call.history[-1] == {"role": "assistant", "content": reply.text}


async def test_a_reply_reports_the_prompt_tokens_it_read(
    models: LocalInference, vad_model: SileroModel
) -> None:
    # given a text-only call whose LLM requests are seen
    recorder = RecordingInference(models)
    call = VoiceCall(fast_config(speak=False), recorder, vad_model)
    try:
        # when it answers a question
        call.add_message("user", "What is the capital of France?")
        call.create_response()
        frames = await collect_until(call, done, timeout_s=40)
    finally:
        await call.close()
    # then its usage counts the templated prompt it sent, and the tokens it wrote
    reply = of(frames, ResponseDone)[0]
    assert isinstance(models.llm, LlamaLLM) and len(recorder.prompts) == 1
    sent = prompt_tokens(models.llm._contexts[0].llama, recorder.prompts[0])
    usage = reply.usage
    assert usage["input_tokens"] == sent > 0
    assert usage["output_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert 0 <= usage["cached_tokens"] < usage["input_tokens"]


async def test_after_a_reply_the_models_read_what_the_next_turn_needs(
    models: LocalInference, vad_model: SileroModel
) -> None:
    # given a text-only call whose history is near its 600-character budget
    recorder = RecordingInference(models)
    call = VoiceCall(fast_config(speak=False, history_budget_chars=600), recorder, vad_model)
    for n in range(5):
        call.add_message("user", f"Question number {n} about the opening hours?")
        call.add_message("assistant", f"Answer number {n}: we open at nine every day.")
    try:
        # when it answers a question
        # (a question the LLM answers: one about the business, which this agent
        # knows nothing of, is declined as written, acts.py)
        call.add_message("user", "Can you tell me a fun fact about owls?")
        call.create_response()
        first = of(await collect_until(call, done, timeout_s=40), ResponseDone)[0]
        reply = first.text
        # then the end-of-turn scorer reads the reply, with no caller words, before
        # the caller speaks again: a score after it starts from its cache
        assert models.eou is not None
        scorer = models.eou._llama
        head = scorer.tokenize(chat_prompt("", reply).encode(), add_bos=False, special=True)

        def scorer_read_the_reply() -> bool:
            return scorer.input_ids[: scorer.n_tokens].tolist()[: len(head) - 1] == head[:-1]

        assert await wait_until(scorer_read_the_reply, 10)
        assert recorder.scored[-1] == ("", reply)
        # and the LLM reads the trimmed prompt
        assert call._read_ahead.llm_read is not None
        async with asyncio.timeout(30):
            await call._read_ahead.llm_read
        # and then the next question
        call.add_message("user", "And one about cats?")
        call.create_response()
        second = of(await collect_until(call, done, timeout_s=40), ResponseDone)[0]
    finally:
        await call.close()
    # and (the scorer's read is checked above) the history was trimmed after the
    # reply, not at the next turn, and the LLM read the trimmed prompt then: the
    # next turn found all of it in its cache
    assert call.stats["history_trims"] == 1
    assert isinstance(models.llm, LlamaLLM)
    warm = recorder.prompts[1]
    assert recorder.max_tokens[1] == 1 and len(warm) < len(recorder.prompts[0])
    assert recorder.prompts[2][: len(warm)] == warm
    warm_tokens = prompt_tokens(models.llm._contexts[0].llama, warm)
    assert second.usage["cached_tokens"] >= warm_tokens - 4


async def test_a_call_reads_its_prompt_before_the_first_turn(
    models: LocalInference, vad_model: SileroModel
) -> None:
    # given a text-only call without a greeting, with instructions of its own
    recorder = RecordingInference(models)
    unique = f"You are the assistant of shop {time.monotonic_ns()}. Answer in one sentence."
    call = VoiceCall(fast_config(speak=False, instructions="Be brief."), recorder, vad_model)
    try:
        # when its instructions change before the caller speaks (a session.update)
        call.update_config(replace(call.config, instructions=unique))
        # then the LLM reads the new prompt (one token, dropped), and the scorer its
        # opening prompt
        assert call._read_ahead.llm_read is not None
        async with asyncio.timeout(30):
            await call._read_ahead.llm_read
        assert recorder.max_tokens[-1] == 1
        warm = recorder.prompts[-1]
        assert unique in warm[0]["content"]
        assert ("", "") in recorder.scored
        # and the first turn finds that prompt in its cache
        call.add_message("user", "What is the capital of France?")
        call.create_response()
        reply = of(await collect_until(call, done, timeout_s=40), ResponseDone)[0]
    finally:
        await call.close()
    assert recorder.prompts[-1][: len(warm)] == warm
    assert isinstance(models.llm, LlamaLLM)
    warm_tokens = prompt_tokens(models.llm._contexts[0].llama, warm)
    assert reply.usage["cached_tokens"] >= warm_tokens - 4


async def test_settings_that_keep_the_prompt_read_nothing(
    models: LocalInference, vad_model: SileroModel
) -> None:
    recorder = RecordingInference(models)
    call = VoiceCall(fast_config(speak=False), recorder, vad_model)
    try:
        call.update_config(replace(call.config, language="en", partial_interval_ms=0))
        assert call._read_ahead.llm_read is None and recorder.prompts == []
    finally:
        await call.close()


async def test_a_personas_own_endpoint_is_not_asked_to_read_ahead(
    models: LocalInference, vad_model: SileroModel
) -> None:
    # given a call whose LLM is a persona's own endpoint (billed per request)
    recorder = RecordingInference(models)
    call = VoiceCall(fast_config(speak=False, embedded_llm=False), recorder, vad_model)
    try:
        # when it prepares for the caller's first turn
        call.prepare()
        # then only the (embedded) end-of-turn scorer reads ahead, not the LLM
        assert await wait_until(lambda: ("", "") in recorder.scored, 10)
        assert call._read_ahead.llm_read is None and recorder.prompts == []
    finally:
        await call.close()


async def test_a_cancelled_text_reply_keeps_what_was_generated(new_call: MakeCall) -> None:
    # given a text-only call generating a long reply (no sentence cap), whose text
    # goes out clause by clause
    call = new_call(speak=False, max_sentences=1000, llm=replace(fast_config().llm, max_tokens=200))
    call.add_message("user", "Write a long story about the sea.")
    call.create_response()
    frames: list[Frame] = []
    async with asyncio.timeout(30):
        async for frame in call.frames():
            frames.append(frame)
            if len(of(frames, LLMToken)) >= 2:
                break
    # when it is cancelled
    call.cancel_response()
    frames += await collect_until(call, done, timeout_s=10)
    # then the history keeps the text the reader already saw
    reply = of(frames, ResponseDone)[0]
    assert reply.status == "cancelled"
    seen = "".join(t.text for t in of(frames, LLMToken)).strip()
    assert reply.text and reply.text == seen
    assert call.history[-1] == {"role": "assistant", "content": reply.text}
    # and its usage counts the prompt it read and the tokens written before the cancel
    assert reply.usage["input_tokens"] > 0 and reply.usage["output_tokens"] >= 2


async def test_the_greeting_can_be_interrupted_and_the_question_is_answered(
    new_call: MakeCall, clips: dict[str, Clip]
) -> None:
    # given a greeting being played at real-time pace
    greeting = "Hello and welcome to the city library, I can help you find books and events."
    call = new_call(playback_lead_ms=200, barge_in_min_ms=250)
    greeting_id = call.say(greeting)
    await collect_until(call, lambda f: isinstance(f, TTSAudio), timeout_s=20)
    # when the caller asks a question over it
    rate = 24000
    audio = np.concatenate([clips["capital"].at(rate), silence(1.5).at(rate)])
    feeder = asyncio.create_task(feed(call, audio, rate, realtime=True))
    frames = await collect_until(
        call, lambda f: isinstance(f, ResponseDone) and f.response_id != greeting_id, 40
    )
    await feeder
    # then the greeting stops where it was cut, and the question is answered
    interruption = of(frames, Interruption)[0]
    assert interruption.response_id == greeting_id
    done = {f.response_id: f for f in of(frames, ResponseDone)}
    assert done[greeting_id].status == "cancelled"
    assert greeting.startswith(interruption.heard_text) and interruption.heard_text != greeting
    assert {"capital", "france"} <= words(of(frames, TranscriptFinal)[0].text)
    answer = [f for f in done.values() if f.response_id != greeting_id]
    assert answer and answer[0].status == "completed" and answer[0].text


async def test_cancel_stops_a_requested_response(new_call: MakeCall) -> None:
    # given a response requested by the transport (text input, then response.create)
    call = new_call(playback_lead_ms=200)
    call.add_message("user", "Write a long story about the sea.")
    response_id = call.create_response()
    await collect_until(call, lambda f: isinstance(f, TTSAudio), timeout_s=20)
    # when it is cancelled
    call.cancel_response()
    frames = await collect_until(call, done, timeout_s=5)
    # then it ends as cancelled, with no audio after the cancel
    assert frames[-1].response_id == response_id and frames[-1].status == "cancelled"
    assert await call.next_frame(0.5) is None


async def test_manual_turns_are_transcribed_and_answered_when_asked(
    new_call: MakeCall, clips: dict[str, Clip]
) -> None:
    # given a call that does not answer by itself (turn detection with create_response off)
    call = new_call(create_response=False)
    rate = 24000
    question = [silence(0.3).at(rate), clips["capital"].at(rate), silence(1.0).at(rate)]
    feeder = asyncio.create_task(feed(call, np.concatenate(question), rate, realtime=True))
    # when the turn ends and the transport asks for a reply at once, before the transcript
    frames = await collect_until(call, lambda f: isinstance(f, SpeechStopped), timeout_s=20)
    call.create_response()
    frames += await collect_until(call, done, timeout_s=40)
    await feeder
    # then the turn was transcribed, and the reply waited for its words
    transcript = of(frames, TranscriptFinal)[0].text
    assert {"capital", "france"} <= words(transcript)
    reply = of(frames, ResponseDone)[0]
    assert reply.status == "completed" and reply.text
    assert call.history == [
        {"role": "user", "content": transcript},
        {"role": "assistant", "content": reply.text},
    ]
    assert len(of(frames, ResponseStarted)) == 1


async def test_a_committed_buffer_is_transcribed_by_the_call_and_answered_when_asked(
    new_call: MakeCall, clips: dict[str, Clip]
) -> None:
    # given a call without turn detection, as a client that commits its own buffer has
    call = new_call(create_response=False)
    rate = 24000
    pcm = float_to_pcm16(np.concatenate([clips["capital"].at(rate), silence(0.2).at(rate)]))
    quiet = float_to_pcm16(near_silence(1.0).at(rate))
    # when the buffer is committed and a reply asked for at once, before the transcript
    item_id = call.commit_audio(pcm, rate, "item_committed")
    call.create_response()
    frames = await collect_until(call, done, timeout_s=40)
    # then the call read the words itself, and the reply waited for them
    final = of(frames, TranscriptFinal)
    assert item_id == "item_committed" and [f.item_id for f in final] == [item_id]
    assert {"capital", "france"} <= words(final[0].text)
    reply = of(frames, ResponseDone)[0]
    assert reply.status == "completed" and reply.text
    assert call.history == [
        {"role": "user", "content": final[0].text},
        {"role": "assistant", "content": reply.text},
    ]
    # and a buffer of near silence is reported as not transcribed, and kept out of the history
    noise_id = call.commit_audio(quiet, rate)
    failed = await collect_until(call, lambda f: isinstance(f, TranscriptFailed), timeout_s=20)
    assert of(failed, TranscriptFailed)[0].item_id == noise_id
    assert len(call.history) == 2


def near_silence(seconds: float) -> Clip:
    """Dithered digital silence (+-1 LSB of PCM16), as a quiet microphone gives."""
    rng = np.random.default_rng(3)
    return Clip(rng.integers(-1, 2, int(seconds * 16000)).astype(np.float32) / 32768.0, 16000)


def spoken(text: str) -> Clip:
    """Piper's `text` without the silence around it, so a pause between clips is exact."""
    clip = piper_clip(text)
    voiced = np.nonzero(np.abs(clip.samples) > 0.01)[0]
    return Clip(clip.samples[voiced[0] : voiced[-1] + 1], clip.rate, text)


@pytest.mark.parametrize(
    ("first", "pause_s", "second", "expected"),
    [
        ("I would like to order", 0.6, "a birthday cake for Friday.", {"order", "cake"}),
        ("Can you tell me", 0.45, "when the shop opens on Sunday?", {"tell", "sunday"}),
    ],
)
async def test_a_pause_inside_a_sentence_does_not_end_the_turn(
    new_call: MakeCall, first: str, pause_s: float, second: str, expected: set[str]
) -> None:
    # given a sentence with a pause in the middle, spoken in real time
    call = new_call()
    clip = join(spoken(first), near_silence(pause_s), spoken(second))
    # when it is spoken
    frames = await ask(call, clip, realtime=True)
    frames += await drain(call, 1.0)
    # then a speculative reply started in the pause and was dropped when the caller went on
    assert call.stats["speculative_started"] >= 2
    assert call.stats["speculative_cancelled"] >= 1
    # and the whole sentence was one turn, answered once
    finals = of(frames, TranscriptFinal)
    assert len(finals) == 1 and expected <= words(finals[0].text)
    assert len(of(frames, ResponseStarted)) == 1


class FirstReadingCut(RecordingInference):
    """The real models, except that the turn's first final reading loses its last word,
    as Whisper's often does when the audio stops right after it."""

    async def transcribe(
        self, audio: np.ndarray, language: str, model: str = "", *, partial: bool = False
    ) -> Transcript:
        result = await super().transcribe(
            audio, language, model or DEFAULT_ASR_MODEL, partial=partial
        )
        finals = [r for r in self.read if not r[1]]
        if partial or len(finals) != 1:
            return result
        return replace(result, text=result.text.rsplit(" ", 1)[0])


async def ask_unsure(
    recorder: RecordingInference, vad_model: SileroModel, clip: Clip
) -> tuple[VoiceCall, list[Frame], list[LLMRequest]]:
    """`clip` asked in real time of a text-only call that reads every finished question
    as unsure (scored under 0.999), so its pause is read again: the call, its frames,
    and the LLM requests of its replies (not the reads of the caller's words)."""
    turns = TurnSettings(end_of_turn_ms=500, eou_threshold=0.999)
    config = fast_config(speak=False, partial_interval_ms=0, turns=turns)
    call = VoiceCall(config, recorder, vad_model)
    try:
        frames = await ask(call, clip, realtime=True)
    finally:
        await call.close()
    # the turn was read twice, both final readings
    assert [partial for _, partial in recorder.read] == [False, False]
    replies = [r for r in recorder.llm if not r.options.open_turn and r.options.max_tokens > 1]
    return call, frames, replies


async def test_a_pause_read_again_with_the_same_words_keeps_its_reply(
    models: LocalInference, vad_model: SileroModel, clips: dict[str, Clip]
) -> None:
    # given a call that reads a finished question as unsure, so its pause is read again
    # when the question is spoken in real time
    call, frames, replies = await ask_unsure(
        RecordingInference(models), vad_model, clips["capital"]
    )
    # then the second reading said the same words
    assert call.stats["speculative_kept"] == 1
    [final] = of(frames, TranscriptFinal)
    assert {"capital", "france"} <= words(final.text)
    # and the reply speculated on the first reading is the one that answered: no other
    # reply was started or written
    assert call.stats["speculative_started"] == 1 and call.stats["speculative_cancelled"] == 0
    assert len(replies) == 1
    [started] = of(frames, ResponseStarted)
    [reply] = of(frames, ResponseDone)
    assert reply.response_id == started.response_id and reply.status == "completed"
    assert "paris" in reply.text.lower()


async def test_a_pause_read_again_with_more_words_replies_to_them(
    models: LocalInference, vad_model: SileroModel, clips: dict[str, Clip]
) -> None:
    # given a call whose first reading of the pause lost the question's last word
    # when the question is spoken in real time
    call, frames, replies = await ask_unsure(FirstReadingCut(models), vad_model, clips["capital"])
    # then the second reading's words replaced the first reply, without a third reading
    assert call.stats["speculative_kept"] == 0
    assert call.stats["speculative_started"] == 2 and call.stats["speculative_cancelled"] == 1
    assert len(replies) == 2
    assert "france" not in replies[0].messages[-1]["content"].lower()
    assert "france" in replies[1].messages[-1]["content"].lower()
    # and the caller heard one reply, to the whole question
    [final] = of(frames, TranscriptFinal)
    assert {"capital", "france"} <= words(final.text)
    assert len(of(frames, ResponseStarted)) == 1
    [reply] = of(frames, ResponseDone)
    assert reply.status == "completed"


async def test_the_words_after_a_long_pause_inside_a_turn_are_heard(
    models: LocalInference, vad_model: SileroModel, tmp_path: Path
) -> None:
    # given "What is the capital ... of Italy?" in Piper's voice with a 1 s pause, after
    # quiet of 8 lengths 4 ms apart: the VAD's 32 ms chunks cut the turn's start at each
    # step. With the whole pause in the audio it read, tiny.en dropped "of Italy" at 5
    # of these 8 starts ("What is the capital?"; `./dev bench pauses`).
    items = renditions(["piper joe"], [0], [1.0], 8, tmp_path)
    config = fast_config(
        create_response=False,
        speak=False,
        partial_interval_ms=0,
        turns=TurnSettings().with_silence(1500),
    )
    # when each is spoken to a call that transcribes its turns
    heard = [await read_turn(models, vad_model, config, item.samples) for item in items]
    # then every reading holds the words after the pause
    dropped = [
        text for item, text in zip(items, heard, strict=True) if dropped_after_pause(item, text)
    ]
    assert not dropped, heard
    assert all("capital" in words(text) for text in heard), heard


async def test_a_finished_question_is_scored_finished_and_answered(new_call: MakeCall) -> None:
    # given a finished question
    call = new_call()
    # when it is spoken
    frames = await ask(call, spoken("What is the capital of France?"), realtime=True)
    # then the end-of-turn model scored it before the turn ended, and it was answered
    reply = of(frames, ResponseDone)[0]
    assert reply.status == "completed" and reply.text
    assert "eou_end" in reply.timeline
    assert reply.timeline["eou_end"] <= reply.timeline["end_of_turn"]


async def drain(call: VoiceCall, quiet_s: float) -> list[Frame]:
    """Frames that still come until the call has been quiet for `quiet_s`."""
    frames: list[Frame] = []
    while (frame := await call.next_frame(quiet_s)) is not None:
        frames.append(frame)
    return frames


async def test_a_short_sound_over_the_reply_pauses_it_and_it_plays_on(
    new_call: MakeCall, tmp_path: Path
) -> None:
    # given a reply being played at real-time pace
    text = "Our bakery opens at seven every morning, and on Saturdays we also sell pastries."
    call = new_call(playback_lead_ms=200)
    reply_id = call.say(text)
    frames = await collect_until(call, lambda f: isinstance(f, TTSAudio), timeout_s=20)
    # when the caller says a short "uh" over it (about 190 ms of speech)
    rate = 24000
    uh = espeak_clip("uh", tmp_path, "uh")
    audio = np.concatenate([silence(0.3).at(rate), uh.at(rate), silence(1.0).at(rate)])
    feeder = asyncio.create_task(feed(call, audio, rate, realtime=True))
    frames += await collect_until(call, done, timeout_s=30)
    await feeder
    # then the reply was paused on the onset, resumed, and played to its end
    assert call.stats["barge_in_pauses"] >= 1
    assert call.stats["false_interruptions"] >= 1
    assert not of(frames, Interruption)
    finished = of(frames, ResponseDone)[0]
    assert finished.response_id == reply_id
    assert finished.status == "completed" and finished.text == text
    assert call.history[-1] == {"role": "assistant", "content": text}


async def test_speech_over_the_reply_pauses_it_before_it_is_cancelled(
    new_call: MakeCall, clips: dict[str, Clip]
) -> None:
    # given a reply being played at real-time pace
    call = new_call(playback_lead_ms=200)
    reply_id = call.say("Our bakery opens at seven every morning. " * 4)
    await collect_until(call, lambda f: isinstance(f, TTSAudio), timeout_s=20)
    # when the caller asks a question over it
    rate = 24000
    audio = np.concatenate([clips["weather"].at(rate), silence(1.5).at(rate)])
    feeder = asyncio.create_task(feed(call, audio, rate, realtime=True))
    frames = await collect_until(
        call, lambda f: isinstance(f, ResponseDone) and f.response_id != reply_id, 40
    )
    await feeder
    # then the reply was paused first, then interrupted: no audio of it after the pause,
    # and the question was heard and answered
    assert call.stats["barge_in_pauses"] == 1 and call.stats["false_interruptions"] == 0
    interruption = of(frames, Interruption)[0]
    assert interruption.response_id == reply_id
    kinds = [type(f) for f in frames]
    after = frames[kinds.index(Interruption) :]
    assert not [f for f in after if isinstance(f, TTSAudio) and f.response_id == reply_id]
    assert {"weather", "london"} <= words(of(frames, TranscriptFinal)[0].text)
    answer = of(frames, ResponseDone)[-1]
    assert answer.status == "completed" and answer.text


async def test_rejected_turn_is_reported_not_dropped(
    new_call: MakeCall, clips: dict[str, Clip], tmp_path: Path
) -> None:
    # given a call hearing a voiced sound that holds no words (VAD says speech)
    call = new_call()
    noise = espeak_clip("brrrrrrr pfff tsk tsk", tmp_path, "brr")
    audio = np.concatenate([silence(0.3).at(24000), noise.at(24000), silence(1.5).at(24000)])
    await feed(call, audio, 24000, realtime=False)
    # when the turn ends and its transcript is rejected
    frames = await collect_until(call, lambda f: isinstance(f, TranscriptFailed), timeout_s=30)
    # then the client is told why, for the item it saw start and stop, and nothing is answered
    failed = frames[-1]
    stopped = of(frames, SpeechStopped)
    assert stopped and failed.item_id == stopped[-1].item_id
    assert failed.reason in {"empty", "no_speech", "low_confidence", "hallucination", "repetition"}
    assert failed.message and failed.audio_seconds > 0.5
    assert not of(frames, TranscriptFinal) and not of(frames, ResponseStarted)


async def say_all(call: VoiceCall, clip: Clip, *, realtime: bool, quiet_s: float = 8.0) -> list:
    """Say `clip`, then collect every frame until the call has been quiet for `quiet_s`
    (a turn cut at a pause gives more than one transcript and response)."""
    audio = np.concatenate([silence(0.3).at(24000), clip.at(24000)])
    await feed(call, audio, 24000, realtime=realtime)
    frames: list[Frame] = []
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < quiet_s:
        # the line stays open: silence keeps coming, as from a real microphone
        await feed(call, silence(0.1).at(24000), 24000, realtime=True)
        while (frame := await call.next_frame(0.01)) is not None:
            frames.append(frame)
            quiet_since = time.monotonic()
    return frames


def counted(*numbers: str) -> Clip:
    """Numbers spoken one by one with short pauses between them, as people count."""
    parts: list[Clip] = []
    for number in numbers:
        parts += [piper_clip(number), silence(PAUSE_S)]
    return join(*parts[:-1])


async def test_counted_numbers_are_a_turn(new_call: MakeCall) -> None:
    # given someone counting with short pauses ("1, 2, 3, 4, 5." to Whisper: digits only)
    counting = counted("One,", "two,", "three,", "four,", "five.")
    call = new_call(speak=False)
    # when it is spoken
    frames = await say_all(call, counting, realtime=True)
    # then the numbers are transcribed, not discarded as empty
    said = " ".join(f.text for f in of(frames, TranscriptFinal))
    assert {"one", "two", "three", "four", "five"} <= set(normalize(said)), said
    assert not of(frames, TranscriptFailed)


async def test_live_transcripts_are_as_good_as_offline(
    new_call: MakeCall, models: LocalInference, tmp_path: Path
) -> None:
    # given a few questions the live path used to get wrong: a short one that looped,
    # counting with pauses, and an accent the short window misheard
    questions = [
        piper_clip("Is there parking near the bakery?"),
        counted("Six,", "seven,", "eight,", "nine,", "ten."),
        espeak_clip("Could you please explain how to reset my password?", tmp_path, "pw"),
    ]
    # when each is read offline (the whole clip, Whisper's full window) and live, at
    # real-time pace through one call that answers in between
    asr = models.asr
    assert isinstance(asr, WhisperASR)
    offline = [(c.text, asr.read(c.at(16000), "en", full_window=True).text) for c in questions]
    call = new_call(speak=False)
    live = []
    for clip in questions:
        frames = await say_all(call, clip, realtime=True)
        live.append((clip.text, " ".join(f.text for f in of(frames, TranscriptFinal))))
    # then live transcripts have at most one word error more than offline ones. Twenty
    # words: one sampled-differently word ("could" read as "can" in a shorter context) is
    # 0.05 of WER, while a lost turn or a lost pause-split fragment costs two words or more
    live_errors = sum(word_errors(ref, hyp).total for ref, hyp in live)
    offline_errors = sum(word_errors(ref, hyp).total for ref, hyp in offline)
    assert live_errors <= offline_errors + 1, (live, offline)


class GatedASR:
    """The real models, with transcriptions held until the test opens the gate."""

    def __init__(self, models: LocalInference) -> None:
        self.models = models
        self.gate = asyncio.Event()

    async def transcribe(
        self, audio: np.ndarray, language: str, model: str = "tiny.en", *, partial: bool = False
    ) -> Any:
        await self.gate.wait()
        return await self.models.transcribe(audio, language, model, partial=partial)

    def generate(self, messages: Any, options: Any) -> Any:
        return self.models.generate(messages, options)

    def synthesize(self, text: str, voice: Any, *, background: bool = False) -> Any:
        return self.models.synthesize(text, voice, background=background)


async def test_turn_cancelled_while_transcribed_keeps_its_words(
    models: LocalInference, vad_model: SileroModel, clips: dict[str, Clip]
) -> None:
    # given a turn that has ended and been committed while its words are still being read
    asr = GatedASR(models)
    call = VoiceCall(fast_config(speak=False, partial_interval_ms=0), asr, vad_model)
    try:
        audio = np.concatenate([silence(0.3).at(24000), clips["capital"].at(24000)])
        await feed(call, np.concatenate([audio, silence(1.5).at(24000)]), 24000, realtime=False)
        frames = await collect_until(call, lambda f: isinstance(f, SpeechStopped), timeout_s=30)
        # when its response is cancelled before the transcript comes (the caller went on)
        call.cancel_response()
        asr.gate.set()
        frames += await collect_until(call, lambda f: isinstance(f, TranscriptFinal), 30)
        # then the turn still gets its transcript, for its item, and it is in the history
        final = of(frames, TranscriptFinal)[0]
        assert final.item_id == of(frames, SpeechStopped)[0].item_id
        assert {"capital", "france"} <= words(final.text)
        assert any(m["role"] == "user" and "capital" in m["content"].lower() for m in call.history)
    finally:
        await call.close()
