"""The client's bounds: no worker, a dead worker, a hung worker."""

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Callable

import pytest
from channels.layers import InMemoryChannelLayer
from channels_redis.core import RedisChannelLayer

from tests.support.clips import Clip, words
from voiceapp.engine.inference import AudioChunk, InferenceError, collect
from voiceapp.engine.llm import LLMOptions
from voiceapp.engine.models import default_voice
from voiceapp.inference.client import ChannelsInference, ChannelStream, ClientSettings
from voiceapp.inference.protocol import CHANNELS, WORKER_CHANNEL_PREFIX
from voiceapp.inference.worker import InferenceWorker

StartProcess = Callable[[], subprocess.Popen[bytes]]
LONG_TEXT = " ".join(f"Here is sentence number {n} of a long reading." for n in range(30))


async def test_no_worker_fails_within_the_accept_bound(client: ChannelsInference) -> None:
    # given no worker on the layer (accept timeout 1 s, one retry)
    started = time.monotonic()
    # when a request is made
    with pytest.raises(InferenceError) as error:
        await collect(client.synthesize("Hello.", default_voice()))
    # then it fails with a clear code after the bound, not never
    assert error.value.code == "no_worker"
    assert 1.9 <= time.monotonic() - started < 3.0


async def test_killed_worker_fails_the_request_within_the_liveness_bound(
    worker_process: StartProcess, client: ChannelsInference
) -> None:
    # given a worker process streaming a long reading
    proc = worker_process()
    stream = client.synthesize(LONG_TEXT, default_voice())
    await stream.__anext__()
    # when the process is killed mid-request
    proc.kill()
    killed = time.monotonic()
    # then the caller gets a clear error within the liveness bound (0.6 s) plus slack
    with pytest.raises(InferenceError) as error:
        await collect(stream)
    assert error.value.code == "worker_lost"
    assert time.monotonic() - killed < 1.5


async def test_a_request_past_its_deadline_is_a_timeout_not_a_lost_worker(
    worker_process: StartProcess, make_layer: Callable[[], RedisChannelLayer]
) -> None:
    # given a client whose request deadline (2 s) comes before its liveness bound (5 s)
    client = ChannelsInference(
        make_layer(),
        ClientSettings(accept_timeout_s=1.0, liveness_timeout_s=5.0, request_timeout_s=2.0),
    )
    proc = worker_process()
    try:
        stream = client.synthesize(LONG_TEXT, default_voice())
        await stream.__anext__()
        # when the worker goes silent mid-request
        os.kill(proc.pid, signal.SIGSTOP)
        with pytest.raises(InferenceError) as error:
            await collect(stream)
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        await client.close()
    # then the error names the request's own deadline, not a heartbeat it never waited for
    assert error.value.code == "timeout"
    assert "timed out after 2.0 s" in str(error.value)


async def test_hung_worker_fails_over_to_a_healthy_one(
    worker_process: StartProcess,
    client: ChannelsInference,
    start_worker: Callable[..., object],
    clips: dict[str, Clip],
) -> None:
    # given a worker process that hangs (SIGSTOP) while it waits for requests
    proc = worker_process()
    await asyncio.sleep(0.2)
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        # when a request is sent (the hung worker's blocked read takes it), then a healthy
        # worker starts
        started = time.monotonic()
        request = asyncio.create_task(client.transcribe(clips["capital"].at(16000), "en"))
        await asyncio.sleep(0.3)
        healthy = await start_worker()
        transcript = await request
        elapsed = time.monotonic() - started
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    # then the request was retried after the accept bound and served by the healthy worker
    assert {"capital", "france"} <= words(transcript.text)
    assert isinstance(healthy, InferenceWorker) and healthy.served["asr"] == 1
    assert 0.9 <= elapsed < 3.0


async def test_a_late_accept_of_an_abandoned_attempt_is_cancelled(
    make_layer: Callable[[], RedisChannelLayer], client: ChannelsInference
) -> None:
    # given a worker that takes a request but only accepts it after the caller gave up
    worker = make_layer()
    request = asyncio.create_task(collect(client.synthesize("Hello.", default_voice())))
    first = await worker.receive(CHANNELS["tts"])
    retry = await asyncio.wait_for(worker.receive(CHANNELS["tts"]), 3.0)
    assert retry["reply_channel"] == first["reply_channel"]
    assert retry["request_id"] != first["request_id"]
    late = f"{WORKER_CHANNEL_PREFIX}.late"
    reply = first["reply_channel"]
    await worker.send(reply, accepted(first["request_id"], late))
    # when the retry is served by another worker
    other = f"{WORKER_CHANNEL_PREFIX}.other"
    await worker.send(reply, accepted(retry["request_id"], other))
    await worker.send(reply, {"type": "inference.done", "request_id": retry["request_id"]})
    # then the caller finishes with the retry and tells the late worker to cancel
    assert await asyncio.wait_for(request, 3.0) == []
    cancel = await asyncio.wait_for(worker.receive(late), 3.0)
    assert cancel == {"type": "inference.cancel", "request_id": first["request_id"]}


def accepted(request_id: str, worker: str) -> dict[str, str]:
    return {"type": "inference.accepted", "request_id": request_id, "worker": worker}


