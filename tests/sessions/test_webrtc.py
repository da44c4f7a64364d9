"""`POST /v1/realtime/calls` and the aiortc peer, with an aiortc client on loopback.

The call test runs against the live server (daphne and an inference worker,
as in production): a real aiortc peer in the test's event loop offers, gets
the answer over HTTP, streams a spoken question as its microphone track at
real-time pace and listens on `oai-events` and on the agent's audio track.
The refusals need no models and run in-process through Django's test client.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aioice.ice
import numpy as np
import pytest
from aiortc import (
    RTCConfiguration,
    RTCPeerConnection,
)
from asgiref.sync import sync_to_async
from channels.testing import HttpCommunicator
from django.core.asgi import get_asgi_application
from django.db import connections
from django.utils import timezone

from bench.rtc import RATE, Client
from sessions import webrtc
from sessions.auth import client_secret_create
from sessions.models import Call, ClientSecret
from sessions.rtp_input import RECEIVER_BUFFER, ArrivalBuffer
from tests.support.live_server import LiveServer
from voiceapp.engine.audio import resample
from voiceapp.personas.models import Persona

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


def words(text: str) -> set[str]:
    return {w.strip(".,?!'\"").lower() for w in text.split()} - {""}


def at_48k(pcm24: bytes) -> np.ndarray:
    return resample(np.frombuffer(pcm24, dtype="<i2").astype(np.float32) / 32768, 24000, RATE)


def http_post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def of_type(kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda e: e.get("type") == kind


@pytest.fixture
def rtc_settings(settings: Any) -> Any:
    settings.WEBRTC_LOOPBACK_ONLY = True  # the test's own peer gathers loopback only, too
    return settings


@pytest.fixture(autouse=True)
async def _close_thread_connections() -> AsyncIterator[None]:
    """The in-process requests query from asgiref's thread: close its connection after."""
    yield
    await sync_to_async(connections.close_all)()


@pytest.fixture
def persona(tenant_a: Any) -> Persona:
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    persona.temperature = 0.0
    persona.max_reply_tokens = 40
    persona.save()
    return persona


@pytest.fixture
def make_secret(persona: Persona) -> Callable[..., str]:
    def make(ttl_s: int = 60) -> str:
        return client_secret_create(org=persona.org, persona=persona, ttl_s=ttl_s)[1]

    return make


@pytest.fixture
async def client_peer() -> AsyncIterator[Client]:
    webrtc.install_loopback_filter()
    client = Client()
    yield client
    await client.close()


@dataclass
class Reply:
    status_code: int
    headers: dict[str, str]
    content: bytes

    def __getitem__(self, name: str) -> str:
        return self.headers[name.lower()]


