from dataclasses import replace

import pytest

from voiceapp.engine.turns import (
    BargeInDetector,
    BargeInKind,
    BargeInSettings,
    TurnDetector,
    TurnEventKind,
    TurnSettings,
    TurnState,
    end_of_turn_wait_ms,
    eou_text,
    sentence_completeness,
)
from voiceapp.engine.vad import CHUNK_MS

SETTINGS = TurnSettings(
    threshold=0.5,
    min_speech_ms=160,
    pause_ms=96,
    end_of_turn_ms=480,
    complete_end_of_turn_ms=192,
    incomplete_end_of_turn_ms=960,
)


def run(detector: TurnDetector, probs: list[float]) -> list[tuple[TurnEventKind, int]]:
    events = []
    for p in probs:
        events += [(e.kind, e.audio_ms) for e in detector.push(p)]
    return events


def chunks(ms: int, prob: float) -> list[float]:
    return [prob] * (ms // CHUNK_MS)


def test_speech_then_silence_gives_start_pause_and_end_of_turn() -> None:
    # given a detector
    detector = TurnDetector(SETTINGS)
    # when 640 ms of speech is followed by 640 ms of silence
    events = run(detector, chunks(320, 0.0) + chunks(640, 0.9) + chunks(640, 0.05))
    # then: started at the first voiced chunk, paused after 96 ms, ended after 480 ms
    assert [k for k, _ in events] == [
        TurnEventKind.SPEECH_STARTED,
        TurnEventKind.PAUSED,
        TurnEventKind.END_OF_TURN,
    ]
    assert events[0][1] == 320
    assert events[2][1] == 960  # end of the last voiced chunk
    assert detector.state is TurnState.IDLE


def test_short_blip_is_not_speech() -> None:
    # given 96 ms of speech-like probability (a cough, a click) below min_speech_ms
    detector = TurnDetector(SETTINGS)
    events = run(detector, chunks(96, 0.9) + chunks(1000, 0.0))
    # then nothing starts
    assert events == []


def test_resume_after_pause_continues_the_turn() -> None:
    # given speech, a 200 ms pause, more speech, then silence
    detector = TurnDetector(SETTINGS)
    probs = chunks(320, 0.9) + chunks(200, 0.0) + chunks(320, 0.9) + chunks(600, 0.0)
    # when fed
    kinds = [k for k, _ in run(detector, probs)]
    # then the pause is followed by a resume and only one end of turn
    assert kinds == [
        TurnEventKind.SPEECH_STARTED,
        TurnEventKind.PAUSED,
        TurnEventKind.RESUMED,
        TurnEventKind.PAUSED,
        TurnEventKind.END_OF_TURN,
    ]


def test_complete_sentence_hint_shortens_the_wait() -> None:
    # given a paused turn
    detector = TurnDetector(SETTINGS)
    run(detector, chunks(320, 0.9) + chunks(224, 0.0))
    assert detector.state is TurnState.PAUSED
    # when the transcript so far is a complete question
    detector.set_hint(SETTINGS.wait_ms(sentence_completeness("What is the capital of France?")))
    # then the silence already heard (224 ms >= 192 ms) ends the turn
    event = detector.check_end_of_turn()
    assert event is not None and event.kind is TurnEventKind.END_OF_TURN


@pytest.mark.parametrize(
    ("silence_ms", "finished_ms", "unfinished_ms"),
    [(500, 450, 1000), (100, 100, 200), (180, 162, 360), (2000, 1800, 3000)],
)
def test_a_personas_silence_sets_the_three_waits(
    silence_ms: int, finished_ms: int, unfinished_ms: int
) -> None:
    turns = TurnSettings(threshold=0.7).with_silence(silence_ms)
    assert (turns.end_of_turn_ms, turns.complete_end_of_turn_ms) == (silence_ms, finished_ms)
    assert turns.incomplete_end_of_turn_ms == unfinished_ms
    assert turns.threshold == 0.7


def test_a_comma_pause_after_a_finished_clause_does_not_end_the_default_turn() -> None:
    # given the default persona's 500 ms silence, and a clause that reads as finished
    settings = TurnSettings().with_silence(500)
    detector = TurnDetector(settings)
    run(detector, chunks(1600, 0.9) + chunks(224, 0.0))
    detector.set_hint(settings.wait_ms(True))
    # when the speaker pauses 416 ms at the comma (13 quiet chunks: the most the
    # benchmark's Piper voice gave at "... on my account, because ...") and goes on
    events = run(detector, chunks(192, 0.0) + chunks(640, 0.9) + chunks(640, 0.0))
    # then it is one turn, ended once, after the second clause
    kinds = [k for k, _ in events]
    assert kinds.count(TurnEventKind.END_OF_TURN) == 1
    assert kinds.index(TurnEventKind.RESUMED) < kinds.index(TurnEventKind.END_OF_TURN)


def test_unfinished_phrase_hint_lengthens_the_wait() -> None:
    # given a paused turn whose transcript ends in "of"
    detector = TurnDetector(SETTINGS)
    run(detector, chunks(320, 0.9) + chunks(128, 0.0))
    detector.set_hint(SETTINGS.wait_ms(sentence_completeness("What is the capital of")))
    # when 600 ms of silence pass (more than the plain 480 ms)
    events = run(detector, chunks(600, 0.0))
    # then the turn is still open; it ends after the longer wait
    assert events == []
    assert [k for k, _ in run(detector, chunks(320, 0.0))] == [TurnEventKind.END_OF_TURN]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What is the capital of France?", True),
        ("Book me a table.", True),
        ("What is the capital of", False),
        ("I want to, um", False),
        ("Well...", False),
        ("so I was thinking", None),
        ("", None),
    ],
)
def test_sentence_completeness(text: str, expected: bool | None) -> None:
    assert sentence_completeness(text) is expected


