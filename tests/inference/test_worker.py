"""Workers serving ASR, LLM and TTS over a real Redis channel layer."""

import asyncio
import copy
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from channels_redis.core import RedisChannelLayer

from tests.support.clips import Clip, words
from tests.support.engine_calls import wait_until
from tests.support.models import prompt_tokens
from voiceapp.engine.audio import resample
from voiceapp.engine.inference import InferenceError, LocalInference, collect
from voiceapp.engine.llm import LlamaLLM, LLMOptions
from voiceapp.engine.models import default_voice
from voiceapp.inference.client import ChannelsInference, ChannelStream, ClientSettings
from voiceapp.inference.protocol import (
    CHANNELS,
    REPLY_CHANNEL_PREFIX,
    encode_eou_payload,
    encode_request,
    encode_tts_payload,
)
from voiceapp.inference.worker import InferenceWorker

StartWorker = Callable[..., InferenceWorker]
QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]


async def test_asr_request_is_transcribed_by_a_worker(
    start_worker: StartWorker, client: ChannelsInference, clips: dict[str, Clip]
) -> None:
    # given a worker on the layer
    worker = await start_worker()
    # when a spoken question is sent for transcription
    transcript = await client.transcribe(clips["capital"].at(16000), "en")
    # then the worker answers with its words
    assert {"capital", "france"} <= words(transcript.text)
    assert worker.served["asr"] == 1
    # read once, and it says how long it waited before the worker's model started on it
    assert transcript.reads == 1
    assert transcript.queue_ms is not None and transcript.queue_ms > 0


async def test_a_turns_reading_starts_while_a_captions_is_being_read(
    start_worker: StartWorker, client: ChannelsInference, clips: dict[str, Clip]
) -> None:
    # given a worker whose Whisper has two replicas (one slot each)
    worker = await start_worker()
    assert worker.advert().slots["asr"] == 2
    # when a long reading (a live caption) is in progress and a second one is sent
    caption = asyncio.create_task(client.transcribe(clips["long"].at(16000), "en"))
    assert await wait_until(lambda: worker.advert().busy["asr"] == 1, 10)
    turn = asyncio.create_task(client.transcribe(clips["capital"].at(16000), "en"))
    # then the worker takes the second at once instead of queueing it behind the first
    both = await wait_until(lambda: worker.advert().busy["asr"] == 2, 10)
    long, capital = await asyncio.gather(caption, turn)
    assert both
    # and each reading has its own words
    assert {"table", "vegetarian"} <= words(long.text), long
    assert {"capital", "france"} <= words(capital.text), capital


async def test_live_captions_have_their_own_queue_and_totals(
    start_worker: StartWorker, client: ChannelsInference, clips: dict[str, Clip]
) -> None:
    # given a worker
    worker = await start_worker()
    assert worker.advert().slots["caption"] == 1
    # when a live caption and then a turn's reading are transcribed
    caption = await client.transcribe(clips["capital"].at(16000), "en", partial=True)
    turn = await client.transcribe(clips["capital"].at(16000), "en")
    # then both are read alike, each as its own kind
    assert {"capital", "france"} <= words(caption.text) and caption.text == turn.text
    assert (worker.served["caption"], worker.served["asr"]) == (1, 1)
    # and the advert's running totals count each
    totals = worker.advert().totals
    assert totals["caption"]["requests"] == totals["asr"]["requests"] == 1
    assert totals["caption"]["audio_s"] == pytest.approx(totals["asr"]["audio_s"])
    assert totals["caption"]["service_s"] > 0 and totals["asr"]["service_s"] > 0
    assert "llm" not in totals  # nothing else was asked


async def test_a_turns_reading_is_not_queued_behind_other_calls_captions(
    start_worker: StartWorker,
    make_layer: Callable[[], RedisChannelLayer],
    clips: dict[str, Clip],
) -> None:
    # given a worker reading one caption, with four more captions waiting behind it
    # (for up to four readings: on a busy 2-core machine one took over a second, the
    # call loop's 1 s to be accepted)
    worker = await start_worker()
    client = ChannelsInference(make_layer(), ClientSettings(accept_timeout_s=10.0))
    long = clips["long"].at(16000)
    captions = [asyncio.create_task(client.transcribe(long, "en", partial=True)) for _ in range(5)]
    try:
        assert await wait_until(lambda: worker.advert().busy["caption"] == 1, 10)
        # when a turn ends and its reading is sent
        turn = await client.transcribe(clips["capital"].at(16000), "en")
        # then it was read before the captions sent ahead of it were done
        assert {"capital", "france"} <= words(turn.text)
        assert worker.served["caption"] < 5, worker.served
        for caption in await asyncio.gather(*captions):
            assert {"table", "vegetarian"} <= words(caption.text), caption
    finally:
        for task in captions:
            task.cancel()
        await asyncio.gather(*captions, return_exceptions=True)
        await client.close()


