"""The calls list (filters, search, pages) and one call's page (transcript,
latency waterfall and table), read as rendered HTML."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.urls import reverse

from sessions.models import Call
from sessions.services import call_turn_record
from tests.support.calls import make_call
from tests.support.html import Element, parse
from tests.support.tenants import Tenant
from voiceapp.dashboard.charts import TURN_SPANS
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_create

pytestmark = pytest.mark.django_db

DAY = datetime(2026, 3, 10, 9, tzinfo=UTC)
GREETING = {"tts_first_audio_ms": 80.0}  # a greeting: no caller speech, no LLM
ANSWER = {
    "v2v_ms": 610.0,
    "endpoint_ms": 250.0,
    "asr_ms": 120.0,
    "llm_queue_ms": 2.0,
    "llm_first_token_ms": 40.0,
    "first_clause_ms": 90.0,
    "tts_first_audio_ms": 110.0,
}


def _assistant(tenant: Tenant) -> Persona:
    return Persona.objects.get(org=tenant.org, slug="assistant")


def _turn(call: Call, n: int, status: str, spans: dict[str, float]) -> None:
    call_turn_record(
        call_id=str(call.pk), response_id=f"resp_{n}", status=status, at_s=float(n), spans=spans
    )


def _detail(tenant: Tenant, call: Call) -> Element:
    response = tenant.client.get(reverse("dashboard:call_detail", args=[call.pk]))
    assert response.status_code == 200
    return parse(response.content)


def _table(page: Element) -> tuple[list[str], list[list[str]]]:
    table = page.find("table", "turns")
    header = [th.text for th in table.find("thead").find_all("th")]
    rows = [[td.text for td in tr.find_all("td")] for tr in table.find("tbody").find_all("tr")]
    return header, rows


# --- One call's page --------------------------------------------------------------


def test_waterfall_and_table_number_the_same_turns(tenant_a: Tenant) -> None:
    # given a call whose greeting was cut off, then two measured answers
    call = make_call(_assistant(tenant_a), started_at=DAY)
    _turn(call, 1, "cancelled", GREETING)
    _turn(call, 2, "completed", ANSWER)
    _turn(call, 3, "cancelled", {**ANSWER, "v2v_ms": 700.0})

    # when its page is shown
    page = _detail(tenant_a, call)

    # then the waterfall and the table list the same turns under the same numbers
    labels = [div.text for div in page.find_all("div", "wf-label")]
    header, rows = _table(page)
    assert [re.match(r"Turn (\d+)", label)[1] for label in labels] == ["1", "2", "3"]  # type: ignore[index]
    assert [row[0] for row in rows] == ["1", "2", "3"]
    # and a turn's v2v is the same in both
    v2v = header.index("Voice to voice")
    assert labels[0] == "Turn 1 —" and rows[0][v2v] == "—" and rows[0][1] == "cancelled"
    assert labels[1] == "Turn 2 610 ms" and rows[1][v2v] == "610"
    assert labels[2] == "Turn 3 700 ms" and rows[2][v2v] == "700"


def test_legend_entries_are_the_table_columns(tenant_a: Tenant) -> None:
    # given a call with one measured turn
    call = make_call(_assistant(tenant_a), started_at=DAY)
    _turn(call, 1, "completed", ANSWER)

    # when its page is shown
    page = _detail(tenant_a, call)

    # then the legend names exactly the span columns of the table, in order, LLM queue too
    legend = [li.text for li in page.find("ul", "legend").find_all("li")]
    header, rows = _table(page)
    assert header[:2] == ["Turn", "Status"]
    assert legend == header[2:] == [span.label for span in TURN_SPANS]
    assert "LLM queue" in legend
    # and every bar of the waterfall is named as in the legend, with its value
    titles = [bar.attrs["title"] for bar in page.find_all("span", "wf-bar")]
    no_call = [label for label in legend[1:] if label != "Tool call"]  # this turn calls none
    assert sorted(t.split(":")[0] for t in titles) == sorted(no_call)
    assert "LLM queue: 2 ms" in titles
    assert rows[0][header.index("LLM queue")] == "2"


def test_a_call_with_turns_but_no_v2v_still_lists_them(tenant_a: Tenant) -> None:
    # given a call whose only turn is a greeting cut off by the hang-up
    call = make_call(
        _assistant(tenant_a), started_at=DAY, items=[("assistant", "Hello and", 0.0, True)]
    )
    _turn(call, 1, "cancelled", GREETING)

    # when its page is shown
    page = _detail(tenant_a, call)

    # then the turn is there, with what was measured, and the transcript keeps the words
    _, rows = _table(page)
    assert len(rows) == 1 and rows[0][1] == "cancelled"
    assert "No spoken turns" not in page.text
    assert "Hello and" in page.find("ol", "transcript").text
    assert "interrupted" in page.find("ol", "transcript").text


# --- The calls list -----------------------------------------------------------------


CALL_LINK = re.compile(r"/dashboard/calls/([0-9a-f-]{36})/$")


def _call_ids(page: Element) -> list[str]:
    """The calls a list page links to, in order."""
    links = [CALL_LINK.search(a.attrs.get("href", "")) for a in page.find_all("a")]
    return [link[1] for link in links if link]


def _listed(tenant: Tenant, **query: Any) -> tuple[int, Element, list[str]]:
    response = tenant.client.get(reverse("dashboard:call_list"), query)
    page = parse(response.content)
    return response.status_code, page, _call_ids(page)


@pytest.fixture
def calls(tenant_a: Tenant, tenant_b: Tenant) -> dict[str, Call]:
    """Calls of two personas of org A on three days, ending in different ways, and
    one of org B that says every word searched for here."""
    assistant = _assistant(tenant_a)
    sales = persona_create(org=tenant_a.org, name="Sales", instructions="x", greeting="Hi")
    said = lambda text: [("user", text, 1.0, False), ("assistant", "Sure.", 2.0, False)]  # noqa: E731
    return {
        "parking": make_call(assistant, started_at=DAY, items=said("Where can I PARK the car?")),
        "hours": make_call(
            assistant,
            started_at=DAY + timedelta(days=1),
            end_reason="idle_timeout",
            items=said("When are you open on Sunday?"),
        ),
        "price": make_call(
            sales,
            started_at=DAY + timedelta(days=2),
            end_reason="max_duration",
            items=said("What does the parking permit cost?"),
        ),
        "other_org": make_call(
            _assistant(tenant_b),
            started_at=DAY + timedelta(days=1),
            items=said("Parking, Sunday, permit: all of it."),
        ),
    }


def _ids(calls: dict[str, Call], *names: str) -> list[str]:
    return [str(calls[name].pk) for name in names]


def test_each_filter_narrows_the_list(tenant_a: Tenant, calls: dict[str, Call]) -> None:
    sales = Persona.objects.get(org=tenant_a.org, name="Sales")

    # no filter: every call of org A, newest first
    assert _listed(tenant_a)[2] == _ids(calls, "price", "hours", "parking")
    # persona
    assert _listed(tenant_a, persona=sales.pk)[2] == _ids(calls, "price")
    # date range: whole UTC days, both included
    assert _listed(tenant_a, start="2026-03-11")[2] == _ids(calls, "price", "hours")
    assert _listed(tenant_a, end="2026-03-11")[2] == _ids(calls, "hours", "parking")
    assert _listed(tenant_a, start="2026-03-11", end="2026-03-11")[2] == _ids(calls, "hours")
    # end reason
    assert _listed(tenant_a, end_reason="idle_timeout")[2] == _ids(calls, "hours")
    assert _listed(tenant_a, end_reason="hangup")[2] == _ids(calls, "parking")
    # transcript text, ignoring case, in any entry of the call
    assert _listed(tenant_a, q="parking")[2] == _ids(calls, "price")
    assert _listed(tenant_a, q="park")[2] == _ids(calls, "price", "parking")
    assert _listed(tenant_a, q="SURE")[2] == _ids(calls, "price", "hours", "parking")
    assert _listed(tenant_a, q="  ")[2] == _ids(calls, "price", "hours", "parking")
    # filters combine
    assert _listed(tenant_a, q="park", start="2026-03-12")[2] == _ids(calls, "price")
    assert _listed(tenant_a, q="park", end_reason="idle_timeout")[2] == []


def test_another_orgs_calls_never_appear(tenant_a: Tenant, calls: dict[str, Call]) -> None:
    other = str(calls["other_org"].pk)
    queries: list[dict[str, str]] = [
        {},
        {"q": "all of it"},
        {"q": "Sunday"},
        {"start": "2026-03-11", "end": "2026-03-11"},
        {"end_reason": "hangup"},
    ]
    for query in queries:
        status, page, ids = _listed(tenant_a, **query)
        assert status == 200 and other not in ids, query
        assert "all of it" not in page.text
    # and org B's persona is no choice for org A
    status, page, ids = _listed(tenant_a, persona=calls["other_org"].persona_id)
    assert status == 400 and ids == []


def test_the_form_keeps_the_values_it_filtered_by(tenant_a: Tenant, calls: dict[str, Call]) -> None:
    sales = Persona.objects.get(org=tenant_a.org, name="Sales")

    query = {"q": "permit", "persona": sales.pk, "start": "2026-03-10", "end": "2026-03-12"}
    _, page, _ = _listed(tenant_a, **query, end_reason="max_duration")

    form = page.find("form", "call-filters")
    inputs = {i.attrs["name"]: i.attrs.get("value") for i in form.find_all("input")}
    assert inputs == {"q": "permit", "start": "2026-03-10", "end": "2026-03-12"}
    selected = {
        s.attrs["name"]: [o.attrs["value"] for o in s.find_all("option") if "selected" in o.attrs]
        for s in form.find_all("select")
    }
    assert selected == {"persona": [str(sales.pk)], "end_reason": ["max_duration"]}


def test_pages_keep_the_filters(tenant_a: Tenant) -> None:
    # given 30 calls that mention parking and 10 that do not, interleaved
    persona = _assistant(tenant_a)
    parking = []
    for n in range(40):
        text = "Is there parking?" if n % 4 else "What time is it?"
        at = DAY + timedelta(minutes=n)
        call = make_call(persona, started_at=at, items=[("user", text, 1.0, False)])
        if n % 4:
            parking.append(str(call.pk))

    # when the search is paged through by its links
    status, page, first = _listed(tenant_a, q="parking")
    older = [a for a in page.find_all("a") if a.text == "Older"]
    assert status == 200 and len(older) == 1
    second = tenant_a.client.get(reverse("dashboard:call_list") + older[0].attrs["href"])
    second_ids = _call_ids(parse(second.content))

    # then the second page goes on with the same search, and together they hold all of it
    assert "q=parking" in older[0].attrs["href"]
    assert len(first) == 25 and len(second_ids) == 5
    assert first + second_ids == list(reversed(parking))


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({"start": "2026-13-01"}, "start", "Give a date like 2026-01-31"),
        ({"end": "yesterday"}, "end", "Give a date like 2026-01-31"),
        ({"end": "9999-12-31"}, "end", "Give a date like 2026-01-31"),
        ({"start": "2026-03-11", "end": "2026-03-10"}, "end", "before the start date"),
        ({"persona": "abc"}, "persona", "Select a valid choice"),
        ({"persona": "99999999999999999999999"}, "persona", "Select a valid choice"),
        ({"end_reason": "exploded"}, "end_reason", "Select a valid choice"),
        ({"q": "park\x00ing"}, "q", "Null characters are not allowed"),
        ({"q": "x" * 201}, "q", "at most 200 characters"),
    ],
)
def test_bad_filters_get_a_clear_message(
    tenant_a: Tenant, calls: dict[str, Call], query: dict[str, str], field: str, message: str
) -> None:
    status, page, ids = _listed(tenant_a, **query)

    assert status == 400 and ids == []
    row = [r for r in page.find_all("div", "field-error") if r.find_all("label")]
    assert [r.find("label").attrs["for"] for r in row] == [f"id_{field}"]
    assert message in row[0].find("ul", "errorlist").text
    assert "Correct the filters above" in page.text
