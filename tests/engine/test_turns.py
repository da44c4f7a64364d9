import pytest

from voiceapp.engine.turns import (
    TurnDetector,
    TurnEventKind,
    TurnSettings,
    TurnState,
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
    detector.set_hint(sentence_completeness("What is the capital of France?"))
    # then the silence already heard (224 ms >= 192 ms) ends the turn
    event = detector.check_end_of_turn()
    assert event is not None and event.kind is TurnEventKind.END_OF_TURN


def test_unfinished_phrase_hint_lengthens_the_wait() -> None:
    # given a paused turn whose transcript ends in "of"
    detector = TurnDetector(SETTINGS)
    run(detector, chunks(320, 0.9) + chunks(128, 0.0))
    detector.set_hint(sentence_completeness("What is the capital of"))
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
