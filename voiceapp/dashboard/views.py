"""Dashboard pages. Views authenticate, validate forms and call services;
every tenant-owned object is fetched through a selector that takes the org."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict
from datetime import timedelta
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import Count
from django.forms import Form
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from sessions.analytics import call_analytics
from sessions.auth import client_secret_create
from sessions.models import Call
from sessions.selectors import (
    call_analysis_find,
    call_get,
    call_list,
    call_recording_find,
    call_recording_get,
)
from sessions.views import widget_session_payload
from voiceapp.dashboard.charts import TURN_SPANS, bar_heights, line_chart, turn_rows
from voiceapp.dashboard.forms import (
    CallFilterForm,
    DocumentUploadForm,
    DocumentURLForm,
    InvitationForm,
    LLMEndpointForm,
    OrganizationForm,
    PersonaFactForm,
    PersonaForm,
    PublishableKeyForm,
    SecretKeyForm,
)
from voiceapp.knowledge.models import MAX_DOCUMENTS_PER_PERSONA
from voiceapp.knowledge.selectors import document_list
from voiceapp.personas.models import MAX_FACTS_PER_PERSONA, MAX_TOOLS_PER_PERSONA, Persona
from voiceapp.personas.selectors import (
    persona_fact_get,
    persona_fact_list,
    persona_get,
    persona_list,
    voice_get,
    voice_list,
)
from voiceapp.personas.server_tools import persona_tool_list
from voiceapp.personas.services import (
    persona_create,
    persona_delete,
    persona_fact_create,
    persona_fact_delete,
    persona_fact_reorder,
    persona_fact_update,
    persona_update,
    voice_preview_path,
    voice_preview_request,
    voice_preview_state,
)
from voiceapp.tenants import selectors as tenant_selectors
from voiceapp.tenants import services as tenant_services
from voiceapp.tenants.middleware import SESSION_ORG_KEY, current_membership
from voiceapp.tenants.models import Membership, PublishableKey, Role, SecretKey
from voiceapp.tenants.onboarding import organization_onboard

View = Callable[..., HttpResponse]


def _add_errors(form: Form, exc: ValidationError) -> None:
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


def org_required(manage: bool = False) -> Callable[[View], View]:
    """Log in, act for an organization (and, with ``manage``, be its owner or admin)."""

    def decorator(view: View) -> View:
        @login_required
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            membership = current_membership(request)
            if membership is None:
                return redirect("dashboard:org_create")
            if manage and not membership.can_manage:
                raise PermissionDenied("Only owners and admins can do this.")
            request.org = membership.org
            return view(request, membership, *args, **kwargs)

        return wrapper

    return decorator


def landing(request: HttpRequest) -> HttpResponse:
    return render(request, "landing.html")


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico whatever the page links: send them to the SVG."""
    return redirect(static("favicon.svg"))  # not permanent: the hashed name changes


@login_required
@require_http_methods(["GET", "POST"])
def org_create(request: HttpRequest) -> HttpResponse:
    form = OrganizationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            org = organization_onboard(
                name=form.cleaned_data["name"],
                owner=request.user,
            )
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            request.session[SESSION_ORG_KEY] = org.pk
            messages.success(request, f"Created {org.name}, with a default persona to start from.")
            return redirect("dashboard:home")
    return render(request, "dashboard/org_create.html", {"form": form})


@login_required
@require_POST
def org_switch(request: HttpRequest) -> HttpResponse:
    try:
        org_id = int(request.POST.get("org", ""))
    except ValueError:
        org_id = 0
    membership = next(
        (
            m
            for m in tenant_selectors.membership_list_for_user(user=request.user)
            if m.org_id == org_id
        ),
        None,
    )
    if membership is None:
        raise Http404("No such organization.")
    request.session[SESSION_ORG_KEY] = membership.org_id
    messages.info(request, f"Now working in {membership.org.name}.")
    return redirect("dashboard:home")


@org_required()
def home(request: HttpRequest, membership: Membership) -> HttpResponse:
    org = membership.org
    personas = persona_list(org=org)
    context = {
        "section": "home",
        "persona_count": personas.count(),
        "active_persona_count": personas.filter(is_active=True).count(),
        "key_count": tenant_selectors.secret_key_list(org=org).filter(revoked_at=None).count(),
        "publishable_count": tenant_selectors.publishable_key_list(
            org=org, active_only=True
        ).count(),
        "member_count": tenant_selectors.membership_list(org=org).count(),
        "personas": personas[:5],
    }
    return render(request, "dashboard/home.html", context)


