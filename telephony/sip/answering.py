"""Who picked up an outbound call: a person, a voicemail greeting, or a
call-screening assistant; and, for voicemail, when the beep has gone.

`AnsweringDetector` reads the callee's first seconds (8 kHz PCM16, as RTP
brings them) with Silero VAD:

- a short utterance ("Hello?", "Sam speaking") followed by `SILENCE_AFTER_S` of
  quiet: a **person**, waiting for us to speak;
- nothing said within `NO_SPEECH_S`: **silence** (treated as a person: the
  agent speaks first);
- speech still going after `LONG_SPEECH_S`: the audio so far is transcribed and
  its words decide: a screening prompt ("state your name", "screening", ...),
  an automated menu (**ivr**: "press 1", "dial the extension", unless it asks
  for a message after the tone), a voicemail greeting ("leave a message", "not
  available", "after the tone", ...), or a person answering for a business
  ("how can I help"). Without such words they are read again every
  `LOOK_AGAIN_S` of speech up to `MONOLOGUE_S` ("Thank you for calling Acme."
  is how menus and greetings both begin); still none, speech that runs on is a
  **voicemail** greeting, one that stops is a **person**.

A beep heard while deciding (a short greeting such as "It's Dave, leave a
message." then the tone) makes it a voicemail there and then, the beep already
gone. Otherwise `BeepDetector` waits for the greeting's beep: a steady tone (one
spectral peak between 300 and 3,000 Hz holding most of the energy) for at least
160 ms, or, for greetings without one, `QUIET_AFTER_GREETING_S` of silence."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np

from voiceapp.engine.audio import StreamResampler, pcm16_to_float
from voiceapp.engine.vad import SileroModel, StreamingVAD

RATE = 8000
CHUNK_S = 0.032  # the VAD's chunk at 16 kHz
VOICED = 0.5
SILENCE_AFTER_S = 0.8
HUMAN_MAX_SPEECH_S = 2.0
LONG_SPEECH_S = 2.2
MONOLOGUE_S = 3.4
LOOK_AGAIN_S = 0.5  # words not decisive yet: read them again after this much more speech
NO_SPEECH_S = 4.0
QUIET_AFTER_GREETING_S = 2.0

SCREENING = re.compile(
    r"screen|state your name|say your name|record your name|who is calling|who's calling|"
    r"reason for (your|the) call|why you('re| are) calling|what you('re| are) calling about|"
    r"what this call is about"
)
VOICEMAIL = re.compile(
    r"leave (a|your|me a) (brief |short )?message|after the (tone|beep)|at the (tone|beep)|"
    r"not available|unavailable|can('| ?no)t (take|answer|come)|voice ?mail|mailbox|"
    r"record your message|you('ve| have) reached|get back to you|away from"
)
PERSON = re.compile(r"how (can|may) i help|speaking|what can i do for you|this is \w+ speaking")
MENU = re.compile(
    r"\b(press|dial)\s+(the\s+)?([0-9*#]|zero|one|two|three|four|five|six|seven|eight|nine|"
    r"star|pound|hash)\b|\bmenu\b|\bextension\b"
)
LEAVE_MESSAGE = re.compile(
    r"leave (a|your|me a) (brief |short )?message|after the (tone|beep)|at the (tone|beep)|"
    r"voice ?mail|mailbox"
)


@dataclass(frozen=True)
class Answer:
    kind: str  # "human", "voicemail", "screening", "ivr", "silence"
    at_s: float  # when it was decided, from the answer
    transcript: str = ""
    speech_s: float = 0.0
    beep_heard: bool = False  # a voicemail whose beep has already gone: speak now


def kind_of(transcript: str, *, still_talking: bool) -> str:
    text = transcript.lower()
    if SCREENING.search(text):
        return "screening"
    if MENU.search(text) and not LEAVE_MESSAGE.search(text):
        return "ivr"
    if VOICEMAIL.search(text):
        return "voicemail"
    if PERSON.search(text):
        return "human"
    return "voicemail" if still_talking else "human"


def decisive(transcript: str) -> bool:
    """Whether the words alone tell who answered."""
    text = transcript.lower()
    return any(p.search(text) for p in (SCREENING, MENU, VOICEMAIL, PERSON))


class AnsweringDetector:
    def __init__(
        self, vad: SileroModel, transcribe: Callable[[np.ndarray], Awaitable[str]]
    ) -> None:
        self._vad = StreamingVAD(vad)
        self._resampler = StreamResampler(RATE, 16000)
        self._transcribe = transcribe
        self._audio: list[np.ndarray] = []  # 16 kHz
        self.t = 0.0
        self.first_voice: float | None = None
        self.last_voice: float | None = None
        self._look_at_speech_s = LONG_SPEECH_S  # when the words are read (again)
        self._tones = ToneTracker()  # a beep while we listen: a short voicemail greeting

    def push(self, pcm: bytes) -> None:
        narrow = pcm16_to_float(pcm)
        self._tones.push(narrow)
        samples = self._resampler.process(narrow)
        self._audio.append(samples)
        for probability in self._vad.process(samples):
            self.t += CHUNK_S
            if probability >= VOICED:
                if self.first_voice is None:
                    self.first_voice = self.t - CHUNK_S
                self.last_voice = self.t

    def _heard(self) -> np.ndarray:
        return np.concatenate(self._audio) if self._audio else np.zeros(0, np.float32)

    async def step(self) -> Answer | None:
        """The answer once the audio pushed so far decides it, else None."""
        if self._tones.beep_at is not None:  # "It's Dave, leave a message." and its beep
            return Answer("voicemail", self.t, beep_heard=True)
        if self._tones.in_tone:
            return None  # wait for its end: a beep is not a person's pause
        if self.first_voice is None:
            return Answer("silence", self.t) if self.t >= NO_SPEECH_S else None
        assert self.last_voice is not None
        speech = self.last_voice - self.first_voice
        quiet = self.t - self.last_voice
        if quiet >= SILENCE_AFTER_S and speech < HUMAN_MAX_SPEECH_S:
            return Answer("human", self.t, speech_s=speech)
        talking = quiet < SILENCE_AFTER_S
        if speech >= self._look_at_speech_s and (talking or speech >= MONOLOGUE_S):
            text = (await self._transcribe(self._heard())).strip()
            still = self.last_voice - self.first_voice
            on = (self.t - self.last_voice) < SILENCE_AFTER_S
            if on and still < MONOLOGUE_S and not decisive(text):
                # hear more before it is called voicemail
                self._look_at_speech_s = min(still + LOOK_AGAIN_S, MONOLOGUE_S)
                return None
            return Answer(
                kind_of(text, still_talking=on or still >= MONOLOGUE_S),
                self.t,
                text,
                still,
            )
        if quiet >= SILENCE_AFTER_S:  # a longer utterance that stopped: a person
            return Answer("human", self.t, speech_s=speech)
        return None


class ToneTracker:
    """A steady tone in 8 kHz audio (one spectral peak between 300 and 3,000 Hz
    holding most of a 20 ms frame's energy, for at least 160 ms): `beep_at` is
    set as such a tone ends, the moment to speak after it."""

    FRAME = 160  # 20 ms at 8 kHz
    MIN_TONE_FRAMES = 8

    def __init__(self) -> None:
        self._pending = np.zeros(0, np.float32)
        self._tone_frames = 0
        self._tone_hz = 0.0
        self.t = 0.0
        self.beep_at: float | None = None

    @property
    def in_tone(self) -> bool:
        """A tone is sounding now (it may be a beep once it ends)."""
        return self._tone_frames > 0

    def push(self, samples: np.ndarray) -> None:
        self._pending = np.concatenate([self._pending, samples])
        while len(self._pending) >= self.FRAME:
            frame, self._pending = self._pending[: self.FRAME], self._pending[self.FRAME :]
            self.t += self.FRAME / RATE
            self._tone(frame)

    def _tone(self, frame: np.ndarray) -> None:
        if self.beep_at is not None:
            return
        energy = float(np.mean(frame**2))
        if energy < 1e-4:  # quieter than -40 dBFS: no beep
            self._end_of_tone()
            return
        spectrum = np.abs(np.fft.rfft(frame * np.hanning(len(frame)), 512)) ** 2
        freqs = np.fft.rfftfreq(512, 1 / RATE)
        peak = int(np.argmax(spectrum))
        share = float(spectrum[max(0, peak - 3) : peak + 4].sum() / (spectrum.sum() + 1e-12))
        hz = float(freqs[peak])
        tonal = 300 <= hz <= 3000 and share >= 0.6
        if tonal and (self._tone_frames == 0 or abs(hz - self._tone_hz) <= 40):
            self._tone_frames += 1
            self._tone_hz = hz
        else:
            self._end_of_tone()

    def _end_of_tone(self) -> None:
        """A tone long enough that just stopped is the beep: speak after it, not over it."""
        if self._tone_frames >= self.MIN_TONE_FRAMES:
            self.beep_at = self.t
        self._tone_frames = 0


class BeepDetector:
    """The end of a voicemail greeting: its beep, or a long enough silence."""

    def __init__(self, vad: SileroModel) -> None:
        self._vad = StreamingVAD(vad)
        self._resampler = StreamResampler(RATE, 16000)
        self._tones = ToneTracker()
        self._last_voice = 0.0
        self.quiet_at: float | None = None

    @property
    def t(self) -> float:
        return self._tones.t

    @property
    def beep_at(self) -> float | None:
        return self._tones.beep_at

    def push(self, pcm: bytes) -> bool:
        """Feed the callee's audio; True once the greeting is over (beep or quiet)."""
        samples = pcm16_to_float(pcm)
        for probability in self._vad.process(self._resampler.process(samples)):
            if probability >= VOICED:
                self._last_voice = self.t
        self._tones.push(samples)
        if self.beep_at is None and self.t - self._last_voice >= QUIET_AFTER_GREETING_S:
            self.quiet_at = self.t
        return self.beep_at is not None or self.quiet_at is not None