async def test_a_request_closed_before_it_was_accepted_is_cancelled_when_taken(
    make_layer: Callable[[], RedisChannelLayer], client: ChannelsInference
) -> None:
    # given a request no worker has accepted yet
    worker = make_layer()
    stream = client.synthesize("Hello.", default_voice())
    waiting = asyncio.create_task(stream.__anext__())
    request = await worker.receive(CHANNELS["tts"])
    # when the caller gives up on it (a speculative reply cancelled) ...
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    await stream.aclose()
    # ... and a worker takes it just after
    late = f"{WORKER_CHANNEL_PREFIX}.late"
    await worker.send(request["reply_channel"], accepted(request["request_id"], late))
    # then that worker is told to cancel it
    cancel = await asyncio.wait_for(worker.receive(late), 3.0)
    assert cancel == {"type": "inference.cancel", "request_id": request["request_id"]}


async def test_a_request_handed_to_two_workers_is_kept_to_the_first(
    make_layer: Callable[[], RedisChannelLayer], client: ChannelsInference
) -> None:
    # given a request that two workers both took (a shared queue can hand a message
    # out twice)
    layer = make_layer()
    stream = client.generate(QUESTION, LLMOptions(max_tokens=8))
    first_token = asyncio.create_task(stream.__anext__())
    request = await layer.receive(CHANNELS["llm"])
    reply, request_id = request["reply_channel"], request["request_id"]
    one, two = f"{WORKER_CHANNEL_PREFIX}.one", f"{WORKER_CHANNEL_PREFIX}.two"

    def token(worker: str, text: str) -> dict[str, str]:
        return {"type": "inference.token", "request_id": request_id, "worker": worker, "text": text}

    # when both answer, interleaved
    await layer.send(reply, accepted(request_id, one))
    await layer.send(reply, accepted(request_id, two))
    await layer.send(reply, token(two, "Wrong"))
    await layer.send(reply, token(one, "Paris"))
    await layer.send(reply, token(two, " twice"))
    await layer.send(reply, token(one, "."))
    await layer.send(reply, {"type": "inference.done", "request_id": request_id, "worker": one})
    # then the caller hears only the first worker, and the second is told to stop
    assert await asyncio.wait_for(first_token, 3.0) == "Paris"
    assert await collect(stream) == ["."]
    assert stream.worker == one
    cancel = await asyncio.wait_for(layer.receive(two), 3.0)
    assert cancel == {"type": "inference.cancel", "request_id": request_id}


QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def garbled_audio(request_id: str, worker: str) -> dict[str, object]:
    return {
        "type": "inference.audio",
        "request_id": request_id,
        "worker": worker,
        "pcm": "noise",
        "sample_rate": 22050,
    }


def audio_without_rate(request_id: str, worker: str) -> dict[str, object]:
    return {"type": "inference.audio", "request_id": request_id, "worker": worker, "pcm": b""}


def token_for_speech(request_id: str, worker: str) -> dict[str, object]:
    return {"type": "inference.token", "request_id": request_id, "worker": worker, "text": "Hi"}


def unknown_reply(request_id: str, worker: str) -> dict[str, object]:
    return {"type": "inference.progress", "request_id": request_id, "worker": worker}


def audio_without_request(request_id: str, worker: str) -> dict[str, object]:
    return {"type": "inference.audio", "worker": worker, "pcm": b"", "sample_rate": 22050}


@pytest.mark.parametrize(
    ("garble", "named"),
    [
        (garbled_audio, "inference.audio: field 'pcm' must be bytes, not str"),
        (audio_without_rate, "inference.audio: field 'sample_rate' is missing"),
        (token_for_speech, "inference.token: field 'type' is not what this request is answered"),
        (unknown_reply, "reply: field 'type' must be one of"),
        (audio_without_request, "inference.audio: field 'request_id' is missing"),
    ],
)
async def test_a_malformed_reply_fails_the_request_and_stops_its_worker(
    make_layer: Callable[[], RedisChannelLayer],
    client: ChannelsInference,
    garble: Callable[[str, str], dict[str, object]],
    named: str,
) -> None:
    # given a speech request that a worker accepted
    worker = make_layer()
    stream = client.synthesize("Hello.", default_voice())
    first_chunk = asyncio.create_task(stream.__anext__())
    request = await worker.receive(CHANNELS["tts"])
    reply, request_id = request["reply_channel"], request["request_id"]
    garbler = f"{WORKER_CHANNEL_PREFIX}.garbler"
    await worker.send(reply, accepted(request_id, garbler))
    # when its reply cannot be read
    await worker.send(reply, garble(request_id, garbler))
    # then the request fails at once with a code of its own, saying what was wrong ...
    with pytest.raises(InferenceError) as error:
        await asyncio.wait_for(first_chunk, 3.0)
    assert error.value.code == "malformed_reply"
    assert named in str(error.value)
    # ... and the worker is told to stop
    cancel = await asyncio.wait_for(worker.receive(garbler), 3.0)
    assert cancel == {"type": "inference.cancel", "request_id": request_id}


def test_a_stream_closed_after_its_loop_ended_sends_nothing_and_raises_nothing() -> None:
    # given a request sent in a loop that ended before any worker answered it
    client = ChannelsInference(InMemoryChannelLayer(), ClientSettings(accept_timeout_s=5.0))

    async def send_and_leave() -> ChannelStream[AudioChunk]:
        stream = client.synthesize("Hello.", default_voice())
        waiting = asyncio.create_task(stream.__anext__())
        await asyncio.sleep(0.05)
        waiting.cancel()
        return stream

    stream = asyncio.run(send_and_leave())
    # when the stream is closed with no loop running (as a garbage collector would)
    closing = stream.aclose()
    # then the close ends at once, without reaching for a loop
    with pytest.raises(StopIteration):
        closing.send(None)
    assert not client.readers
