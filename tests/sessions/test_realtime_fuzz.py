"""Random and mutated client events against the real `/v1/realtime` consumer.

hypothesis draws batches of events: every client event type with valid,
random and mutated fields (session.update with random nested values, audio
appends with random or broken base64, item create/truncate/delete, response
create/cancel), unknown types, text that is not JSON, JSON that is not an
object, binary frames and deep nesting. Real speech is appended between them,
so turns are detected, transcribed and answered while the fuzz runs.

All batches go to one socket (a session start costs seconds). After each batch
an event of an unknown type acts as a barrier: its `error` proves every event
before it was handled. The test asserts that no event crashes the consumer
(close 1011, a traceback in the server log), that the events known to be bad
got an `error`, and that a spoken question still gets a transcript and a reply.

A crash is narrowed down to the one event that causes it (replayed alone on a
fresh socket) and fuzzing goes on on another socket, so one run lists every
distinct crash. FUZZ_EVENTS sets how many fuzz events (800 by default, the suite's slice; `./dev
bench fuzz` sends 10,000),
FUZZ_SEED the seed; both are printed.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import random
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import websockets
from hypothesis import HealthCheck, Phase, given, seed
from hypothesis import settings as fuzz_settings
from hypothesis import strategies as st

from tests.support.calls import wait_calls_ended
from tests.support.live_server import LiveServer
from tests.support.loops import close_loop
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona
from voiceapp.tenants.services import secret_key_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(1800)]

EVENTS = int(os.environ.get("FUZZ_EVENTS", "800"))
SEED = int(os.environ.get("FUZZ_SEED") or random.randrange(2**32))
BATCH = 40  # fuzz events between two barriers
DEEP_EVERY = 10
# Each crash costs a fresh session or two (and leaves one running on a server
# that does not end it); past this many the run stops.
MAX_CRASHES = int(os.environ.get("FUZZ_MAX_CRASHES", "12"))
KNOWN_TYPES = [
    "session.update",
    "input_audio_buffer.append",
    "input_audio_buffer.commit",
    "input_audio_buffer.clear",
    "conversation.item.create",
    "conversation.item.truncate",
    "conversation.item.delete",
    "conversation.item.retrieve",
    "response.create",
    "response.cancel",
]

# ----- what a client could send ------------------------------------------------

leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),  # NaN and Infinity too: Python's json reads them
    st.text(max_size=24),
)
json_value = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)


def maybe(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a valid value, sometimes any JSON at all."""
    return st.one_of(valid, valid, valid, json_value)


def optional(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={k: maybe(v) for k, v in fields.items()})


formats = st.sampled_from(
    [
        {"type": "audio/pcm", "rate": 24000},
        {"type": "audio/pcmu"},
        {"type": "audio/pcma"},
        {"type": "audio/pcm", "rate": 16000},
        {"type": "audio/opus"},
        {"type": "audio/pcm"},
    ]
)
turn_detection = st.one_of(
    st.none(),
    optional(
        type=st.sampled_from(["server_vad", "semantic_vad", "none"]),
        threshold=st.floats(0, 1),
        prefix_padding_ms=st.integers(0, 1000),
        silence_duration_ms=st.integers(0, 3000),
        create_response=st.booleans(),
        interrupt_response=st.booleans(),
        eagerness=st.sampled_from(["low", "medium", "high", "auto"]),
        idle_timeout_ms=st.integers(30_000, 120_000),
    ),
)
session = optional(
    type=st.just("realtime"),
    instructions=st.text(max_size=200),
    output_modalities=st.sampled_from([["audio"], ["text"], ["audio", "text"], []]),
    max_output_tokens=st.one_of(st.integers(1, 40), st.just("inf")),
    audio=optional(
        input=optional(
            format=formats,
            transcription=st.one_of(
                st.none(),
                optional(
                    model=st.text(max_size=20),
                    language=st.sampled_from(["en", "de", "xx", ""]),
                    prompt=st.text(max_size=40),
                ),
            ),
            turn_detection=turn_detection,
            noise_reduction=st.one_of(st.none(), st.just({"type": "near_field"})),
        ),
        output=optional(
            format=formats,
            voice=st.sampled_from(["en_US-joe-medium", "alloy", ""]),
            speed=st.floats(0.25, 4),
        ),
    ),
    model=st.text(max_size=20),
    tools=json_value,
    tool_choice=json_value,
    temperature=st.floats(0, 2),
    truncation=json_value,
    include=json_value,
    tracing=json_value,
    prompt=json_value,
)
valid_formats = st.sampled_from(
    [{"type": "audio/pcm", "rate": 24000}, {"type": "audio/pcmu"}, {"type": "audio/pcma"}]
)


