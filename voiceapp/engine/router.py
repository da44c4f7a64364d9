"""Tool choice for the small embedded model: which tool, if any, a caller's turn needs.

SmolLM2-135M does not choose tools (bench/tool_choice.py: no call in 31 requests
that needed one), and asked "does the caller want this tool?" it answers at
random. So, with the embedded model and `tool_choice: "auto"`, the router
decides, and the model then writes the call's arguments under a grammar that
holds them to what the caller said (arguments.py):

1. Similarity: the caller's words and each tool's card (its name in words and
   its description) are embedded (embedder.py, all-MiniLM-L6-v2) and compared.
2. Evidence: a tool whose required arguments include values of a kind that can
   be recognised (a number, an order number, a name, a date, an address, one
   of an enum's values) is called only when the caller said a value of each
   (of a tool that requires none, a value of one of its arguments of such kinds).
   "I'm nervous about dentists" resembles book_appointment, but names neither a
   patient nor a date.
3. A tool whose arguments are all free words (a product, a book's title) has no
   such evidence. It is called when the similarity is high, or, for a request
   that asks for something ("do you have ...", "I'm looking for ..."), when it is
   fair, and never for a question that asks for advice or knowledge ("how do
   I ...", "who wrote ...", "can you recommend ...").
4. The tools are tried best first; the first that qualifies, and is not far
   below the best match, is called.

The thresholds were set on the development set (bench/tool_dev_cases.py: four
businesses, 44 requests that need a tool and 34 that need none); the bike shop
of bench/tool_cases.py is held out. `python -m bench.tool_choice --router-only`
reports both.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .arguments import Argument, candidates, narrowed
from .embedder import EMBEDDING_PACKAGE, SentenceEncoder, shared_encoder
from .tools import ToolSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RouterSettings:
    min_similarity: float = 0.12  # a tool whose typed arguments the caller gave
    free_similarity: float = 0.50  # a tool of free-word arguments, for any turn
    request_similarity: float = 0.15  # ... for a turn that asks for something
    max_below_best: float = 0.15  # how far below the best match a chosen tool may be


@dataclass(frozen=True, slots=True)
class Route:
    """The tool a turn needs, its arguments' candidate values, and why."""

    tool: ToolSpec
    arguments: tuple[Argument, ...]
    similarity: float

    @property
    def spec(self) -> ToolSpec:
        """The tool with each argument held to the caller's values (the call's grammar)."""
        return narrowed(self.tool, self.arguments)

    @property
    def settled(self) -> bool:
        """Every argument the call will carry has one value: nothing is left to choose."""
        kept = [a for a in self.arguments if a.values or a.required]
        return all(len(a.values) == 1 for a in kept)


_REQUEST = re.compile(
    r"\b(do|does|will|would) (you|they|the shop|the store) (have|carry|stock|sell|do|offer|"
    r"take|accept)\b|\b(is|are) (that|it|this|they|those) (accepted|taken|covered)\b"
    r"|\b(have|has) (you|they) got\b|\bgot any\b"
    r"|\b(is|are) there (a|an|any|one|some)\b|\b(is|are) (it|they|there|that|those|these) in\b"
    r"|\bin stock\b|\bavailable\b|\bon (the )?shelf\b|\bon (the )?shelves\b"
    r"|\b(i'?m|i am|we'?re|we are) (looking for|after|trying to find)\b"
    r"|\b(i|we) (need|want|would like|'d like)\b|\bcan (i|we) (get|have|buy|order)\b"
    r"|\b(could|can|would) you (check|look up|find|see|tell me)\b"
    r"|\b(please|could you|can you|would you) (put|keep|hold|set|book|reserve|cancel|order|send)\b",
    re.I,
)
_ADVICE = re.compile(
    r"^\W*(?:so |and |but |okay |ok |well |hi |hello )*(?:"
    r"how (do|does|can|could|should|would|often|long|hard|easy|far)\b"
    r"|why\b|who (wrote|won|is|was|are|were|made|invented|directed|sang)\b"
    r"|what('s| is| are| was) (the best|a good|your favou?rite|the most|the difference|"
    r"the point|the meaning)\b"
    r"|what (does|do) .{1,40} mean\b"
    r"|(can|could) you (recommend|suggest|explain)\b|(any|do you have any) (recommendations|"
    r"tips|advice|suggestions)\b"
    r"|is it (hard|easy|bad|good|safe|worth|possible|true|normal)\b"
    r"|(do|did) you (like|enjoy|think|know)\b|tell me (a|about|more about)\b"
    r")",
    re.I,
)


