"""The embeddable widget in headless Chromium, against the live server.

A customer's page (another origin) carries the one-line snippet; the fake
microphone asks a question. The widget must call over WebRTC (and over the
WebSocket when WebRTC cannot connect), caption both sides, move through
listening, thinking and speaking, play the agent's audio, hang up on Escape,
and explain a refused origin or microphone.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from bench.pagehost import PageHost
from sessions.models import Call, ClientSecret
from tests.support.live_server import LiveServer
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona
from voiceapp.tenants.services import publishable_key_create, publishable_key_revoke

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

WIDGET = "window.voiceAgentWidgets && window.voiceAgentWidgets[0]"


@pytest.fixture
def persona(tenant_a: Tenant) -> Persona:
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    persona.agent_speaks_first = False
    persona.instructions = "You are a helpful geography assistant. Answer in one short sentence."
    persona.temperature = 0.0
    persona.save()
    return persona


@pytest.fixture
def widget_key(persona: Persona, page_host: PageHost) -> str:
    key = publishable_key_create(org=persona.org, name="shop", allowed_origins=[page_host.url])
    return key.key


def widget(page: Any, expr: str) -> Any:
    return page.evaluate(f"() => {{ const w = {WIDGET}; return {expr}; }}")


def wait_widget(page: Any, condition: str, timeout_s: float) -> None:
    page.wait_for_function(
        f"() => {{ const w = {WIDGET}; return !!w && ({condition}); }}",
        timeout=timeout_s * 1000,
    )


def last_call(persona: Persona, timeout_s: float = 10.0) -> Call:
    deadline = time.monotonic() + timeout_s
    while True:
        call = Call.objects.filter(org=persona.org).order_by("-started_at").first()
        if (call is not None and call.ended_at is not None) or time.monotonic() > deadline:
            assert call is not None
            return call
        time.sleep(0.2)


def talk_and_hang_up(
    page: Any, console: list[str], persona: Persona, tried: list[str], transport: str
) -> None:
    launcher = page.locator("button.launcher")
    launcher.click()
    # then the caller's question appears in the captions
    user = page.locator(".line.user .text")
    try:
        user.filter(has_text="capital").first.wait_for(timeout=60_000)
    except Exception:
        raise AssertionError(f"no user caption; page said: {console[-20:]}") from None
    assert "france" in user.first.inner_text().lower()
    # and the agent's answer is captioned and heard
    agent = page.locator(".line.agent .text").first
    agent.wait_for(timeout=30_000)
    wait_widget(page, "w.outputAudibleMs >= 500", 30)
    assert agent.inner_text().strip()
    assert widget(page, "w.transports") == tried
    assert widget(page, "w.outputPeak") > 0.02
    assert widget(page, "w.micPeak") > 0.01  # the level meter saw the caller's voice
    states = widget(page, "w.states")
    assert "listening" in states and "thinking" in states and "speaking" in states, states
    assert states.index("listening") < states.index("thinking") < states.index("speaking")
    # and the call moved keyboard focus to its hang-up button
    assert page.evaluate(
        "() => document.activeElement.shadowRoot.activeElement.classList.contains('hangup')"
    )
    # and mute stops the microphone track, unmute starts it again
    mute = page.locator("button.mute")
    mute.click()
    assert mute.get_attribute("aria-pressed") == "true"
    assert widget(page, "w.call.mic.getAudioTracks().every(t => !t.enabled)")
    mute.click()
    assert widget(page, "w.call.mic.getAudioTracks().every(t => t.enabled)")
    # when the caller presses Escape in the widget
    page.locator("button.hangup").focus()
    page.keyboard.press("Escape")
    # then the call ends, the widget says so and gives focus back to its button
    wait_widget(page, "w.state === 'ended'", 5)
    assert "ended the call" in page.locator(".message").inner_text()
    assert launcher.get_attribute("aria-label").endswith("call again")
    assert page.evaluate(
        "() => document.activeElement.shadowRoot.activeElement.classList.contains('launcher')"
    )
    # and a second Escape closes the panel
    page.keyboard.press("Escape")
    assert page.locator("section.panel").is_hidden()
    assert launcher.get_attribute("aria-expanded") == "false"
    # and the server recorded the call over that transport, ended by the caller
    call = last_call(persona)
    assert call.transport == transport and call.end_reason == "hangup", call.end_reason


@pytest.mark.slow
def test_widget_call_over_webrtc(
    voice_server: LiveServer,
    page_host: PageHost,
    page: Any,
    console: list[str],
    requested: list[str],
    persona: Persona,
    widget_key: str,
) -> None:
    # given a customer's page with the snippet
    path = page_host.widget_page("shop", voice_server.url, widget_key, persona.slug)
    page.goto(page_host.url + path)
    page.locator("button.launcher").wait_for()
    # when the visitor clicks the call button and asks a question
    talk_and_hang_up(page, console, persona, ["webrtc"], "webrtc")
    # and the widget talked to nobody but its own server
    origins = {"/".join(url.split("/")[:3]) for url in requested}
    assert origins == {page_host.url, voice_server.url}, origins


@pytest.mark.slow
def test_widget_falls_back_to_websocket_when_ice_fails(
    voice_server: LiveServer,
    page_host: PageHost,
    page: Any,
    console: list[str],
    persona: Persona,
    widget_key: str,
) -> None:
    # given a browser whose WebRTC cannot connect (relay only, and no TURN server)
    page.add_init_script(
        "const Native = window.RTCPeerConnection;"
        "window.RTCPeerConnection = function (config) {"
        "  return new Native(Object.assign({}, config, {iceTransportPolicy: 'relay'})); };"
    )
    path = page_host.widget_page("shop-ws", voice_server.url, widget_key, persona.slug)
    page.goto(page_host.url + path)
    # when the visitor calls: after WebRTC fails, audio goes over the WebSocket,
    # through the capture worklet, and plays through the jitter-buffered player
    talk_and_hang_up(page, console, persona, ["webrtc", "websocket"], "websocket")
    assert widget(page, "w.events").count("response.output_audio.delta") > 10


def test_widget_refused_on_an_origin_the_key_does_not_allow(
    voice_server: LiveServer,
    page_host: PageHost,
    page: Any,
    console: list[str],
    requested: list[str],
    persona: Persona,
    widget_key: str,
) -> None:
    # given the snippet on a page at an origin the key does not list, in a browser
    # that counts its requests for the microphone
    page.add_init_script(
        "window.micRequests = 0;"
        "const realGetUserMedia = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);"
        "navigator.mediaDevices.getUserMedia = (c) => { window.micRequests++;"
        " return realGetUserMedia(c); };"
    )
    path = page_host.widget_page("elsewhere", voice_server.url, widget_key, persona.slug)
    page.goto(f"http://localhost:{page_host.port}{path}")
    # when the visitor clicks the call button
    page.locator("button.launcher").click()
    # then the visitor reads that the assistant is not available here
    wait_widget(page, "w.state === 'error'", 15)
    message = page.locator(".message")
    assert message.inner_text() == "This assistant is not available on this site."
    assert message.get_attribute("role") == "alert"
    # and the site owner finds the reason in the console
    warnings = [line for line in console if line.startswith("warning:")]
    assert any("origin_not_allowed" in w and "may not use this key" in w for w in warnings), console
    # and the microphone was never asked for, no session was asked for, no call started
    assert page.evaluate("window.micRequests") == 0
    assert not any("/v1/widget/sessions" in url for url in requested), requested
    assert any("/v1/widget/check" in url for url in requested), requested
    assert not Call.objects.filter(org=persona.org).exists()
    assert not ClientSecret.objects.filter(org=persona.org).exists()


def test_widget_with_a_revoked_key_never_asks_for_the_microphone(
    voice_server: LiveServer,
    page_host: PageHost,
    page: Any,
    console: list[str],
    persona: Persona,
) -> None:
    # given a page whose publishable key was revoked, in a browser counting mic requests
    key = publishable_key_create(org=persona.org, name="old", allowed_origins=[page_host.url])
    publishable_key_revoke(key=key)
    page.add_init_script(
        "window.micRequests = 0;"
        "navigator.mediaDevices.getUserMedia = () => { window.micRequests++;"
        " return Promise.reject(new DOMException('counted', 'NotAllowedError')); };"
    )
    path = page_host.widget_page("revoked", voice_server.url, key.key, persona.slug)
    page.goto(page_host.url + path)
    # when the visitor clicks the call button
    page.locator("button.launcher").click()
    # then they read the plain sentence, the console says the key is the problem,
    # and the microphone was not requested
    wait_widget(page, "w.state === 'error'", 15)
    assert page.locator(".message").inner_text() == "This assistant is not available on this site."
    assert any("invalid_publishable_key" in line for line in console), console
    assert page.evaluate("window.micRequests") == 0
    assert widget(page, "w.lastError.code") == "invalid_publishable_key"


def test_widget_explains_a_denied_microphone(
    voice_server: LiveServer,
    page_host: PageHost,
    page: Any,
    persona: Persona,
    widget_key: str,
) -> None:
    # given a visitor whose browser refuses the microphone
    page.add_init_script(
        "navigator.mediaDevices.getUserMedia = () =>"
        " Promise.reject(new DOMException('Permission denied', 'NotAllowedError'));"
    )
    path = page_host.widget_page("no-mic", voice_server.url, widget_key, persona.slug)
    page.goto(page_host.url + path)
    # when they click the call button (with the keyboard)
    page.locator("button.launcher").focus()
    page.keyboard.press("Enter")
    # then the widget says what to do, and nothing was started
    wait_widget(page, "w.state === 'error'", 10)
    assert "Microphone access was denied" in page.locator(".message").inner_text()
    assert not Call.objects.filter(org=persona.org).exists()