def test_a_pending_hint_keeps_the_turn_open_past_the_plain_wait() -> None:
    # given a paused turn whose transcript is still being made
    detector = TurnDetector(SETTINGS)
    run(detector, chunks(320, 0.9) + chunks(128, 0.0))
    detector.expect_hint()
    # when more silence than the plain 480 ms passes
    events = run(detector, chunks(480, 0.0))
    # then the turn is still open, waiting for the verdict
    assert events == [] and detector.hint_pending
    # and a "finished" verdict ends it at once; the silence heard is enough
    detector.set_hint(SETTINGS.wait_ms(True))
    event = detector.check_end_of_turn()
    assert event is not None and event.kind is TurnEventKind.END_OF_TURN


def test_a_pending_hint_that_never_comes_ends_on_the_long_wait() -> None:
    detector = TurnDetector(SETTINGS)
    run(detector, chunks(320, 0.9) + chunks(128, 0.0))
    detector.expect_hint()
    kinds = [k for k, _ in run(detector, chunks(1000, 0.0))]
    assert kinds == [TurnEventKind.END_OF_TURN]


def test_resuming_speech_drops_the_pending_hint() -> None:
    detector = TurnDetector(SETTINGS)
    run(detector, chunks(320, 0.9) + chunks(128, 0.0))
    detector.expect_hint()
    run(detector, chunks(128, 0.9))
    assert detector.state is TurnState.SPEAKING and not detector.hint_pending


# waits: 192 ms finished, 480 ms plain, 960 ms unfinished; scores from 0.001 to 0.1 between
BANDS = replace(SETTINGS, eou_threshold=0.1, eou_unfinished_threshold=0.001)


