"""The cross-tenant matrix: as a member of org A, every dashboard page and API
endpoint is tried against org B's objects. Each must answer 404 (or 403), leak
none of B's data, and change nothing of B's."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.test import Client
from django.urls import URLPattern, reverse

from sessions.auth import CallGrant
from sessions.models import Call, CallerMessage
from sessions.services import call_end, call_item_record, call_start, call_turn_record
from telephony.models import OutboundCall, PhoneNumber, SipTrunk
from telephony.services import (
    outbound_call_create,
    phone_number_create,
    trunk_create,
    trunk_update,
)
from tests.support.tenants import Tenant
from voiceapp.api import urls as api_urls
from voiceapp.dashboard import urls as dashboard_urls
from voiceapp.knowledge.models import KnowledgeDocument, KnowledgePassage
from voiceapp.personas.models import Persona, PersonaFact, PersonaTool
from voiceapp.personas.server_tools import persona_tool_create
from voiceapp.personas.services import persona_create, persona_fact_create
from voiceapp.tenants.models import (
    Invitation,
    LLMEndpoint,
    Membership,
    PublishableKey,
    Role,
    SecretKey,
)
from voiceapp.tenants.services import (
    invitation_create,
    llm_endpoint_create,
    publishable_key_create,
    secret_key_create,
)
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import emit_event, webhook_endpoint_create

pytestmark = pytest.mark.django_db

B_SECRET_MARK = "Bravo-Confidential-Instructions"
B_FACT_MARK = "Bravo-Private-Opening-Hours"
B_LLM_KEY = "sk-bravo-llm-key-do-not-leak"
B_WEBHOOK_URL = "https://93.184.215.14/bravo-private-hook"
B_WEBHOOK_MARK = "Bravo-Private-Usage-Event"
B_MESSAGE_MARK = "Bravo-Private-Caller-Message"
B_TOOL_URL = "https://93.184.215.16/bravo-private-tool"
B_TOOL_HEADER = "bravo-tool-api-key-do-not-leak"
B_TRUNK_PASSWORD = "bravo-trunk-password-do-not-leak"


@dataclass
class OrgB:
    persona: Persona
    secret_key: SecretKey
    raw_secret: str
    publishable_key: PublishableKey
    invitation: Invitation
    membership: Membership
    call: Call
    fact: PersonaFact
    llm_endpoint: LLMEndpoint
    webhook: WebhookEndpoint
    webhook_secret: str
    delivery: WebhookDelivery
    message: CallerMessage
    tool: PersonaTool
    tool_secret: str
    document: KnowledgeDocument
    trunk: SipTrunk
    number: PhoneNumber

    def snapshot(self) -> list[object]:
        """Everything of B's that a successful attack would change."""
        persona = Persona.objects.filter(pk=self.persona.pk).values().first()
        return [
            persona,
            list(PersonaFact.objects.filter(persona__org=self.persona.org_id).values()),
            SecretKey.objects.filter(pk=self.secret_key.pk).values("revoked_at", "name").first(),
            PublishableKey.objects.filter(pk=self.publishable_key.pk).values("revoked_at").first(),
            Invitation.objects.filter(pk=self.invitation.pk).values("revoked_at").first(),
            Membership.objects.filter(pk=self.membership.pk).values("role").first(),
            LLMEndpoint.objects.filter(pk=self.llm_endpoint.pk).values().first(),
            WebhookEndpoint.objects.filter(pk=self.webhook.pk).values().first(),
            WebhookDelivery.objects.filter(pk=self.delivery.pk).values().first(),
            CallerMessage.objects.filter(pk=self.message.pk).values("read_at").first(),
            PersonaTool.objects.filter(pk=self.tool.pk).values().first(),
            KnowledgeDocument.objects.filter(pk=self.document.pk)
            .values("title", "status", "passage_count")
            .first(),
            list(KnowledgePassage.objects.filter(document=self.document).values("text")),
            SipTrunk.objects.filter(pk=self.trunk.pk).values().first(),
            PhoneNumber.objects.filter(pk=self.number.pk).values().first(),
        ]