async def asgi(method: str, path: str, body: bytes = b"", **headers: str) -> Reply:
    """One request through Django's ASGI handler in this event loop (as daphne runs it)."""
    raw = [(b"host", b"127.0.0.1")] + [
        (k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()
    ]
    communicator = HttpCommunicator(get_asgi_application(), method, path, body, raw)
    response = await communicator.get_response(timeout=30)
    await communicator.wait()
    return Reply(
        response["status"],
        {k.decode().lower(): v.decode() for k, v in response["headers"]},
        response["body"],
    )


async def post_offer(sdp: str, secret: str | None, **params: str) -> Reply:
    headers = {"authorization": f"Bearer {secret}"} if secret else {}
    query = "&".join(f"{k}={v}" for k, v in params.items())
    path = "/v1/realtime/calls" + (f"?{query}" if query else "")
    return await asgi("POST", path, sdp.encode(), content_type="application/sdp", **headers)


async def call_ended(call_id: str, timeout_s: float = 10.0) -> Call:
    async with asyncio.timeout(timeout_s):
        while True:
            call = await Call.objects.aget(pk=call_id)
            if call.ended_at is not None:
                return call
            await asyncio.sleep(0.1)


@pytest.mark.slow
async def test_spoken_question_over_webrtc(
    rtc_settings: Any,
    voice_server: LiveServer,
    persona: Persona,
    make_secret: Callable[..., str],
    client_peer: Client,
    question_pcm: bytes,
) -> None:
    from tests.support.models import shared_models

    # given a caller with a client secret, and the persona greeting first
    secret = await sync_to_async(make_secret)()
    client = client_peer
    # when it offers and applies the answer
    status, headers, body = await asyncio.to_thread(
        http_post,
        f"{voice_server.url}/v1/realtime/calls?model={persona.slug}",
        (await client.offer()).encode(),
        {"Content-Type": "application/sdp", "Authorization": f"Bearer {secret}"},
    )
    assert status == 201, body
    assert headers["Content-Type"] == "application/sdp"
    call_id = headers["Location"].rsplit("/", 1)[1]
    assert headers["Location"] == f"/v1/realtime/calls/{call_id}"
    await client.accept(body.decode())
    # then the session starts on the data channel and the greeting is spoken
    _, created = await client.wait_for(of_type("session.created"), 20)
    assert created["session"]["type"] == "realtime"
    i, greeting = await client.wait_for(of_type("response.done"), 40)
    assert greeting["response"]["status"] == "completed"
    # when the caller asks its question at real-time pace once the greeting played
    await asyncio.sleep(1.0)
    client.mic.say(np.concatenate([at_48k(question_pcm), np.zeros(RATE // 2, np.float32)]))
    # then it is transcribed and answered
    _, done = await client.wait_for(
        of_type("conversation.item.input_audio_transcription.completed"), 40, i + 1
    )
    assert {"capital", "france"} <= words(done["transcript"])
    j, created_reply = await client.wait_for(of_type("response.created"), 30, i + 1)
    reply_started = time.monotonic() - 1.0
    _, reply = await client.wait_for(of_type("response.done"), 60, j)
    assert reply["response"]["status"] == "completed"
    assert reply["response"]["id"] == created_reply["response"]["id"]
    _, said = await client.wait_for(of_type("response.output_audio_transcript.done"), 5, j)
    text = said["transcript"]
    assert text
    assert not any(e["type"] == "response.output_audio.delta" for e in client.events)
    # and the agent's audio arrives on the track, and it is that speech
    await asyncio.sleep(1.5)  # the last frames are still on their way
    audio = client.audio_since(reply_started, time.monotonic())
    assert np.abs(audio).max() > 0.05
    heard = await shared_models().transcribe(resample(audio, RATE, 16000), "en")
    assert len(words(heard.text) & words(text)) >= max(1, len(words(text)) // 2), (
        heard.text,
        text,
    )
    # when the caller hangs up, the call ends and is recorded as such
    await client.close()
    call = await call_ended(call_id)
    assert call.end_reason == "hangup" and call.transport == "webrtc"


@pytest.mark.slow
async def test_barge_in_flushes_the_agents_audio(
    rtc_settings: Any,
    voice_server: LiveServer,
    persona: Persona,
    make_secret: Callable[..., str],
    client_peer: Client,
    story_pcm: bytes,
    question_pcm: bytes,
) -> None:
    # given a call where the agent is telling a long story
    persona.agent_speaks_first = False
    persona.max_reply_tokens = 150
    persona.instructions = "You are a storyteller. Tell long, detailed stories."
    await persona.asave()
    secret = await sync_to_async(make_secret)()
    client = client_peer
    status, headers, body = await asyncio.to_thread(
        http_post,
        f"{voice_server.url}/v1/realtime/calls",
        (await client.offer()).encode(),
        {"Content-Type": "application/sdp", "Authorization": f"Bearer {secret}"},
    )
    assert status == 201, body
    call_id = headers["Location"].rsplit("/", 1)[1]
    await client.accept(body.decode())
    await client.wait_for(of_type("session.created"), 20)
    client.mic.say(np.concatenate([at_48k(story_pcm), np.zeros(RATE // 2, np.float32)]))
    i, _ = await client.wait_for(of_type("response.output_audio_transcript.delta"), 60)
    await asyncio.sleep(1.2)
    # when the caller speaks over it
    client.mic.say(at_48k(question_pcm))
    await client.wait_for(of_type("input_audio_buffer.speech_started"), 10, i)
    interrupted_at = time.monotonic()
    _, done = await client.wait_for(of_type("response.done"), 10, i)
    assert done["response"]["status"] == "cancelled"
    await asyncio.sleep(max(0.0, interrupted_at + 1.0 - time.monotonic()))
    # then the agent's voice was on the track before, and stops at once: the
    # queued audio (up to the engine's 300 ms playback lead) was flushed, not
    # played out, so 200 ms after the interruption the track is silent
    before = client.audio_since(interrupted_at - 1.0, interrupted_at - 0.2)
    after = client.audio_since(interrupted_at + 0.2, interrupted_at + 0.9)
    assert np.abs(before).max() > 0.05
    assert len(after) and np.abs(after).max() < 0.01, np.abs(after).max()
    # (the caller hangs up: the server's last writes finish before the test's teardown)
    await client.close()
    await call_ended(call_id)


@pytest.mark.slow
async def test_server_ends_the_call_and_closes_the_peer(
    rtc_settings: Any,
    voice_server: LiveServer,
    persona: Persona,
    make_secret: Callable[..., str],
    client_peer: Client,
) -> None:
    # given a persona that hangs up after 5 s of silence, and a silent caller
    persona.agent_speaks_first = False
    persona.idle_timeout_s = 5
    await persona.asave()
    secret = await sync_to_async(make_secret)()
    status, headers, body = await asyncio.to_thread(
        http_post,
        f"{voice_server.url}/v1/realtime/calls",
        (await client_peer.offer()).encode(),
        {"Content-Type": "application/sdp", "Authorization": f"Bearer {secret}"},
    )
    assert status == 201, body
    closed = asyncio.Event()
    client_peer.channel.on("close", closed.set)
    await client_peer.accept(body.decode())
    # when the idle timeout passes, the agent says goodbye
    _, done = await client_peer.wait_for(of_type("response.done"), 30)
    assert "goodbye" in json.dumps(done).lower()
    # then the server closes the peer: the data channel closes, the call ends with the reason
    await asyncio.wait_for(closed.wait(), 15)
    call = await call_ended(headers["Location"].rsplit("/", 1)[1])
    assert call.end_reason == "idle_timeout"


async def test_a_peer_that_never_connects_is_closed(
    rtc_settings: Any, persona: Persona, make_secret: Callable[..., str], client_peer: Client
) -> None:
    # given an offer answered by the server, whose answer the client never applies
    rtc_settings.WEBRTC_CONNECT_TIMEOUT_S = 1
    persona.agent_speaks_first = False
    await persona.asave()
    secret = await sync_to_async(make_secret)()
    response = await post_offer(await client_peer.offer(), secret)
    assert response.status_code == 201
    call_id = response["Location"].rsplit("/", 1)[1]
    [peer] = webrtc.active_calls()
    # then within the connect timeout the peer and the session are closed
    call = await call_ended(call_id, timeout_s=10)
    assert call.end_reason == "error"
    await asyncio.wait_for(peer.wait_closed(), 5)
    assert peer.pc.connectionState == "closed" and not webrtc.active_calls()


async def test_offer_errors(
    rtc_settings: Any, persona: Persona, make_secret: Callable[..., str], client_peer: Client
) -> None:
    # given a valid offer
    sdp = await client_peer.offer()
    secret = await sync_to_async(make_secret)()

    async def error_of(response: Reply) -> tuple[int, str]:
        body = json.loads(response.content)
        assert set(body["error"]) >= {"type", "code", "message"}
        return response.status_code, body["error"]["code"]

    # wrong content type
    r = await asgi("POST", "/v1/realtime/calls", sdp.encode(), content_type="text/plain")
    assert (await error_of(r))[0] == 415
    # not SDP; SDP without audio
    assert (await error_of(await post_offer("hello", secret)))[0] == 400
    no_audio = sdp.split("m=audio")[0]
    assert (await error_of(await post_offer(no_audio, secret)))[0] == 400
    no_ice = "".join(line for line in sdp.splitlines(True) if "ice-ufrag" not in line)
    assert await error_of(await post_offer(no_ice, secret)) == (400, "invalid_offer")
    # no bearer, unknown secret
    assert (await error_of(await post_offer(sdp, None)))[0] == 401
    assert (await error_of(await post_offer(sdp, "ek_not-a-secret")))[0] == 401
    # another persona than the secret's
    assert await error_of(await post_offer(sdp, secret, model="someone-else")) == (
        403,
        "model_mismatch",
    )
    # a spent secret
    await ClientSecret.objects.filter(org=persona.org).aupdate(used_at=timezone.now())
    assert await error_of(await post_offer(sdp, secret)) == (401, "client_secret_used")
    # an expired secret
    old = await sync_to_async(make_secret)(ttl_s=-1)
    assert await error_of(await post_offer(sdp, old)) == (401, "client_secret_expired")
    # over the org's concurrent-call cap
    rtc_settings.ORG_MAX_CONCURRENT_CALLS = 0
    fresh = await sync_to_async(make_secret)()
    status, code = await error_of(await post_offer(sdp, fresh))
    assert (status, code) == (429, "concurrency_limit")
    # and none of them left a peer or a call behind
    assert not webrtc.active_calls()
    assert not await Call.objects.filter(org_id=persona.org_id).aexists()


def broken_offers(sdp: str) -> dict[str, str]:
    """Offers that pass the first checks but trip aiortc: each was a 500 that spent the secret."""
    return {
        # an assert in aiortc's SDP parser
        "no payload types": re.sub(r"(m=audio \d+ \S+) [\d ]+", r"\1 ", sdp, count=1),
        # IndexError while the offer is applied
        "msid without a track id": re.sub(r"(a=msid:\S+) \S+", r"\1 ", sdp, count=1),
        # ValueError and AttributeError while the answer is made
        "no direction": sdp.replace("a=sendrecv\r\n", "", 1),
        "mid without a value": sdp.replace("a=mid:0", "a=mid", 1),
    }


async def test_offers_aiortc_cannot_use_are_400s_and_keep_the_secret(
    rtc_settings: Any, persona: Persona, make_secret: Callable[..., str], client_peer: Client
) -> None:
    # given a caller's offer and a client secret
    persona.agent_speaks_first = False
    await persona.asave()
    rtc_settings.WEBRTC_CONNECT_TIMEOUT_S = 1
    sdp = await client_peer.offer()
    secret = await sync_to_async(make_secret)()
    for name, broken in broken_offers(sdp).items():
        assert broken != sdp, name
        # when a broken version of it is posted
        response = await post_offer(broken, secret)
        # then it is a 400 that says why, and the secret is not spent
        assert response.status_code == 400, (name, response.content)
        error = json.loads(response.content)["error"]
        assert error["code"] == "invalid_offer" and error["message"], name
        assert not await ClientSecret.objects.filter(used_at__isnull=False).aexists(), name
        assert not webrtc.active_calls(), name
    # a model with a NUL character is refused without a query that cannot hold it
    response = await post_offer(sdp, secret, model="assist%00ant")
    assert json.loads(response.content)["error"]["code"] == "model_mismatch"
    # and the same secret still answers the good offer, once
    response = await post_offer(sdp, secret)
    assert response.status_code == 201, response.content
    assert await ClientSecret.objects.filter(used_at__isnull=False).acount() == 1
    again = await post_offer(sdp, secret)
    assert json.loads(again.content)["error"]["code"] == "client_secret_used"
    call = await call_ended(response["Location"].rsplit("/", 1)[1])  # never connected
    assert call.end_reason == "error"


async def test_caller_audio_reaches_the_call_as_it_arrives(
    rtc_settings: Any, persona: Persona, make_secret: Callable[..., str], client_peer: Client
) -> None:
    # given an answered offer
    persona.agent_speaks_first = False
    await persona.asave()
    secret = await sync_to_async(make_secret)()
    response = await post_offer(await client_peer.offer(), secret)
    assert response.status_code == 201
    [call] = webrtc.active_calls()
    # then the server's receiver of the caller's audio holds no frame back
    # (tests/sessions/test_rtp_input.py: what the buffer does with each packet)
    [receiver] = [r for r in call.pc.getReceivers() if r.track and r.track.kind == "audio"]
    assert isinstance(getattr(receiver, RECEIVER_BUFFER), ArrivalBuffer)
    await call.end("hangup")
    await call_ended(response["Location"].rsplit("/", 1)[1])


async def test_preflight_allows_the_widget_from_any_origin(rtc_settings: Any) -> None:
    response = await asgi(
        "OPTIONS",
        "/v1/realtime/calls",
        origin="https://shop.example",
        access_control_request_method="POST",
        access_control_request_headers="authorization, content-type",
    )
    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == "*"
    assert "Authorization" in response["Access-Control-Allow-Headers"]
    assert "Location" in response["Access-Control-Expose-Headers"]


async def test_output_track_paces_20ms_frames_and_flushes() -> None:
    # given agent audio queued at 24 kHz: one second of a tone
    track = webrtc.OutputAudioTrack()
    tone = (0.3 * np.sin(2 * np.pi * 440 * np.arange(24000) / 24000) * 32767).astype("<i2")
    track.write(tone.tobytes(), 24000)
    assert 950 <= track.buffered_ms <= 1000
    # when the sender reads ten frames
    started = time.monotonic()
    frames = [await track.recv() for _ in range(10)]
    elapsed = time.monotonic() - started
    # then they are 20 ms at 48 kHz, paced against the clock, carrying the tone
    assert 0.15 <= elapsed <= 0.4
    assert all(f.sample_rate == 48000 and f.samples == 960 for f in frames)
    assert [f.pts for f in frames] == [960 * i for i in range(10)]
    assert np.abs(frames[5].to_ndarray()).max() > 5000
    # when the session flushes on barge-in, the next frame is silence
    track.clear()
    assert track.buffered_ms == 0
    assert np.abs((await track.recv()).to_ndarray()).max() == 0
    await asyncio.wait_for(track.drained(), 0.1)
    track.stop()


def test_loopback_only_limits_host_candidates(settings: Any) -> None:
    # given the filter installed
    webrtc.install_loopback_filter()
    # when the setting is on, aioice sees 127.0.0.1 only; off, the machine's addresses
    settings.WEBRTC_LOOPBACK_ONLY = True
    assert aioice.ice.get_host_addresses(use_ipv4=True, use_ipv6=True) == ["127.0.0.1"]
    settings.WEBRTC_LOOPBACK_ONLY = False
    assert "127.0.0.1" not in aioice.ice.get_host_addresses(use_ipv4=True, use_ipv6=False)
    # and installing it twice wraps it once
    webrtc.install_loopback_filter()
    settings.WEBRTC_LOOPBACK_ONLY = True
    assert aioice.ice.get_host_addresses(use_ipv4=True, use_ipv6=False) == ["127.0.0.1"]


def test_server_peer_uses_the_stun_servers_of_the_settings(settings: Any) -> None:
    # given STUN and TURN in the settings
    settings.WEBRTC_LOOPBACK_ONLY = False
    settings.WEBRTC_STUN_URLS = ["stun:stun.example.test:3478"]
    settings.TURN_URLS = ["turn:turn.example.test:3478"]
    settings.TURN_SECRET = "s3cret"
    # then the server peer takes the STUN server (TURN credentials are for browsers)
    servers = webrtc.server_ice_servers()
    assert [s.urls for s in servers] == [["stun:stun.example.test:3478"]]
    # and on loopback it takes none
    settings.WEBRTC_LOOPBACK_ONLY = True
    assert webrtc.server_ice_servers() == []


async def test_a_client_that_stops_reading_events_ends_the_call(rtc_settings: Any) -> None:
    # given two real peers on loopback with the events channel open
    from sessions.realtime.limits import MAX_CHANNEL_BUFFERED_BYTES

    webrtc.install_loopback_filter()
    server = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    client = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    opened = asyncio.Event()
    channel = client.createDataChannel("oai-events")
    server.on("datachannel", lambda ch: (server_channels.append(ch), opened.set()))
    server_channels: list[Any] = []
    closed: list[str] = []

    async def on_close(reason: str) -> None:
        closed.append(reason)

    output = webrtc.OutputAudioTrack()
    transport = webrtc.WebRTCTransport(output, on_close)
    try:
        await client.setLocalDescription(await client.createOffer())
        await server.setRemoteDescription(client.localDescription)
        await server.setLocalDescription(await server.createAnswer())
        await client.setRemoteDescription(server.localDescription)
        await asyncio.wait_for(opened.wait(), 15)
        transport.attach(server_channels[0])
        assert channel.readyState == "open"
        # when the server sends events faster than they can go out (without yielding)
        event = {"type": "response.output_text.delta", "delta": "x" * 60_000}
        for _ in range(2 * MAX_CHANNEL_BUFFERED_BYTES // 60_000):
            await transport.send_event(event)
            if closed:
                break
        # then the unsent data stays bounded and the call ends as lost
        assert server_channels[0].bufferedAmount <= MAX_CHANNEL_BUFFERED_BYTES
        assert closed == ["lost"] and transport.close_code == 1011
    finally:
        output.stop()
        await client.close()
        await server.close()
