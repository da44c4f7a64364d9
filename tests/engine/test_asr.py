import os
import threading
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from tests.support.clips import Clip, piper_clip, words
from voiceapp.engine.asr import (
    WhisperASR,
    collapse_repeats,
    hallucination_reason,
    looks_looped,
)
from voiceapp.engine.inference import LocalInference


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("capital", {"capital", "france"}),
        ("weather", {"weather", "london"}),
        ("long", {"table", "four", "vegetarian"}),
    ],
)
def test_spoken_question_is_transcribed(
    models: LocalInference, clips: dict[str, Clip], name: str, expected: set[str]
) -> None:
    # given a question spoken by Piper or espeak-ng
    # when transcribed
    result = models.asr.transcribe(clips[name].at(16000), "en")
    # then the key words are there
    assert expected <= words(result.text), result
    assert result.rejected is None


def test_a_long_question_is_read_to_its_last_word(models: LocalInference) -> None:
    # given a long question (about 24 tokens in 5.2 s of speech): read with the
    # decode cap passed to CTranslate2 as the text-token budget itself, tiny.en
    # stopped at "... because I no longer use the"
    clip = piper_clip(
        "I would like to know how I can change the email address on my account, "
        "because I no longer use the old one."
    )
    # when transcribed
    result = models.asr.transcribe(clip.at(16000), "en")
    # then the reading goes on to the end of the speech
    assert result.text.rstrip(".").lower().endswith("the old one"), result


@pytest.mark.parametrize("name", ["silence", "noise", "music", "clicks"])
def test_non_speech_gives_no_text(
    models: LocalInference, clips: dict[str, Clip], name: str
) -> None:
    # Whisper invents text on silence and noise; the filters must drop it.
    result = models.asr.transcribe(clips[name].at(16000), "en")
    assert result.text == "", result


async def test_a_transcript_says_how_it_was_read_and_how_long_it_waited(
    models: LocalInference, clips: dict[str, Clip]
) -> None:
    # given a clear question, and noise that the short window's reading rejects
    question = await models.transcribe(clips["capital"].at(16000), "en")
    noise = await models.transcribe(clips["noise"].at(16000), "en")
    # then the question took one reading; the noise a second one, with the full window
    assert (question.reads, noise.reads) == (1, 2), (question, noise)
    assert noise.text == ""
    # and each says how long it waited for the model
    assert question.queue_ms is not None and question.queue_ms >= 0
    assert noise.queue_ms is not None and noise.queue_ms >= 0


def test_too_short_audio_is_rejected_without_decoding(models: LocalInference) -> None:
    result = models.asr.transcribe(np.zeros(800, np.float32), "en")
    assert result.text == "" and result.rejected == "too_short"


def test_hallucination_filter() -> None:
    assert hallucination_reason("Thank you.", 0.5, -0.6) == "hallucination"
    assert hallucination_reason("Thank you.", 0.05, -0.2) is None  # a real "thank you"
    assert hallucination_reason("...", 0.1, -0.1) == "empty"
    assert hallucination_reason("the the the the the the the the", 0.1, -0.3) == "repetition"
    # a loop inside other words: a voiced noise read with the full window
    noise = "Be all all all all all all all all all be FFF took took"
    assert hallucination_reason(noise, 0.25, -0.95) == "repetition"
    assert hallucination_reason("No, no, no, I said the blue one.", 0.1, -0.3) is None
    assert hallucination_reason("Book a table for two.", 0.9, -1.2) is not None
    assert hallucination_reason("Book a table for two.", 0.1, -0.3) is None


def test_collapse_repeats() -> None:
    assert collapse_repeats("Hi there? Hi there? Hi there?") == "Hi there?"
    assert collapse_repeats("Yes. No. Yes.") == "Yes. No. Yes."
    assert collapse_repeats("What is the capital of France? What is the") == (
        "What is the capital of France?"
    )
    assert collapse_repeats("It is late. What is the time") == "It is late. What is the time"


def test_collapse_repeats_drops_a_restart_cut_inside_a_word() -> None:
    assert collapse_repeats("Is they're parking near the bakery? Is they") == (
        "Is they're parking near the bakery?"
    )
    assert collapse_repeats("Is it open? Can I") == "Is it open? Can I"


def test_loops_are_recognised() -> None:
    assert looks_looped("6, 7, 8, 9, 10, 10, 6, 7, 8")
    assert looks_looped("6, 7, 8, 9, 10, 10, 10, 10, 10")
    # a loop whose period drifts: read with twice the tokens it used to be allowed
    assert looks_looped("6, 7, 8, 9, 10, 6, 7, 8, 9, 10, 10, 6, 7, 8, 9, 10, 10, 6,")
    assert not looks_looped("1, 2, 3, 4, 5.")
    assert not looks_looped(
        "I would like to know how I can change the email address on my account, "
        "because I no longer use the old one, and the old one is closed."
    )
    assert not looks_looped("Can you book a table for two people at eight?")


def test_numbers_alone_are_words() -> None:
    # "1, 2, 3, 4, 5." is a counted turn, not an empty one
    assert hallucination_reason("1, 2, 3, 4, 5.", 0.3, -0.3) is None
    assert hallucination_reason("7", 0.1, -0.2) is None


def thread_nice(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def test_captions_are_read_by_a_model_of_their_own_whose_threads_yield(
    models: LocalInference,
) -> None:
    # given the models as a worker loads them: a caption instance beside the turns' one
    caption = models.caption_asr
    assert caption is not None and caption is not models.asr
    assert caption.settings.nice == 10 and caption.settings.num_workers == 1
    # when a niced model is made, its replica threads are niced and this thread is not
    before = set(os.listdir("/proc/self/task"))
    niced = WhisperASR(replace(caption.settings, nice=7))
    started = {int(t) for t in set(os.listdir("/proc/self/task")) - before}
    assert started, "the model started no thread of its own"
    assert {thread_nice(t) for t in started} == {7}
    assert thread_nice(threading.get_native_id()) == 0
    # and it reads as the other does
    assert niced.transcribe(piper_clip("What is the capital of France?").at(16000)).text


async def test_a_partial_transcript_is_read_by_the_caption_model(
    models: LocalInference, clips: dict[str, Clip]
) -> None:
    # given both models counting their readings
    calls: list[str] = []
    assert models.caption_asr is not None
    for name, asr in (("turn", models.asr), ("caption", models.caption_asr)):
        original = asr.transcribe

        def counted(*args: Any, _name: str = name, _original: Any = original) -> Any:
            calls.append(_name)
            return _original(*args)

        asr.transcribe = counted  # type: ignore[method-assign]
    try:
        # when a live caption and then a turn are read
        partial = await models.transcribe(clips["capital"].at(16000), "en", partial=True)
        final = await models.transcribe(clips["capital"].at(16000), "en")
    finally:
        del models.asr.transcribe, models.caption_asr.transcribe  # type: ignore[attr-defined]
    # then each went to its own model, and both read the question
    assert calls == ["caption", "turn"]
    assert partial.text == final.text and {"capital", "france"} <= words(final.text)
