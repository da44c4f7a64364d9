"""Copies of a llama.cpp context's KV cache, to load back into a context later.

Reading a prompt is the costly part of a reply on a CPU: SmolLM2-135M reads 320
tokens in about 1.7 s on one thread, while copying their KV cache out (7.4 MB) takes
about 8 ms and loading it back about 6 ms, with the same logits after. Two users:

- the end-of-turn scorer keeps the head of each recent prompt (eou.py);
- the reply contexts keep the prompt of each call whose context another call took
  (`SessionSnapshots`), so that call's next turn reads only its new tokens wherever
  it lands (llm.py).
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections import OrderedDict
from typing import Any

log = logging.getLogger(__name__)


def save_sequence(llama: Any) -> bytes:
    """The KV cache of `llama`'s sequence 0: the tokens it has evaluated
    (`llama.n_tokens`), and no cell after them."""
    import llama_cpp

    llama._ctx.kv_cache_seq_rm(-1, llama.n_tokens, -1)
    ctx = llama._ctx.ctx
    size = llama_cpp.llama_state_seq_get_size(ctx, 0)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)
    return ctypes.string_at(buffer, written)


def load_sequence(llama: Any, data: bytes, tokens: list[int] | tuple[int, ...]) -> bool:
    """Replace `llama`'s KV cache with `data`, saved when it held `tokens`; False
    (and an empty cache) when llama.cpp refuses it."""
    import llama_cpp

    llama._ctx.kv_cache_seq_rm(-1, 0, -1)
    source = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, source, len(data), 0) != len(data):
        llama._ctx.kv_cache_seq_rm(-1, 0, -1)
        llama.n_tokens = 0
        return False
    llama.input_ids[: len(tokens)] = tokens
    llama.n_tokens = len(tokens)
    return True


def common_prefix(a: list[int] | tuple[int, ...], b: list[int] | tuple[int, ...]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class SessionSnapshots:
    """Each call's last prompt in the reply contexts, kept when another call takes
    its context: the most recent ones, up to `max_bytes` in all. Thread-safe; the
    context it saves from or loads into must be held by the caller."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._saved: OrderedDict[str, tuple[tuple[int, ...], bytes]] = OrderedDict()
        self._lock = threading.Lock()
        self.saves = 0
        self.restores = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._saved)

    @property
    def bytes(self) -> int:
        with self._lock:
            return sum(len(data) for _, data in self._saved.values())

    def keep(self, session: str, llama: Any) -> None:
        """Save what `llama` holds as `session`'s prompt, before another call uses it."""
        if not session or self.max_bytes <= 0 or llama.n_tokens <= 0:
            return
        tokens = tuple(llama.input_ids[: llama.n_tokens].tolist())
        data = save_sequence(llama)
        with self._lock:
            self._saved.pop(session, None)
            if len(data) > self.max_bytes:
                return
            self._saved[session] = (tokens, data)
            self.saves += 1
            log.debug("kept %s's prompt: %d tokens, %d bytes", session, len(tokens), len(data))
            total = sum(len(d) for _, d in self._saved.values())
            while total > self.max_bytes:
                _, (_, dropped) = self._saved.popitem(last=False)
                total -= len(dropped)

    def restore(self, session: str, llama: Any, prompt: list[int]) -> int:
        """Load `session`'s saved prompt into `llama` when it shares more of `prompt`
        than what `llama` holds now; the tokens of `prompt` it then holds."""
        held = common_prefix(llama.input_ids[: llama.n_tokens].tolist(), prompt)
        with self._lock:
            saved = self._saved.get(session) if session else None
            if saved is not None:
                self._saved.move_to_end(session)
        if saved is None:
            return held
        tokens, data = saved
        shared = common_prefix(tokens, prompt)
        if shared <= held:
            return held
        if not load_sequence(llama, data, tokens):
            return 0
        with self._lock:
            self.restores += 1
        log.debug(
            "loaded %s's kept prompt: %d of %d tokens (held %d)", session, shared, len(prompt), held
        )
        return shared