def some_or_all(
    fields: dict[str, st.SearchStrategy[Any]], **required: st.SearchStrategy[Any]
) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with some of `fields`, or with all of them (so a mutation lands deep)."""
    return st.one_of(
        st.fixed_dictionaries(required, optional=fields),
        st.fixed_dictionaries({**required, **fields}),
    )


valid_session = some_or_all(
    {
        "type": st.just("realtime"),
        "instructions": st.text(max_size=200),
        "output_modalities": st.sampled_from([["audio"], ["text"]]),
        "max_output_tokens": st.integers(1, 40),
        "audio": some_or_all(
            {
                "input": some_or_all(
                    {
                        "format": valid_formats,
                        "transcription": st.one_of(
                            st.none(), st.fixed_dictionaries({"language": st.just("en")})
                        ),
                        "turn_detection": st.one_of(
                            st.none(),
                            some_or_all(
                                {
                                    "threshold": st.floats(0.1, 0.9),
                                    "prefix_padding_ms": st.integers(0, 1000),
                                    "silence_duration_ms": st.integers(200, 1500),
                                    "create_response": st.booleans(),
                                    "interrupt_response": st.booleans(),
                                    "idle_timeout_ms": st.integers(60_000, 120_000),
                                },
                                type=st.just("server_vad"),
                            ),
                            some_or_all(
                                {
                                    "eagerness": st.sampled_from(["low", "medium", "high"]),
                                    "create_response": st.booleans(),
                                },
                                type=st.just("semantic_vad"),
                            ),
                        ),
                    }
                ),
                "output": some_or_all({"format": valid_formats, "speed": st.floats(0.5, 1.5)}),
            }
        ),
    }
)
content_part = optional(
    type=st.sampled_from(["input_text", "output_text", "text", "input_audio", "audio"]),
    text=st.text(max_size=200),
    audio=st.binary(max_size=64).map(lambda b: base64.b64encode(b).decode()),
    transcript=st.text(max_size=40),
)
item = optional(
    id=st.text(max_size=20),
    type=st.sampled_from(["message", "function_call", "function_call_output", "bogus"]),
    role=st.sampled_from(["user", "assistant", "system", "tool", "x"]),
    content=st.lists(content_part, max_size=3),
    call_id=st.text(max_size=10),
    output=st.text(max_size=40),
    name=st.text(max_size=10),
    arguments=st.text(max_size=40),
)
item_id = st.one_of(st.text(max_size=24), st.sampled_from(["item_x", "root", ""]))
b64 = st.binary(max_size=6000).map(lambda b: base64.b64encode(b).decode())
bad_b64 = st.sampled_from(["%%%not base64", "A", "AAA", "====", "\u00e9\u00e9", "A" * 7])

valid_events = st.one_of(
    st.fixed_dictionaries({"type": st.just("session.update"), "session": maybe(session)}),
    st.fixed_dictionaries(
        {"type": st.just("input_audio_buffer.append"), "audio": st.one_of(b64, json_value)}
    ),
    st.fixed_dictionaries({"type": st.just("input_audio_buffer.commit")}),
    st.fixed_dictionaries({"type": st.just("input_audio_buffer.clear")}),
    st.fixed_dictionaries(
        {"type": st.just("conversation.item.create"), "item": maybe(item)},
        optional={"previous_item_id": maybe(item_id)},
    ),
    st.fixed_dictionaries(
        {"type": st.just("conversation.item.truncate")},
        optional={
            "item_id": maybe(item_id),
            "content_index": maybe(st.integers(-1, 3)),
            "audio_end_ms": maybe(st.integers(-10, 100_000)),
        },
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["conversation.item.delete", "conversation.item.retrieve"])},
        optional={"item_id": maybe(item_id)},
    ),
    st.fixed_dictionaries(
        {"type": st.just("response.create")},
        optional={
            "response": maybe(
                st.one_of(
                    st.none(),
                    optional(
                        instructions=st.text(max_size=80),
                        output_modalities=st.sampled_from([["audio"], ["text"]]),
                        max_output_tokens=st.integers(1, 30),
                        conversation=st.sampled_from(["auto", "none"]),
                        input=st.lists(item, max_size=2),
                        metadata=json_value,
                    ),
                )
            )
        },
    ),
    st.fixed_dictionaries(
        {"type": st.just("response.cancel")}, optional={"response_id": maybe(st.text())}
    ),
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside nested objects and lists where a value sits."""
    found: list[tuple[Any, ...]] = []
    children = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else []
    )
    for key, child in children:
        found.append((*prefix, key))
        found.extend(paths(child, (*prefix, key)))
    return found


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    """A valid event with one to three places changed: a value replaced by any JSON,
    a key dropped or added, a value wrapped in a list, the type's case changed."""
    event = json.loads(json.dumps(draw(base)))
    for _ in range(draw(st.integers(1, 3))):
        places = [p for p in paths(event) if p != ("type",)]
        how = draw(st.sampled_from(["replace", "replace", "drop", "add", "wrap", "type"]))
        if how == "type":
            event["type"] = draw(st.sampled_from(KNOWN_TYPES)).upper()
            continue
        if not places:
            event[draw(st.text(max_size=10))] = draw(json_value)
            continue
        *parent_path, key = draw(st.sampled_from(places))
        parent = event
        for step in parent_path:
            parent = parent[step]
        if how == "replace":
            parent[key] = draw(json_value)
        elif how == "drop":
            del parent[key]
        elif how == "add" and isinstance(parent[key], dict):
            parent[key][draw(st.text(max_size=10))] = draw(json_value)
        elif how == "wrap":
            parent[key] = [parent[key]]
    return event