@pytest.fixture
def org_b(tenant_b: Tenant, django_capture_on_commit_callbacks) -> OrgB:  # type: ignore[no-untyped-def]
    persona = persona_create(
        org=tenant_b.org,
        name="Bravo Closer",
        slug="bravo-closer",
        instructions=B_SECRET_MARK,
        greeting="Welcome to Bravo",
    )
    key, raw = secret_key_create(org=tenant_b.org, name="bravo-backend")
    pk_key = publishable_key_create(
        org=tenant_b.org, name="bravo-site", allowed_origins=["https://bravo.test"]
    )
    with django_capture_on_commit_callbacks(execute=True):
        invitation, _ = invitation_create(
            org=tenant_b.org, email="hire@bravo.test", role=Role.MEMBER, invited_by=tenant_b.owner
        )
    grant = CallGrant(
        org_id=tenant_b.org.pk, persona_id=persona.pk, persona_slug=persona.slug, session_config={}
    )
    call = call_start(call_id=str(uuid.uuid4()), grant=grant, transport="websocket", client_info={})
    call_item_record(
        call_id=str(call.pk),
        item_id="item_b",
        role="user",
        text="Bravo-Private-Caller-Words",
        at_s=1.0,
    )
    call_turn_record(
        call_id=str(call.pk),
        response_id="resp_b",
        status="completed",
        at_s=1.5,
        spans={"v2v_ms": 1},
    )
    call_end(call_id=str(call.pk), reason="hangup")  # so B's call counts in usage and analytics
    membership = Membership.objects.get(org=tenant_b.org, user=tenant_b.owner)
    fact = persona_fact_create(persona=persona, question="When?", answer=B_FACT_MARK)
    endpoint = llm_endpoint_create(
        org=tenant_b.org,
        name="Bravo GPU cluster",
        base_url="http://bravo-llm.internal:8000/v1",
        model="bravo-private-model",
        api_key=B_LLM_KEY,
        is_default=True,
    )
    webhook, webhook_secret = webhook_endpoint_create(
        org=tenant_b.org, url=B_WEBHOOK_URL, events=["usage.threshold"]
    )
    with django_capture_on_commit_callbacks(execute=False):  # logged, never sent
        (delivery,) = emit_event(tenant_b.org, "usage.threshold", {"note": B_WEBHOOK_MARK})
    message = CallerMessage.objects.create(
        org=tenant_b.org,
        call=call,
        persona=persona,
        persona_name=persona.name,
        name="Bravo Caller",
        callback_number="555 0199",
        message=B_MESSAGE_MARK,
    )
    tool, tool_secret = persona_tool_create(
        persona=persona,
        name="bravo_lookup",
        description="Look up a Bravo listing.",
        url=B_TOOL_URL,
        headers={"X-Api-Key": B_TOOL_HEADER},
    )
    document = KnowledgeDocument.objects.create(
        persona=persona, title="Bravo listings", status=KnowledgeDocument.Status.READY
    )
    KnowledgePassage.objects.create(document=document, position=0, text=B_SECRET_MARK)
    trunk = trunk_create(
        org=tenant_b.org,
        name="Bravo carrier",
        allowed_addresses=["198.51.100.7"],
        username="bravo-trunk",
        password=B_TRUNK_PASSWORD,
    )
    number = phone_number_create(
        org=tenant_b.org, number="+15550109999", persona=persona, trunk=trunk
    )
    return OrgB(
        persona,
        key,
        raw,
        pk_key,
        invitation,
        membership,
        call,
        fact,
        endpoint,
        webhook,
        webhook_secret,
        delivery,
        message,
        tool,
        tool_secret,
        document,
        trunk,
        number,
    )


