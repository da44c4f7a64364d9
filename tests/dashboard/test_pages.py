from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_create
from voiceapp.tenants.models import PublishableKey, Role, SecretKey
from voiceapp.tenants.services import publishable_key_create, secret_key_authenticate

pytestmark = pytest.mark.django_db


def persona_form(voice_pk: int, **overrides: str) -> dict[str, str]:
    data = {
        "name": "Front desk",
        "slug": "",
        "is_active": "on",
        "instructions": "Book visits.",
        "greeting": "Hello!",
        "agent_speaks_first": "on",
        "voice": str(voice_pk),
        "language": "en",
        "llm_backend": "local",
        "llm_model": "",
        "temperature": "0.7",
        "max_reply_tokens": "100",
        "vad_threshold": "0.5",
        "end_of_turn_silence_ms": "600",
        "interruptions_enabled": "on",
        "idle_timeout_s": "60",
        "max_call_duration_s": "600",
        "allowed_origins": "",
    }
    return {**data, **overrides}


@pytest.mark.parametrize(
    "name",
    [
        "dashboard:home",
        "dashboard:persona_list",
        "dashboard:persona_create",
        "dashboard:voice_list",
        "dashboard:keys",
        "dashboard:llm_endpoints",
        "dashboard:widget",
        "dashboard:team",
        "dashboard:call_list",
    ],
)
def test_pages_render(tenant_a: Tenant, name: str) -> None:
    page = tenant_a.client.get(reverse(name))

    assert page.status_code == 200
    assert b"<main" in page.content and b"Alpha Dental" in page.content


def test_persona_create_edit_delete(tenant_a: Tenant) -> None:
    voice_pk = tenant_a.org.personas.get().voice_id
    client = tenant_a.client

    created = client.post(reverse("dashboard:persona_create"), persona_form(voice_pk))
    assert created.status_code == 302
    persona = Persona.objects.get(org=tenant_a.org, slug="front-desk")
    assert client.get(reverse("dashboard:persona_list")).content.count(b"front-desk") >= 1

    edited = client.post(
        reverse("dashboard:persona_edit", args=[persona.pk]),
        persona_form(
            voice_pk,
            slug="front-desk",
            temperature="1.2",
            allowed_origins="https://Clinic.test\nhttp://localhost:3000",
        ),
    )
    assert edited.status_code == 302
    persona.refresh_from_db()
    assert persona.temperature == 1.2
    assert persona.allowed_origins == ["https://clinic.test", "http://localhost:3000"]

    deleted = client.post(reverse("dashboard:persona_delete", args=[persona.pk]))
    assert deleted.status_code == 302
    assert not Persona.objects.filter(pk=persona.pk).exists()


def test_persona_form_sets_call_recording(tenant_a: Tenant) -> None:
    # given a persona created without touching the recording settings
    voice_pk = tenant_a.org.personas.get().voice_id
    client = tenant_a.client
    client.post(reverse("dashboard:persona_create"), persona_form(voice_pk))
    persona = Persona.objects.get(org=tenant_a.org, slug="front-desk")
    assert (persona.record_calls, persona.recording_retention_days) == (False, 30)

    # when the owner turns recording on with a notice and 90 days' retention
    edited = client.post(
        reverse("dashboard:persona_edit", args=[persona.pk]),
        persona_form(
            voice_pk,
            slug="front-desk",
            record_calls="on",
            recording_notice="This call is recorded for quality.",
            recording_retention_days="90",
        ),
    )
    too_long = client.post(
        reverse("dashboard:persona_edit", args=[persona.pk]),
        persona_form(voice_pk, slug="front-desk", recording_retention_days="4000"),
    )

    # then it is kept, and a retention past ten years is refused with the reason
    assert edited.status_code == 302
    persona.refresh_from_db()
    assert persona.record_calls is True and persona.recording_retention_days == 90
    assert persona.recording_notice == "This call is recorded for quality."
    assert too_long.status_code == 200
    assert "Keep recordings between 1 and 3650 days." in too_long.content.decode()


def test_persona_form_sets_general_questions(tenant_a: Tenant) -> None:
    # given the persona form, which says what the setting does
    voice_pk = tenant_a.org.personas.get().voice_id
    client = tenant_a.client
    page = client.get(reverse("dashboard:persona_create")).content.decode()
    assert 'name="general_questions"' in page and "gets about half of them wrong" in page
    # a persona created without it declines general questions
    client.post(reverse("dashboard:persona_create"), persona_form(voice_pk))
    persona = Persona.objects.get(org=tenant_a.org, slug="front-desk")
    assert persona.general_questions is False

    # when the owner ticks it, it is kept
    edited = client.post(
        reverse("dashboard:persona_edit", args=[persona.pk]),
        persona_form(voice_pk, slug="front-desk", general_questions="on"),
    )
    assert edited.status_code == 302
    persona.refresh_from_db()
    assert persona.general_questions is True


