"""The agent's keypad on a phone call: keys go out as RFC 4733 telephone-events on
the call's RTP stream, paced on its audio clock, and an aiortp receiver (the RTP
stack a far end of ours would run) reads them back in order."""

from __future__ import annotations

import asyncio
import itertools
import json
import time

import aiortp
import pytest
from aiosipua import CallSession
from aiosipua.sdp import parse_sdp

from sessions.actions import PersonaActions
from telephony.sip.media import KEY_MS, KeypadClosed, PhoneAudioOut
from tests.support.processes import free_port
from tests.support.sip import sdp_offer

pytestmark = pytest.mark.timeout(30)


async def _stream() -> tuple[CallSession, aiortp.RTPSession, list[tuple[float, str, int]]]:
    """Our side of a call (answering a PCMU offer) and the far end's RTP session."""
    far_port, our_port = free_port(), free_port()
    ours = CallSession("127.0.0.1", our_port, parse_sdp(sdp_offer([0], port=far_port)))
    await ours.start()
    far = await aiortp.RTPSession.create(
        local_addr=("127.0.0.1", far_port), remote_addr=("127.0.0.1", our_port), payload_type=0
    )
    heard: list[tuple[float, str, int]] = []
    far.on_dtmf = lambda digit, duration: heard.append((time.monotonic(), digit, duration))
    return ours, far, heard


async def test_pressed_keys_reach_the_far_end_in_order_one_at_a_time() -> None:
    ours, far, heard = await _stream()
    out = PhoneAudioOut(ours)
    sending = asyncio.ensure_future(out.run())
    try:
        started = time.monotonic()
        await out.press("29#")
        took = time.monotonic() - started
        await asyncio.sleep(0.2)
    finally:
        sending.cancel()
        await ours.close()
        await far.close()
    assert [digit for _, digit, _ in heard] == ["2", "9", "#"]
    # each held for KEY_MS (in 8 kHz clock units), and sent in real time, not in a burst
    assert {duration for _, _, duration in heard} == {KEY_MS * 8}
    assert took >= 3 * KEY_MS / 1000
    gaps = [b - a for (a, _, _), (b, _, _) in itertools.pairwise(heard)]
    assert min(gaps) >= KEY_MS / 1000
    assert out.keys.sent == "29#"


async def test_keys_still_waiting_when_the_call_ends_are_reported_unsent() -> None:
    ours, far, _ = await _stream()
    out = PhoneAudioOut(ours)
    sending = asyncio.ensure_future(out.run())
    pressing = asyncio.ensure_future(out.press("123456"))
    await asyncio.sleep(0.3)
    sending.cancel()  # the call ends
    with pytest.raises(KeypadClosed):
        await pressing
    await ours.close()
    await far.close()
    assert len(out.keys.sent) < 6


class Keys:
    def __init__(self) -> None:
        self.pressed: list[str] = []

    async def press(self, digits: str) -> None:
        self.pressed.append(digits)


async def test_press_keys_is_offered_only_with_a_keypad_and_checks_its_digits() -> None:
    without = PersonaActions(call_id="c", enabled=["press_keys", "end_call"])
    assert [s.name for s in without.specs()] == ["end_call"]
    keys = Keys()
    actions = PersonaActions(call_id="c", enabled=["press_keys"], keypad=keys)
    assert [s.name for s in actions.specs()] == ["press_keys"]
    done = await actions.run("press_keys", json.dumps({"digits": "1 2-3 #"}))
    assert done.ok and json.loads(done.output) == {"pressed": "123#"} and not done.say
    for bad in ["", "twelve", "1" * 25, "12;3"]:
        refused = await actions.run("press_keys", json.dumps({"digits": bad}))
        assert not refused.ok and "not keys" in refused.output
    assert keys.pressed == ["123#"]
