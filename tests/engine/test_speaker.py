"""Reply speech with the real TTS: clauses in order, audio released paced against real time."""

import asyncio
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soxr

from tests.support.inference import RecordingInference
from voiceapp.engine.audio import pcm16_to_float
from voiceapp.engine.frames import ErrorFrame, Frame, ResponseDone, TextClause, TTSAudio
from voiceapp.engine.inference import Inference, InferenceError, LocalInference
from voiceapp.engine.models import default_voice
from voiceapp.engine.response import Response
from voiceapp.engine.speaker import ClauseAudio, ReplySpeaker, SpeakerSettings, Speech
from voiceapp.engine.tasks import TaskOwner
from voiceapp.engine.tracing import TurnTrace
from voiceapp.engine.tts import VoiceSpec

RATE = 24000
CHUNK_MS = 40
PIECE = CHUNK_MS * RATE // 1000  # samples in a released piece
SLACK_MS = 5.0  # the event loop's timer resolution, and the time from a check to the send
LONG = "The library is open from nine in the morning until six in the evening, every day."


class Output:
    """The frames a response and its speaker release, each with the time it went out."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self.times: list[float] = []
        self._changed = asyncio.Event()

    def __call__(self, frame: Frame) -> None:
        self.frames.append(frame)
        self.times.append(time.monotonic())
        self._changed.set()

    def audio(self) -> list[tuple[float, TTSAudio]]:
        pairs = zip(self.times, self.frames, strict=True)
        return [(t, f) for t, f in pairs if isinstance(f, TTSAudio)]

    async def wait_for_audio(self, pieces: int, timeout_s: float = 30.0) -> None:
        async with asyncio.timeout(timeout_s):
            while len(self.audio()) < pieces:
                self._changed.clear()
                await self._changed.wait()


def samples(frame: TTSAudio) -> int:
    return len(frame.pcm) // 2


def first_sound(audio: np.ndarray) -> int:
    """The index of the first sample over -50 dBFS."""
    return int(np.flatnonzero(np.abs(audio) > 0.003)[0])


@dataclass
class Spoken:
    out: Output
    speaker: ReplySpeaker
    response: Response
    speech: Speech
    failures: list[tuple[Response, InferenceError]]  # what the speaker had the call fail


def say_reply(
    models: Inference,
    owner: TaskOwner,
    clauses: list[str],
    *,
    lead_ms: int,
    voice: VoiceSpec | None = None,
    speculative: bool = False,
    speak: bool = True,
    background_ahead_ms: int = 2000,
) -> Spoken:
    """A new speaker releasing 40 ms pieces at 24 kHz, and a reply of `clauses` said into
    it (and ended), on its way out."""
    out = Output()
    failures: list[tuple[Response, InferenceError]] = []

    def fail(response: Response, exc: InferenceError) -> None:
        failures.append((response, exc))
        response.fail(exc)

    settings = SpeakerSettings(
        voice or default_voice(),
        sample_rate=RATE,
        chunk_ms=CHUNK_MS,
        lead_ms=lead_ms,
        background_ahead_ms=background_ahead_ms,
    )
    speaker = ReplySpeaker(settings, models, out, owner, fail=fail)
    response = Response(
        "resp_test", None, TurnTrace(), out, speculative=speculative, speak=speak, sample_rate=RATE
    )
    speech = speaker.start(response)
    for clause in clauses:
        speech.say(clause)
    speech.end()
    return Spoken(out, speaker, response, speech, failures)


async def test_audio_goes_out_in_pieces_no_further_ahead_of_real_time_than_the_lead(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a speaker that releases 40 ms pieces at most 200 ms ahead of real time
    # when a reply of two clauses is spoken
    spoken = say_reply(models, task_owner, ["Hello there.", LONG], lead_ms=200)
    async with asyncio.timeout(60):
        await spoken.speech.finished()
    # then each clause's audio goes out in 40 ms pieces (its last one may be shorter)
    audio = spoken.out.audio()
    for index in (0, 1):
        sizes = [samples(f) for _, f in audio if f.clause_index == index]
        assert sizes and all(size == PIECE for size in sizes[:-1])
        assert 0 < sizes[-1] <= PIECE
    assert {f.sample_rate for _, f in audio} == {RATE}
    # and no piece went out while more than 200 ms was ahead of real time
    first_at = audio[0][0]
    sent = 0
    for at, frame in audio:
        ahead_ms = 1000.0 * sent / RATE - 1000.0 * (at - first_at)
        assert ahead_ms <= 200 + SLACK_MS
        sent += samples(frame)
    # and the reply took real time: all but the lead (and a piece) was paced
    total_ms = 1000.0 * sent / RATE
    assert total_ms > 2000
    assert 1000.0 * (audio[-1][0] - first_at) >= total_ms - 200 - CHUNK_MS - SLACK_MS
    assert spoken.response.sent_samples == sent


async def test_clauses_are_spoken_in_order_each_with_its_own_audio(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a speaker that does not hold audio back (a lead longer than the reply)
    # when three clauses are said, a long one between two short ones
    clauses = ["Yes.", LONG, "Goodbye."]
    spoken = say_reply(models, task_owner, clauses, lead_ms=100_000)
    async with asyncio.timeout(60):
        await spoken.speech.finished()
    # then each clause is announced in order before its audio, and the audio follows in order
    frames = spoken.out.frames
    announced = [f for f in frames if isinstance(f, TextClause)]
    assert [(f.text, f.index) for f in announced] == [(c, i) for i, c in enumerate(clauses)]
    audio = spoken.out.audio()
    indexes = [f.clause_index for _, f in audio]
    assert indexes == sorted(indexes) and set(indexes) == {0, 1, 2}
    for i in range(3):
        first_audio = next(n for n, f in enumerate(frames) if getattr(f, "clause_index", -1) == i)
        assert frames.index(announced[i]) < first_audio
    # and each clause's audio is its own: all of it released, the long clause the longest
    response = spoken.response
    assert [text for text, _ in response.clauses] == clauses
    made = [count for _, count in response.clauses]
    released = [sum(samples(f) for _, f in audio if f.clause_index == i) for i in range(3)]
    assert released == made
    assert made[1] > 2 * max(made[0], made[2])


async def test_a_reply_starts_with_its_first_sound_not_the_voices_leading_silence(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a clause that Piper starts with tens of milliseconds of silence
    clause = "Our office opens at nine."
    voice = default_voice()
    made = np.concatenate(list(models.tts.synthesize(clause, voice, threading.Event())))
    lead_in_ms = 1000.0 * first_sound(made) / models.tts.sample_rate(voice)
    assert lead_in_ms > 30
    # when it is the first clause of a reply, and again the second
    spoken = say_reply(models, task_owner, [clause, clause], lead_ms=100_000)
    async with asyncio.timeout(60):
        await spoken.speech.finished()
    # then the reply's audio starts within 11 ms of its first sound, faded in from silence
    audio = spoken.out.audio()
    first = np.concatenate([pcm16_to_float(f.pcm) for _, f in audio if f.clause_index == 0])
    assert 1000.0 * first_sound(first) / RATE <= 11
    assert abs(first[0]) < 0.001
    # and the second clause keeps its lead-in: the pause between clauses is the voice's own
    second = np.concatenate([pcm16_to_float(f.pcm) for _, f in audio if f.clause_index == 1])
    assert 1000.0 * first_sound(second) / RATE > 30
    # (The two clauses' lengths are not compared: Piper's durations vary from one
    # synthesis of the same text to the next by more than the cut lead-in; CI saw
    # the first clause 396 samples longer than the second.)


async def test_a_paused_reply_releases_nothing_and_resumes_paced_from_what_was_heard(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a reply going out at most 100 ms ahead of real time
    spoken = say_reply(models, task_owner, [LONG], lead_ms=100)
    out, speaker, response = spoken.out, spoken.speaker, spoken.response
    await out.wait_for_audio(5)
    # when it is paused for 600 ms
    speaker.pause(response)
    held = len(out.audio())
    await asyncio.sleep(0.6)
    # then nothing more went out meanwhile
    assert len(out.audio()) == held
    # when it is resumed
    resumed_at = time.monotonic()
    speaker.resume(response)
    async with asyncio.timeout(60):
        await spoken.speech.finished()
    # then the rest is paced from the resume, as if it had not stopped: the pause
    # earned no burst of audio beyond the lead
    after = out.audio()[held:]
    assert after and after[0][0] >= resumed_at
    sent = 0
    for at, frame in after:
        assert 1000.0 * sent / RATE - 1000.0 * (at - resumed_at) <= 100 + SLACK_MS
        sent += samples(frame)
    # and all of the clause went out once
    assert sum(samples(f) for _, f in out.audio()) == response.clauses[0][1] > 0


async def test_a_speculative_reply_is_synthesized_but_held_until_committed(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a speculative response (the caller may still go on talking)
    # when its clause is said and synthesized
    spoken = say_reply(models, task_owner, ["We open at nine."], lead_ms=100_000, speculative=True)
    out, response = spoken.out, spoken.response
    async with asyncio.timeout(30):
        await spoken.speech.synthesized()
    await asyncio.sleep(0.1)
    # then its audio is made but nothing goes out: not the clause, not its audio
    assert response.clauses[0][1] > 0 and not response.audio.empty()
    assert out.frames == [] and spoken.speaker.last_spoken is None
    # when it is committed
    response.commit()
    async with asyncio.timeout(30):
        await spoken.speech.finished()
    # then the clause and then all its audio go out, and it is the reply last spoken
    assert isinstance(out.frames[0], TextClause)
    assert sum(samples(f) for _, f in out.audio()) == response.clauses[0][1]
    assert spoken.speaker.last_spoken is response


async def test_a_cancelled_reply_stops_going_out_and_its_tasks_end(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a reply going out at real-time pace
    spoken = say_reply(models, task_owner, [LONG, LONG], lead_ms=100)
    await spoken.out.wait_for_audio(3)
    assert len(task_owner) == 2  # its synthesis and its playout, owned by the call's owner
    # when the response is cancelled (a barge-in, response.cancel)
    spoken.response.cancel(interrupted=True)
    sent = len(spoken.out.audio())
    await asyncio.sleep(0.5)
    # then no more audio goes out, and synthesis and playout have ended
    assert len(spoken.out.audio()) == sent
    assert len(task_owner) == 0


async def test_a_text_only_reply_announces_its_clauses_without_audio(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a response that is read, not heard
    # when two clauses are said
    clauses = ["We open at nine.", "We close at six."]
    spoken = say_reply(models, task_owner, clauses, lead_ms=100, speak=False)
    async with asyncio.timeout(10):
        await spoken.speech.finished()
    # then both are announced in order, with no audio
    announced = [(f.text, f.index) for f in spoken.out.frames if isinstance(f, TextClause)]
    assert announced == [(clauses[0], 0), (clauses[1], 1)]
    assert spoken.out.audio() == []
    assert spoken.response.clauses == [(clauses[0], 0), (clauses[1], 0)]


async def test_a_voice_that_cannot_be_loaded_fails_the_response(
    models: LocalInference, task_owner: TaskOwner, tmp_path: Path
) -> None:
    # given a speaker whose voice model does not exist
    voice = VoiceSpec("missing", str(tmp_path / "missing.onnx"))
    # when a clause is said
    spoken = say_reply(models, task_owner, ["We open at nine."], lead_ms=100, voice=voice)
    async with asyncio.timeout(30):
        while task_owner.pending():
            await asyncio.wait(task_owner.pending())
    # then the response is failed with the TTS's error, and no audio went out
    failures = [(r, "missing.onnx" in str(exc)) for r, exc in spoken.failures]
    assert failures == [(spoken.response, True)]
    assert spoken.out.audio() == []
    assert [type(f) for f in spoken.out.frames] == [TextClause, ErrorFrame, ResponseDone]


async def test_a_clause_with_two_seconds_of_the_reply_made_ahead_is_made_in_the_background(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given a reply of a short clause and then longer ones, made before it is committed
    # (nothing heard yet, so all the audio made is still ahead of the next clause)
    clauses = ["Hello there.", LONG, "On Sundays we open at ten.", "Goodbye."]
    for ahead_ms, expected in ((2000, [False, False, True, True]), (0, [False] * 4)):
        recording = RecordingInference(models)
        # when it is spoken by a speaker that makes a clause in the background once
        # `ahead_ms` of audio is made ahead of it (0: never)
        spoken = say_reply(
            recording,
            task_owner,
            clauses,
            lead_ms=300,
            speculative=True,
            background_ahead_ms=ahead_ms,
        )
        async with asyncio.timeout(60):
            await spoken.speech.synthesized()
        # then the first clause and the one after "Hello there." (about 0.7 s ahead)
        # are urgent, and the ones behind the long clause go in the background
        assert recording.synthesized == list(zip(clauses, expected, strict=True))
        # and every clause was made, background or not
        assert [made > 0 for _, made in spoken.response.clauses] == [True] * 4


def test_a_clause_made_in_pieces_goes_out_as_one_signal_in_whole_pieces() -> None:
    # given a clause's audio (a tone after 50 ms of quiet) made in three uneven pieces
    rate_in, step = 22050, PIECE
    t = np.arange(int(1.3 * rate_in)) / rate_in
    made = (0.5 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    made[: int(0.05 * rate_in)] = 0.0
    pieces = [made[:8192], made[8192 : 8192 + 300], made[8192 + 300 :]]
    expected = soxr.resample(made, rate_in, RATE, quality="HQ")
    # when they go out as the first clause of a reply, and as a later one
    for trim in (True, False):
        audio = ClauseAudio(rate_in, RATE, step, trim=trim)
        out = [audio.push(p) for p in pieces] + [audio.end()]
        # then every piece handed on but the last is whole 40 ms pieces
        assert all(len(o) % step == 0 for o in out[:-1])
        assert 0 < len(out[-1])
        joined = np.concatenate(out)
        assert audio.total == len(joined)
        if trim:
            # the lead-in is cut to 10 ms, and the rest is the tone resampled as one signal
            lead = first_sound(expected) - int(0.010 * RATE)
            assert len(joined) == len(expected) - lead
            assert (
                np.abs(joined[int(0.010 * RATE) :] - expected[lead + int(0.010 * RATE) :]).max()
                < 1e-5
            )
        else:
            assert len(joined) == len(expected)
            assert np.abs(joined - expected).max() < 1e-5
