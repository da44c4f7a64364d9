"""A Piper voice cut into its acoustics and its waveform, made window by window."""

import itertools
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.support.clips import words
from voiceapp.engine import piper_graph
from voiceapp.engine.audio import resample
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.models import default_voice
from voiceapp.engine.piper_graph import (
    FIRST_FRAMES,
    MIN_WINDOW_FRAMES,
    SECOND_FRAMES,
    find_cut,
    split_voice,
    windows,
)
from voiceapp.engine.tts import PiperTTS, VoiceSpec, sentence_feeds

SENTENCES = (
    "The capital of France is Paris.",
    "Sure, here is a fun fact about space: the sun is a star, and a very large one.",
    "Of course.",
)
STEP = 1 / 32768  # a 16-bit step


def test_windows_cover_a_sentence_once_in_order_the_first_one_short() -> None:
    for frames in range(1, 900):
        spans = list(windows(frames))
        # the windows tile the sentence's frames, in order, with nothing made twice
        assert spans[0][0] == 0 and spans[-1][1] == frames
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
        assert all(start < end for start, end in spans)
        # the first is at most FIRST_FRAMES, the second at most SECOND_FRAMES, unless
        # what would follow is too short to be a window of its own
        if frames >= FIRST_FRAMES + MIN_WINDOW_FRAMES:
            assert spans[0] == (0, FIRST_FRAMES)
            assert len(spans) >= 2
        else:
            assert spans == [(0, frames)]
        if len(spans) > 2:
            assert spans[1][1] - spans[1][0] == SECOND_FRAMES
        assert all(end - start >= MIN_WINDOW_FRAMES for start, end in spans[1:])


def test_the_default_voice_is_cut_where_its_flow_begins() -> None:
    model = onnx.load(default_voice().model_path)
    cut = find_cut(model.graph)
    # the cut passes the latent frames and their mask, and the halves are whole graphs
    assert cut is not None and cut.latent != cut.mask
    halves = split_voice(default_voice().model_path)
    assert halves is not None and halves.cut == cut
    acoustics, waveform = (
        onnx.load_from_string(halves.acoustics),
        onnx.load_from_string(halves.waveform),
    )
    assert [o.name for o in acoustics.graph.output] == [cut.latent, cut.mask]
    assert {i.name for i in waveform.graph.input} == {cut.latent, cut.mask}
    assert [o.name for o in waveform.graph.output] == [o.name for o in model.graph.output]


def test_the_halves_give_the_whole_models_audio_and_the_windows_the_halves(
    models: LocalInference,
) -> None:
    # given the default voice as loaded, and its whole model beside it
    loaded = models.tts._voice(default_voice())
    assert loaded.windowed is not None
    whole_model = models.tts._session(default_voice().model_path, "whole")
    for sentence in SENTENCES:
        # (the noise off: each run of a sentence makes the same frames)
        feeds = sentence_feeds(loaded.piper, sentence, 1.0, noise=False)
        expected = np.asarray(whole_model.run(None, feeds)[0]).reshape(-1)
        # when the halves make it whole, and in windows
        latent, mask = loaded.windowed.latent(feeds)
        frames = latent.shape[2]
        whole = loaded.windowed.raw(latent, mask, 0, frames)
        joined = np.concatenate(
            [loaded.windowed.raw(latent, mask, a, b) for a, b in windows(frames)]
        )
        # then both are the whole model's audio, within a 16-bit step
        assert whole.shape == expected.shape == joined.shape
        assert np.abs(whole - expected).max() < STEP
        assert np.abs(joined - expected).max() < STEP


def test_a_clause_comes_first_as_a_short_window_then_the_rest(models: LocalInference) -> None:
    # given the default voice, and a clause of about 5 s
    voice = default_voice()
    sentence = SENTENCES[1]
    # when it is synthesized for a caller who waits, and for nobody yet
    windowed = list(models.tts.synthesize(sentence, voice, threading.Event()))
    whole = list(models.tts.synthesize(sentence, voice, threading.Event(), windowed=False))
    # then the first comes as its first window, about 0.37 s, and the rest after it
    rate = models.tts.sample_rate(voice)
    hop = 256
    assert len(windowed) == 3 and len(whole) == 1
    assert len(windowed[0]) == FIRST_FRAMES * hop
    assert len(windowed[1]) == SECOND_FRAMES * hop
    assert abs(len(windowed[0]) / rate - 0.37) < 0.01
    # and both are at the voice's one gain: loud, never past full scale
    for audio in (np.concatenate(windowed), whole[0]):
        assert 0.3 < np.abs(audio).max() <= 1.0
    # and what the caller hears is understood
    heard = models.asr.transcribe(resample(np.concatenate(windowed), rate, 16000), "en")
    assert {"fun", "fact", "space", "sun", "star"} <= words(heard.text)


