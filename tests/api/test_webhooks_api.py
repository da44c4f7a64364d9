"""/api/v1/webhooks/: create returns the secret once; list, read and delete;
bad URLs and events are refused with the field named."""

from __future__ import annotations

import pytest
from standardwebhooks import Webhook

from tests.support.api import Api, error_of
from tests.support.tenants import Tenant
from webhooks.models import WebhookEndpoint
from webhooks.services import webhook_endpoint_secret
from webhooks.signing import headers

pytestmark = pytest.mark.django_db

URL = "https://93.184.215.14/hooks/voice"


def test_create_returns_the_secret_once(api: Api, tenant_a: Tenant) -> None:
    created = api.post("webhooks/", {"url": URL, "events": ["call.ended", "call.started"]})

    assert created.status_code == 201, created.json()
    data = created.json()
    assert set(data) == {"id", "url", "events", "enabled", "created_at", "secret"}
    assert data["url"] == URL and data["events"] == ["call.started", "call.ended"]
    secret = data["secret"]
    assert secret.startswith("whsec_")
    endpoint = WebhookEndpoint.objects.get(pk=data["id"], org=tenant_a.org)
    assert webhook_endpoint_secret(endpoint=endpoint) == secret
    assert secret not in endpoint.secret_encrypted
    body = b'{"type":"call.ended"}'
    signed = headers(
        secret=secret, msg_id="msg_1", timestamp=int(endpoint.created_at.timestamp()), body=body
    )
    assert Webhook(secret).verify(body, signed) == {"type": "call.ended"}
    for response in (api.get("webhooks/"), api.get(f"webhooks/{endpoint.pk}/")):
        assert response.status_code == 200
        text = response.content.decode()
        assert secret not in text and secret.removeprefix("whsec_") not in text
        assert endpoint.secret_encrypted not in text and "secret" not in response.json()
    assert api.get("webhooks/").json()[0]["id"] == endpoint.pk


def test_delete(api: Api, tenant_a: Tenant) -> None:
    pk = api.post("webhooks/", {"url": URL, "events": ["call.ended"]}).json()["id"]

    assert api.delete(f"webhooks/{pk}/").status_code == 204
    assert api.get(f"webhooks/{pk}/").status_code == 404
    assert not WebhookEndpoint.objects.exists()


def test_endpoints_cannot_be_changed_in_place(api: Api) -> None:
    pk = api.post("webhooks/", {"url": URL, "events": ["call.ended"]}).json()["id"]

    response = api.patch(f"webhooks/{pk}/", {"url": "https://93.184.215.15/"})

    assert response.status_code == 405
    assert WebhookEndpoint.objects.get().url == URL


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"url": "http://127.0.0.1:8000/h", "events": ["call.ended"]}, "url", "loopback"),
        ({"url": "http://169.254.169.254/", "events": ["call.ended"]}, "url", "link-local"),
        ({"url": "gopher://93.184.215.14/", "events": ["call.ended"]}, "url", "http://"),
        ({"url": URL, "events": []}, "events", "at least one event"),
        ({"url": URL, "events": ["call.exploded"]}, "events", "Unknown event call.exploded"),
        ({"events": ["call.ended"]}, "url", "required"),
    ],
)
def test_bad_values_are_refused_with_the_field_named(
    api: Api, body: dict[str, object], field: str, message: str
) -> None:
    response = api.post("webhooks/", body)

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid_request"
    assert message in " ".join(error["details"][field])
    assert not WebhookEndpoint.objects.exists()


def test_the_schema_describes_webhooks(api: Api) -> None:
    schema = api.get("schema/", headers={"Accept": "application/json"})

    text = schema.content.decode()
    assert schema.status_code == 200
    assert "/api/v1/webhooks/" in text and "/api/v1/webhooks/{id}/" in text
    assert "WebhookEndpointCreated" in text and "whsec_" in text
