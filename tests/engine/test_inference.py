import asyncio
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.support.engine_calls import wait_until
from tests.support.llm_server import (
    LLMServer,
    closed_port_url,
    scripted_sse_server,
    silent_server,
)
from tests.support.models import prompt_tokens
from voiceapp.engine.inference import (
    BACKGROUND_AFTER_WORDS,
    EndpointInference,
    InferenceError,
    LocalInference,
    ThreadStream,
    collect,
)
from voiceapp.engine.llm import HttpLLM, HttpLLMSettings, LlamaLLM, LLMOptions
from voiceapp.engine.models import default_voice


def counting(n: int, delay: float = 0.0) -> Callable[[threading.Event], Iterator[int]]:
    def start(cancel: threading.Event) -> Iterator[int]:
        for i in range(n):
            if cancel.is_set():
                return
            time.sleep(delay)
            yield i

    return start


async def test_thread_stream_yields_items_in_order(executor: ThreadPoolExecutor) -> None:
    assert await collect(ThreadStream(counting(5), executor)) == [0, 1, 2, 3, 4]


async def test_errors_reach_the_consumer_as_inference_errors(executor: ThreadPoolExecutor) -> None:
    def broken(cancel: threading.Event) -> Iterator[int]:
        yield 1
        raise RuntimeError("model exploded")

    with pytest.raises(InferenceError, match="model exploded"):
        await collect(ThreadStream(broken, executor))


async def test_aclose_stops_the_thread_within_one_item(executor: ThreadPoolExecutor) -> None:
    # given a slow stream holding a one-slot semaphore
    slot = threading.Semaphore(1)
    stream = ThreadStream(counting(100, delay=0.02), executor, slot)
    assert await stream.__anext__() == 0
    # when closed
    await stream.aclose()
    # then the slot is free again within about one item
    assert await asyncio.to_thread(slot.acquire, True, 0.2)


async def test_queue_time_is_the_wait_for_a_busy_slot(executor: ThreadPoolExecutor) -> None:
    # given a slot held by a first stream for ~150 ms
    slot = threading.Semaphore(1)
    first = ThreadStream(counting(3, delay=0.05), executor, slot)
    second = ThreadStream(counting(1), executor, slot)
    consume_first = asyncio.create_task(collect(first))
    await asyncio.sleep(0.02)
    # when a second stream needs the same slot
    assert await collect(second) == [0]
    await consume_first
    # then its queue time shows the wait
    assert second.queue_ms is not None and second.queue_ms > 50
    assert first.queue_ms is not None and first.queue_ms < 50


# --- EndpointInference: a call's LLM turns on its own OpenAI-compatible server ---


def endpoint(server: LLMServer, **overrides: object) -> HttpLLM:
    values: dict[str, object] = {
        "base_url": server.base_url,
        "api_key": server.api_key,
        "model": server.model,
        "timeout_s": 10.0,
    }
    values.update(overrides)
    return HttpLLM(HttpLLMSettings(**values))  # type: ignore[arg-type]


async def test_endpoint_inference_sends_llm_turns_to_the_endpoint(
    llm_server: LLMServer, models: LocalInference, executor: ThreadPoolExecutor
) -> None:
    # given the real local models as the workers, and a call routed to its endpoint
    routed = EndpointInference(models, endpoint(llm_server), executor)
    before = llm_server.completions()
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    # when the call generates a reply and speaks it
    reply = "".join(
        await collect(routed.generate(messages, LLMOptions(max_tokens=16, temperature=0.0)))
    )
    audio = await collect(routed.synthesize("Paris.", default_voice()))
    # then the endpoint answered the LLM turn (what a 135M model says is not the point:
    # greedy decoding on a server whose KV cache other tests warmed varies), and the
    # workers' TTS spoke
    assert reply.strip()
    assert llm_server.completions() == before + 1
    assert audio and audio[0].samples.size > 0


async def test_a_local_reply_stream_carries_its_prompt_usage(models: LocalInference) -> None:
    # given the embedded model
    assert isinstance(models.llm, LlamaLLM)
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    # when a reply is streamed through LocalInference
    stream = models.generate(messages, LLMOptions(max_tokens=8, temperature=0.0))
    assert await collect(stream)
    # then the stream holds the prompt the model read
    assert stream.usage.input_tokens == prompt_tokens(models.llm._contexts[0].llama, messages)


async def test_an_endpoint_reply_stream_carries_the_usage_it_reported(
    models: LocalInference, executor: ThreadPoolExecutor
) -> None:
    # given a call routed to an endpoint that reports its usage at the end
    events: list[dict[str, Any]] = [
        {"choices": [{"delta": {"content": "Paris."}}]},
        {"choices": [], "usage": {"prompt_tokens": 31, "completion_tokens": 2}},
    ]
    with scripted_sse_server(events) as server:
        routed = EndpointInference(models, HttpLLM(HttpLLMSettings(server.base_url)), executor)
        # when the reply is streamed
        stream = routed.generate([{"role": "user", "content": "Hi"}], LLMOptions())
        assert await collect(stream) == ["Paris."]
    # then the stream carries the endpoint's count
    assert (stream.usage.input_tokens, stream.usage.cached_tokens) == (31, 0)


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"api_key": "wrong-key"}, "llm_endpoint_unauthorized"),
        ({"base_url": closed_port_url()}, "llm_endpoint_unreachable"),
    ],
)
async def test_endpoint_failures_are_inference_errors_with_their_code(
    llm_server: LLMServer,
    models: LocalInference,
    executor: ThreadPoolExecutor,
    overrides: dict[str, object],
    code: str,
) -> None:
    routed = EndpointInference(models, endpoint(llm_server, **overrides), executor)

    with pytest.raises(InferenceError) as caught:
        await collect(routed.generate([{"role": "user", "content": "Hi"}], LLMOptions()))

    assert caught.value.code == code


