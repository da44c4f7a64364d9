import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import replace

import pytest
from llama_cpp import Llama

from tests.support.llm_server import scripted_sse_server
from tests.support.models import prompt_tokens
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.kv_state import SessionSnapshots, save_sequence
from voiceapp.engine.llm import (
    HttpLLM,
    HttpLLMSettings,
    LlamaLLM,
    LLMError,
    LLMOptions,
    PromptUsage,
    default_llm_model_path,
)
from voiceapp.engine.tools import Message

SERVER_CMD = (sys.executable, "-m", "llama_cpp.server", "--host", "127.0.0.1", "--n_threads", "1")
SYSTEM = {"role": "system", "content": "You are a helpful assistant. Answer briefly."}
CANCEL = threading.Event()  # never set


@pytest.fixture(scope="module")
def llm(models: LocalInference) -> LlamaLLM:
    assert isinstance(models.llm, LlamaLLM)
    return models.llm


def test_reply_streams_tokens_and_answers(llm: LlamaLLM) -> None:
    messages = [SYSTEM, {"role": "user", "content": "What is the capital of France?"}]
    deltas = list(
        llm.stream(messages, LLMOptions(max_tokens=30, temperature=0.0), threading.Event())
    )
    assert len(deltas) > 2
    assert "paris" in "".join(deltas).lower()


def test_token_budget_caps_the_reply(llm: LlamaLLM) -> None:
    messages = [SYSTEM, {"role": "user", "content": "Write a very long essay about the sea."}]
    reply = "".join(llm.stream(messages, LLMOptions(max_tokens=12), threading.Event()))
    assert llm.count_tokens(reply) <= 13


def test_cancel_stops_within_one_token(llm: LlamaLLM) -> None:
    # given a long reply in progress
    messages = [SYSTEM, {"role": "user", "content": "Count from one to one hundred."}]
    cancel = threading.Event()
    seen = []
    # when cancel is set after the third token
    for delta in llm.stream(messages, LLMOptions(max_tokens=200), cancel):
        seen.append(delta)
        if len(seen) == 3:
            cancel.set()
    # then no further token is produced and the model is free at once
    assert len(seen) == 3
    assert llm.busy() == 0


def test_next_turn_of_a_call_reuses_its_cached_prompt(llm: LlamaLLM) -> None:
    # given a finished first turn of call "ada", then another call's turn in between
    history = [SYSTEM, {"role": "user", "content": "My name is Ada. Say hello."}]
    ada = LLMOptions(max_tokens=16, temperature=0.0, session="ada")
    reply = "".join(llm.stream(history, ada, threading.Event()))
    context = next(c for c in llm._contexts if c.session == "ada")
    cached = list(context.llama._input_ids)
    other = [SYSTEM, {"role": "user", "content": "Tell me about trains."}]
    "".join(llm.stream(other, LLMOptions(max_tokens=8, session="bob"), threading.Event()))
    # when ada's second turn runs
    history += [{"role": "assistant", "content": reply}, {"role": "user", "content": "Thanks!"}]
    first = "".join(llm.stream(history, replace(ada, max_tokens=1), threading.Event()))
    # then it ran on ada's context, where most of its prompt was already evaluated
    assert context.session == "ada"
    new_prompt = list(context.llama._input_ids)
    shared = Llama.longest_token_prefix(cached, new_prompt)
    assert first
    assert shared >= 0.7 * (len(new_prompt) - 4), (shared, len(new_prompt))