# URL name -> the ids of B's objects to aim it at. Names left out must be listed in
# NOT_TENANT_OWNED with the reason, so a new URL cannot slip past this test.
TARGETS: dict[str, Callable[[OrgB], object]] = {
    "call_detail": lambda b: b.call.pk,
    "call_recording": lambda b: b.call.pk,
    "widget_test_session": lambda b: b.persona.pk,
    "persona_edit": lambda b: b.persona.pk,
    "persona_delete": lambda b: b.persona.pk,
    "persona_voice_preview": lambda b: b.persona.pk,
    "persona_voice_preview_audio": lambda b: b.persona.pk,
    "persona_fact_create": lambda b: b.persona.pk,
    "persona_fact_edit": lambda b: (b.persona.pk, b.fact.pk),
    "persona_fact_delete": lambda b: (b.persona.pk, b.fact.pk),
    "persona_fact_move": lambda b: (b.persona.pk, b.fact.pk),
    "secret_key_revoke": lambda b: b.secret_key.pk,
    "publishable_key_revoke": lambda b: b.publishable_key.pk,
    "invitation_revoke": lambda b: b.invitation.pk,
    "membership_remove": lambda b: b.membership.pk,
    "membership_role": lambda b: b.membership.pk,
    "llm_endpoint_edit": lambda b: b.llm_endpoint.pk,
    "llm_endpoint_delete": lambda b: b.llm_endpoint.pk,
    "llm_endpoint_test": lambda b: b.llm_endpoint.pk,
    "webhook_delete": lambda b: b.webhook.pk,
    "webhook_delivery": lambda b: b.delivery.pk,
    "webhook_resend": lambda b: b.delivery.pk,
    "message_mark": lambda b: b.message.pk,
    "persona_tool_create": lambda b: b.persona.pk,
    "persona_document_upload": lambda b: b.persona.pk,
    "persona_document_url": lambda b: b.persona.pk,
    "persona_documents_status": lambda b: b.persona.pk,
    "persona_document_detail": lambda b: (b.persona.pk, b.document.pk),
    "persona_document_refresh": lambda b: (b.persona.pk, b.document.pk),
    "persona_document_delete": lambda b: (b.persona.pk, b.document.pk),
    "persona_tool_edit": lambda b: (b.persona.pk, b.tool.pk),
    "persona_tool_test": lambda b: (b.persona.pk, b.tool.pk),
    "persona_tool_delete": lambda b: (b.persona.pk, b.tool.pk),
    "trunk_delete": lambda b: b.trunk.pk,
    "number_delete": lambda b: b.number.pk,
}
NOT_TENANT_OWNED = {
    "voice_preview": "voices are the server's shared catalogue",
    "voice_preview_audio": "voices are the server's shared catalogue",
    "invitation_accept": "addressed by a secret token, and bound to the invitee's email",
}


def _dashboard_patterns() -> list[URLPattern]:
    return [p for p in dashboard_urls.urlpatterns if isinstance(p, URLPattern)]


def _leaks(content: bytes, b: OrgB) -> list[str]:
    text = content.decode(errors="replace")
    marks = [
        B_SECRET_MARK,
        B_FACT_MARK,
        "Bravo Closer",
        "bravo-closer",
        "bravo-backend",
        b.secret_key.prefix,
        b.publishable_key.key,
        "hire@bravo.test",
        "Bravo Realty",
        b.raw_secret,
        "Bravo GPU cluster",
        "bravo-llm.internal",
        "bravo-private-model",
        B_LLM_KEY,
        b.llm_endpoint.api_key_encrypted,
        B_WEBHOOK_URL,
        B_WEBHOOK_MARK,
        b.webhook_secret,
        b.webhook.secret_encrypted,
        b.delivery.webhook_id,
        str(b.call.pk),
        "Bravo-Private-Caller-Words",
        B_MESSAGE_MARK,
        B_TOOL_URL,
        B_TOOL_HEADER,
        b.tool_secret,
        b.tool.headers_encrypted,
        "bravo_lookup",
        "Bravo carrier",
        "bravo-trunk",
        "198.51.100.7",
        "+15550109999",
        B_TRUNK_PASSWORD,
        b.trunk.password_encrypted,
    ]
    return [m for m in marks if m in text]


def _args(target: object) -> list[object]:
    return list(target) if isinstance(target, tuple) else [target]


def test_every_dashboard_url_with_an_id_is_in_the_matrix() -> None:
    with_args = {p.name for p in _dashboard_patterns() if p.pattern.converters}
    assert with_args == set(TARGETS) | set(NOT_TENANT_OWNED)