async def test_a_silent_endpoint_fails_after_its_timeout_instead_of_hanging(
    llm_server: LLMServer, models: LocalInference, executor: ThreadPoolExecutor
) -> None:
    with silent_server() as url:
        routed = EndpointInference(
            models, endpoint(llm_server, base_url=url, timeout_s=1.0), executor
        )
        with pytest.raises(InferenceError) as caught:
            async with asyncio.timeout(10):  # the endpoint's own timeout ends it well before
                await collect(routed.generate([{"role": "user", "content": "Hi"}], LLMOptions()))

    assert caught.value.code == "llm_endpoint_timeout"


# --- the TTS's background lane: later clauses at a lower priority, with slots of their own ---


class PriorityProbe:
    """The real TTS, noting the nice value of the thread each clause is made in."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.nice: dict[str, int] = {}
        self.began = threading.Event()  # set when a clause starts being made

    def sample_rate(self, voice: Any) -> int:
        return int(self.inner.sample_rate(voice))

    def synthesize(
        self, text: str, voice: Any, cancel: threading.Event, *, windowed: bool = True
    ) -> Iterator[Any]:
        self.nice[text] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        self.began.set()
        yield from self.inner.synthesize(text, voice, cancel, windowed=windowed)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's nice value is Linux's")
async def test_background_clauses_are_made_at_a_lower_priority_in_slots_of_their_own(
    models: LocalInference,
) -> None:
    # given local inference with one clause at a time per lane, the background lane at nice 10
    probe = PriorityProbe(models.tts)
    inference = LocalInference(models.asr, models.llm, probe, tts_slots=1, background_nice=10)
    base = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        assert inference.tts_slots == 2
        # when a long clause is being made in the background
        long_text = "We are open from nine in the morning until six in the evening, every day. " * 2
        background = inference.synthesize(long_text, default_voice(), background=True)
        made_in_background = asyncio.create_task(collect(background))
        assert await asyncio.to_thread(probe.began.wait, 10.0)
        # and a reply's first clause is asked for meanwhile
        urgent = inference.synthesize("Hello there.", default_voice())
        assert await collect(urgent)
        # then the first clause did not wait for the background one's slot
        assert urgent.queue_ms is not None and urgent.queue_ms < 50
        assert not made_in_background.done()
        assert await made_in_background
        # and the background clause was made at nice 10, the urgent one at the process's
        assert probe.nice == {long_text: 10, "Hello there.": base}
    finally:
        inference.close()
    # without a background lane, a background clause is made as any other
    plain = LocalInference(models.asr, models.llm, probe, tts_slots=1)
    try:
        assert plain.tts_slots == 1
        assert await collect(plain.synthesize("Goodbye.", default_voice(), background=True))
        assert probe.nice["Goodbye."] == base
    finally:
        plain.close()


class GenerationProbe:
    """The real LLM, noting the nice value of the thread each of a reply's items came from."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.items: list[tuple[str, int]] = []

    def stream(self, messages: Any, options: Any, cancel: threading.Event, usage: Any) -> Any:
        for item in self.inner.stream(messages, options, cancel, usage):
            self.items.append((item, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
            yield item


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's nice value is Linux's")
async def test_a_reply_goes_on_at_a_lower_priority_once_its_first_words_are_written(
    models: LocalInference,
) -> None:
    # given local inference whose background work runs at nice 10
    probe = GenerationProbe(models.llm)
    inference = LocalInference(models.asr, models.llm, models.tts, llm_slots=1, background_nice=10)
    inference.llm = probe  # type: ignore[assignment]
    base = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        # when a long reply is written
        stream = inference.generate(
            [{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}],
            LLMOptions(max_tokens=80, temperature=0.0, session="handoff"),
        )
        reply = "".join(str(item) for item in await collect(stream))
    finally:
        inference.close()
    # then it comes whole, in order
    assert reply == "".join(str(item) for item, _ in probe.items)
    assert len(reply.split()) > BACKGROUND_AFTER_WORDS + 5
    # and its items up to its first 12 words were written at the process's priority,
    # the rest at nice 10
    written = ""
    for item, nice in probe.items:
        assert nice == (base if len(written.split()) < BACKGROUND_AFTER_WORDS else 10), written
        written += str(item)
    # and the context was given back
    assert isinstance(models.llm, LlamaLLM) and models.llm.busy() == 0


async def test_a_reply_closed_after_it_went_on_in_the_background_stops_there(
    models: LocalInference,
) -> None:
    # given a long reply whose rest is being written in the background
    inference = LocalInference(models.asr, models.llm, models.tts, llm_slots=1, background_nice=10)
    try:
        stream = inference.generate(
            [{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}],
            LLMOptions(max_tokens=200, temperature=0.0, session="handoff-cut"),
        )
        written = ""
        async for item in stream:
            written += str(item)
            if len(written.split()) > BACKGROUND_AFTER_WORDS + 3:
                break
        # when the caller closes it
        await stream.aclose()
        # then the model stops within a fraction of a second, and its slot is free
        assert isinstance(models.llm, LlamaLLM)
        llm = models.llm
        assert await wait_until(lambda: llm.busy() == 0, 0.5)
        assert await collect(
            inference.generate(
                [{"role": "user", "content": "Hello"}], LLMOptions(max_tokens=4, session="next")
            )
        )
    finally:
        inference.close()