def test_the_halves_and_gain_are_kept_and_loaded_by_the_next_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a voice cut, checked and calibrated once with a cache directory
    first = PiperTTS(cache_dir=tmp_path)
    gain = first._voice(default_voice()).windowed.gain  # type: ignore[union-attr]
    assert len([p for p in tmp_path.iterdir() if not p.name.startswith(".")]) == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".staging")]

    # when another loads the same voice, unable to cut a graph
    def no_cut(path: str) -> None:
        raise AssertionError("the kept halves were not used")

    monkeypatch.setattr("voiceapp.engine.tts.split_voice", no_cut)
    second = PiperTTS(cache_dir=tmp_path)
    loaded = second._voice(default_voice())
    # then it has the halves and the gain that were kept, and speaks
    assert loaded.windowed is not None and loaded.windowed.gain == gain
    audio = list(second.synthesize("Hello there, how are you?", default_voice(), threading.Event()))
    assert sum(len(a) for a in audio) > 0.5 * second.sample_rate(default_voice())


def test_a_voice_file_that_changed_is_cut_again(tmp_path: Path) -> None:
    # given a copy of the voice whose halves were kept
    voice = copy_voice(tmp_path / "voice")
    PiperTTS(cache_dir=tmp_path / "cache")._voice(voice)
    assert piper_graph.load_halves(tmp_path / "cache", voice.model_path) is not None
    # when the file changes
    stat = os.stat(voice.model_path)
    os.utime(voice.model_path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    # then nothing kept is found for it, and loading it cuts it again
    assert piper_graph.load_halves(tmp_path / "cache", voice.model_path) is None
    assert PiperTTS(cache_dir=tmp_path / "cache")._voice(voice).windowed is not None
    assert piper_graph.load_halves(tmp_path / "cache", voice.model_path) is not None


def test_a_graph_that_is_not_a_piper_voice_is_not_cut(tmp_path: Path) -> None:
    # given a small graph with a convolution and no flow
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, 8])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1, 8])
    w = helper.make_tensor("dec.conv_pre.weight", TensorProto.FLOAT, [1, 1, 1], [2.0])
    graph = helper.make_graph(
        [helper.make_node("Conv", ["input", "dec.conv_pre.weight"], ["output"])],
        "not-a-voice",
        [x],
        [y],
        [w],
    )
    path = tmp_path / "small.onnx"
    onnx.save(helper.make_model(graph), str(path))
    # then it has no cut, and is not split
    assert find_cut(graph) is None
    assert split_voice(str(path)) is None


def test_a_voice_whose_graph_cannot_be_cut_is_synthesized_whole(
    tmp_path: Path, models: LocalInference
) -> None:
    # given a copy of the voice whose decoder's first convolution's weights are renamed
    voice = copy_voice(tmp_path)
    model = onnx.load(voice.model_path)
    renamed = {"dec.conv_pre.weight": "renamed.weight", "dec.conv_pre.bias": "renamed.bias"}
    for init in model.graph.initializer:
        init.name = renamed.get(init.name, init.name)
    for node in model.graph.node:
        node.input[:] = [renamed.get(i, i) for i in node.input]
    onnx.save(model, voice.model_path)
    # when it speaks
    tts = PiperTTS()
    audio = list(tts.synthesize("The library opens at nine.", voice, threading.Event()))
    # then it is not cut: a sentence comes whole, and is understood
    assert tts._voice(voice).windowed is None
    assert len(audio) == 1
    rate = tts.sample_rate(voice)
    heard = models.asr.transcribe(resample(audio[0], rate, 16000), "en")
    assert {"library", "nine"} <= words(heard.text.replace("9", "nine"))


def copy_voice(directory: Path) -> VoiceSpec:
    directory.mkdir(parents=True, exist_ok=True)
    source = Path(default_voice().model_path)
    target = directory / source.name
    shutil.copyfile(source, target)
    shutil.copyfile(f"{source}.json", f"{target}.json")
    return VoiceSpec("copy", str(target))