@pytest.mark.parametrize("name", sorted(TARGETS))
@pytest.mark.parametrize("method", ["get", "post"])
def test_dashboard_urls_refuse_other_orgs_objects(
    tenant_a: Tenant, org_b: OrgB, name: str, method: str
) -> None:
    before = org_b.snapshot()
    url = reverse(f"dashboard:{name}", args=_args(TARGETS[name](org_b)))

    response = getattr(tenant_a.client, method)(url, {"answer": "pwned", "direction": "up"})

    assert response.status_code in (403, 404, 405), (url, response.status_code)
    if response.status_code == 405:
        assert method == "get"  # POST-only actions refuse GET before looking anything up
    assert _leaks(response.content, org_b) == []
    assert org_b.snapshot() == before


@pytest.mark.parametrize(
    "name", [p.name for p in _dashboard_patterns() if not p.pattern.converters]
)
def test_dashboard_pages_show_nothing_of_other_orgs(
    tenant_a: Tenant, org_b: OrgB, name: str
) -> None:
    response = tenant_a.client.get(reverse(f"dashboard:{name}"))

    assert response.status_code in (200, 302, 405)
    assert _leaks(response.content, org_b) == []


@pytest.mark.parametrize("name", ["persona_fact_edit", "persona_fact_delete", "persona_fact_move"])
@pytest.mark.parametrize("method", ["get", "post"])
def test_own_persona_with_other_orgs_fact_is_refused(
    tenant_a: Tenant, org_b: OrgB, name: str, method: str
) -> None:
    before = org_b.snapshot()
    own = Persona.objects.get(org=tenant_a.org, slug="assistant")
    url = reverse(f"dashboard:{name}", args=[own.pk, org_b.fact.pk])

    response = getattr(tenant_a.client, method)(url, {"answer": "pwned", "direction": "up"})

    assert response.status_code in (404, 405), (url, response.status_code)
    assert _leaks(response.content, org_b) == []
    assert org_b.snapshot() == before


def test_widget_page_ignores_other_orgs_ids(tenant_a: Tenant, org_b: OrgB) -> None:
    response = tenant_a.client.get(
        reverse("dashboard:widget"), {"persona": org_b.persona.pk, "key": org_b.publishable_key.pk}
    )

    assert response.status_code == 200
    assert _leaks(response.content, org_b) == []


@pytest.mark.parametrize("method", ["get", "put", "patch", "delete"])
def test_api_refuses_other_orgs_personas(secret_key_a: str, org_b: OrgB, method: str) -> None:
    before = org_b.snapshot()
    client = Client()

    response = getattr(client, method)(
        f"/api/v1/personas/{org_b.persona.pk}/",
        data={"name": "pwned", "instructions": "x", "greeting": "x"},
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret_key_a}"},
    )

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert _leaks(response.content, org_b) == []
    assert org_b.snapshot() == before


def _fact_urls(b: OrgB, own_persona_pk: int) -> list[tuple[str, str]]:
    facts = f"/api/v1/personas/{b.persona.pk}/facts/"
    return [
        ("get", facts),
        ("post", facts),
        ("put", facts),
        *((m, f"{facts}{b.fact.pk}/") for m in ("get", "put", "patch", "delete")),
        *(
            (m, f"/api/v1/personas/{own_persona_pk}/facts/{b.fact.pk}/")
            for m in ("get", "put", "patch", "delete")
        ),
    ]


def test_api_refuses_other_orgs_facts(secret_key_a: str, tenant_a: Tenant, org_b: OrgB) -> None:
    before = org_b.snapshot()
    own = Persona.objects.get(org=tenant_a.org, slug="assistant")
    client = Client()

    for method, url in _fact_urls(org_b, own.pk):
        replace = method == "put" and url.endswith("/facts/")
        data: object = [{"answer": "pwned"}] if replace else {"answer": "pwned", "position": 0}
        response = getattr(client, method)(
            url,
            data=data,
            content_type="application/json",
            headers={"Authorization": f"Bearer {secret_key_a}"},
        )

        assert response.status_code == 404, (method, url, response.status_code)
        assert response.json()["error"]["code"] == "not_found"
        assert _leaks(response.content, org_b) == []
    assert org_b.snapshot() == before
    assert not own.facts.exists()


def test_api_lists_only_own_personas(secret_key_a: str, org_b: OrgB) -> None:
    response = Client().get(
        "/api/v1/personas/", headers={"Authorization": f"Bearer {secret_key_a}"}
    )

    assert response.status_code == 200
    assert _leaks(response.content, org_b) == []


