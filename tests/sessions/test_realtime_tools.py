"""Function tools over /v1/realtime with the stock `openai` SDK: the session's
tools, a call streamed as a function_call item, its output, and the reply that
reads it. Real models in a separate inference worker, real Postgres and Redis."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from openai import AsyncOpenAI

from tests.sessions.test_realtime_ws import events_until, of_type
from tests.support.calls import wait_calls_ended
from tests.support.live_server import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

LOOKUP_ORDER = {
    "type": "function",
    "name": "lookup_order",
    "description": "Look up the status of the caller's order by its order number.",
    "parameters": {
        "type": "object",
        "properties": {"order_number": {"type": "string"}},
        "required": ["order_number"],
    },
}
END_CALL = {"type": "function", "name": "end_call", "description": "Hang up.", "parameters": {}}


def text_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def test_a_client_tool_is_called_and_its_output_is_read(
    voice_server: LiveServer, secret_key_a: str
) -> None:
    async def scenario() -> tuple[list[dict[str, Any]], ...]:
        client = AsyncOpenAI(base_url=f"{voice_server.url}/v1", api_key=secret_key_a)
        async with client.realtime.connect(model="assistant") as conn:
            await events_until(conn, lambda e: e["type"] == "response.done")  # the greeting
            await conn.session.update(
                session={
                    "type": "realtime",
                    "tools": [LOOKUP_ORDER, END_CALL],
                    "tool_choice": {"type": "function", "name": "lookup_order"},
                }
            )
            updated = await events_until(conn, lambda e: e["type"] == "session.updated")
            await conn.conversation.item.create(item=text_item("Where is my order A1234?"))
            await conn.response.create()
            called = await events_until(conn, lambda e: e["type"] == "response.done")
            call = of_type(called, "response.function_call_arguments.done")[0]
            await conn.session.update(session={"type": "realtime", "tool_choice": "none"})
            await events_until(conn, lambda e: e["type"] == "session.updated")
            await conn.conversation.item.create(
                item={
                    "type": "function_call_output",
                    "call_id": call["call_id"],
                    "output": json.dumps({"status": "shipped", "arrives": "Friday"}),
                }
            )
            await conn.response.create()
            answered = await events_until(conn, lambda e: e["type"] == "response.done")
            await conn.conversation.item.create(
                item={"type": "function_call_output", "call_id": "call_nobody_made", "output": ""}
            )
            refused = await events_until(conn, lambda e: e["type"] == "error")
            return updated, called, answered, refused

    updated, called, answered, refused = asyncio.run(scenario())
    wait_calls_ended()

    # the session shows the tools it was given
    session = of_type(updated, "session.updated")[0]["session"]
    assert [t["name"] for t in session["tools"]] == ["lookup_order", "end_call"]
    assert session["tool_choice"] == {"type": "function", "name": "lookup_order"}
    # the call streams as one function_call item, in the reference's order
    kinds = [e["type"] for e in called]
    order = [
        "response.created",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.done",
    ]
    assert [k for k in kinds if k in order] == order
    added = of_type(called, "response.output_item.added")[0]["item"]
    assert (added["type"], added["name"], added["status"]) == (
        "function_call",
        "lookup_order",
        "in_progress",
    )
    done = of_type(called, "response.function_call_arguments.done")[0]
    arguments = json.loads(done["arguments"])
    assert set(arguments) == {"order_number"}
    assert isinstance(arguments["order_number"], str)
    assert done["item_id"] == added["id"] and done["call_id"] == added["call_id"]
    response = of_type(called, "response.done")[0]["response"]
    assert response["status"] == "completed"
    assert [o["type"] for o in response["output"]] == ["function_call"]
    assert response["output"][0]["arguments"] == done["arguments"]
    assert not of_type(called, "response.output_audio.delta")  # a call says nothing
    # the output is taken as an item, and the next reply speaks
    echoed = of_type(answered, "conversation.item.done")[0]["item"]
    assert (echoed["type"], echoed["call_id"]) == ("function_call_output", done["call_id"])
    reply = of_type(answered, "response.done")[0]["response"]
    assert reply["status"] == "completed"
    assert [o["type"] for o in reply["output"]] == ["message"]
    assert of_type(answered, "response.output_audio.delta")
    assert of_type(answered, "response.output_audio_transcript.done")[0]["transcript"].strip()
    # an output for a call nobody made is refused, and the call went on
    error = of_type(refused, "error")[0]["error"]
    assert (error["code"], error["param"]) == ("item_not_found", "item.call_id")