def test_persona_form_shows_validation_errors(tenant_a: Tenant) -> None:
    voice_pk = tenant_a.org.personas.get().voice_id

    response = tenant_a.client.post(
        reverse("dashboard:persona_create"),
        persona_form(
            voice_pk,
            temperature="5",
            end_of_turn_silence_ms="10",
            slug="assistant",
            allowed_origins="not-an-origin",
        ),
    )

    assert response.status_code == 200
    for message in [
        b"Temperature must be between 0 and 2.",
        b"End-of-turn silence must be between 100 and 3000 ms.",
        b"is not an origin like https://example.com",
    ]:
        assert message in response.content
    assert Persona.objects.filter(org=tenant_a.org).count() == 1


def test_duplicate_slug_is_reported_on_the_field(tenant_a: Tenant) -> None:
    voice_pk = tenant_a.org.personas.get().voice_id

    response = tenant_a.client.post(
        reverse("dashboard:persona_create"), persona_form(voice_pk, slug="assistant")
    )

    assert response.status_code == 200
    assert b"Another persona of this organization uses this slug." in response.content


def test_secret_key_is_shown_once_and_can_be_revoked(tenant_a: Tenant) -> None:
    client = tenant_a.client

    page = client.post(reverse("dashboard:secret_key_create"), {"name": "backend"})

    raw = re.search(rb"sk_[A-Za-z0-9_-]{40,}", page.content)
    assert raw is not None
    raw_key = raw.group().decode()
    assert secret_key_authenticate(raw=raw_key) is not None
    assert raw_key.encode() not in client.get(reverse("dashboard:keys")).content

    key = SecretKey.objects.get(org=tenant_a.org, name="backend")
    client.post(reverse("dashboard:secret_key_revoke", args=[key.pk]))
    assert secret_key_authenticate(raw=raw_key) is None


def test_publishable_key_origins_are_checked(tenant_a: Tenant) -> None:
    client = tenant_a.client

    bad = client.post(
        reverse("dashboard:publishable_key_create"), {"name": "site", "allowed_origins": "ftp://x"}
    )
    assert bad.status_code == 200
    assert b"is not an origin" in bad.content
    good = client.post(
        reverse("dashboard:publishable_key_create"),
        {"name": "site", "allowed_origins": "https://www.alpha.test"},
    )
    assert good.status_code == 302
    key = PublishableKey.objects.get(org=tenant_a.org)
    assert key.allowed_origins == ["https://www.alpha.test"]


@pytest.mark.parametrize("origin", ["http://[", "https://[nope]", "https://ok.test\nhttp://[::1"])
def test_unreadable_origins_are_form_errors(tenant_a: Tenant, origin: str) -> None:
    voice_pk = tenant_a.org.personas.get().voice_id

    key_form = tenant_a.client.post(
        reverse("dashboard:publishable_key_create"), {"name": "site", "allowed_origins": origin}
    )
    persona_page = tenant_a.client.post(
        reverse("dashboard:persona_create"), persona_form(voice_pk, allowed_origins=origin)
    )

    for response in (key_form, persona_page):
        assert response.status_code == 200
        assert b"is not an origin like https://example.com" in response.content
    assert not PublishableKey.objects.filter(org=tenant_a.org).exists()
    assert Persona.objects.filter(org=tenant_a.org).count() == 1


@pytest.mark.parametrize(
    "query",
    [
        "persona=abc",
        "key=1'",
        "persona=1'&key=abc",
        "persona=99999999999999999999999",
        "persona=%00",
        "persona=%EF%BC%91",  # a full-width digit: str.isdigit() alone would let it through
        "persona=-1&key=1.5",
    ],
)
def test_bad_query_strings_are_ignored(tenant_a: Tenant, query: str) -> None:
    # (the calls list answers a bad filter with a message: tests/dashboard/test_call_pages.py)
    publishable_key_create(org=tenant_a.org, name="site", allowed_origins=["https://alpha.test"])

    response = tenant_a.client.get(reverse("dashboard:widget") + "?" + query)

    assert response.status_code == 200


def test_widget_page_picks_the_persona_and_key_of_the_query(tenant_a: Tenant) -> None:
    publishable_key_create(org=tenant_a.org, name="first", allowed_origins=["https://a.test"])
    second = publishable_key_create(
        org=tenant_a.org, name="second", allowed_origins=["https://b.test"]
    )

    page = tenant_a.client.get(reverse("dashboard:widget") + f"?key={second.pk}")

    assert f"data-key=&quot;{second.key}&quot;" in page.content.decode()