def test_api_cannot_create_into_another_org(
    secret_key_a: str, tenant_a: Tenant, org_b: OrgB
) -> None:
    response = Client().post(
        "/api/v1/personas/",
        data={
            "name": "Smuggled",
            "instructions": "x",
            "greeting": "x",
            "org": org_b.persona.org_id,
        },
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret_key_a}"},
    )

    assert response.status_code == 201
    assert Persona.objects.get(pk=response.json()["id"]).org == tenant_a.org


def test_org_b_key_sees_org_b_only(tenant_a: Tenant, org_b: OrgB) -> None:
    response = Client().get(
        "/api/v1/personas/", headers={"Authorization": f"Bearer {org_b.raw_secret}"}
    )

    slugs = {p["slug"] for p in response.json()}
    assert slugs == {"assistant", "bravo-closer"}
    assert not Persona.objects.filter(org=tenant_a.org, slug="bravo-closer").exists()


@pytest.mark.parametrize(
    ("method", "suffix"),
    [("get", ""), ("put", ""), ("patch", ""), ("delete", ""), ("post", "test/")],
)
def test_api_refuses_other_orgs_llm_endpoints(
    secret_key_a: str, org_b: OrgB, method: str, suffix: str
) -> None:
    before = org_b.snapshot()

    response = getattr(Client(), method)(
        f"/api/v1/llm-endpoints/{org_b.llm_endpoint.pk}/{suffix}",
        data={"name": "pwned", "base_url": "http://evil.test/v1", "model": "x", "api_key": "x"},
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret_key_a}"},
    )

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert _leaks(response.content, org_b) == []
    assert org_b.snapshot() == before


def test_api_lists_only_own_llm_endpoints(secret_key_a: str, org_b: OrgB) -> None:
    response = Client().get(
        "/api/v1/llm-endpoints/", headers={"Authorization": f"Bearer {secret_key_a}"}
    )

    assert response.status_code == 200
    assert _leaks(response.content, org_b) == []


def test_api_cannot_point_a_persona_at_another_orgs_endpoint(
    secret_key_a: str, tenant_a: Tenant, org_b: OrgB
) -> None:
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")

    response = Client().patch(
        f"/api/v1/personas/{persona.pk}/",
        data={"llm_endpoint": org_b.llm_endpoint.pk},
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret_key_a}"},
    )

    assert response.status_code == 400
    assert _leaks(response.content, org_b) == []
    persona.refresh_from_db()
    assert persona.llm_endpoint is None


@pytest.mark.parametrize(("method", "suffix"), [("get", ""), ("delete", ""), ("patch", "")])
def test_api_refuses_other_orgs_webhooks(
    secret_key_a: str, org_b: OrgB, method: str, suffix: str
) -> None:
    before = org_b.snapshot()

    response = getattr(Client(), method)(
        f"/api/v1/webhooks/{org_b.webhook.pk}/{suffix}",
        data={"url": "https://93.184.215.15/evil", "events": ["call.ended"]},
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret_key_a}"},
    )

    assert response.status_code in (404, 405)
    if response.status_code == 404:
        assert response.json()["error"]["code"] == "not_found"
    assert _leaks(response.content, org_b) == []
    assert org_b.snapshot() == before


def test_api_lists_only_own_webhooks(secret_key_a: str, org_b: OrgB) -> None:
    response = Client().get(
        "/api/v1/webhooks/", headers={"Authorization": f"Bearer {secret_key_a}"}
    )

    assert response.status_code == 200 and response.json() == []
    assert _leaks(response.content, org_b) == []