@dataclass(frozen=True)
class Message:
    """One frame to send, and whether the server must answer it with an `error`
    (`expect`: "id" for an error naming its event_id, "anon" for one without)."""

    kind: str
    data: str | bytes
    expect: str = ""
    event_id: str = ""


ids = itertools.count()


def as_event(kind: str, event: dict[str, Any], expect: str = "") -> Message:
    event_id = f"fz_{next(ids)}"
    if isinstance(event, dict) and "event_id" not in event:
        event = {**event, "event_id": event_id}
    return Message(kind, json.dumps(event), expect, event_id)


def unknown_event(name: str) -> Message:
    return as_event("unknown_type", {"type": f"fuzz.{name}"}, expect="id")


def bad_audio(audio: str) -> Message:
    return as_event(
        "bad_base64", {"type": "input_audio_buffer.append", "audio": audio}, expect="id"
    )


def nested(depth: int, opener: str) -> str:
    if opener == "[":
        return "[" * depth + "1" + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


good_session_update = st.fixed_dictionaries(
    {"type": st.just("session.update"), "session": valid_session}
)
ordinary = st.one_of(
    good_session_update.map(lambda e: as_event("session.update", e)),
    mutated(good_session_update).map(lambda e: as_event("mutated session.update", e)),
    mutated(good_session_update).map(lambda e: as_event("mutated session.update", e)),
    valid_events.map(lambda e: as_event(e["type"], e)),
    valid_events.map(lambda e: as_event(e["type"], e)),
    mutated(valid_events).map(lambda e: as_event("mutated", e)),
    st.text(max_size=30).map(unknown_event),
    bad_b64.map(bad_audio),
    st.text(max_size=60)
    .filter(lambda t: not is_json(t))
    .map(lambda t: Message("not_json", t, "anon")),
    valid_events.map(lambda e: json.dumps(e)[:-1]).map(lambda t: Message("not_json", t, "anon")),
    json_value.filter(lambda v: not isinstance(v, dict)).map(
        lambda v: Message("not_object", json.dumps(v), "anon")
    ),
    st.binary(max_size=64).map(lambda b: Message("binary", b, "anon")),
)
deep_nesting = st.builds(
    lambda depth, opener, wrap: Message(
        "deep_nesting",
        json.dumps({"type": "session.update", "session": {"instructions": "x"}})[:-1]
        + ',"deep":'
        + nested(depth, opener)
        + "}"
        if wrap
        else nested(depth, opener),
    ),
    st.sampled_from([40, 200, 900, 3000, 6000]),
    st.sampled_from(["[", "{"]),
    st.booleans(),
)
# Every DEEP_EVERY-th batch also carries one deeply nested message.
batches = st.tuples(st.lists(ordinary, min_size=BATCH, max_size=BATCH), deep_nesting)


