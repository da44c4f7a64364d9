"""The inference messages: what each encoder writes, that each decoder reads it back,
and that each decoder refuses a message missing a field or carrying a wrong type."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from channels_redis.core import RedisChannelLayer

from voiceapp.engine.asr import DEFAULT_ASR_MODEL, Transcript
from voiceapp.engine.audio import float_to_pcm16
from voiceapp.engine.llm import LLMOptions, Message, PromptUsage
from voiceapp.engine.tts import VoiceSpec
from voiceapp.inference import protocol as p

PCM = float_to_pcm16(np.linspace(-0.5, 0.5, 160, dtype=np.float32))
TRANSCRIPT = Transcript(
    text="What is the capital of France?",
    no_speech_prob=0.01,
    avg_logprob=-0.2,
    audio_seconds=1.5,
    rejected=None,
    reads=2,
    queue_ms=3.5,
)
OPTIONS = LLMOptions(
    max_tokens=40, temperature=0.3, model="m", backend="http", session="call-1", repeat_penalty=1.2
)
VOICE = VoiceSpec(voice_id="joe", model_path="/voices/joe.onnx", speed=1.1)
WORKER = "inference.worker.abc"
REPLY = "inference.reply.def"


def request(kind: str, payload: p.Payload) -> p.Request:
    return p.encode_request(
        kind, payload, request_id="r1", reply_channel=REPLY, accept_by=1000.5, queued_at=999.0
    )


# name -> (decoder, encoded message, fields a valid message may leave out)
EXAMPLES: dict[str, tuple[Callable[[object], Any], Any, set[str]]] = {
    "asr request": (
        p.decode_request,
        request("asr", p.encode_asr_payload(PCM, "de", "small")),
        set(),
    ),
    "caption request": (
        p.decode_request,
        request("caption", p.encode_asr_payload(PCM, "en", "tiny.en")),
        set(),
    ),
    "llm request": (
        p.decode_request,
        request("llm", p.encode_llm_payload([{"role": "user", "content": "Hello"}], OPTIONS)),
        set(),
    ),
    "tts request": (p.decode_request, request("tts", p.encode_tts_payload("Hi.", VOICE)), set()),
    "eou request": (
        p.decode_request,
        request("eou", p.encode_eou_payload("I would like", "How can I help?")),
        set(),
    ),
    "accepted": (p.decode_accepted, p.encode_accepted("r1", worker=WORKER), set()),
    "heartbeat": (p.decode_heartbeat, p.encode_heartbeat("r1", worker=WORKER), {"worker"}),
    "result": (
        p.decode_result,
        p.encode_result("r1", TRANSCRIPT, worker=WORKER),
        {"worker", "transcript.reads", "transcript.queue_ms", "transcript.discarded"},
    ),
    "token": (
        p.decode_token,
        p.encode_token(
            "r1", "Paris", worker=WORKER, queue_ms=12.5, usage=PromptUsage(input_tokens=30)
        ),
        {"worker", "queue_ms", "usage"},
    ),
    "audio": (p.decode_audio, p.encode_audio("r1", PCM, 22050, worker=WORKER), {"worker"}),
    "score": (p.decode_score, p.encode_score("r1", 0.83, worker=WORKER), {"worker"}),
    "done": (
        p.decode_done,
        p.encode_done("r1", worker=WORKER, queue_ms=3.0, usage=PromptUsage(30, 24)),
        {"worker", "queue_ms", "usage"},
    ),
    "error": (
        p.decode_error,
        p.encode_error("r1", "tts_failed", "no such voice", worker=WORKER),
        {"worker"},
    ),
    "cancel": (p.decode_cancel, p.encode_cancel("r1"), set()),
    "closed": (p.decode_closed, p.encode_closed(), set()),
}


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_message_decodes_to_what_was_encoded(name: str) -> None:
    decode, message, _ = EXAMPLES[name]
    assert decode(copy.deepcopy(message)) == message


@pytest.mark.parametrize("name", EXAMPLES)
async def test_every_message_crosses_the_redis_layer_intact(
    name: str, make_layer: Callable[[], RedisChannelLayer]
) -> None:
    # given a message encoded by one process
    message = EXAMPLES[name][1]
    layer = make_layer()
    # when it goes through Redis (msgpack) and the receiver decodes it by its type
    await layer.send("inference.test", message)
    received = await layer.receive("inference.test")
    decoded: object
    if message["type"] in (p.REQUEST, p.CANCEL):
        decoded = p.decode_worker_message(received)
    else:
        decoded = p.decode_received(received)
    # then it is the message that was sent
    assert decoded == message


def test_the_request_on_the_wire_has_the_documented_fields() -> None:
    # the layout old and new processes share; a change here breaks mixed deployments
    assert request("asr", p.encode_asr_payload(PCM, "en", "tiny.en")) == {
        "type": "inference.request",
        "kind": "asr",
        "request_id": "r1",
        "reply_channel": REPLY,
        "accept_by": 1000.5,
        "queued_at": 999.0,
        "payload": {"audio": PCM, "language": "en", "model": "tiny.en"},
    }
    assert p.encode_llm_payload([{"role": "user", "content": "Hi"}], OPTIONS) == {
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 40,
        "temperature": 0.3,
        "model": "m",
        "backend": "http",
        "session": "call-1",
        "repeat_penalty": 1.2,
    }
    assert p.encode_tts_payload("Hi.", VOICE) == {
        "text": "Hi.",
        "voice_id": "joe",
        "model_path": "/voices/joe.onnx",
        "speed": 1.1,
    }
    # a clause made in the background says so; an urgent one has no such field
    assert p.encode_tts_payload("Hi.", VOICE, background=True)["background"] is True
    assert p.encode_eou_payload("So") == {"text": "So", "previous_reply": ""}


def test_the_replies_on_the_wire_have_the_documented_fields() -> None:
    assert p.encode_result("r1", TRANSCRIPT, worker=WORKER) == {
        "type": "inference.result",
        "request_id": "r1",
        "worker": WORKER,
        "transcript": {
            "text": "What is the capital of France?",
            "no_speech_prob": 0.01,
            "avg_logprob": -0.2,
            "audio_seconds": 1.5,
            "rejected": None,
            "reads": 2,
            "queue_ms": 3.5,
            "discarded": "",
        },
    }
    # a reply's first token carries its queue time and, when known, its prompt count
    first = p.encode_token("r1", "Par", worker=WORKER, queue_ms=4.0, usage=PromptUsage(9, 0))
    assert first == {
        "type": "inference.token",
        "request_id": "r1",
        "text": "Par",
        "queue_ms": 4.0,
        "usage": {"input_tokens": 9, "cached_tokens": 0},
        "worker": WORKER,
    }
    later = p.encode_token("r1", "is", worker=WORKER)
    assert later == {"type": "inference.token", "request_id": "r1", "text": "is", "worker": WORKER}
    assert p.encode_done("r1", worker=WORKER) == {
        "type": "inference.done",
        "request_id": "r1",
        "worker": WORKER,
    }
    assert p.encode_cancel("r1") == {"type": "inference.cancel", "request_id": "r1"}


def test_llm_options_and_voice_come_back_from_their_payloads() -> None:
    llm = p.decode_llm_payload(p.encode_llm_payload([{"role": "user", "content": "x"}], OPTIONS))
    assert p.as_llm_options(llm) == OPTIONS
    assert p.as_chat_messages(llm) == [{"role": "user", "content": "x"}]
    assert p.as_voice(p.decode_tts_payload(p.encode_tts_payload("x", VOICE))) == VOICE
    assert p.as_transcript(p.decode_transcript(p.encode_transcript(TRANSCRIPT))) == TRANSCRIPT
    usage = PromptUsage(input_tokens=5, cached_tokens=2)
    assert p.as_prompt_usage(p.decode_usage(p.encode_usage(usage))) == usage


def test_a_tts_request_says_whether_its_clause_is_made_in_the_background() -> None:
    background = p.encode_tts_payload("Later words.", VOICE, background=True)
    assert p.decode_tts_payload(background)["background"] is True
    # from a caller that does not say (an older web process): urgent, as before
    assert "background" not in p.decode_tts_payload(p.encode_tts_payload("x", VOICE))
    assert "background" not in p.decode_tts_payload({**background, "background": False})
    message = request("tts", {**background, "background": "yes"})
    with pytest.raises(p.ProtocolError) as error:
        p.decode_request(message, "tts")
    assert str(error.value) == (
        "inference.request: field 'payload.background' must be true or false, not str"
    )


def test_an_llm_request_says_whether_it_reads_the_callers_words_open() -> None:
    messages: list[Message] = [{"role": "user", "content": "What is the"}]
    read = p.encode_llm_payload(messages, replace(OPTIONS, open_turn=True))
    assert p.as_llm_options(p.decode_llm_payload(read)).open_turn is True
    # from a caller that does not say (an older web process): a reply, as before
    plain = p.decode_llm_payload(p.encode_llm_payload(messages, OPTIONS))
    assert "open_turn" not in plain and p.as_llm_options(plain).open_turn is False
    message = request("llm", {**read, "open_turn": 1})
    with pytest.raises(p.ProtocolError) as error:
        p.decode_request(message, "llm")
    assert str(error.value) == (
        "inference.request: field 'payload.open_turn' must be true or false, not int"
    )


def test_a_transcript_from_a_worker_that_does_not_say_is_one_reading_of_unknown_wait() -> None:
    # an older worker's result: no "reads", no "queue_ms"
    payload = p.decode_transcript(
        {"text": "Hi.", "no_speech_prob": 0.1, "avg_logprob": -0.3, "audio_seconds": 0.8,
         "rejected": None}
    )  # fmt: skip
    transcript = p.as_transcript(payload)
    assert (transcript.reads, transcript.queue_ms) == (1, None)
    with pytest.raises(p.ProtocolError, match="reads"):
        p.decode_transcript({**p.encode_transcript(TRANSCRIPT), "reads": 0})


def test_an_empty_asr_model_means_the_default_one() -> None:
    payload = p.decode_asr_payload({"audio": PCM, "language": "en", "model": ""})
    assert payload["model"] == DEFAULT_ASR_MODEL


def fields(value: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """Every field of a message, nested ones too: (path, its container, its key)."""
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{path}.{key}" if path else key
            yield name, value, key
            yield from fields(item, name)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from fields(item, f"{path}[{i}]")


def field_cases() -> list[Any]:
    return [
        pytest.param(name, path, id=f"{name}:{path}")
        for name, (_, message, _) in EXAMPLES.items()
        for path, _, _ in fields(message)
    ]


def locate(message: Any, path: str) -> tuple[Any, Any]:
    for found, container, key in fields(message):
        if found == path:
            return container, key
    raise AssertionError(path)


@pytest.mark.parametrize(("name", "path"), field_cases())
def test_a_missing_field_is_refused_by_name(name: str, path: str) -> None:
    # given a valid message with one field taken out
    decode, message, optional = EXAMPLES[name]
    broken = copy.deepcopy(message)
    container, key = locate(broken, path)
    del container[key]
    if path in optional:
        # then an optional one may be left out
        assert path not in decode(broken)
        return
    # then the decoder refuses it, naming the message and the field
    with pytest.raises(p.ProtocolError) as error:
        decode(broken)
    assert isinstance(error.value, ValueError)
    assert error.value.message_type == message["type"]
    assert error.value.field == path
    assert f"{message['type']}: field {path!r} is missing" == str(error.value)


@pytest.mark.parametrize(("name", "path"), field_cases())
def test_a_field_of_the_wrong_type_is_refused_by_name(name: str, path: str) -> None:
    # given a valid message with one field's value of another type (a list where
    # anything else is wanted, a string where a list is)
    decode, message, _ = EXAMPLES[name]
    broken = copy.deepcopy(message)
    container, key = locate(broken, path)
    container[key] = "not a list" if isinstance(container[key], list) else [1]
    # then the decoder refuses it, naming the message and the field
    with pytest.raises(p.ProtocolError) as error:
        decode(broken)
    assert error.value.message_type == message["type"]
    assert error.value.field == path
    assert str(error.value).startswith(f"{message['type']}: field {path!r} ")


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("payload.temperature", True, "'payload.temperature' must be a number, not bool"),
        ("accept_by", "soon", "'accept_by' must be a number, not str"),
        ("request_id", "", "'request_id' must not be empty"),
        ("kind", "video", "'kind' must be one of asr, llm, tts, eou, caption, not 'video'"),
        ("payload.messages", ["Hello"], "'payload.messages[0]' is not a dict (str)"),
    ],
)
def test_a_request_with_a_bad_value_is_refused(path: str, value: Any, expected: str) -> None:
    broken = copy.deepcopy(EXAMPLES["llm request"][1])
    container, key = locate(broken, path)
    container[key] = value
    with pytest.raises(p.ProtocolError) as error:
        p.decode_request(broken)
    assert str(error.value) == f"inference.request: field {expected}"


def test_audio_must_be_whole_pcm16_samples() -> None:
    with pytest.raises(p.ProtocolError, match=r"'pcm' has 3 bytes"):
        p.decode_audio(p.encode_audio("r1", b"\x00\x01\x02", 16000, worker=WORKER))
    with pytest.raises(p.ProtocolError, match=r"'sample_rate' must be at least 1"):
        p.decode_audio(p.encode_audio("r1", PCM, 0, worker=WORKER))


def test_a_request_on_another_kinds_channel_is_refused() -> None:
    message = EXAMPLES["tts request"][1]
    assert p.decode_request(message, "tts") == message
    with pytest.raises(p.ProtocolError) as error:
        p.decode_request(message, "asr")
    assert str(error.value) == "inference.request: field 'kind' is 'tts' on inference.asr"


def test_an_error_keeps_the_address_of_what_it_refused() -> None:
    # a worker answers a malformed request when it can tell where to
    broken = copy.deepcopy(EXAMPLES["llm request"][1])
    del broken["payload"]["messages"]
    with pytest.raises(p.ProtocolError) as error:
        p.decode_request(broken)
    assert (error.value.request_id, error.value.reply_channel) == ("r1", REPLY)
    assert error.value.field == "payload.messages"
    # and a caller knows which worker sent a malformed reply
    with pytest.raises(p.ProtocolError) as error:
        p.decode_received({"type": "inference.token", "request_id": "r2", "worker": WORKER})
    assert (error.value.request_id, error.value.worker) == ("r2", WORKER)


@pytest.mark.parametrize(
    ("decode", "raw", "expected"),
    [
        (p.decode_received, {"type": "inference.request"}, "reply: field 'type' must be one of"),
        (p.decode_received, {"request_id": "r1"}, "reply: field 'type' is missing"),
        (p.decode_worker_message, {"type": "inference.token"}, "worker message: field 'type'"),
        (p.decode_worker_message, "inference.cancel", "worker message: field '(message)' is not"),
        (p.decode_token, {**EXAMPLES["score"][1]}, "inference.token: field 'type' must be"),
    ],
)
def test_a_message_of_an_unknown_or_other_type_is_refused(
    decode: Callable[[object], Any], raw: object, expected: str
) -> None:
    with pytest.raises(p.ProtocolError) as error:
        decode(raw)
    assert str(error.value).startswith(expected)


def test_a_request_cannot_be_encoded_for_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown inference kind 'video'"):
        p.encode_request(
            "video", p.encode_eou_payload("x"), request_id="r", reply_channel=REPLY, accept_by=0
        )