# --- API: every endpoint with an id in its path, and the test that aims it at B's object.
API_TESTS_BY_URL = {
    "persona-detail": "test_api_refuses_other_orgs_personas",
    "persona-fact-list": "test_api_refuses_other_orgs_facts",
    "persona-fact-detail": "test_api_refuses_other_orgs_facts",
    "llm-endpoint-detail": "test_api_refuses_other_orgs_llm_endpoints",
    "llm-endpoint-test": "test_api_refuses_other_orgs_llm_endpoints",
    "call-detail": "test_api_refuses_other_orgs_calls",
    "webhook-detail": "test_api_refuses_other_orgs_webhooks",
    "persona-tool-list": "test_api_refuses_other_orgs_tools",
    "persona-tool-detail": "test_api_refuses_other_orgs_tools",
    "persona-tool-test": "test_api_refuses_other_orgs_tools",
    "persona-document-list": "test_api_refuses_other_orgs_documents",
    "persona-document-detail": "test_api_refuses_other_orgs_documents",
    "persona-document-refresh": "test_api_refuses_other_orgs_documents",
    "persona-document-passages": "test_api_refuses_other_orgs_documents",
    "sip-trunk-detail": "test_api_refuses_other_orgs_trunks_and_numbers",
    "phone-number-detail": "test_api_refuses_other_orgs_trunks_and_numbers",
    "outbound-call-detail": "test_api_refuses_other_orgs_outbound_calls",
}


def _api_patterns() -> list[URLPattern]:
    patterns = [p for p in api_urls.urlpatterns if isinstance(p, URLPattern)]
    return patterns + [p for p in api_urls.router.urls if isinstance(p, URLPattern)]


def test_every_api_url_with_an_id_is_in_the_matrix() -> None:
    with_args = {
        p.name
        for p in _api_patterns()
        if p.name and (p.pattern.converters or p.pattern.regex.groups)
    }
    assert with_args == set(API_TESTS_BY_URL)
    assert all(name in globals() for name in API_TESTS_BY_URL.values())


def test_api_refuses_other_orgs_calls(secret_key_a: str, org_b: OrgB) -> None:
    for method in ("get", "put", "patch", "delete", "post"):
        response = getattr(Client(), method)(
            f"/api/v1/calls/{org_b.call.pk}/",
            data={},
            content_type="application/json",
            headers={"Authorization": f"Bearer {secret_key_a}"},
        )

        assert response.status_code in (404, 405), (method, response.status_code)
        assert _leaks(response.content, org_b) == []


def test_api_lists_and_sums_only_own_calls(secret_key_a: str, org_b: OrgB) -> None:
    headers = {"Authorization": f"Bearer {secret_key_a}"}

    listing = Client().get("/api/v1/calls/", headers=headers)
    usage = Client().get("/api/v1/usage/", headers=headers)
    theirs = Client().get(f"/api/v1/calls/?persona={org_b.persona.slug}", headers=headers)
    nobodys = Client().get("/api/v1/calls/?persona=no-such-slug", headers=headers)

    assert listing.status_code == 200 and listing.json()["results"] == []
    assert usage.status_code == 200
    assert (usage.json()["calls"], usage.json()["by_persona"]) == (0, [])
    for response in (listing, usage):
        assert _leaks(response.content, org_b) == []
    # B's persona slug is answered exactly as one that exists nowhere (the message
    # repeats the slug A sent, nothing else)
    assert theirs.status_code == nobodys.status_code == 400
    assert theirs.content.replace(org_b.persona.slug.encode(), b"no-such-slug") == nobodys.content


def test_api_refuses_other_orgs_tools(secret_key_a: str, org_b: OrgB) -> None:
    before = org_b.snapshot()
    base = f"/api/v1/personas/{org_b.persona.pk}/tools/"
    attempts = [
        ("get", base),
        ("post", base),
        ("get", f"{base}{org_b.tool.pk}/"),
        ("patch", f"{base}{org_b.tool.pk}/"),
        ("delete", f"{base}{org_b.tool.pk}/"),
        ("post", f"{base}{org_b.tool.pk}/test/"),
    ]
    for method, url in attempts:
        response = getattr(Client(), method)(
            url,
            data={"name": "pwned", "url": "https://93.184.215.15/evil", "description": "x"},
            content_type="application/json",
            headers={"Authorization": f"Bearer {secret_key_a}"},
        )
        assert response.status_code == 404, (method, url, response.status_code)
        assert _leaks(response.content, org_b) == []
    assert org_b.snapshot() == before