@pytest.mark.parametrize(
    ("text", "probability", "expected_ms"),
    [
        ("What is the capital of France?", 0.9, 192),
        ("What is the capital of France?", 0.1, 192),  # the threshold itself is finished
        ("I would like to order.", 0.0005, 960),  # the full stop is not trusted
        ("I would like to order.", 0.001, 960),  # the lower bound is still unfinished
        ("Can you recommend a good book?", 0.01, 720),  # unsure: halfway on a log scale
        ("Can you recommend a good book?", 0.099, 481),  # just under: about the plain wait
        ("I would like to order.", None, 480),  # no score: the plain wait
        ("One, two, three, four,", 0.9, 960),  # a trailing comma is unfinished
        ("I need to talk to", 0.9, 960),  # so is a trailing "to"
        ("", 0.9, 480),
    ],
)
def test_end_of_turn_wait(text: str, probability: float | None, expected_ms: int) -> None:
    assert end_of_turn_wait_ms(text, probability, BANDS) == expected_ms


def test_the_wait_shortens_as_the_score_grows() -> None:
    scores = [0.0001, 0.001, 0.002, 0.005, 0.01, 0.03, 0.0999, 0.1, 0.5]
    waits = [end_of_turn_wait_ms("Can I book a table", p, BANDS) for p in scores]
    assert waits == sorted(waits, reverse=True)
    assert waits[0] == 960 and waits[-1] == 192


def test_an_unsure_score_waits_less_than_an_unfinished_phrase() -> None:
    # given a pause whose transcript the end-of-turn model is unsure of (0.01)
    detector = TurnDetector(BANDS)
    run(detector, chunks(320, 0.9) + chunks(128, 0.0))
    detector.expect_hint()
    detector.set_hint(end_of_turn_wait_ms("Can you recommend a good book?", 0.01, BANDS))
    # when 736 ms of silence have passed in all (more than its 720 ms wait)
    events = run(detector, chunks(608, 0.0))
    # then the turn has ended, before the 960 ms an unfinished phrase waits
    assert [k for k, _ in events] == [TurnEventKind.END_OF_TURN]


def test_eou_text_drops_punctuation_and_case() -> None:
    assert eou_text("  I'd like to order. A cake, please?") == "i'd like to order a cake please"


BARGE = BargeInSettings(threshold=0.7, onset_ms=64, confirm_ms=256, resume_ms=320)


def barge(detector: BargeInDetector, probs: list[float]) -> list[BargeInKind]:
    return [k for p in probs if (k := detector.push(p)) is not None]


def test_barge_in_pauses_on_the_onset_and_confirms_on_more_speech() -> None:
    # given speech over the reply
    detector = BargeInDetector(BARGE)
    # then two voiced chunks pause it, and 256 ms of voiced chunks confirm the interruption
    assert barge(detector, chunks(64, 0.9)) == [BargeInKind.PAUSE]
    assert barge(detector, chunks(160, 0.9)) == []
    assert barge(detector, chunks(64, 0.2) + chunks(32, 0.9)) == [BargeInKind.CONFIRM]
    assert not detector.paused


def test_a_short_onset_resumes_the_reply() -> None:
    # given a cough: 96 ms of speech-like sound, then quiet
    detector = BargeInDetector(BARGE)
    kinds = barge(detector, chunks(96, 0.9) + chunks(320, 0.1))
    # then the reply was paused, then resumed
    assert kinds == [BargeInKind.PAUSE, BargeInKind.RESUME]
    assert not detector.paused


def test_a_single_voiced_chunk_does_nothing() -> None:
    detector = BargeInDetector(BARGE)
    assert barge(detector, chunks(32, 0.9) + chunks(320, 0.1) + chunks(32, 0.9)) == []


def test_without_an_onset_pause_barge_in_confirms_after_continuous_speech() -> None:
    detector = BargeInDetector(BargeInSettings(threshold=0.7, onset_ms=0, confirm_ms=256))
    assert barge(detector, chunks(224, 0.9) + chunks(32, 0.1)) == []
    assert barge(detector, chunks(256, 0.9)) == [BargeInKind.CONFIRM]