def test_a_turn_waits_for_its_calls_context_while_a_cancelled_reply_frees_it(
    llm: LlamaLLM,
) -> None:
    # given a call whose history its context has read
    history = [SYSTEM, {"role": "user", "content": "My name is Ada. " * 40 + "Say hello."}]
    ada = LLMOptions(max_tokens=4, temperature=0.0, session="ada-busy")
    "".join(llm.stream(history, ada, threading.Event()))
    # and a reply of the call still running on that context (it is being cancelled)
    running, cancel = threading.Event(), threading.Event()

    def old_reply() -> None:
        for _ in llm.stream(history, replace(ada, max_tokens=200), cancel):
            running.set()
            time.sleep(0.02)

    thread = threading.Thread(target=old_reply)
    thread.start()
    assert running.wait(30)
    # when the call's next turn asks while the other context is free, and the old reply
    # is cancelled a moment later
    threading.Timer(0.2, cancel.set).start()
    usage = PromptUsage()
    turn = [
        *history,
        {"role": "assistant", "content": "Hello Ada."},
        {"role": "user", "content": "Hi"},
    ]
    "".join(llm.stream(turn, ada, threading.Event(), usage))
    thread.join(timeout=30)
    # then the turn ran on the call's own context, its history read from the cache
    assert usage.cached_tokens >= prompt_tokens(llm._contexts[0].llama, history) - 2, usage


def test_a_reply_counts_the_prompt_tokens_it_read(llm: LlamaLLM) -> None:
    # given a call's first turn, on a context that served another call before
    llama = llm._contexts[0].llama
    first = [SYSTEM, {"role": "user", "content": "My name is Ada. Say hello."}]
    options = LLMOptions(max_tokens=12, temperature=0.0, session="usage-ada")
    usage = PromptUsage()
    # when its reply is streamed
    reply = "".join(llm.stream(first, options, threading.Event(), usage))
    # then the usage holds the templated prompt's length
    assert usage.input_tokens == prompt_tokens(llama, first) > 10
    # and when the next turn runs on the context that holds the first one
    second = [*first, {"role": "assistant", "content": reply}, {"role": "user", "content": "Bye"}]
    again = PromptUsage()
    "".join(llm.stream(second, replace(options, max_tokens=2), threading.Event(), again))
    # then all of its prompt is counted, and the first turn's prompt came from the cache
    assert again.input_tokens == prompt_tokens(llama, second) > usage.input_tokens
    assert usage.input_tokens <= again.cached_tokens < again.input_tokens


def _introduce(name: str) -> list[Message]:
    return [SYSTEM, {"role": "user", "content": f"My name is {name}. " * 20 + "Say hello."}]


def test_a_call_whose_context_another_call_took_does_not_read_its_prompt_again(
    llm: LlamaLLM,
) -> None:
    # given three calls' first turns on two contexts: the first call's context was taken
    turns = {}
    for name in ("Ada", "Bob", "Cy"):
        first = _introduce(name)
        options = LLMOptions(max_tokens=8, temperature=0.0, session=f"kept-{name}")
        reply = "".join(llm.stream(first, options, CANCEL))
        turns[name] = [
            *first,
            {"role": "assistant", "content": reply},
            {"role": "user", "content": "What is my name?"},
        ]
    assert all(c.session != "kept-Ada" for c in llm._contexts)
    restores = llm.snapshots.restores
    # when its next turn runs
    usage = PromptUsage()
    ada = LLMOptions(max_tokens=12, temperature=0.0, session="kept-Ada")
    words = "".join(llm.stream(turns["Ada"], ada, CANCEL, usage))
    # then its first turn's prompt came from the copy kept when it lost its context
    assert llm.snapshots.restores == restores + 1
    first_prompt = prompt_tokens(llm._contexts[0].llama, _introduce("Ada"))
    assert usage.cached_tokens >= first_prompt - 2, (usage, first_prompt)
    # and the reply is the one her own context writes when nobody takes it (a cold read
    # differs: llama.cpp's sums over a prompt read in one batch round differently)
    own = LlamaLLM(replace(llm.settings, contexts=1, snapshot_bytes=0))
    try:
        "".join(own.stream(_introduce("Ada"), replace(ada, max_tokens=8), CANCEL))
        again = PromptUsage()
        assert "".join(own.stream(turns["Ada"], ada, CANCEL, again)) == words
        assert again.cached_tokens == usage.cached_tokens
    finally:
        own.close()