async def test_end_of_turn_scores_come_back_from_a_worker(
    start_worker: StartWorker, client: ChannelsInference, models: LocalInference
) -> None:
    # given a worker on the layer
    worker = await start_worker()
    # when a finished and an unfinished transcript are scored
    finished = await client.end_of_turn("What is the capital of France?", "")
    unfinished = await client.end_of_turn("I would like to order.", "")
    # then the finished one is likelier to end the turn, by the worker's model,
    # and the worker's answer is the in-process score
    assert 0.0 <= unfinished < finished <= 1.0
    assert worker.served["eou"] == 2
    assert finished == await models.end_of_turn("What is the capital of France?", "")


async def test_llm_tokens_stream_back_with_queue_time(
    start_worker: StartWorker, client: ChannelsInference
) -> None:
    await start_worker()
    stream = client.generate(QUESTION, LLMOptions(max_tokens=24, temperature=0.0))
    tokens = await collect(stream)
    assert len(tokens) > 2
    assert "paris" in "".join(tokens).lower()
    assert stream.queue_ms is not None and stream.queue_ms >= 0
    assert stream.worker is not None


async def test_an_llm_reply_reports_its_prompt_tokens_from_the_worker(
    start_worker: StartWorker, client: ChannelsInference, models: LocalInference
) -> None:
    # given a worker with the embedded model
    await start_worker()
    assert isinstance(models.llm, LlamaLLM)
    expected = prompt_tokens(models.llm._contexts[0].llama, QUESTION)
    # when a reply streams back over the layer
    stream = client.generate(QUESTION, LLMOptions(max_tokens=8, temperature=0.0))
    assert await collect(stream)
    # then the worker's count of the prompt came with it
    assert stream.usage.input_tokens == expected > 0
    # and a reply closed after its first token still knows its prompt
    cut = client.generate(QUESTION, LLMOptions(max_tokens=200, temperature=0.7))
    await cut.__anext__()
    await cut.aclose()
    assert cut.usage.input_tokens == expected


async def test_tts_audio_streams_back_and_is_speech(
    start_worker: StartWorker, client: ChannelsInference, models: LocalInference
) -> None:
    await start_worker()
    chunks = await collect(client.synthesize("Our office opens at nine.", default_voice()))
    assert chunks and all(c.sample_rate == 22050 for c in chunks)
    audio = np.concatenate([c.samples for c in chunks])
    heard = models.asr.transcribe(resample(audio, 22050, 16000), "en")
    assert "office" in words(heard.text)


async def test_a_background_clause_is_made_by_the_workers_background_lane(
    start_worker: StartWorker, client: ChannelsInference, models: LocalInference
) -> None:
    # given a worker whose models have a background lane for later clauses
    assert models.background is not None
    worker = await start_worker()
    # then it takes as many clauses at once as both lanes hold
    assert worker.slots["tts"] == models.tts_slots == 4
    # and a clause sent as background comes back as speech, like any other
    stream = client.synthesize("Our office is closed on Sunday.", default_voice(), background=True)
    audio = np.concatenate([c.samples for c in await collect(stream)])
    heard = models.asr.transcribe(resample(audio, 22050, 16000), "en")
    assert {"office", "sunday"} <= words(heard.text)


async def test_cancel_stops_the_generation_in_the_worker(
    start_worker: StartWorker, client: ChannelsInference, models: LocalInference
) -> None:
    # given a long reply streaming from a worker
    await start_worker()
    stream = client.generate(
        [{"role": "user", "content": "Write a long story about the sea."}],
        LLMOptions(max_tokens=300, temperature=0.7),
    )
    await stream.__anext__()
    # when the caller closes the stream
    await stream.aclose()
    # then the worker's model stops generating within a fraction of a second
    assert isinstance(models.llm, LlamaLLM)
    assert await wait_until(lambda: models.llm.busy() == 0, 0.5)  # type: ignore[attr-defined]


