"""An event on its way when the client hangs up is dropped, not a server error."""

from __future__ import annotations

from typing import Any

from autobahn.exception import Disconnected

from sessions.consumers import RealtimeConsumer


class GoneClient(RealtimeConsumer):
    """A consumer whose client has just hung up: daphne refuses every send."""

    async def send(self, text_data: str | None = None, **_: Any) -> None:
        raise Disconnected("Attempt to send on a closed protocol")


async def test_an_event_sent_after_the_client_hung_up_is_dropped() -> None:
    consumer = GoneClient()
    # daphne says the connection is closed; the call's own disconnect ends it
    await consumer.send_event({"type": "response.output_audio_transcript.delta"})
