"""Dashboard: the Webhooks page (add with the secret shown once, delete), the
delivery log and resending a message."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from django.test import Client
from django.urls import reverse
from standardwebhooks import Webhook

from tests.support.tenants import Tenant
from tests.support.webhook_receiver import Receiver, webhook_receiver
from voiceapp.tenants.models import Organization, User
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import emit_event, webhook_endpoint_create, webhook_endpoint_secret

pytestmark = pytest.mark.django_db

URL = "https://93.184.215.14/hooks"


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    with webhook_receiver() as running:
        yield running


def test_the_page_renders_empty(tenant_a: Tenant) -> None:
    page = tenant_a.client.get(reverse("dashboard:webhooks"))

    assert page.status_code == 200
    text = page.content.decode()
    assert "No webhooks yet" in text and "Nothing sent yet" in text
    assert 'value="call.ended"' in text and 'value="usage.threshold"' in text


def test_adding_a_webhook_shows_its_secret_once(tenant_a: Tenant) -> None:
    response = tenant_a.client.post(
        reverse("dashboard:webhook_create"), {"url": URL, "events": ["call.ended", "call.started"]}
    )

    assert response.status_code == 200
    endpoint = WebhookEndpoint.objects.get(org=tenant_a.org)
    assert endpoint.events == ["call.started", "call.ended"]
    secret = webhook_endpoint_secret(endpoint=endpoint)
    assert secret in response.content.decode()
    page = tenant_a.client.get(reverse("dashboard:webhooks")).content.decode()
    assert URL in page and secret not in page and endpoint.secret_encrypted not in page


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"url": "http://10.0.0.7/hook", "events": ["call.ended"]},
            "10.0.0.7 is a private address",
        ),
        ({"url": "http://localhost/hook", "events": ["call.ended"]}, "is a loopback address"),
        ({"url": URL}, "This field is required."),
    ],
)
def test_bad_values_are_answered_on_the_form(
    tenant_a: Tenant, data: dict[str, object], message: str
) -> None:
    response = tenant_a.client.post(reverse("dashboard:webhook_create"), data)

    assert response.status_code == 200
    assert message in response.content.decode()
    assert "whsec_" not in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


def test_delete(tenant_a: Tenant) -> None:
    endpoint, _ = webhook_endpoint_create(org=tenant_a.org, url=URL, events=["call.ended"])

    response = tenant_a.client.post(reverse("dashboard:webhook_delete", args=[endpoint.pk]))

    assert response.status_code == 302
    assert not WebhookEndpoint.objects.exists()


def test_the_log_shows_deliveries_and_resend_sends_the_same_id(
    tenant_a: Tenant, receiver: Receiver, django_capture_on_commit_callbacks
) -> None:
    _, secret = webhook_endpoint_create(org=tenant_a.org, url=receiver.url, events=["call.ended"])
    receiver.answer(*[500] * 6)
    with django_capture_on_commit_callbacks(execute=True):
        (delivery,) = emit_event(tenant_a.org, "call.ended", {"call_id": "dash-1"})
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.attempts == 6

    page = tenant_a.client.get(reverse("dashboard:webhooks")).content.decode()
    assert delivery.webhook_id in page and "failed" in page and "HTTP 500" in page
    detail = tenant_a.client.get(reverse("dashboard:webhook_delivery", args=[delivery.pk]))
    assert detail.status_code == 200 and "dash-1" in detail.content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        resent = tenant_a.client.post(reverse("dashboard:webhook_resend", args=[delivery.pk]))

    assert resent.status_code == 302
    assert len(receiver.received) == 7
    last = receiver.received[-1]
    assert last.headers["webhook-id"] == delivery.webhook_id
    assert Webhook(secret).verify(last.body, last.headers)["data"] == {"call_id": "dash-1"}
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.last_response_code == 200
    assert WebhookDelivery.objects.count() == 1


def test_members_cannot_manage_webhooks(
    tenant_a: Tenant, member_of: Callable[[Organization, str], tuple[User, Client]]
) -> None:
    _, client = member_of(tenant_a.org, "member")

    assert client.get(reverse("dashboard:webhooks")).status_code == 403
    response = client.post(
        reverse("dashboard:webhook_create"), {"url": URL, "events": ["call.ended"]}
    )
    assert response.status_code == 403
    assert not WebhookEndpoint.objects.exists()
