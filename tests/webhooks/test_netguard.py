"""Webhook URLs may not reach the server's own networks: refused when added and
again at each send, unless WEBHOOK_ALLOW_PRIVATE_NETWORKS is on."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from tests.support.tenants import Tenant
from tests.support.webhook_receiver import Receiver
from webhooks import netguard
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import emit_event, webhook_attempt, webhook_endpoint_create

pytestmark = pytest.mark.django_db

PUBLIC_URL = "https://93.184.215.14/hooks"  # a literal public address: no DNS needed


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:8000/hook", "loopback"),
        ("http://10.20.30.40/hook", "private"),
        ("http://192.168.1.5/hook", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[::1]:9000/hook", "loopback"),
        ("http://[fe80::1]/hook", "link-local"),
        ("http://0.0.0.0/hook", "unspecified"),
        ("http://[::ffff:127.0.0.1]/hook", "loopback"),
        ("http://localhost:8000/hook", "loopback"),  # a name resolving to loopback
    ],
)
def test_private_addresses_are_refused_at_creation(tenant_a: Tenant, url: str, why: str) -> None:
    with pytest.raises(ValidationError) as refused:
        webhook_endpoint_create(org=tenant_a.org, url=url, events=["call.ended"])

    message = " ".join(refused.value.message_dict["url"])
    assert why in message and "Use a public URL" in message
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://93.184.215.14/hook", "http:// or https://"),
        ("https://user:pw@93.184.215.14/hook", "user names and passwords"),
        ("https://no-such-host.invalid/hook", "could not be resolved"),
        ("https:///hook", "http:// or https://"),
    ],
)
def test_malformed_urls_are_refused(tenant_a: Tenant, url: str, message: str) -> None:
    with pytest.raises(ValidationError) as refused:
        webhook_endpoint_create(org=tenant_a.org, url=url, events=["call.ended"])

    assert message in " ".join(refused.value.message_dict["url"])


def test_a_public_address_is_accepted(tenant_a: Tenant) -> None:
    endpoint, secret = webhook_endpoint_create(
        org=tenant_a.org, url=PUBLIC_URL, events=["call.ended", "call.started", "call.started"]
    )

    assert endpoint.events == ["call.started", "call.ended"]
    assert secret.startswith("whsec_") and secret not in endpoint.secret_encrypted


def test_loopback_is_allowed_when_the_setting_is_on(tenant_a: Tenant, allow_private: None) -> None:
    endpoint, _ = webhook_endpoint_create(
        org=tenant_a.org, url="http://localhost:8000/hook", events=["call.ended"]
    )

    assert endpoint.pk is not None


def test_the_address_is_checked_again_at_send_time(
    tenant_a: Tenant, receiver: Receiver, settings, django_capture_on_commit_callbacks
) -> None:
    webhook_endpoint_create(org=tenant_a.org, url=receiver.url, events=["call.ended"])
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False  # e.g. the operator turned it off since
    with django_capture_on_commit_callbacks(execute=False):
        (delivery,) = emit_event(tenant_a.org, "call.ended", {})

    status = webhook_attempt(delivery_id=delivery.pk, attempt=1)

    assert status == "pending" and receiver.received == []
    delivery = WebhookDelivery.objects.get()
    assert "127.0.0.1 is a loopback address" in delivery.last_error
    assert delivery.last_response_code is None


def test_the_request_goes_to_the_address_that_was_checked(receiver: Receiver) -> None:
    target = netguard.resolve(receiver.url, allow_private=True)

    status = netguard.post(target, body=b"{}", headers={}, timeout_s=2)

    assert target.addresses == ("127.0.0.1",) and status == 200
    assert receiver.received[0].headers["host"].startswith("127.0.0.1:")
