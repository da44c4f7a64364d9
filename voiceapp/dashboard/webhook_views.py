"""Dashboard pages for webhooks: endpoints (the secret shown once), the delivery
log and resending a message."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from voiceapp.dashboard.forms import WebhookEndpointForm
from voiceapp.dashboard.views import _add_errors, org_required
from voiceapp.tenants.models import Membership
from webhooks import selectors, services

DELIVERIES_PER_PAGE = 50


def _webhooks_page(request: HttpRequest, membership: Membership, **extra: Any) -> HttpResponse:
    org = membership.org
    deliveries = Paginator(selectors.webhook_delivery_list(org=org), DELIVERIES_PER_PAGE)
    context = {
        "section": "webhooks",
        "endpoints": selectors.webhook_endpoint_list(org=org),
        "deliveries": deliveries.get_page(request.GET.get("page")),
        "form": WebhookEndpointForm(),
        "retry_delays_s": services.RETRY_DELAYS_S,
        **extra,
    }
    return render(request, "dashboard/webhooks.html", context)


@org_required(manage=True)
def webhooks(request: HttpRequest, membership: Membership) -> HttpResponse:
    return _webhooks_page(request, membership)


@org_required(manage=True)
@require_POST
def webhook_create_view(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = WebhookEndpointForm(request.POST)
    if form.is_valid():
        try:
            endpoint, secret = services.webhook_endpoint_create(
                org=membership.org, url=form.cleaned_data["url"], events=form.cleaned_data["events"]
            )
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(
                request,
                f"Added {endpoint.url}. Copy its signing secret now: it is not shown again.",
            )
            return _webhooks_page(request, membership, new_secret=secret)
    return _webhooks_page(request, membership, form=form)


@org_required(manage=True)
@require_POST
def webhook_delete_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    endpoint = selectors.webhook_endpoint_get(org=membership.org, pk=pk)
    url = endpoint.url
    services.webhook_endpoint_delete(endpoint=endpoint)
    messages.success(request, f"Deleted the webhook {url} and its delivery log.")
    return redirect("dashboard:webhooks")


@org_required(manage=True)
def webhook_delivery_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    delivery = selectors.webhook_delivery_get(org=membership.org, pk=pk)
    return render(
        request,
        "dashboard/webhook_delivery.html",
        {"section": "webhooks", "delivery": delivery},
    )


@org_required(manage=True)
@require_POST
def webhook_resend_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    delivery = selectors.webhook_delivery_get(org=membership.org, pk=pk)
    services.webhook_resend(delivery=delivery)
    messages.success(
        request, f"Sending {delivery.event_type} {delivery.webhook_id} again (same webhook-id)."
    )
    return redirect("dashboard:webhooks")
