"""Who picked up an outbound call, on a CI-sized slice of our greetings (the whole
set: `./dev bench voicemail`), with the real Silero VAD and Whisper; the beep
detector; quiet hours across midnight."""

from __future__ import annotations

from datetime import UTC, datetime, time
from typing import Any

import numpy as np
import pytest

from bench.voicemail import classify
from bench.voicemail_cases import CASES, beep, quiet
from telephony.models import SipTrunk
from telephony.services import in_quiet_hours
from telephony.sip.answering import BeepDetector, kind_of
from voiceapp.engine.audio import float_to_pcm16
from voiceapp.engine.vad import SileroModel


@pytest.mark.parametrize(
    "name",
    ["vm_sarah", "vm_dental", "vm_lucy", "hu_hello", "hu_plumbing", "sc_google", "ivr_heating"],
)
async def test_greetings_are_told_apart_within_about_three_seconds(
    name: str, models: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    case = next(c for c in CASES if c.name == name)

    async def transcribe(samples: np.ndarray) -> str:
        result = await models.transcribe(samples, "en")
        return str(result.text or result.discarded)

    row = await classify(case, tmp_path_factory.mktemp("vm"), SileroModel(), transcribe)
    assert row["decided"] == case.kind, row
    # words that do not tell yet are read again up to 3.4 s of speech (MONOLOGUE_S)
    assert row["decided_at_s"] <= 4.0, row
    if case.kind == "voicemail":  # then the end of the greeting: its beep, or a pause
        assert row["by"] == ("beep" if case.beep else "quiet"), row
        if case.beep:
            assert 0 <= row["greeting_over_at_s"] - row["beep_end_s"] <= 0.1, row


def test_the_beep_is_found_and_speech_is_not_a_beep() -> None:
    detector = BeepDetector(SileroModel())
    tone = np.concatenate([quiet(0.5), beep(0.3, 950.0), quiet(0.2)])
    over = [detector.push(float_to_pcm16(tone[i : i + 160])) for i in range(0, len(tone), 160)]
    assert any(over) and detector.beep_at is not None
    assert 0.8 <= detector.beep_at <= 0.86  # as the tone stops, not as it starts
    short = BeepDetector(SileroModel())  # a click of a tone is not a beep
    blip = np.concatenate([quiet(0.3), beep(0.08), quiet(0.3)])
    for i in range(0, len(blip), 160):
        short.push(float_to_pcm16(blip[i : i + 160]))
    assert short.beep_at is None


def test_words_decide_a_long_greeting() -> None:
    assert kind_of("Please state your name and the reason", still_talking=True) == "screening"
    assert kind_of("you've reached Dana, leave a message", still_talking=False) == "voicemail"
    assert kind_of("Acme plumbing, how can I help", still_talking=True) == "human"
    assert kind_of("Thanks for calling Green Valley Dental", still_talking=True) == "voicemail"
    assert kind_of("Thanks for calling Green Valley Dental", still_talking=False) == "human"
    menu = "Thank you for calling Acme Heating. For sales, press 1. For repairs, press 2."
    assert kind_of(menu, still_talking=True) == "ivr"
    assert kind_of("Dial the extension you want now", still_talking=True) == "ivr"
    # a mailbox that offers keys is still a mailbox
    mailbox = "Leave a message after the tone, or press 0 for reception"
    assert kind_of(mailbox, still_talking=True) == "voicemail"


def test_quiet_hours_across_midnight() -> None:
    trunk = SipTrunk(
        quiet_hours_start=time(21, 0), quiet_hours_end=time(8, 0), time_zone="Europe/Berlin"
    )
    berlin_noon = datetime(2026, 12, 6, 11, 0, tzinfo=UTC)  # 12:00 in Berlin
    berlin_2300 = datetime(2026, 12, 6, 22, 0, tzinfo=UTC)
    berlin_0700 = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)
    berlin_0800 = datetime(2026, 12, 7, 7, 0, tzinfo=UTC)
    assert not in_quiet_hours(trunk, berlin_noon)
    assert in_quiet_hours(trunk, berlin_2300) and in_quiet_hours(trunk, berlin_0700)
    assert not in_quiet_hours(trunk, berlin_0800)
    assert not in_quiet_hours(SipTrunk(time_zone="UTC"), berlin_2300)