# ----- one socket ---------------------------------------------------------------


@dataclass
class Socket:
    """A client connection that reads everything the server sends in the background."""

    ws: Any
    errors_by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    anonymous_errors: list[str] = field(default_factory=list)
    received: Counter[str] = field(default_factory=Counter)
    closed: tuple[int | None, str] | None = None
    _new: asyncio.Event = field(default_factory=asyncio.Event)
    _reader: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, server: LiveServer, key: str) -> Socket:
        ws = await websockets.connect(
            f"{server.ws_url}/v1/realtime?model=assistant",
            additional_headers={"Authorization": f"Bearer {key}"},
            max_size=None,
        )
        socket = cls(ws)
        socket._reader = asyncio.ensure_future(socket._read())
        await socket.wait_for(lambda: socket.received["session.created"] > 0, 30)
        return socket

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                event = json.loads(raw)
                self.received[event["type"]] += 1
                if event["type"] == "error":
                    error = event["error"]
                    if error.get("event_id"):
                        self.errors_by_id[error["event_id"]] = error
                    else:
                        self.anonymous_errors.append(error["code"])
                self._new.set()
        except websockets.ConnectionClosed:
            pass
        self.closed = (self.ws.close_code, self.ws.close_reason or "")
        self._new.set()

    async def wait_for(self, done: Callable[[], bool], timeout_s: float) -> None:
        async with asyncio.timeout(timeout_s):
            while not done():
                if self.closed:
                    return
                self._new.clear()
                await self._new.wait()

    async def send(self, message: Message) -> bool:
        """False when the socket is already closed."""
        try:
            await self.ws.send(message.data)
        except websockets.ConnectionClosed:
            return False
        return True

    async def barrier(self, timeout_s: float = 60) -> bool:
        """Whether the server handled everything sent so far (and is still there)."""
        marker = unknown_event("barrier")
        if not await self.send(marker):
            return False
        await self.wait_for(lambda: marker.event_id in self.errors_by_id, timeout_s)
        return marker.event_id in self.errors_by_id

    async def close(self) -> None:
        await self.ws.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)


# ----- the server log -------------------------------------------------------------


class ServerLog:
    """What the live server logged since the last look."""

    def __init__(self, server: LiveServer) -> None:
        assert server.logs is not None
        self.path: Path = server.logs / "web.log"
        self.offset = self.path.stat().st_size

    def new_text(self) -> str:
        with self.path.open(errors="replace") as f:
            f.seek(self.offset)
            text = f.read()
        self.offset += len(text.encode(errors="replace"))
        return text


