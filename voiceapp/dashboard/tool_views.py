"""Dashboard pages for a persona's server tools: add (the signing secret shown
once), edit, delete, and Test tool (one real signed call, its answer and time)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from voiceapp.dashboard.forms import PersonaToolForm, ToolTestForm
from voiceapp.dashboard.views import _add_errors, org_required
from voiceapp.personas.models import Persona, PersonaTool
from voiceapp.personas.selectors import persona_get
from voiceapp.personas.server_tools import (
    persona_tool_create,
    persona_tool_delete,
    persona_tool_get,
    persona_tool_target,
    persona_tool_update,
    sample_arguments,
    tool_call,
)
from voiceapp.tenants import crypto
from voiceapp.tenants.models import Membership


def _tools_url(persona: Persona) -> str:
    return reverse("dashboard:persona_edit", args=[persona.pk]) + "#tools"


def _tool(persona: Persona, tool_pk: int) -> PersonaTool:
    try:
        return persona_tool_get(persona=persona, pk=tool_pk)
    except PersonaTool.DoesNotExist as exc:
        raise Http404("No such tool.") from exc


def _data(form: PersonaToolForm, *, editing: bool) -> dict[str, Any]:
    data = dict(form.cleaned_data)
    clear = data.pop("clear_headers", False)
    if clear:
        data["headers"] = None
    elif editing and not data.get("headers"):
        data.pop("headers", None)  # empty: keep the stored ones
    return data


def _form_page(
    request: HttpRequest, persona: Persona, form: PersonaToolForm, tool: PersonaTool | None
) -> HttpResponse:
    return render(
        request,
        "dashboard/persona_tool_form.html",
        {"section": "personas", "persona": persona, "form": form, "tool": tool},
    )


@org_required(manage=True)
@require_http_methods(["GET", "POST"])
def tool_create_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    persona = persona_get(org=membership.org, pk=pk)
    form = PersonaToolForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            tool, secret = persona_tool_create(persona=persona, **_data(form, editing=False))
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(
                request,
                f"Added the tool {tool.name}. Copy its signing secret now: it is not shown again.",
            )
            return _test_page(request, persona, tool, ToolTestForm(initial=_initial(tool)), secret)
    return _form_page(request, persona, form, None)


@org_required(manage=True)
@require_http_methods(["GET", "POST"])
def tool_edit_view(
    request: HttpRequest, membership: Membership, pk: int, tool_pk: int
) -> HttpResponse:
    persona = persona_get(org=membership.org, pk=pk)
    tool = _tool(persona, tool_pk)
    initial = {
        "name": tool.name,
        "description": tool.description,
        "parameters": json.dumps(tool.parameters, indent=2) if tool.parameters else "",
        "url": tool.url,
        "timeout_ms": tool.timeout_ms,
        "enabled": tool.enabled,
    }
    form = PersonaToolForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            persona_tool_update(tool=tool, **_data(form, editing=True))
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(request, f"Saved the tool {tool.name}.")
            return redirect(_tools_url(persona))
    return _form_page(request, persona, form, tool)


@org_required(manage=True)
@require_POST
def tool_delete_view(
    request: HttpRequest, membership: Membership, pk: int, tool_pk: int
) -> HttpResponse:
    persona = persona_get(org=membership.org, pk=pk)
    tool = _tool(persona, tool_pk)
    name = tool.name
    persona_tool_delete(tool=tool)
    messages.success(request, f"Deleted the tool {name}.")
    return redirect(_tools_url(persona))


def _initial(tool: PersonaTool) -> dict[str, str]:
    return {"arguments": json.dumps(sample_arguments(tool), indent=2)}


def _test_page(
    request: HttpRequest,
    persona: Persona,
    tool: PersonaTool,
    form: ToolTestForm,
    new_secret: str = "",
    result: Any = None,
) -> HttpResponse:
    return render(
        request,
        "dashboard/persona_tool_test.html",
        {
            "section": "personas",
            "persona": persona,
            "tool": tool,
            "form": form,
            "new_secret": new_secret,
            "result": result,
        },
    )


@org_required(manage=True)
@require_http_methods(["GET", "POST"])
def tool_test_view(
    request: HttpRequest, membership: Membership, pk: int, tool_pk: int
) -> HttpResponse:
    """Send one real, signed call with the arguments given, and show the answer."""
    persona = persona_get(org=membership.org, pk=pk)
    tool = _tool(persona, tool_pk)
    if request.method != "POST":
        return _test_page(request, persona, tool, ToolTestForm(initial=_initial(tool)))
    form = ToolTestForm(request.POST)
    result = None
    if form.is_valid():
        try:
            target = persona_tool_target(tool=tool)
        except crypto.DecryptionError as exc:
            form.add_error(None, str(exc))
        else:
            result = tool_call(target, call_id="test", arguments=form.cleaned_data["arguments"])
    return _test_page(request, persona, tool, form, result=result)