# --- Personas ------------------------------------------------------------------


@org_required()
def persona_list_view(request: HttpRequest, membership: Membership) -> HttpResponse:
    personas = persona_list(org=membership.org)
    return render(
        request, "dashboard/persona_list.html", {"section": "personas", "personas": personas}
    )


@org_required()
@require_http_methods(["GET", "POST"])
def persona_create_view(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = PersonaForm(request.POST or None, org=membership.org)
    if request.method == "POST" and form.is_valid():
        try:
            persona = persona_create(org=membership.org, **form.cleaned_data)
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(request, f"Persona “{persona.name}” created.")
            return redirect("dashboard:persona_list")
    return render(
        request,
        "dashboard/persona_form.html",
        {"section": "personas", "form": form, "persona": None},
    )


def _persona_page(
    request: HttpRequest,
    membership: Membership,
    persona: Persona,
    *,
    form: PersonaForm | None = None,
    fact_form: PersonaFactForm | None = None,
    upload_form: DocumentUploadForm | None = None,
    url_form: DocumentURLForm | None = None,
) -> HttpResponse:
    facts = list(persona_fact_list(org=membership.org, persona=persona))
    documents = list(document_list(persona=persona))
    context = {
        "section": "personas",
        "persona": persona,
        "form": form or PersonaForm(instance=persona, org=membership.org),
        "facts": facts,
        "fact_form": fact_form or PersonaFactForm(),
        "max_facts": MAX_FACTS_PER_PERSONA,
        "facts_full": len(facts) >= MAX_FACTS_PER_PERSONA,
        "tools": persona_tool_list(persona=persona),
        "max_tools": MAX_TOOLS_PER_PERSONA,
        "documents": documents,
        "documents_busy": any(d.busy for d in documents),
        "documents_full": len(documents) >= MAX_DOCUMENTS_PER_PERSONA,
        "max_documents": MAX_DOCUMENTS_PER_PERSONA,
        "upload_form": upload_form or DocumentUploadForm(),
        "url_form": url_form or DocumentURLForm(),
        "can_manage": membership.can_manage,
    }
    return render(request, "dashboard/persona_form.html", context)


@org_required()
@require_http_methods(["GET", "POST"])
def persona_edit_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    persona = persona_get(org=membership.org, pk=pk)
    form = PersonaForm(request.POST or None, instance=persona, org=membership.org)
    if request.method == "POST" and form.is_valid():
        try:
            persona_update(persona=persona, **form.cleaned_data)
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(request, f"Saved “{persona.name}”.")
            return redirect("dashboard:persona_list")
    return _persona_page(request, membership, persona, form=form)


def _knowledge_url(persona: Persona) -> str:
    return reverse("dashboard:persona_edit", args=[persona.pk]) + "#knowledge"


@org_required()
@require_POST
def persona_fact_create_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    persona = persona_get(org=membership.org, pk=pk)
    fact_form = PersonaFactForm(request.POST)
    if fact_form.is_valid():
        try:
            persona_fact_create(persona=persona, **fact_form.cleaned_data)
        except ValidationError as exc:
            _add_errors(fact_form, exc)
        else:
            messages.success(request, "Fact added.")
            return redirect(_knowledge_url(persona))
    return _persona_page(request, membership, persona, fact_form=fact_form)


@org_required()
@require_http_methods(["GET", "POST"])
def persona_fact_edit_view(
    request: HttpRequest, membership: Membership, pk: int, fact_pk: int
) -> HttpResponse:
    persona = persona_get(org=membership.org, pk=pk)
    fact = persona_fact_get(org=membership.org, persona=persona, pk=fact_pk)
    form = PersonaFactForm(request.POST or None, instance=fact)
    if request.method == "POST" and form.is_valid():
        try:
            persona_fact_update(fact=fact, **form.cleaned_data)
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(request, "Fact saved.")
            return redirect(_knowledge_url(persona))
    return render(
        request,
        "dashboard/persona_fact_form.html",
        {"section": "personas", "persona": persona, "fact": fact, "form": form},
    )


@org_required()
@require_POST
def persona_fact_delete_view(
    request: HttpRequest, membership: Membership, pk: int, fact_pk: int
) -> HttpResponse:
    persona = persona_get(org=membership.org, pk=pk)
    fact = persona_fact_get(org=membership.org, persona=persona, pk=fact_pk)
    persona_fact_delete(fact=fact)
    messages.success(request, "Fact deleted.")
    return redirect(_knowledge_url(persona))


@org_required()
@require_POST
def persona_fact_move_view(
    request: HttpRequest, membership: Membership, pk: int, fact_pk: int
) -> HttpResponse:
    """Swap a fact with its neighbour above (``direction=up``) or below (``down``)."""
    persona = persona_get(org=membership.org, pk=pk)
    fact = persona_fact_get(org=membership.org, persona=persona, pk=fact_pk)
    direction = request.POST.get("direction")
    if direction not in ("up", "down"):
        messages.error(request, "Choose whether to move the fact up or down.")
        return redirect(_knowledge_url(persona))
    ids = list(persona_fact_list(org=membership.org, persona=persona).values_list("pk", flat=True))
    index = ids.index(fact.pk)
    other = index - 1 if direction == "up" else index + 1
    if 0 <= other < len(ids):
        ids[index], ids[other] = ids[other], ids[index]
        persona_fact_reorder(persona=persona, fact_ids=ids)
    return redirect(_knowledge_url(persona))


@org_required()
@require_http_methods(["GET", "POST"])
def persona_delete_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    persona = persona_get(org=membership.org, pk=pk)
    if request.method == "POST":
        name = persona.name
        persona_delete(persona=persona)
        messages.success(request, f"Deleted “{name}”.")
        return redirect("dashboard:persona_list")
    return render(
        request,
        "dashboard/persona_confirm_delete.html",
        {"section": "personas", "persona": persona},
    )


# --- Voices --------------------------------------------------------------------


@org_required()
def voice_list_view(request: HttpRequest, membership: Membership) -> HttpResponse:
    return render(
        request, "dashboard/voice_list.html", {"section": "voices", "voices": voice_list()}
    )


def _preview_payload(request: HttpRequest, voice_pk: int, state: dict[str, str]) -> dict[str, str]:
    if state["status"] == "ready":
        return {**state, "audio_url": reverse("dashboard:voice_preview_audio", args=[voice_pk])}
    return state


@org_required()
@require_http_methods(["GET", "POST"])
def voice_preview(request: HttpRequest, membership: Membership, pk: int) -> JsonResponse:
    """POST starts synthesizing a preview; GET reports its state."""
    voice = voice_get(pk=pk)
    if request.method == "POST":
        state = voice_preview_request(voice=voice)
    else:
        state = voice_preview_state(voice=voice)
    status = 202 if state["status"] == "pending" else 200
    return JsonResponse(_preview_payload(request, voice.pk, state), status=status)


@org_required()
def voice_preview_audio(request: HttpRequest, membership: Membership, pk: int) -> FileResponse:
    voice = voice_get(pk=pk)
    if voice_preview_state(voice=voice)["status"] != "ready":
        raise Http404("No preview has been generated for this voice yet.")
    return FileResponse(open(voice.preview_path, "rb"), content_type="audio/wav")


@org_required()
@require_http_methods(["GET", "POST"])
def persona_voice_preview(request: HttpRequest, membership: Membership, pk: int) -> JsonResponse:
    """The persona's saved greeting in its saved voice (the catalogue's sample
    sentence when it has no greeting): POST starts it, GET reports its state."""
    persona = persona_get(org=membership.org, pk=pk)
    if request.method == "POST":
        state = voice_preview_request(voice=persona.voice, text=persona.greeting)
    else:
        state = voice_preview_state(voice=persona.voice, text=persona.greeting)
    if state["status"] == "ready":
        state = {**state, "audio_url": reverse("dashboard:persona_voice_preview_audio", args=[pk])}
    return JsonResponse(state, status=202 if state["status"] == "pending" else 200)


@org_required()
def persona_voice_preview_audio(
    request: HttpRequest, membership: Membership, pk: int
) -> FileResponse:
    persona = persona_get(org=membership.org, pk=pk)
    path = voice_preview_path(voice=persona.voice, text=persona.greeting)
    if path is None or not path.is_file():
        raise Http404("No preview has been generated for this greeting yet.")
    return FileResponse(open(path, "rb"), content_type="audio/wav")


# --- Keys ----------------------------------------------------------------------


def _keys_page(request: HttpRequest, membership: Membership, **extra: Any) -> HttpResponse:
    org = membership.org
    context = {
        "section": "keys",
        "secret_keys": tenant_selectors.secret_key_list(org=org),
        "publishable_keys": tenant_selectors.publishable_key_list(org=org),
        "secret_form": SecretKeyForm(),
        "publishable_form": PublishableKeyForm(),
        **extra,
    }
    return render(request, "dashboard/keys.html", context)


@org_required(manage=True)
def keys(request: HttpRequest, membership: Membership) -> HttpResponse:
    return _keys_page(request, membership)


@org_required(manage=True)
@require_POST
def secret_key_create_view(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = SecretKeyForm(request.POST)
    if form.is_valid():
        key, raw = tenant_services.secret_key_create(
            org=membership.org,
            name=form.cleaned_data["name"],
            created_by=request.user,
        )
        messages.success(
            request, f"Created the secret key “{key.name}”. Copy it now: it is not shown again."
        )
        return _keys_page(request, membership, new_secret=raw)
    return _keys_page(request, membership, secret_form=form)


def _key_check_s() -> str:
    """How long a call in progress goes on after its key is revoked: it checks its key
    this often (sessions/runner.py ``_end_when_revoked``)."""
    return f"{settings.CALL_KEY_CHECK_S:g}"


def _revoke_confirm_page(
    request: HttpRequest, key: SecretKey | PublishableKey, kind: str
) -> HttpResponse:
    """GET: what revoking does, with the button that POSTs it."""
    if not key.is_active:
        messages.info(request, f"“{key.name}” is already revoked.")
        return redirect("dashboard:keys")
    return render(
        request,
        "dashboard/key_confirm_revoke.html",
        {"section": "keys", "key": key, "kind": kind, "check_s": _key_check_s()},
    )


@org_required(manage=True)
@require_http_methods(["GET", "POST"])
def secret_key_revoke_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    key = tenant_selectors.secret_key_get(org=membership.org, pk=pk)
    if request.method == "GET":
        return _revoke_confirm_page(request, key, "secret")
    tenant_services.secret_key_revoke(key=key)
    messages.success(
        request,
        f"Revoked “{key.name}”. New requests and calls with it are refused; "
        f"calls in progress end within about {_key_check_s()} seconds.",
    )
    return redirect("dashboard:keys")


@org_required(manage=True)
@require_POST
def publishable_key_create_view(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = PublishableKeyForm(request.POST)
    if form.is_valid():
        try:
            key = tenant_services.publishable_key_create(org=membership.org, **form.cleaned_data)
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(request, f"Created the publishable key “{key.name}”.")
            return redirect("dashboard:keys")
    return _keys_page(request, membership, publishable_form=form)


@org_required(manage=True)
@require_http_methods(["GET", "POST"])
def publishable_key_revoke_view(
    request: HttpRequest, membership: Membership, pk: int
) -> HttpResponse:
    key = tenant_selectors.publishable_key_get(org=membership.org, pk=pk)
    if request.method == "GET":
        return _revoke_confirm_page(request, key, "publishable")
    tenant_services.publishable_key_revoke(key=key)
    messages.success(
        request,
        f"Revoked “{key.name}”. The widget stops working where it used it; "
        f"calls in progress end within about {_key_check_s()} seconds.",
    )
    return redirect("dashboard:keys")


# --- Language models (bring your own LLM) -------------------------------------


def _llm_page(request: HttpRequest, membership: Membership, **extra: Any) -> HttpResponse:
    org = membership.org
    endpoints = tenant_selectors.llm_endpoint_list(org=org).annotate(
        persona_count=Count("personas")
    )
    context = {
        "section": "llm",
        "endpoints": endpoints,
        "default_endpoint": next((e for e in endpoints if e.is_default), None),
        "form": LLMEndpointForm(),
        **extra,
    }
    return render(request, "dashboard/llm.html", context)


@org_required(manage=True)
def llm_endpoints(request: HttpRequest, membership: Membership) -> HttpResponse:
    return _llm_page(request, membership)


@org_required(manage=True)
@require_POST
def llm_endpoint_create_view(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = LLMEndpointForm(request.POST)
    if form.is_valid():
        fields = form.service_fields()
        fields["api_key"] = fields["api_key"] or ""
        try:
            endpoint = tenant_services.llm_endpoint_create(org=membership.org, **fields)
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(
                request, f"Added the endpoint “{endpoint.name}”. Test its connection below."
            )
            return redirect("dashboard:llm_endpoints")
    return _llm_page(request, membership, form=form)


@org_required(manage=True)
@require_http_methods(["GET", "POST"])
def llm_endpoint_edit_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    endpoint = tenant_selectors.llm_endpoint_get(org=membership.org, pk=pk)
    form = LLMEndpointForm(request.POST or None, endpoint=endpoint)
    if request.method == "POST" and form.is_valid():
        try:
            tenant_services.llm_endpoint_update(endpoint=endpoint, **form.service_fields())
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(request, f"Saved “{endpoint.name}”.")
            return redirect("dashboard:llm_endpoints")
    return render(
        request,
        "dashboard/llm_endpoint_form.html",
        {"section": "llm", "form": form, "endpoint": endpoint},
    )


@org_required(manage=True)
@require_POST
def llm_endpoint_delete_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    endpoint = tenant_selectors.llm_endpoint_get(org=membership.org, pk=pk)
    name = endpoint.name
    tenant_services.llm_endpoint_delete(endpoint=endpoint)
    messages.success(request, f"Deleted “{name}”. Its personas now use the organization default.")
    return redirect("dashboard:llm_endpoints")


@org_required(manage=True)
@require_POST
def llm_endpoint_test_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    """Stream a tiny completion; JSON for the page's script, a message otherwise."""
    endpoint = tenant_selectors.llm_endpoint_get(org=membership.org, pk=pk)
    check = tenant_services.llm_endpoint_check(endpoint=endpoint)
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse(asdict(check))
    if check.ok:
        messages.success(
            request,
            f"“{endpoint.name}” answered: first token after {check.first_token_ms:.0f} ms "
            f"(“{check.reply.strip()}”).",
        )
    else:
        messages.error(request, f"“{endpoint.name}” failed: {check.error}")
    return redirect("dashboard:llm_endpoints")


def _id_param(request: HttpRequest, name: str) -> int:
    """A row id from the query string; 0 (no row) for anything that is not one."""
    value = request.GET.get(name, "")
    if value.isascii() and value.isdigit() and len(value) <= 18:
        return int(value)
    return 0


# --- Widget --------------------------------------------------------------------


@org_required()
def widget(request: HttpRequest, membership: Membership) -> HttpResponse:
    org = membership.org
    personas = persona_list(org=org).filter(is_active=True)
    keys = tenant_selectors.publishable_key_list(org=org, active_only=True)
    persona = personas.filter(pk=_id_param(request, "persona")).first() or personas.first()
    key = keys.filter(pk=_id_param(request, "key")).first() or keys.first()
    snippet = None
    if persona and key:
        script_src = request.build_absolute_uri("/static/widget/v1.js")
        snippet = (
            f'<script src="{script_src}" data-key="{key.key}" '
            f'data-persona="{persona.slug}" async></script>'
        )
    return render(
        request,
        "dashboard/widget.html",
        {
            "section": "widget",
            "personas": personas,
            "keys": keys,
            "persona": persona,
            "key": key,
            "snippet": snippet,
        },
    )


# --- Calls ---------------------------------------------------------------------


@org_required()
def call_list_view(request: HttpRequest, membership: Membership) -> HttpResponse:
    org = membership.org
    personas = persona_list(org=org)
    form = CallFilterForm(request.GET, personas=personas)
    valid = form.is_valid()
    calls = call_list(org=org).none()
    if valid:
        filters = form.cleaned_data
        calls = call_list(
            org=org,
            persona_id=filters["persona"],
            start=filters["start"],
            end=filters["end"],
            end_reason=filters["end_reason"] or None,
            text=filters["q"].strip() or None,
        )
    page = Paginator(calls, 25).get_page(request.GET.get("page"))
    return render(
        request,
        "dashboard/call_list.html",
        {
            "section": "calls",
            "page": page,
            "form": form,
            "filtered": bool(form.active()),
            "filter_query": urlencode(form.active()),
        },
        status=200 if valid else 400,
    )


@org_required()
def call_detail_view(request: HttpRequest, membership: Membership, pk: str) -> HttpResponse:
    call = call_get(org=membership.org, pk=pk)
    rows = turn_rows(list(call.turns.all()))
    return render(
        request,
        "dashboard/call_detail.html",
        {
            "section": "calls",
            "call": call,
            "items": call.items.all(),
            "turn_rows": rows,
            "measured": any(row.v2v_ms is not None for row in rows),
            "spans": TURN_SPANS,
            "recording": call_recording_find(org=membership.org, call_pk=pk),
            "analysis": call_analysis_find(call=call),
        },
    )


RANGE = re.compile(r"bytes=(\d*)-(\d*)$")
MAX_RANGE_BYTES = 1024 * 1024  # per ranged answer: the player asks again for more


@org_required()
def call_recording_audio(request: HttpRequest, membership: Membership, pk: str) -> HttpResponse:
    """The call's audio (Ogg Opus), with byte ranges so the player can seek."""
    recording = call_recording_get(org=membership.org, call_pk=pk)
    try:
        size = recording.file.size
        audio = recording.file.open("rb")
    except FileNotFoundError as exc:
        raise Http404("The recording's file is gone.") from exc
    match = RANGE.match(request.headers.get("Range", "").strip())
    if match is None or match.groups() == ("", ""):
        response: HttpResponse = FileResponse(audio, content_type="audio/ogg")
        response["Accept-Ranges"] = "bytes"
        return response
    first, last = match.groups()
    start = int(first) if first else max(0, size - int(last))  # "-N": the last N bytes
    end = min(int(last), size - 1) if first and last else size - 1
    end = min(end, start + MAX_RANGE_BYTES - 1)
    if start > end or start >= size:
        audio.close()
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        return response
    with audio:
        audio.seek(start)
        body = audio.read(end - start + 1)
    response = HttpResponse(body, status=206, content_type="audio/ogg")
    response["Content-Range"] = f"bytes {start}-{end}/{size}"
    response["Accept-Ranges"] = "bytes"
    return response


# --- Analytics -------------------------------------------------------------------

ANALYTICS_RANGES = (7, 30, 90)
SPAN_LABELS = {span.name: span.label for span in TURN_SPANS}
PERCENTILE_COLOURS = (("p50", "#60a5fa"), ("p95", "#f59e0b"), ("p99", "#ef4444"))


@org_required()
def analytics_view(request: HttpRequest, membership: Membership) -> HttpResponse:
    org = membership.org
    personas = persona_list(org=org)
    persona = personas.filter(pk=request.GET.get("persona") or 0).first()
    days = int(request.GET["days"]) if request.GET.get("days") in {"7", "30", "90"} else 30
    end = timezone.now().date()
    start = end - timedelta(days=days - 1)
    data = call_analytics(org=org, start=start, end=end, persona=persona)
    x_labels = [d.date.strftime("%m-%d") for d in data.by_day]
    charts = [
        {
            "span": span,
            "label": label,
            "overall": data.spans[span],
            "chart": line_chart(
                x_labels,
                [
                    (name, colour, [getattr(d.spans[span], name) for d in data.by_day])
                    for name, colour in PERCENTILE_COLOURS
                ],
            ),
        }
        for span, label in SPAN_LABELS.items()
    ]
    minutes = [d.seconds / 60 for d in data.usage.by_day]
    usage_days = [
        {"day": d, "minutes": m, "calls_h": ch, "minutes_h": mh}
        for d, m, ch, mh in zip(
            data.usage.by_day,
            minutes,
            bar_heights([d.calls for d in data.usage.by_day]),
            bar_heights(minutes),
            strict=True,
        )
    ]
    reason_labels = dict(Call.EndReason.choices) | {"": "Still live"}
    reasons_total = sum(n for _, n in data.end_reasons) or 1
    statuses_total = sum(n for _, n in data.reply_statuses) or 1
    return render(
        request,
        "dashboard/analytics.html",
        {
            "section": "analytics",
            "personas": personas,
            "persona": persona,
            "days": days,
            "ranges": ANALYTICS_RANGES,
            "data": data,
            "charts": charts,
            "percentile_colours": PERCENTILE_COLOURS,
            "usage_days": usage_days,
            "minutes_total": data.usage.seconds / 60,
            "end_reasons": [
                {
                    "reason": r,
                    "label": reason_labels.get(r, r),
                    "n": n,
                    "share": 100 * n / reasons_total,
                }
                for r, n in data.end_reasons
            ],
            "reply_statuses": [
                {"status": s, "n": n, "share": 100 * n / statuses_total}
                for s, n in data.reply_statuses
            ],
        },
    )


@org_required()
@require_POST
def widget_test_session(request: HttpRequest, membership: Membership, pk: int) -> JsonResponse:
    """A client secret for a test call from the dashboard's widget page: the
    member's login stands in for the publishable key's origin check."""
    persona = persona_get(org=membership.org, pk=pk)
    if not persona.is_active:
        return JsonResponse(
            {"error": {"code": "model_not_active", "message": "This persona is switched off."}},
            status=403,
        )
    secret, value = client_secret_create(
        org=membership.org,
        persona=persona,
        ttl_s=settings.CLIENT_SECRET_TTL_S,
        origin=request.headers.get("Origin", ""),
        created_by=request.user,
    )
    return JsonResponse(widget_session_payload(persona, secret, value))


# --- Team ----------------------------------------------------------------------


def _team_page(
    request: HttpRequest, membership: Membership, form: InvitationForm | None = None
) -> HttpResponse:
    org = membership.org
    return render(
        request,
        "dashboard/team.html",
        {
            "section": "team",
            "members": tenant_selectors.membership_list(org=org),
            "invitations": tenant_selectors.invitation_list_pending(org=org),
            "form": form or InvitationForm(),
            "membership": membership,
            "roles": Role.choices,
        },
    )


@org_required()
def team(request: HttpRequest, membership: Membership) -> HttpResponse:
    return _team_page(request, membership)


@org_required(manage=True)
@require_POST
def invitation_create_view(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = InvitationForm(request.POST)
    if form.is_valid():
        try:
            invitation, _ = tenant_services.invitation_create(
                org=membership.org,
                invited_by=request.user,
                **form.cleaned_data,
            )
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(request, f"Invitation sent to {invitation.email}.")
            return redirect("dashboard:team")
    return _team_page(request, membership, form)


@org_required(manage=True)
@require_POST
def invitation_revoke_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    invitation = tenant_selectors.invitation_get(org=membership.org, pk=pk)
    tenant_services.invitation_revoke(invitation=invitation, actor=request.user)
    messages.success(request, f"Invitation to {invitation.email} withdrawn.")
    return redirect("dashboard:team")


@org_required()
@require_POST
def membership_remove_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    target = tenant_selectors.membership_get_in_org(org=membership.org, pk=pk)
    try:
        tenant_services.membership_remove(membership=target, actor=request.user)
    except (ValidationError, PermissionDenied) as exc:
        messages.error(request, _refusal(exc))
        return redirect("dashboard:team")
    if target.user_id == request.user.pk:
        request.session.pop(SESSION_ORG_KEY, None)
        messages.success(request, f"You left {membership.org.name}.")
        return redirect("dashboard:home")
    messages.success(request, f"Removed {target.user.email}.")
    return redirect("dashboard:team")


@org_required()
@require_POST
def membership_role_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    target = tenant_selectors.membership_get_in_org(org=membership.org, pk=pk)
    try:
        tenant_services.membership_role_change(
            membership=target, role=request.POST.get("role", ""), actor=request.user
        )
    except (ValidationError, PermissionDenied) as exc:
        messages.error(request, _refusal(exc))
    else:
        messages.success(request, f"{target.user.email} is now {target.get_role_display()}.")
    return redirect("dashboard:team")


def _refusal(exc: ValidationError | PermissionDenied) -> str:
    if isinstance(exc, ValidationError):
        return " ".join(exc.messages)
    return str(exc) or "You may not do this."


@require_http_methods(["GET", "POST"])
def invitation_accept(request: HttpRequest, token: str) -> HttpResponse:
    try:
        invitation = tenant_services.invitation_get_pending(raw_token=token)
    except ValidationError as exc:
        return render(
            request, "dashboard/invitation.html", {"error": " ".join(exc.messages)}, status=404
        )
    if not request.user.is_authenticated:
        next_q = urlencode({"next": request.path})
        return render(
            request,
            "dashboard/invitation.html",
            {
                "invitation": invitation,
                "login_url": reverse("account_login") + "?" + next_q,
                "signup_url": reverse("account_signup") + "?" + next_q,
            },
        )
    if request.method == "POST":
        try:
            membership = tenant_services.invitation_accept(raw_token=token, user=request.user)
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        else:
            request.session[SESSION_ORG_KEY] = membership.org_id
            messages.success(request, f"Welcome to {membership.org.name}.")
            return redirect("dashboard:home")
    return render(request, "dashboard/invitation.html", {"invitation": invitation})
