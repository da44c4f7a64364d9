"""Dashboard page for phone calls: the organization's SIP trunks and numbers."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from telephony import selectors, services
from voiceapp.dashboard.forms import PhoneNumberForm, SipTrunkForm
from voiceapp.dashboard.views import _add_errors, org_required
from voiceapp.personas.selectors import persona_get, persona_list
from voiceapp.tenants.models import Membership


def _phone_page(request: HttpRequest, membership: Membership, **extra: Any) -> HttpResponse:
    org = membership.org
    context = {
        "section": "phone",
        "trunks": selectors.trunk_list(org=org),
        "numbers": selectors.phone_number_list(org=org),
        "outbound_calls": selectors.outbound_call_list(org=org)[:20],
        "trunk_form": SipTrunkForm(),
        "number_form": PhoneNumberForm(org=org),
        "sip_port": settings.SIP_PORT,
        "sip_host": settings.SIP_ADVERTISED_HOST or request.get_host().split(":")[0],
        "sip_realm": settings.SIP_REALM,
        "has_personas": persona_list(org=org).exists(),
        **extra,
    }
    return render(request, "dashboard/phone.html", context)


@org_required(manage=True)
def phone(request: HttpRequest, membership: Membership) -> HttpResponse:
    return _phone_page(request, membership)


@org_required(manage=True)
@require_POST
def trunk_create_view(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = SipTrunkForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            trunk = services.trunk_create(
                org=membership.org,
                name=data["name"],
                allowed_addresses=data["allowed_addresses"],
                username=data["username"],
                password=data["password"],
                outbound_address=data["outbound_address"],
                caller_id=data["caller_id"],
                quiet_hours_start=data["quiet_hours_start"],
                quiet_hours_end=data["quiet_hours_end"],
                time_zone=data["time_zone"].strip() or "UTC",
            )
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(request, f"Added the trunk {trunk.name}.")
            return redirect("dashboard:phone")
    return _phone_page(request, membership, trunk_form=form)


@org_required(manage=True)
@require_POST
def trunk_delete_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    trunk = selectors.trunk_get(org=membership.org, pk=pk)
    name = trunk.name
    services.trunk_delete(trunk)
    messages.success(
        request, f"Deleted the trunk {name}. Its numbers now take calls from any trunk."
    )
    return redirect("dashboard:phone")


@org_required(manage=True)
@require_POST
def number_create_view(request: HttpRequest, membership: Membership) -> HttpResponse:
    org = membership.org
    form = PhoneNumberForm(request.POST, org=org)
    if form.is_valid():
        data = form.cleaned_data
        try:
            number = services.phone_number_create(
                org=org,
                number=data["number"],
                persona=persona_get(org=org, pk=data["persona"]),
                trunk=selectors.trunk_get(org=org, pk=data["trunk"]) if data["trunk"] else None,
                label=data["label"],
            )
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(request, f"{number.number} now reaches {number.persona.name}.")
            return redirect("dashboard:phone")
    return _phone_page(request, membership, number_form=form)


@org_required(manage=True)
@require_POST
def number_delete_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    number = selectors.phone_number_get(org=membership.org, pk=pk)
    text = number.number
    services.phone_number_delete(number)
    messages.success(request, f"Deleted {text}: calls to it are refused from now on.")
    return redirect("dashboard:phone")
