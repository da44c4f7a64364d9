from pathlib import Path

import numpy as np
import pytest

from tests.support.audio_files import sox_wav
from voiceapp.engine.audio import (
    AudioFormatError,
    StreamResampler,
    check_rate,
    float_to_pcm16,
    pcm16_to_float,
    read_audio_file,
    resample,
    to_mono_float,
    trim_leading_quiet,
)


def tone(freq: float, rate: int, seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def peak_hz(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples))
    return float(np.fft.rfftfreq(len(samples), 1 / rate)[np.argmax(spectrum)])


@pytest.mark.parametrize(("src", "dst"), [(48000, 16000), (22050, 24000), (24000, 16000)])
def test_resample_keeps_pitch_and_duration(src: int, dst: int) -> None:
    # given a 1 kHz tone
    samples = tone(1000, src)
    # when resampled
    out = resample(samples, src, dst)
    # then it lasts as long and sounds the same
    assert abs(len(out) - dst) <= 2
    assert abs(peak_hz(out, dst) - 1000) < 5


def test_resampling_48k_to_16k_filters_out_what_16k_cannot_hold() -> None:
    # given a 12 kHz tone, above what 16 kHz audio can hold
    high = tone(12000, 48000)
    # when downsampled to 16 kHz
    out = resample(high, 48000, 16000)
    # then the 12 kHz tone is removed instead of aliasing to 4 kHz (sample dropping would)
    assert np.sqrt(np.mean(out**2)) < 0.01
    dropped = high[::3]
    assert np.sqrt(np.mean(dropped**2)) > 0.3


def test_stream_resampler_matches_whole_signal() -> None:
    # given a tone cut into 20 ms chunks
    samples = tone(440, 48000)
    stream = StreamResampler(48000, 16000)
    # when streamed
    parts = [stream.process(samples[i : i + 960]) for i in range(0, len(samples), 960)]
    parts.append(stream.process(np.zeros(0, np.float32), last=True))
    out = np.concatenate(parts)
    # then it is the same length and pitch as the whole-signal result
    assert abs(len(out) - 16000) <= 2
    assert abs(peak_hz(out, 16000) - 440) < 5


def test_pcm16_round_trip_and_stereo_downmix() -> None:
    # given a stereo PCM16 signal with opposite channels
    left = tone(440, 16000, 0.1)
    stereo = np.stack([left, left * 0.5], axis=1).reshape(-1)
    pcm = float_to_pcm16(stereo)
    # when decoded as two channels
    mono = pcm16_to_float(pcm, channels=2)
    # then the channels are averaged
    assert len(mono) == len(left)
    assert np.allclose(mono, left * 0.75, atol=1e-3)


def test_bad_input_is_a_clear_error() -> None:
    # odd byte count
    with pytest.raises(AudioFormatError, match="whole number"):
        pcm16_to_float(b"\x00\x01\x02")
    # NaN
    with pytest.raises(AudioFormatError, match="NaN"):
        to_mono_float(np.array([0.0, np.nan], dtype=np.float32))
    # rates outside what a transport sends
    for rate in (0, 100, 10**6):
        with pytest.raises(AudioFormatError, match="sample rate"):
            check_rate(rate)
    # 3-D arrays
    with pytest.raises(AudioFormatError):
        to_mono_float(np.zeros((2, 2, 2)))


def test_clipped_and_integer_audio_is_normalised() -> None:
    # given clipped float audio and int16 audio
    clipped = np.array([3.0, -3.0, 0.5], dtype=np.float32)
    ints = np.array([32767, -32768, 0], dtype=np.int16)
    # then both land in [-1, 1]
    assert to_mono_float(clipped).tolist() == [1.0, -1.0, 0.5]
    assert np.allclose(to_mono_float(ints), [1.0, -1.0, 0.0], atol=1e-4)


@pytest.mark.parametrize(
    ("encoding", "bits", "channels", "rate"),
    [
        ("floating-point", 32, 1, 44100),
        ("floating-point", 32, 2, 48000),
        ("floating-point", 64, 1, 16000),
        ("signed-integer", 24, 2, 48000),
        ("signed-integer", 32, 1, 22050),
        ("signed-integer", 16, 6, 32000),
        ("unsigned-integer", 8, 1, 8000),
    ],
)
def test_read_audio_file_decodes_any_wav(
    tmp_path: Path, encoding: str, bits: int, channels: int, rate: int
) -> None:
    # given a tone saved by sox as a WAV of this sample format, channel count and rate
    source = tone(440, 16000, 0.5)
    path = sox_wav(
        tmp_path / "tone.wav",
        source,
        16000,
        out_rate=rate,
        encoding=encoding,
        bits=bits,
        channels=channels,
    )
    # when it is read
    samples, got_rate = read_audio_file(path)
    # then it is the same signal at its own rate, its channels averaged
    # (sox_wav puts the first channel at full level, the others at half)
    level = (1 + 0.5 * (channels - 1)) / channels
    expected = resample(source, 16000, rate) * level
    assert got_rate == rate and samples.dtype == np.float32
    assert len(samples) == len(expected)
    lsb = 2.0 ** (1 - min(bits, 16))  # the source is 16-bit; 8-bit is coarser still
    assert np.max(np.abs(samples - expected)) < 3 * lsb


def test_read_audio_file_rejects_what_is_not_audio(tmp_path: Path) -> None:
    # given a text file named .wav and an empty file
    text = tmp_path / "notes.wav"
    text.write_text("these are notes, not a recording\n" * 20)
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    # then each is a clear error naming the file, not a crash
    for path in (text, empty):
        with pytest.raises(AudioFormatError, match=str(path)):
            read_audio_file(path)
    # and a missing file is the usual OSError
    with pytest.raises(FileNotFoundError):
        read_audio_file(tmp_path / "missing.wav")


def test_leading_quiet_is_trimmed_to_a_short_fade_and_the_sound_kept() -> None:
    # given 60 ms of low noise (-60 dBFS) before a tone, at 24 kHz
    rate = 24000
    rng = np.random.default_rng(7)
    quiet = (0.001 * rng.uniform(-1, 1, int(0.06 * rate))).astype(np.float32)
    sound = tone(440, rate, 0.2)[1:]  # starts off zero, as speech does
    # when its leading quiet is trimmed
    out = trim_leading_quiet(np.concatenate([quiet, sound]), rate)
    # then 10 ms of the quiet is left before the sound, fading in from silence
    assert len(out) == len(sound) + int(0.01 * rate)
    assert np.array_equal(out[-len(sound) :], sound)
    assert abs(out[0]) == 0.0
    assert np.all(np.abs(out[: int(0.01 * rate)]) <= 0.001)


@pytest.mark.parametrize("lead_ms", [0, 5])
def test_audio_that_starts_within_the_kept_quiet_or_is_all_quiet_is_unchanged(
    lead_ms: int,
) -> None:
    rate = 24000
    sound = np.concatenate([np.zeros(lead_ms * rate // 1000, np.float32), tone(440, rate, 0.1)])
    silence = np.zeros(rate // 10, np.float32)
    assert np.array_equal(trim_leading_quiet(sound, rate), sound)
    assert np.array_equal(trim_leading_quiet(silence, rate), silence)