async def test_cancel_stops_the_model_even_if_the_handlers_cancellation_is_lost(
    start_worker: StartWorker, client: ChannelsInference, models: LocalInference
) -> None:
    # given a long reply streaming from a worker whose request handlers a cancel cannot
    # reach (as when a cancellation is lost in the channel layer's send)
    worker = await start_worker()

    class Unreachable(dict[str, asyncio.Task[None]]):
        def get(self, key: str, default: Any = None) -> Any:
            return default

    worker._handlers = Unreachable()
    stream = client.generate(
        [{"role": "user", "content": "Write a long story about the sea."}],
        LLMOptions(max_tokens=300, temperature=0.7),
    )
    await stream.__anext__()
    assert isinstance(models.llm, LlamaLLM)
    assert models.llm.busy() == 1
    # when the caller closes the stream
    await stream.aclose()
    # then the worker's model stops at its next token all the same
    assert await wait_until(lambda: models.llm.busy() == 0, 0.5)
    assert await wait_until(lambda: worker.advert().busy["llm"] == 0, 2)


async def test_two_workers_share_the_requests(
    start_worker: StartWorker, make_layer: Callable[[], RedisChannelLayer]
) -> None:
    # given two workers that synthesize one clause at a time each, and a caller that
    # waits long enough for a queued request to be taken (no failover in this test)
    first = await start_worker(slots={"tts": 1})
    second = await start_worker(slots={"tts": 1})
    client = ChannelsInference(make_layer(), ClientSettings(accept_timeout_s=5.0))
    # when eight clauses are requested at once
    texts = [f"This is sentence number {n}." for n in range(8)]
    streams = [client.synthesize(t, default_voice()) for t in texts]
    try:
        results = await asyncio.gather(*(collect(s) for s in streams))
    finally:
        await client.close()
    # then all are answered and both workers took some
    assert all(results)
    assert first.served["tts"] + second.served["tts"] == 8
    assert first.served["tts"] >= 1 and second.served["tts"] >= 1
    assert {s.worker for s in streams} == {first.channel, second.channel}


async def test_a_calls_llm_turns_go_back_to_its_worker(
    start_worker: StartWorker, client: ChannelsInference
) -> None:
    # given two idle LLM workers, either of which could take any request
    first = await start_worker(kinds=("llm",))
    second = await start_worker(kinds=("llm",))
    options = LLMOptions(max_tokens=4, temperature=0.0, session="call-affinity")
    # when one call asks for four turns
    served = []
    for _ in range(4):
        stream = client.generate(QUESTION, options)
        assert await collect(stream)
        served.append(stream.worker)
    # then every turn after the first went to the worker holding the call's context
    assert served[0] in {first.channel, second.channel}
    assert served == [served[0]] * 4
    assert client.llm_worker_of("call-affinity") == served[0]


async def test_a_call_whose_worker_is_gone_moves_to_another(
    start_worker: StartWorker, client: ChannelsInference
) -> None:
    # given a call served by a worker that then stops
    first = await start_worker(kinds=("llm",))
    options = LLMOptions(max_tokens=4, temperature=0.0, session="call-moving")
    stream = client.generate(QUESTION, options)
    assert await collect(stream)
    assert stream.worker == first.channel
    runner = [t for t in asyncio.all_tasks() if t.get_coro().__qualname__ == "InferenceWorker.run"]
    for task in runner:
        task.cancel()
    second = await start_worker(kinds=("llm",))
    # when the call's next turn is asked for
    started = time.monotonic()
    stream = client.generate(QUESTION, options)
    tokens = await collect(stream)
    # then another worker serves it after the short affinity wait, not the full accept bound
    assert tokens and stream.worker == second.channel
    assert time.monotonic() - started < client.settings.accept_timeout_s
    assert client.llm_worker_of("call-moving") == second.channel