def test_kept_prompts_stay_within_their_bytes(llm: LlamaLLM) -> None:
    # given a store of kept prompts with room for about one
    context = llm._contexts[0]
    "".join(llm.stream(_introduce("Dee"), LLMOptions(max_tokens=2, session="bytes"), CANCEL))
    one = len(save_sequence(context.llama))
    snapshots = SessionSnapshots(int(one * 1.5))
    # when two calls' prompts are kept
    snapshots.keep("first", context.llama)
    snapshots.keep("second", context.llama)
    # then the older is dropped, and a turn of its call finds nothing to load
    assert len(snapshots) == 1 and snapshots.bytes <= snapshots.max_bytes
    prompt = list(context.llama.input_ids[: context.llama.n_tokens])
    held = context.llama.n_tokens
    assert snapshots.restore("first", context.llama, prompt) == held
    assert snapshots.restores == 0
    assert snapshots.restore("second", context.llama, prompt) == held  # holds it already


def test_a_cancelled_reply_still_counts_its_prompt(llm: LlamaLLM) -> None:
    messages = [SYSTEM, {"role": "user", "content": "Count from one to one hundred."}]
    cancel, usage = threading.Event(), PromptUsage()
    for _ in llm.stream(messages, LLMOptions(max_tokens=200), cancel, usage):
        cancel.set()
    assert usage.input_tokens == prompt_tokens(llm._contexts[0].llama, messages)


def test_two_replies_generate_at_once(llm: LlamaLLM) -> None:
    # given two calls asking at the same moment
    results: dict[str, str] = {}

    def ask(session: str) -> None:
        messages = [SYSTEM, {"role": "user", "content": "Name a colour."}]
        options = LLMOptions(max_tokens=8, temperature=0.0, session=session)
        results[session] = "".join(llm.stream(messages, options, threading.Event()))

    threads = [threading.Thread(target=ask, args=(s,)) for s in ("a", "b")]
    for t in threads:
        t.start()
    # then both are answered, each on its own context
    for t in threads:
        t.join(timeout=30)
    assert llm.slots == 2
    assert results["a"] and results["b"]
    assert {c.session for c in llm._contexts} >= {"a", "b"}


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real OpenAI-compatible server: llama-cpp-python's, on a free local port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*SERVER_CMD, "--model", default_llm_model_path(), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/models", timeout=1).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(log.read_text(errors="replace")) from None
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_an_open_read_leaves_the_turn_only_the_words_it_had_not_seen(llm: LlamaLLM) -> None:
    # given a conversation whose prompt one call's context holds, with no caller words
    history = [
        SYSTEM,
        {"role": "user", "content": "Hello, is anyone there?"},
        {"role": "assistant", "content": "Yes, I am here. How can I help?"},
    ]
    options = LLMOptions(max_tokens=1, temperature=0.0, session="open-read")

    def turn_reads(words: str | None) -> int:
        """New prompt tokens of the turn "What is the capital of France?" after a read
        of the history (and of `words` left open)."""
        for _ in llm.stream([*history, {"role": "user", "content": "Hi"}], options, CANCEL):
            pass
        if words is not None:
            read = [*history, {"role": "user", "content": words}]
            # the open read writes nothing
            assert list(llm.stream(read, replace(options, open_turn=True), CANCEL)) == []
        usage = PromptUsage()
        turn = [*history, {"role": "user", "content": "What is the capital of France?"}]
        for _ in llm.stream(turn, options, CANCEL, usage):
            pass
        return usage.input_tokens - usage.cached_tokens

    # when the caller's words so far were read open, then the turn reads only the rest
    cold = turn_reads(None)
    after_open = turn_reads("What is the capital of")
    words = llm.count_tokens("What is the capital of")
    assert after_open == cold - words, (cold, after_open, words)
    # and a caption that ends otherwise than the turn still leaves its shared start
    assert turn_reads("What is the capital. Of Spain") == cold - llm.count_tokens(
        "What is the capital"
    )


def test_an_endpoint_is_sent_no_open_read() -> None:
    # given an endpoint nothing listens on
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = HttpLLM(HttpLLMSettings(base_url=f"http://127.0.0.1:{port}/v1"))
    # when it is asked to read the caller's words open, then it sends nothing and fails not
    messages = [SYSTEM, {"role": "user", "content": "What is the"}]
    assert list(llm.stream(messages, LLMOptions(open_turn=True), CANCEL)) == []