def test_api_refuses_other_orgs_documents(secret_key_a: str, tenant_a: Tenant, org_b: OrgB) -> None:
    before = org_b.snapshot()
    own = tenant_a.org.personas.get()
    attempts = []
    for persona_pk in (org_b.persona.pk, own.pk):  # B's persona, or one's own with B's id
        base = f"/api/v1/personas/{persona_pk}/documents/"
        attempts += [
            ("get", f"{base}{org_b.document.pk}/"),
            ("delete", f"{base}{org_b.document.pk}/"),
            ("post", f"{base}{org_b.document.pk}/refresh/"),
            ("get", f"{base}{org_b.document.pk}/passages/"),
        ]
    b_base = f"/api/v1/personas/{org_b.persona.pk}/documents/"
    attempts += [("get", b_base), ("post", b_base)]
    for method, url in attempts:
        response = getattr(Client(), method)(
            url,
            data={"url": "https://93.184.215.15/evil"},
            content_type="application/json",
            headers={"Authorization": f"Bearer {secret_key_a}"},
        )
        assert response.status_code == 404, (method, url, response.status_code)
        assert _leaks(response.content, org_b) == []
    assert org_b.snapshot() == before


def test_api_refuses_other_orgs_trunks_and_numbers(
    secret_key_a: str, tenant_a: Tenant, org_b: OrgB
) -> None:
    trunk, number = org_b.trunk, org_b.number
    auth = {"Authorization": f"Bearer {secret_key_a}"}
    before = (list(SipTrunk.objects.values()), list(PhoneNumber.objects.values()))
    for url in (f"/api/v1/sip-trunks/{trunk.pk}/", f"/api/v1/phone-numbers/{number.pk}/"):
        for method in ("get", "put", "patch", "delete"):
            response = getattr(Client(), method)(
                url, data={"name": "x", "label": "x"}, content_type="application/json", headers=auth
            )
            assert response.status_code == 404, (url, method)
            assert b"Bravo" not in response.content and b"9999" not in response.content
    for url in ("/api/v1/sip-trunks/", "/api/v1/phone-numbers/"):
        listed = Client().get(url, headers=auth)
        assert listed.status_code == 200 and listed.json() == []
    # A cannot route a number to B's persona, nor through B's trunk.
    own_persona = tenant_a.org.personas.get()
    for body in (
        {"number": "+15550108888", "persona": org_b.persona.pk},
        {"number": "+15550108888", "persona": own_persona.pk, "trunk": trunk.pk},
    ):
        response = Client().post(
            "/api/v1/phone-numbers/", data=body, content_type="application/json", headers=auth
        )
        assert response.status_code == 404, body
    taken = Client().post(  # B's number is taken, and saying so tells nothing of B
        "/api/v1/phone-numbers/",
        data={"number": "+1 555 010 9999", "persona": own_persona.pk},
        content_type="application/json",
        headers=auth,
    )
    assert taken.status_code == 400 and b"Bravo" not in taken.content
    assert (list(SipTrunk.objects.values()), list(PhoneNumber.objects.values())) == before
    assert B_TRUNK_PASSWORD.encode() not in taken.content


def test_api_refuses_other_orgs_outbound_calls(
    secret_key_a: str, tenant_a: Tenant, org_b: OrgB
) -> None:
    trunk_update(org_b.trunk, outbound_address="sip.bravo.example:5060")
    outbound = outbound_call_create(org=org_b.persona.org, persona=org_b.persona, to="+15550107777")
    auth = {"Authorization": f"Bearer {secret_key_a}"}
    response = Client().get(f"/api/v1/outbound-calls/{outbound.pk}/", headers=auth)
    assert response.status_code == 404 and b"7777" not in response.content
    listed = Client().get("/api/v1/outbound-calls/", headers=auth)
    assert listed.status_code == 200 and listed.json() == []
    # A cannot have B's persona call, nor call through B's trunk
    for body in (
        {"to": "+15550106666", "persona": org_b.persona.slug},
        {"to": "+15550106666", "persona": str(org_b.persona.pk)},
        {"to": "+15550106666", "persona": "assistant", "trunk": org_b.trunk.pk},
    ):
        placed = Client().post(
            "/api/v1/calls/", data=body, content_type="application/json", headers=auth
        )
        assert placed.status_code in (400, 404), (body, placed.status_code)
        assert b"bravo" not in placed.content.lower()
    assert OutboundCall.objects.count() == 1