def test_widget_page_shows_the_snippet(tenant_a: Tenant) -> None:
    key = publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://alpha.test"]
    )

    page = tenant_a.client.get(reverse("dashboard:widget"))

    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/widget/v1.js" in html
    assert f"data-key=&quot;{key.key}&quot;" in html
    assert "data-persona=&quot;assistant&quot;" in html


def test_members_cannot_manage_keys_or_invite(tenant_a: Tenant, member_of) -> None:  # type: ignore[no-untyped-def]
    _, client = member_of(tenant_a.org, Role.MEMBER)

    assert client.get(reverse("dashboard:keys")).status_code == 403
    assert client.post(reverse("dashboard:secret_key_create"), {"name": "x"}).status_code == 403
    assert (
        client.post(
            reverse("dashboard:invitation_create"), {"email": "a@b.test", "role": "member"}
        ).status_code
        == 403
    )
    assert client.get(reverse("dashboard:team")).status_code == 200
    assert client.get(reverse("dashboard:persona_list")).status_code == 200


def test_invite_from_the_team_page(tenant_a: Tenant, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        response = tenant_a.client.post(
            reverse("dashboard:invitation_create"),
            {"email": "colleague@alpha.test", "role": "admin"},
        )

    assert response.status_code == 302
    from django.core import mail

    assert mail.outbox[0].to == ["colleague@alpha.test"]
    assert b"colleague@alpha.test" in tenant_a.client.get(reverse("dashboard:team")).content


def test_anonymous_client_gets_no_voice_preview(client: Client) -> None:
    response = client.post(reverse("dashboard:voice_preview", args=[1]))
    assert response.status_code == 302


def test_call_page_shows_transcript_and_waterfall(tenant_a: Tenant) -> None:
    import uuid

    from sessions.auth import CallGrant
    from sessions.services import call_end, call_item_record, call_start, call_turn_record

    persona = tenant_a.org.personas.get()
    grant = CallGrant(
        org_id=tenant_a.org.pk, persona_id=persona.pk, persona_slug=persona.slug, session_config={}
    )
    call = call_start(call_id=str(uuid.uuid4()), grant=grant, transport="webrtc", client_info={})
    call_item_record(
        call_id=str(call.pk), item_id="i1", role="user", text="Where is Paris?", at_s=2
    )
    call_item_record(
        call_id=str(call.pk),
        item_id="i2",
        role="assistant",
        text="In France, on the",
        at_s=3,
        interrupted=True,
    )
    spans = {
        "v2v_ms": 610.0,
        "endpoint_ms": 250.0,
        "asr_ms": 120.0,
        "llm_queue_ms": 2.0,
        "llm_first_token_ms": 40.0,
        "first_clause_ms": 90.0,
        "tts_first_audio_ms": 110.0,
    }
    call_turn_record(
        call_id=str(call.pk), response_id="r1", status="cancelled", at_s=3, spans=spans
    )
    call_end(call_id=str(call.pk), reason="hangup")

    listing = tenant_a.client.get(reverse("dashboard:call_list"), {"persona": persona.pk})
    page = tenant_a.client.get(reverse("dashboard:call_detail", args=[call.pk]))

    assert reverse("dashboard:call_detail", args=[call.pk]).encode() in listing.content
    html = page.content.decode()
    assert "Where is Paris?" in html and "In France, on the" in html and "interrupted" in html
    assert "610 ms" in html and html.count('class="wf-bar"') == 6
    assert "Caller hung up" in html


def test_widget_test_call_gets_a_client_secret(tenant_a: Tenant) -> None:
    from sessions.auth import grant_from_client_secret_sync

    persona = tenant_a.org.personas.get()

    response = tenant_a.client.post(reverse("dashboard:widget_test_session", args=[persona.pk]))

    assert response.status_code == 200
    body = response.json()
    assert body["persona"]["slug"] == "assistant"
    grant = grant_from_client_secret_sync(body["client_secret"]["value"], model="assistant")
    assert grant.org_id == tenant_a.org.pk
    assert (
        tenant_a.client.get(reverse("dashboard:widget_test_session", args=[persona.pk])).status_code
        == 405
    )


def test_the_persona_page_offers_a_test_call(tenant_a: Tenant) -> None:
    # given an active persona and a switched-off one
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    off = persona_create(org=tenant_a.org, name="Off", instructions="x", greeting="Hi")
    Persona.objects.filter(pk=off.pk).update(is_active=False)
    # when the member opens each persona's page
    page = tenant_a.client.get(f"/dashboard/personas/{persona.pk}/").content.decode()
    off_page = tenant_a.client.get(f"/dashboard/personas/{off.pk}/").content.decode()
    # then only the active one has a button that starts a test call with it
    test_url = f"/dashboard/widget/test-session/{persona.pk}/"
    assert f'data-test-call="{test_url}" data-persona="assistant"' in page
    assert "Talk to this persona" in page
    assert "Talk to this persona" not in off_page