def problems(log_text: str) -> list[str]:
    """Tracebacks and ERROR lines, each with the exception and where it was raised."""
    found = []
    for block in re.split(r"(?=Traceback \(most recent call last\))", log_text):
        if not block.startswith("Traceback"):
            continue
        frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', block)
        ours = [f for f in frames if "/sessions/" in f[0] or "/voiceapp/" in f[0]] or frames
        where = f"{Path(ours[-1][0]).name}:{ours[-1][1]} in {ours[-1][2]}" if ours else "?"
        # the exception is the first line after the frames that is not indented
        raised = next(
            (ln for ln in block.splitlines()[1:] if ln.strip() and not ln.startswith(" ")), "?"
        )
        found.append(f"{raised} at {where}")
    for line in log_text.splitlines():
        if " ERROR " in line and "Traceback" not in line:
            found.append(line.split(" ERROR ", 1)[1][:200])
    return found


# ----- the test -------------------------------------------------------------------


@dataclass
class Crash:
    batch: int
    close: tuple[int | None, str] | None
    logged: list[str]
    event: str | None = None  # the one event that crashes it on its own, if found


def fresh_key(make_tenant: Callable[..., Tenant]) -> str:
    """A new organization (its own concurrency slots) with a quiet persona and a key."""
    tenant = make_tenant()
    Persona.objects.filter(org=tenant.org).update(agent_speaks_first=False)
    return secret_key_create(org=tenant.org, name="fuzz")[1]