def test_http_backend_streams_from_an_openai_compatible_server(llama_server: str) -> None:
    # given the HTTP backend pointed at a llama.cpp server
    llm = HttpLLM(HttpLLMSettings(base_url=llama_server, api_key="unused"))
    messages = [SYSTEM, {"role": "user", "content": "What is the capital of France?"}]
    # when a reply is streamed
    deltas = list(
        llm.stream(messages, LLMOptions(max_tokens=24, temperature=0.0), threading.Event())
    )
    # then it arrives in several deltas and answers
    assert len(deltas) > 2
    assert "paris" in "".join(deltas).lower()


def test_http_backend_reports_the_prompt_tokens_the_server_counted() -> None:
    # given an endpoint that sends its usage in a last event without choices,
    # as OpenAI, vLLM and llama-server do when asked with include_usage
    usage_event = {
        "choices": [],
        "usage": {
            "prompt_tokens": 57,
            "completion_tokens": 2,
            "total_tokens": 59,
            "prompt_tokens_details": {"cached_tokens": 40},
        },
    }
    events = [{"choices": [{"delta": {"content": w}}]} for w in ("Hi", " there")]
    with scripted_sse_server([*events, usage_event]) as server:
        llm = HttpLLM(HttpLLMSettings(base_url=server.base_url))
        usage = PromptUsage()
        # when a reply is streamed
        reply = "".join(llm.stream([SYSTEM], LLMOptions(), threading.Event(), usage))
    # then the request asked for usage, and the server's counts are reported as they are
    assert server.requests[0]["stream_options"] == {"include_usage": True}
    assert reply == "Hi there"
    assert (usage.input_tokens, usage.cached_tokens) == (57, 40)


def test_http_backend_reports_no_prompt_tokens_when_the_server_says_none() -> None:
    # given an endpoint that ignores include_usage (nothing but deltas)
    events = [{"choices": [{"delta": {"content": "Hello"}}]}]
    with scripted_sse_server(events) as server:
        usage = PromptUsage()
        llm = HttpLLM(HttpLLMSettings(base_url=server.base_url))
        # when a reply is streamed, then it arrives and no count is made up
        assert list(llm.stream([SYSTEM], LLMOptions(), threading.Event(), usage)) == ["Hello"]
    assert usage == PromptUsage(input_tokens=0, cached_tokens=0)


def test_http_backend_accepts_include_usage_on_a_llama_cpp_server(llama_server: str) -> None:
    # given llama-cpp-python's own server, which ignores stream_options
    llm = HttpLLM(HttpLLMSettings(base_url=llama_server))
    usage = PromptUsage(input_tokens=-1)
    messages = [SYSTEM, {"role": "user", "content": "What is the capital of France?"}]
    # when a reply is streamed with include_usage asked for
    reply = "".join(llm.stream(messages, LLMOptions(max_tokens=16), threading.Event(), usage))
    # then the request is not refused for it, and no usage came with the stream
    assert reply
    assert usage.input_tokens == -1


def test_http_backend_stops_on_cancel(llama_server: str) -> None:
    llm = HttpLLM(HttpLLMSettings(base_url=llama_server))
    cancel = threading.Event()
    seen = []
    messages = [{"role": "user", "content": "Write a long story about a ship."}]
    for delta in llm.stream(messages, LLMOptions(max_tokens=200), cancel):
        seen.append(delta)
        cancel.set()
    assert len(seen) == 1


def test_http_backend_reports_an_unreachable_endpoint() -> None:
    llm = HttpLLM(HttpLLMSettings(base_url="http://127.0.0.1:9/v1", timeout_s=2))
    with pytest.raises(LLMError, match="cannot be reached") as caught:
        list(llm.stream([SYSTEM], LLMOptions(), threading.Event()))
    assert caught.value.code == "llm_endpoint_unreachable"