async def test_a_worker_never_runs_more_requests_than_its_slots(
    start_worker: StartWorker, client: ChannelsInference
) -> None:
    # given two workers with one LLM slot each, and a call pinned to one of them
    workers = [await start_worker(kinds=("llm",), slots={"llm": 1}) for _ in range(2)]
    pinned = LLMOptions(max_tokens=24, temperature=0.0, session="call-pinned")
    assert await collect(client.generate(QUESTION, pinned))
    # when the pinned call's next turn (sent to its worker by name) and another call's
    # turn (sent to the shared queue) arrive together
    busiest = [0, 0]

    async def watch() -> None:
        while True:
            for i, worker in enumerate(workers):
                busiest[i] = max(busiest[i], worker._busy["llm"])
            await asyncio.sleep(0.005)

    watcher = asyncio.create_task(watch())
    other = LLMOptions(max_tokens=24, temperature=0.0, session="call-other")
    try:
        results = await asyncio.gather(
            collect(client.generate(QUESTION, pinned)), collect(client.generate(QUESTION, other))
        )
    finally:
        watcher.cancel()
    # then both are answered, and no worker ever ran two at once
    assert all(results)
    assert busiest == [1, 1] or max(busiest) == 1
    assert sum(w.served["llm"] for w in workers) == 3


async def test_a_malformed_request_is_refused_and_the_worker_goes_on(
    start_worker: StartWorker,
    make_layer: Callable[[], RedisChannelLayer],
    client: ChannelsInference,
) -> None:
    # given a TTS worker, and a caller that writes requests by hand
    worker = await start_worker(kinds=("tts",))
    layer = make_layer()
    reply = f"{REPLY_CHANNEL_PREFIX}.by-hand"

    def tts_request(request_id: str) -> dict[str, Any]:
        payload = encode_tts_payload("Our office opens at nine.", default_voice())
        message = encode_request(
            "tts", payload, request_id=request_id, reply_channel=reply, accept_by=time.time() + 5
        )
        return copy.deepcopy(dict(message))

    # when a request without its text and a request of another kind arrive on its queue
    no_text = tts_request("no-text")
    del no_text["payload"]["text"]
    other_kind = encode_request(
        "eou",
        encode_eou_payload("Hello"),
        request_id="other-kind",
        reply_channel=reply,
        accept_by=time.time() + 5,
    )
    await layer.send(CHANNELS["tts"], no_text)
    await layer.send(CHANNELS["tts"], other_kind)
    # then each is answered with an error that says what is wrong with it
    errors = [await asyncio.wait_for(layer.receive(reply), 3.0) for _ in range(2)]
    by_request = {e["request_id"]: e for e in errors}
    assert {e["type"] for e in errors} == {"inference.error"}
    assert {e["code"] for e in errors} == {"malformed_request"}
    assert {e["worker"] for e in errors} == {worker.channel}
    assert "'payload.text' is missing" in by_request["no-text"]["message"]
    assert "'kind' is 'eou' on inference.tts" in by_request["other-kind"]["message"]
    # when messages it cannot answer (no reply channel, a cancel without its request,
    # a reply sent to it by mistake) arrive on its queue and on its own channel
    await layer.send(CHANNELS["tts"], {"type": "inference.request", "kind": "tts"})
    await layer.send(worker.channel, {"type": "inference.cancel"})
    await layer.send(worker.channel, {"type": "inference.token", "request_id": "x"})
    # then it goes on serving both: a request sent to it by name ...
    await layer.send(worker.channel, tts_request("by-name"))
    replies: list[dict[str, Any]] = []
    while not replies or replies[-1]["type"] not in ("inference.done", "inference.error"):
        replies.append(await asyncio.wait_for(layer.receive(reply), 5.0))
    assert replies[-1]["type"] == "inference.done"
    assert "inference.audio" in {r["type"] for r in replies}
    # ... and one from its queue
    assert await collect(client.synthesize("Hello there.", default_voice()))
    assert worker.served["tts"] == 2


async def test_a_caller_is_told_that_its_request_was_malformed(
    start_worker: StartWorker, client: ChannelsInference
) -> None:
    # given a worker, and a speech request whose payload has no text
    await start_worker(kinds=("tts",))
    voice = default_voice()
    payload: Any = {
        "voice_id": voice.voice_id,
        "model_path": voice.model_path,
        "speed": voice.speed,
    }
    stream = ChannelStream(client, "tts", payload, lambda reply: reply)
    # when it is sent
    with pytest.raises(InferenceError) as error:
        await collect(stream)
    # then the caller gets the worker's refusal, naming the field
    assert error.value.code == "malformed_request"
    assert "'payload.text' is missing" in str(error.value)
