import numpy as np
import pytest

from tests.support.clips import Clip
from voiceapp.engine.vad import CHUNK_SAMPLES, SileroModel, StreamingVAD


def speech_fraction(model: SileroModel, clip: Clip) -> float:
    vad = StreamingVAD(model)
    probs = vad.process(clip.at(16000))
    return float(np.mean(np.array(probs) >= 0.5))


@pytest.mark.parametrize("name", ["capital", "weather"])
def test_spoken_questions_are_mostly_speech(
    vad_model: SileroModel, clips: dict[str, Clip], name: str
) -> None:
    assert speech_fraction(vad_model, clips[name]) > 0.5


@pytest.mark.parametrize("name", ["silence", "noise", "pink", "music", "clicks"])
def test_non_speech_is_not_speech(
    vad_model: SileroModel, clips: dict[str, Clip], name: str
) -> None:
    assert speech_fraction(vad_model, clips[name]) < 0.05


def test_streaming_in_odd_pieces_matches_one_block(
    vad_model: SileroModel, clips: dict[str, Clip]
) -> None:
    # given the same audio fed whole and in 7 ms pieces
    audio = clips["capital"].at(16000)
    whole = StreamingVAD(vad_model).process(audio)
    vad = StreamingVAD(vad_model)
    pieces: list[float] = []
    for i in range(0, len(audio), 112):
        pieces += vad.process(audio[i : i + 112])
    # then the chunking and the recurrent state give the same probabilities
    assert len(whole) == len(audio) // CHUNK_SAMPLES == len(pieces)
    assert np.allclose(whole, pieces, atol=1e-5)
