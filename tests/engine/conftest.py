"""Real models and real audio for the engine tests, made once per test session.

Questions are spoken by two voices (Piper's en_US-joe and espeak-ng); the
non-speech sounds (noise, music-like tones, clicks, silence) come from sox.
Everything is generated at test time under a session temp dir, and the same
on every run (espeak-ng and sox are deterministic; Piper clips are seeded).
"""

from __future__ import annotations

import asyncio
import functools
import subprocess
import threading
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
from llama_cpp import Llama
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from voiceapp.engine.audio import read_wav, resample
from voiceapp.engine.call import CallConfig, VoiceCall
from voiceapp.engine.frames import Frame
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.llm import Message
from voiceapp.engine.models import ModelSettings, default_voice, load_inference
from voiceapp.engine.tasks import TaskOwner
from voiceapp.engine.tts import PiperTTS
from voiceapp.engine.turns import TurnSettings
from voiceapp.engine.vad import SileroModel


@dataclass(frozen=True)
class Clip:
    samples: np.ndarray  # float32 mono
    rate: int
    text: str = ""

    @property
    def seconds(self) -> float:
        return len(self.samples) / self.rate

    def at(self, rate: int) -> np.ndarray:
        return resample(self.samples, self.rate, rate)


@functools.cache
def shared_models() -> LocalInference:
    """The real default models, loaded once per test process."""
    return load_inference(ModelSettings())


@functools.cache
def shared_vad() -> SileroModel:
    return SileroModel()


def piper_clip(text: str) -> Clip:
    """`text` in Piper's voice, the same rendition on every run.

    Piper draws the noise that varies its prosody inside the ONNX graph, from a
    generator seeded when the session is created; a fresh session after a fixed
    seed makes the clip reproducible, so a test hears the same audio each time.
    """
    onnxruntime.set_seed(zlib.crc32(text.encode()))
    tts = PiperTTS()
    voice = default_voice()
    chunks = list(tts.synthesize(text, voice, threading.Event()))
    return Clip(np.concatenate(chunks), tts.sample_rate(voice), text)


def espeak_clip(text: str, workdir: Path, name: str) -> Clip:
    path = workdir / f"{name}.wav"
    subprocess.run(["espeak-ng", "-s", "165", "-w", str(path), text], check=True)
    samples, rate = read_wav(path)
    return Clip(samples, rate, text)


def sox_clip(workdir: Path, name: str, *effects: str, rate: int = 16000) -> Clip:
    path = workdir / f"{name}.wav"
    cmd = ["sox", "-n", "-r", str(rate), "-b", "16", "-c", "1", str(path), *effects]
    subprocess.run(cmd, check=True)
    samples, got = read_wav(path)
    return Clip(samples, got)


def silence(seconds: float, rate: int = 16000) -> Clip:
    return Clip(np.zeros(int(seconds * rate), dtype=np.float32), rate)


def join(*clips: Clip, rate: int = 16000) -> Clip:
    return Clip(np.concatenate([c.at(rate) for c in clips]), rate, " ".join(c.text for c in clips))


# A C-major chord pulsing four times a second: tonal, rhythmic, not speech.
MUSIC = ("synth", "3", "sine", "261.6", "sine", "329.6", "sine", "392", "tremolo", "4", "60")


@functools.cache
def audio_set(workdir: Path) -> dict[str, Clip]:
    clicks = np.zeros(16000 * 3, dtype=np.float32)
    clicks[::4000] = 0.9  # a sharp click every 250 ms
    return {
        "capital": piper_clip("What is the capital of France?"),
        "weather": espeak_clip("How is the weather today in London?", workdir, "weather"),
        "story": piper_clip("Please tell me a long story about a brave little dragon."),
        "long": espeak_clip(
            "I would like to book a table for four people tomorrow evening at seven, "
            "and could you also tell me whether you have vegetarian dishes?",
            workdir,
            "long",
        ),
        "paused": join(piper_clip("What is the capital"), silence(0.6), piper_clip("of Germany?")),
        "noise": sox_clip(workdir, "noise", "synth", "3", "whitenoise", "vol", "0.3"),
        "pink": sox_clip(workdir, "pink", "synth", "3", "pinknoise", "vol", "0.5"),
        "music": sox_clip(workdir, "music", *MUSIC),
        "clicks": Clip(clicks, 16000),
        "silence": silence(3.0),
    }


def fast_config(**overrides: object) -> CallConfig:
    """A call config for tests: no playback pacing unless asked, deterministic replies."""
    base = CallConfig(
        voice=default_voice(),
        instructions="You are a helpful assistant.",
        playback_lead_ms=100_000,
        turns=TurnSettings(end_of_turn_ms=500),
    )
    base = replace(base, llm=replace(base.llm, temperature=0.0, max_tokens=40))
    return replace(base, **overrides)  # type: ignore[arg-type]


async def feed(
    call: VoiceCall, samples: np.ndarray, rate: int, *, realtime: bool, chunk_ms: int = 20
) -> None:
    """Push audio in transport-sized chunks, paced like a live microphone when `realtime`."""
    step = rate * chunk_ms // 1000
    started = time.monotonic()
    for i in range(0, len(samples), step):
        call.push_samples(samples[i : i + step], rate)
        if realtime:
            await asyncio.sleep(max(0.0, started + (i + step) / rate - time.monotonic()))
        else:
            await asyncio.sleep(0)


async def collect_until(
    call: VoiceCall, stop: Callable[[Frame], bool], timeout_s: float = 30.0
) -> list[Frame]:
    frames: list[Frame] = []
    async with asyncio.timeout(timeout_s):
        async for frame in call.frames():
            frames.append(frame)
            if stop(frame):
                break
    return frames


def words(text: str) -> set[str]:
    return {w.strip(".,?!'\"").lower() for w in text.split()}


@pytest.fixture
async def new_call(
    models: LocalInference, vad_model: SileroModel
) -> AsyncIterator[Callable[..., VoiceCall]]:
    calls: list[VoiceCall] = []

    def make(config: CallConfig | None = None, **overrides: object) -> VoiceCall:
        call = VoiceCall(config or fast_config(**overrides), models, vad_model)
        calls.append(call)
        return call

    yield make
    for call in calls:
        await call.close()


@pytest.fixture
async def task_owner() -> AsyncIterator[TaskOwner]:
    """The owner of the engine tasks a test starts, as a call's; cancelled after the test."""
    owner = TaskOwner("test")
    yield owner
    await owner.cancel_all(5.0)


async def wait_until(predicate: Callable[[], bool], timeout_s: float) -> bool:
    """Poll `predicate` every 10 ms; True as soon as it holds, False after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


@pytest.fixture(scope="session")
def executor() -> Iterator[ThreadPoolExecutor]:
    pool = ThreadPoolExecutor(max_workers=4)
    yield pool
    pool.shutdown(wait=False, cancel_futures=True)


def prompt_tokens(llama: Llama, messages: list[Message]) -> int:
    """The tokens of `messages` under the model's own chat template, as llama.cpp reads them."""
    formatter = Jinja2ChatFormatter(
        template=llama.metadata["tokenizer.chat_template"],
        eos_token=llama.detokenize([llama.token_eos()]).decode(),
        bos_token=llama.detokenize([llama.token_bos()]).decode(),
    )
    prompt = formatter(messages=messages)  # type: ignore[arg-type]
    return len(
        llama.tokenize(prompt.prompt.encode(), add_bos=not prompt.added_special, special=True)
    )
