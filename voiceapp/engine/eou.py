"""End-of-turn probability of a transcript, from the chat LLM already loaded.

The idea is the one of LiveKit's turn detector: format the transcript as the
caller's message in the model's chat template, leave the message open, and
read the probability that it ends here. The text is given without punctuation
(`turns.eou_text`), since Whisper's punctuation is a guess about the same
thing; so the model ends a finished sentence with its own closing mark, and
the score is the probability that the next token is the end-of-message token
(`<|im_end|>` in SmolLM2's ChatML) or a sentence's closing ". ? !". The
instruct model is not tuned for this, but it ranks well: "what is the capital
of france" scores ~0.9, "i would like to order" ~1e-4, "one two three four
five six" ~0.03 (measured numbers in docs/QUALITY.md, "Whole turns").

One forward pass over a few dozen tokens of the 135M model: about 10-30 ms on
one core. The scorer has its own small llama context, so it never waits for a
reply being generated, and keeps the KV cache of its fixed prompt head.
"""

from __future__ import annotations

import atexit
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from .kv_state import load_sequence, save_sequence
from .turns import eou_text

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
# SmolLM2's chat template puts this system message first when a chat has none.
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
# The last words of a turn are what decide it; fewer tokens keep the pass short.
MAX_WORDS = 12
MAX_PREVIOUS_CHARS = 200
# Before the agent has said anything, the caller answers a phone call.
OPENING = "Hello, how can I help you?"
# Saved KV caches of prompt heads (the system message and an agent's reply), one per
# recent reply: about 1.2 MB each for SmolLM2-135M.
HEAD_SNAPSHOTS = 16


@dataclass(frozen=True, slots=True)
class EndOfTurnSettings:
    model_path: str
    context_tokens: int = 512
    threads: int = 1
    gpu_layers: int = 0


def chat_prompt(text: str, previous_reply: str = "") -> str:
    """The open caller message after the agent's last reply (ChatML, no closing token)."""
    reply = (previous_reply or OPENING)[-MAX_PREVIOUS_CHARS:]
    words = " ".join(eou_text(text).split()[-MAX_WORDS:])
    return (
        f"{IM_START}system\n{DEFAULT_SYSTEM}{IM_END}\n"
        f"{IM_START}assistant\n{reply}{IM_END}\n{IM_START}user\n{words}"
    )


class HeadSnapshots:
    """Copies of a llama.cpp context's KV cache, one per prompt head (by its tokens),
    the `HEAD_SNAPSHOTS` most recently used. Not thread-safe: the scorer's lock."""

    def __init__(self, llama: Any) -> None:
        self._llama = llama
        self._saved: OrderedDict[tuple[int, ...], bytes] = OrderedDict()
        self.restores = 0

    def __contains__(self, head: tuple[int, ...]) -> bool:
        return head in self._saved

    def clear(self) -> None:
        self._saved.clear()

    def save(self, head: list[int]) -> None:
        """Keep the context's KV cache, which holds `head` and nothing after it."""
        self._saved[tuple(head)] = save_sequence(self._llama)
        while len(self._saved) > HEAD_SNAPSHOTS:
            self._saved.popitem(last=False)

    def load(self, head: list[int], keep: int) -> int:
        """Load `head`'s saved KV cache into the context, if there is one; returns the
        tokens now evaluated (`keep` when nothing was loaded)."""
        data = self._saved.get(tuple(head))
        if data is None:
            return keep
        self._saved.move_to_end(tuple(head))
        if not load_sequence(self._llama, data, head):
            return 0
        self.restores += 1
        return len(head)


class EndOfTurnScorer:
    """P(end of message | transcript so far) from a llama.cpp chat model. Thread-safe."""

    def __init__(self, settings: EndOfTurnSettings) -> None:
        from llama_cpp import Llama

        self.settings = settings
        self._llama: Any = Llama(
            model_path=settings.model_path,
            n_ctx=settings.context_tokens,
            n_threads=settings.threads,
            n_threads_batch=settings.threads,
            n_batch=settings.context_tokens,
            n_gpu_layers=settings.gpu_layers,
            verbose=False,
        )
        ids = self._llama.tokenize(IM_END.encode(), add_bos=False, special=True)
        if len(ids) != 1:
            raise ValueError(f"{settings.model_path}: no single {IM_END} token in its vocabulary")
        self._vocab = int(self._llama.n_vocab())
        closing = {b".", b"?", b"!"}
        self._end_ids = np.array(
            [int(ids[0])]
            + [i for i in range(self._vocab) if self._llama.detokenize([i]).strip() in closing]
        )
        self._lock = threading.Lock()
        # The KV cache of each recent prompt head, by its tokens: with several calls the
        # context holds another call's head when a score is asked for, and evaluating
        # the head again took 269 ms (median, 3 calls taking turns) against 22 ms.
        self._heads = HeadSnapshots(self._llama)
        # Freed before interpreter shutdown tears down what llama.cpp's finalizer needs.
        atexit.register(self.close)

    @property
    def head_restores(self) -> int:
        """Scores that started from a saved head."""
        return self._heads.restores

    def close(self) -> None:
        self._llama.close()

    def probability(self, text: str, previous_reply: str = "") -> float:
        """Probability that the caller's message (or its sentence) ends after `text`."""
        import llama_cpp

        llama = self._llama
        tokens = llama.tokenize(
            chat_prompt(text, previous_reply).encode(), add_bos=False, special=True
        )
        head = llama.tokenize(chat_prompt("", previous_reply).encode(), add_bos=False, special=True)
        if len(tokens) >= self.settings.context_tokens:
            tokens = tokens[-(self.settings.context_tokens - 1) :]
        # No caller words yet (the reply read while it plays): the head is the prompt.
        whole_head = tokens == head and tuple(head) not in self._heads
        if len(head) >= len(tokens) or tokens[: len(head)] != head:
            head = []  # no words after it, or they tokenize across its end
        with self._lock:
            # Reuse the KV cache of the prefix this context evaluated last (the system
            # message, the agent's reply); at least the last token is evaluated again.
            cached = llama.input_ids[: llama.n_tokens].tolist()
            keep = 0
            for a, b in zip(cached, tokens[:-1], strict=False):
                if a != b:
                    break
                keep += 1
            if head and keep < len(head):
                keep = self._heads.load(head, keep)
            llama.n_tokens = keep
            if head and keep < len(head):
                llama.eval(tokens[keep : len(head)])
                self._heads.save(head)
                keep = len(head)
            llama.eval(tokens[keep:])
            if whole_head:
                self._heads.save(tokens)
            # The last token's logits (llama-cpp-python keeps them only with logits_all).
            row = llama_cpp.llama_get_logits_ith(llama.ctx, -1)
            logits = np.ctypeslib.as_array(row, shape=(self._vocab,)).astype(np.float64)
        logits -= logits.max()
        weights = np.exp(logits)
        return float(weights[self._end_ids].sum() / weights.sum())

    def warm_up(self) -> None:
        self.probability("hello")
