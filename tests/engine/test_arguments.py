"""Candidate values for a tool's arguments, read from the caller's words."""

from __future__ import annotations

import json
from typing import Any

import pytest

from voiceapp.engine.arguments import Kind, candidates, dates, kind_of, names, narrowed, phrases
from voiceapp.engine.tools import ToolSpec


def tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolSpec:
    schema = {"type": "object", "properties": properties, "required": required}
    return ToolSpec(name, description, json.dumps(schema))


RESERVE = tool(
    "reserve_table",
    "Reserve a table.",
    {
        "guests": {"type": "integer"},
        "when": {"type": "string", "description": "The day and time"},
        "name": {"type": "string", "description": "The name for the reservation"},
        "seating": {"type": "string", "enum": ["inside", "terrace"]},
    },
    ["guests", "when", "name"],
)


def values(tool_: ToolSpec, text: str) -> dict[str, tuple[Any, ...]]:
    return {a.name: a.values for a in candidates(tool_, [text])}


@pytest.mark.parametrize(
    ("name", "schema", "kind"),
    [
        ("order_number", {"type": "string"}, Kind.IDENTIFIER),
        ("account", {"type": "string", "description": "The account number"}, Kind.IDENTIFIER),
        ("patient_name", {"type": "string"}, Kind.NAME),
        ("name", {"type": "string", "description": "The name the booking is under"}, Kind.NAME),
        ("callback_number", {"type": "string"}, Kind.PHONE),
        ("email", {"type": "string"}, Kind.EMAIL),
        ("day", {"type": "string"}, Kind.DATE),
        ("start", {"type": "string", "format": "date-time"}, Kind.DATE),
        ("address", {"type": "string"}, Kind.ADDRESS),
        ("guests", {"type": "integer"}, Kind.NUMBER),
        ("plan", {"type": "string", "enum": ["basic", "fast"]}, Kind.ENUM),
        ("urgent", {"type": "boolean"}, Kind.BOOLEAN),
        ("product", {"type": "string", "description": "What they ask about"}, Kind.TEXT),
    ],
)
def test_an_arguments_kind_comes_from_its_schema_name_and_description(
    name: str, schema: dict[str, Any], kind: Kind
) -> None:
    assert kind_of(name, schema) is kind


def test_a_reservation_gets_the_number_the_time_and_the_name_the_caller_said() -> None:
    found = values(RESERVE, "Can I book a table for four on Saturday at 8? The name is Baker.")
    assert found["guests"] == (4, 8)  # a number said as a time of day comes last
    assert found["when"] == ("Saturday at 8",)
    assert found["name"] == ("Baker",)
    assert found["seating"] == ()  # not said


def test_an_enum_value_is_found_as_said_or_in_the_plural() -> None:
    dish = tool(
        "dish_info",
        "Allergens of a dish.",
        {"allergen": {"type": "string", "enum": ["gluten", "nut", "dairy"]}},
        ["allergen"],
    )
    assert values(dish, "Are there nuts in the pesto?")["allergen"] == ("nut",)
    assert values(dish, "Is it vegan?")["allergen"] == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Could you move my check-up to next Tuesday?", ["next Tuesday"]),
        ("I need a filling on the 3rd of June.", ["the 3rd of June"]),
        ("Table for six tomorrow evening around 7:30 please", ["tomorrow evening around 7:30"]),
        ("Reserve for 2 tonight at 7 pm", ["tonight at 7 pm"]),
        ("What's the weather like?", []),
    ],
)
def test_dates_and_times_are_read_as_said(text: str, expected: list[str]) -> None:
    assert dates(text) == expected


def test_a_name_the_caller_introduced_comes_first_and_a_sentences_first_word_is_none() -> None:
    assert names("Please hold Project Hail Mary under the name Kim.") == [
        "Kim",
        "Project Hail Mary",
    ]
    assert names("Hello, Sam Okafor here, I want to book a repair.") == ["Sam Okafor"]
    assert names("Monday works for me.") == []


def test_a_name_is_evidence_only_when_introduced() -> None:
    hold = tool(
        "hold_book",
        "Put a book aside.",
        {"title": {"type": "string"}, "name": {"type": "string"}},
        ["title", "name"],
    )
    titled = {a.name: a for a in candidates(hold, ["Do you carry the Ottolenghi cookbook?"])}
    assert titled["name"].values == ("Ottolenghi",) and not titled["name"].evident
    given = {a.name: a for a in candidates(hold, ["Hold Circe for me? I'm Dana Webb."])}
    assert given["name"].evident and given["name"].values[0] == "Dana Webb"
    # the title's phrases leave out the customer's name and the tool's own words
    assert "Circe" in given["title"].values
    assert not any("Dana" in v or "Hold" in v for v in given["title"].values)


def test_identifiers_phone_numbers_and_addresses() -> None:
    order = tool("lookup_order", "Order status.", {"order_number": {"type": "string"}}, [])
    assert values(order, "Where is order A1234? It's urgent.")["order_number"] == ("A1234",)
    phone = tool("call_me", "Call back.", {"callback_number": {"type": "string"}}, [])
    assert values(phone, "Ring me on 0161 496 0000 please.")["callback_number"] == (
        "0161 496 0000",
    )
    outage = tool("report_outage", "Outage.", {"address": {"type": "string"}}, [])
    assert values(outage, "No internet at 14 Oak Street since noon.")["address"] == (
        "14 Oak Street",
    )


def test_phrases_keep_off_function_words_at_their_edges() -> None:
    found = phrases("Do you have any 29 inch inner tubes in stock?")
    assert "29 inch inner tubes in stock" in found
    assert all(not p.lower().startswith(("do ", "any ")) for p in found)
    stock = tool("check_stock", "Check whether a product is in stock.", {"product": {}}, [])
    # the tool's own words are trimmed off: the product, not "in stock"
    assert values(stock, "Do you have any 29 inch inner tubes in stock?")["product"][0] == (
        "29 inch inner tubes"
    )


def test_later_turns_values_come_first() -> None:
    found = candidates(RESERVE, ["It's for Patel, four of us.", "Actually make it six."])
    guests = next(a for a in found if a.name == "guests")
    assert guests.values == (6, 4)


def test_narrowed_holds_each_argument_to_the_callers_values() -> None:
    found = candidates(RESERVE, ["A table for 2 tonight at 7 pm, under Silva."])
    schema = narrowed(RESERVE, found).schema()
    assert schema["properties"]["guests"]["enum"] == [2, 7]
    assert schema["properties"]["name"]["enum"] == ["Silva"]
    assert "seating" not in schema["properties"]  # optional and not said: left out
    assert schema["required"] == ["guests", "when", "name"]


@pytest.mark.parametrize(
    "parameters",
    [
        '{"type": "object"}',
        '{"type": "object", "properties": {}}',
        '{"type": "object", "properties": {"x": {"type": ["string", "null"]}}, "required": []}',
        '{"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}}',
        "[]",
    ],
)
def test_any_schema_a_client_may_send_gets_candidates_without_failing(parameters: str) -> None:
    odd = ToolSpec("odd_tool", "Something odd.", parameters)
    text = "Hi, it's Ann, 2 please, order 55 on Friday at 14 Oak Street. " * 20  # long, too
    found = candidates(odd, [text, ""])
    schema = narrowed(odd, found).schema()
    assert schema["type"] == "object" and isinstance(schema.get("properties", {}), dict)