def speech_chunks(pcm: bytes) -> list[Message]:
    """The question, then 1.5 s of silence, as 40 ms appends."""
    audio = pcm + bytes(24000 * 2 * 3 // 2)
    size = 24000 * 2 // 25
    return [
        as_event(
            "speech",
            {
                "type": "input_audio_buffer.append",
                "audio": base64.b64encode(audio[i : i + size]).decode(),
            },
        )
        for i in range(0, len(audio), size)
    ]


def test_fuzzed_events_never_crash_the_session(
    voice_server: LiveServer, make_tenant: Callable[..., Tenant], question_pcm: bytes
) -> None:
    print(f"\nfuzz realtime: seed {SEED}, {EVENTS} events (FUZZ_SEED={SEED} to repeat)")
    loop = asyncio.new_event_loop()
    log = ServerLog(voice_server)
    speech = speech_chunks(question_pcm)
    cursor = itertools.cycle(range(len(speech)))
    sent: Counter[str] = Counter()
    missing: list[str] = []  # known-bad events that got no error
    crashes: list[Crash] = []
    logged: list[str] = []  # tracebacks and errors in the server log outside crashes
    seen: set[frozenset[str]] = set()
    batch_no = itertools.count()
    socket = loop.run_until_complete(Socket.open(voice_server, fresh_key(make_tenant)))
    started = time.monotonic()

    async def run_batch(batch: list[Message]) -> bool:
        """Send the batch with speech between its events; False when the socket went away."""
        anon_before = len(socket.anonymous_errors)
        for message in batch:
            if not await socket.send(message):
                return False
            sent[message.kind] += 1
            for _ in range(2):  # 80 ms of the question between two fuzz events
                if not await socket.send(speech[next(cursor)]):
                    return False
                sent["speech"] += 1
        if not await socket.barrier():
            return False
        for message in batch:
            if message.expect == "id" and message.event_id not in socket.errors_by_id:
                missing.append(f"{message.kind}: {message.data!r:.200}")
        anonymous = sum(1 for m in batch if m.expect == "anon")
        answered = len(socket.anonymous_errors) - anon_before
        if answered < anonymous:
            missing.append(f"{anonymous - answered} of {anonymous} unparseable frames unanswered")
        return True

    async def culprit(batch: list[Message], key: str) -> str | None:
        """The first event of `batch` that kills a fresh socket on its own."""
        probe = await Socket.open(voice_server, key)
        try:
            for message in batch:
                if not await probe.send(message) or not await probe.barrier(30):
                    return f"{message.kind}: {message.data!r:.160}"
            return None
        finally:
            await probe.close()

    @fuzz_settings(
        max_examples=-(-EVENTS // BATCH),
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @seed(SEED)
    @given(batches)
    def one_batch(drawn: tuple[list[Message], Message]) -> None:
        nonlocal socket
        number = next(batch_no)
        if len(crashes) >= MAX_CRASHES:
            return
        batch, deep = drawn
        if number % DEEP_EVERY == DEEP_EVERY // 2:
            batch = [*batch, deep]
        alive = loop.run_until_complete(run_batch(batch))
        if alive:
            logged.extend(problems(log.new_text()))
            return
        loop.run_until_complete(socket.wait_for(lambda: False, 5))
        loop.run_until_complete(asyncio.sleep(0.5))  # let the server log the traceback
        crash = Crash(number, socket.closed, problems(log.new_text()))
        crashes.append(crash)
        loop.run_until_complete(socket.close())
        signature = frozenset(line for line in crash.logged if " at " in line)
        if signature not in seen:  # a new kind of crash: find the event that causes it
            seen.add(signature)
            crash.event = loop.run_until_complete(culprit(batch, fresh_key(make_tenant)))
            crash.logged += problems(log.new_text())
        socket = loop.run_until_complete(Socket.open(voice_server, fresh_key(make_tenant)))

    try:
        one_batch()
        fuzz_s = time.monotonic() - started
        loop.run_until_complete(socket.close())
        # then a caller on a new socket still gets its question transcribed and answered
        turn = loop.run_until_complete(spoken_turn(voice_server, fresh_key(make_tenant), speech))
    finally:
        close_loop(loop)
    wait_calls_ended()  # the server's last writes, before the teardown's flush
    total = sum(v for k, v in sent.items() if k != "speech")
    distinct = sorted({line for crash in crashes for line in crash.logged})
    print(
        f"fuzz realtime: {total} fuzz events + {sent['speech']} speech appends in {fuzz_s:.1f} s, "
        f"{len(crashes)} crashes ({len(distinct)} distinct), {len(missing)} unanswered, "
        f"{len(logged)} other server errors; "
        f"by kind {dict(sent)}"
    )
    for crash in crashes:
        alone = crash.event or "(a crash seen before, or not one event alone)"
        print(f"  crash in batch {crash.batch}: close {crash.close}; alone: {alone}")
        for line in crash.logged:
            print(f"    {line}")
    for line in sorted(set(logged)):
        print(f"  logged: {line}")
    transcript, reply = turn
    print(f"fuzz realtime: then a new call heard {transcript!r} and replied ({reply['status']})")
    assert total >= EVENTS or crashes
    assert not crashes, f"seed {SEED}: {len(crashes)} crashes: {distinct}"
    assert not missing, f"seed {SEED}: bad events without an error: {missing[:5]}"
    assert not logged, f"seed {SEED}: the server logged {sorted(set(logged))[:10]}"
    assert {"capital", "france"} <= set(re.findall(r"[a-z]+", transcript.lower())), transcript
    assert reply["status"] == "completed" and reply["output"], reply


async def spoken_turn(
    server: LiveServer, key: str, speech: list[Message]
) -> tuple[str, dict[str, Any]]:
    """Speak the question at real-time pace on a new socket: its transcript and the reply."""
    transcripts: list[str] = []
    async with websockets.connect(
        f"{server.ws_url}/v1/realtime?model=assistant",
        additional_headers={"Authorization": f"Bearer {key}"},
        max_size=None,
    ) as ws:

        async def speak() -> None:
            for message in speech:
                await ws.send(message.data)
                await asyncio.sleep(0.04)

        speaker = asyncio.ensure_future(speak())
        try:
            async with asyncio.timeout(90):
                async for raw in ws:
                    event = json.loads(raw)
                    if event["type"] == "conversation.item.input_audio_transcription.completed":
                        transcripts.append(event["transcript"])
                    elif event["type"] == "response.done":
                        return " ".join(transcripts), event["response"]
        finally:
            speaker.cancel()
    raise AssertionError(f"the socket closed before a reply: {transcripts}")