def asks_for_something(text: str) -> bool:
    """The turn requests a thing or an action, as opposed to only asking about one."""
    return bool(_REQUEST.search(text))


def asks_for_advice(text: str) -> bool:
    """The turn asks for advice, an opinion or general knowledge: no tool serves it."""
    return any(_ADVICE.search(s) for s in re.split(r"(?<=[.?!])\s+", text.strip()) if s)


def tool_card(tool: ToolSpec) -> str:
    """The text a tool is known by: its name in words and its description."""
    return f"{tool.name.replace('_', ' ')}: {tool.description}".strip(": ")


class ToolRouter:
    """Chooses the tool a caller's turn needs (`route`), with one sentence encoder
    for the process. Tool cards' vectors are kept (the same tools serve many turns)."""

    def __init__(self, encoder: SentenceEncoder, settings: RouterSettings | None = None) -> None:
        self._encoder = encoder
        self.settings = settings or RouterSettings()
        self._cards: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def route(self, texts: Sequence[str], tools: Sequence[ToolSpec]) -> Route | None:
        """The tool the last of `texts` (the caller's recent turns, oldest first) needs,
        or None: the turn is answered in words. Blocking (a model runs): call it
        from a thread in an event loop."""
        if not texts or not tools or not texts[-1].strip():
            return None
        similarities = self._similarities(texts, tools)
        best = float(similarities.max())
        cfg = self.settings
        advice = asks_for_advice(texts[-1])
        request = any(asks_for_something(t) for t in texts)
        for index in np.argsort(-similarities):
            tool, similarity = tools[int(index)], float(similarities[int(index)])
            if similarity < best - cfg.max_below_best:
                break
            arguments = candidates(tool, texts)
            typed = [a for a in arguments if a.required and a.kind.typed]
            optional = [a for a in arguments if not a.required and a.kind.typed]
            if typed or optional:
                # every required value given; a tool that requires none, one of its own
                evident = (
                    all(a.evident for a in typed) if typed else any(a.evident for a in optional)
                )
                if similarity >= cfg.min_similarity and evident:
                    return Route(tool, arguments, similarity)
                continue
            if advice or any(a.required and not a.values for a in arguments):
                continue
            needed = cfg.request_similarity if request else cfg.free_similarity
            if similarity >= needed:
                return Route(tool, arguments, similarity)
        return None

    def best(self, texts: Sequence[str], tools: Sequence[ToolSpec]) -> Route:
        """The most likely of `tools` for `texts`, whatever the evidence
        (`tool_choice: "required"`)."""
        similarities = self._similarities(texts or [""], tools)
        index = int(np.argmax(similarities))
        tool = tools[index]
        return Route(tool, candidates(tool, texts), float(similarities[index]))

    def _similarities(self, texts: Sequence[str], tools: Sequence[ToolSpec]) -> np.ndarray:
        """Each tool's similarity to the caller's turns: the best over the turns, so a
        request made over two turns ("I'd like to book a table." "For four, on
        Friday.") is still recognised."""
        vectors = self._encoder.encode(list(texts))
        scores: np.ndarray = (self._card_vectors(tools) @ vectors.T).max(axis=1)
        return scores

    def arguments(self, texts: Sequence[str], tool: ToolSpec) -> Route:
        """`tool`, chosen by the client (a named `tool_choice`), with its candidate values."""
        return Route(tool, candidates(tool, texts), 1.0)

    def _card_vectors(self, tools: Sequence[ToolSpec]) -> np.ndarray:
        cards = [tool_card(t) for t in tools]
        with self._lock:
            known = {c: self._cards.get(c) for c in cards}
        missing = [c for c, v in known.items() if v is None]
        if missing:
            vectors = self._encoder.encode(missing)
            with self._lock:
                for card, vector in zip(missing, vectors, strict=True):
                    known[card] = self._cards[card] = vector
                while len(self._cards) > 512:
                    self._cards.popitem(last=False)
        return np.stack([v for c in cards if (v := known[c]) is not None])


_shared: ToolRouter | None = None
_shared_lock = threading.Lock()
_missing_logged = False


def shared_router() -> ToolRouter | None:
    """The process's router on the packaged sentence encoder, loaded (and warmed) on
    first use; None when the encoder's package is not installed."""
    global _shared, _missing_logged
    with _shared_lock:
        if _shared is None:
            encoder = shared_encoder()
            if encoder is None:
                if not _missing_logged:
                    log.warning(
                        "no sentence encoder installed (%s): the embedded model chooses "
                        "tools by itself",
                        EMBEDDING_PACKAGE,
                    )
                    _missing_logged = True
                return None
            encoder.encode(["warm up"])
            _shared = ToolRouter(encoder)
        return _shared
