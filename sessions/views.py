"""HTTP endpoints that start calls: client secrets for servers and for the widget."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from billing.services import quota_guard
from sessions import admission
from sessions.auth import (
    AuthError,
    client_secret_create,
    client_secret_ttl,
    persona_for_secret_key_sync,
    widget_grant_sync,
)
from sessions.ice import ice_servers
from sessions.models import ClientSecret
from sessions.realtime import ClientError
from sessions.realtime.settings import SessionSettings, parse_session_update
from voiceapp import safejson
from voiceapp.inference.runtime import call_config_from_persona
from voiceapp.personas.models import Persona, Voice
from voiceapp.tenants.models import PublishableKey

MAX_BODY_BYTES = 64 * 1024


def error_response(exc: AuthError, **headers: str) -> JsonResponse:
    return JsonResponse(
        {"error": {**exc.as_error(), "param": None}},
        status=exc.status,
        headers={**headers, **exc.headers},
    )


def _json_body(request: HttpRequest) -> dict[str, Any]:
    try:
        size = len(request.body)
    except RequestDataTooBig:
        size = MAX_BODY_BYTES + 1
    if size > MAX_BODY_BYTES:
        raise AuthError("body_too_large", f"The body may be at most {MAX_BODY_BYTES} bytes.", 413)
    if not request.body:
        return {}
    if request.content_type != "application/json":
        raise AuthError("unsupported_media_type", "Send the body as application/json.", 415)
    try:
        body = safejson.loads(request.body)
    except safejson.JSONInputError as exc:
        raise AuthError("invalid_json", str(exc), 400) from exc
    if not isinstance(body, dict):
        raise AuthError("invalid_json", "The body must be a JSON object.", 400)
    if _has_nul(body):  # Postgres stores no NUL in text or jsonb
        raise AuthError("invalid_value", "Text in the body may not contain NUL (\\u0000).", 400)
    return body


def _has_nul(value: Any) -> bool:
    """Whether a NUL character is in any string of `value` (keys included)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if "\x00" in node:
                return True
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _rate_limited(bucket: str, limit: int, window_s: int = 60) -> bool:
    key = f"ratelimit:{bucket}"
    cache.add(key, 0, window_s)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, window_s)
        count = 1
    return count > limit


@csrf_exempt
@require_http_methods(["POST"])
def client_secrets(request: HttpRequest) -> JsonResponse:
    """``POST /v1/realtime/client_secrets`` with a secret key: a single-use,
    short-lived secret for one call with one persona."""
    try:
        scheme, _, raw = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not raw:
            raise AuthError("missing_api_key", "Use “Authorization: Bearer sk_...”.")
        body = _json_body(request)
        session = body.get("session") or {}
        expires_after = body.get("expires_after") or {}
        if not isinstance(session, dict) or not isinstance(expires_after, dict):
            raise AuthError("invalid_value", "session and expires_after must be objects.", 400)
        ttl = client_secret_ttl(expires_after.get("seconds"))
        key, persona = persona_for_secret_key_sync(raw.strip(), model=session.get("model"))
        problem = session_config_problem(persona, session)
        if problem is not None:
            return JsonResponse(
                {
                    "error": {
                        "type": "invalid_request_error",
                        "code": problem.code,
                        "message": problem.message,
                        "param": problem.param,
                    }
                },
                status=400,
            )
        if _rate_limited(f"secrets:{key.org_id}", settings.SESSION_START_RATE_LIMIT_PER_MIN):
            raise AuthError("rate_limit_exceeded", "Too many client secrets; slow down.", 429)
        quota_guard(org_id=key.org_id)
        admission.check_sync()
        secret, value = client_secret_create(
            org=key.org, persona=persona, ttl_s=ttl, session_config=session, secret_key=key
        )
    except AuthError as exc:
        return error_response(exc)
    return JsonResponse(
        {
            "value": value,
            "expires_at": int(secret.expires_at.timestamp()),
            "session": {
                "type": "realtime",
                "object": "realtime.session",
                "model": persona.slug,
                **{k: v for k, v in session.items() if k not in ("type", "model")},
            },
        }
    )


def session_config_problem(persona: Persona, session: dict[str, Any]) -> ClientError | None:
    """Why a client secret's session config would be refused by the call, checked
    by the same parser the call uses, so a bad config fails at mint time."""
    current = SessionSettings.from_config(call_config_from_persona(persona))
    parsed = parse_session_update(session, current)
    if isinstance(parsed, ClientError):
        return parsed
    voice = parsed.voice_id
    if (
        voice != current.voice_id
        and not Voice.objects.filter(voice_id=voice, is_available=True).exists()
    ):
        return ClientError(
            "invalid_value",
            f"Unknown voice “{voice}”; list them at /api/v1/voices/.",
            "session.audio.output.voice",
        )
    return None


def _cors(request: HttpRequest) -> dict[str, str]:
    origin = request.headers.get("Origin", "")
    if not origin:
        return {}
    return {
        "Access-Control-Allow-Origin": origin,
        "Vary": "Origin",
        "Access-Control-Allow-Methods": "POST, OPTIONS",
        "Access-Control-Allow-Headers": "Content-Type",
        "Access-Control-Max-Age": "600",
    }


def _widget_admission(request: HttpRequest, *, bucket: str) -> tuple[PublishableKey, Persona, str]:
    """The checks every widget request passes: the body names a publishable key and
    a persona, the caller is within its rate, the page's Origin is allowed for that
    key and persona, and the organization has minutes left. Raises AuthError."""
    body = _json_body(request)
    key, persona_slug = body.get("key"), body.get("persona")
    if not isinstance(key, str) or not isinstance(persona_slug, str):
        raise AuthError("invalid_value", 'Send {"key": "pk_...", "persona": "<slug>"}.', 400)
    ip = request.META.get("REMOTE_ADDR", "")  # the client's, per TRUSTED_PROXY_HOPS
    if _rate_limited(f"{bucket}:{key[:40]}:{ip}", settings.SESSION_START_RATE_LIMIT_PER_MIN):
        raise AuthError("rate_limit_exceeded", "Too many calls started; wait a minute.", 429)
    publishable_key, persona, origin = widget_grant_sync(
        key=key, persona_slug=persona_slug, origin=request.headers.get("Origin", "")
    )
    quota_guard(org_id=persona.org_id)
    admission.check_sync()
    return publishable_key, persona, origin


@csrf_exempt
@require_http_methods(["POST", "OPTIONS"])
def widget_check(request: HttpRequest) -> HttpResponse:
    """``POST /v1/widget/check`` from the widget before it asks for the microphone:
    would a session start here? The same checks as a session start, and nothing is
    minted, so a refused visitor is never asked for their microphone."""
    headers = _cors(request)
    if request.method == "OPTIONS":
        return HttpResponse(status=204, headers=headers)
    try:
        _, persona, _ = _widget_admission(request, bucket="widget-check")
    except AuthError as exc:
        return error_response(exc, **headers)
    return JsonResponse(
        {"ok": True, "persona": {"slug": persona.slug, "name": persona.name}}, headers=headers
    )


@csrf_exempt
@require_http_methods(["POST", "OPTIONS"])
def widget_session(request: HttpRequest) -> HttpResponse:
    """``POST /v1/widget/sessions`` from the widget on a customer's page: trades a
    publishable key for a client secret when the page's origin is allowed."""
    headers = _cors(request)
    if request.method == "OPTIONS":
        return HttpResponse(status=204, headers=headers)
    try:
        publishable_key, persona, origin = _widget_admission(request, bucket="widget")
        secret, value = client_secret_create(
            org=persona.org,
            persona=persona,
            ttl_s=settings.CLIENT_SECRET_TTL_S,
            origin=origin,
            publishable_key=publishable_key,
        )
    except AuthError as exc:
        return error_response(exc, **headers)
    return JsonResponse(widget_session_payload(persona, secret, value), headers=headers)


def widget_session_payload(persona: Persona, secret: ClientSecret, value: str) -> dict[str, Any]:
    """What the widget needs to place a call: its client secret, ICE servers, URLs."""
    return {
        "client_secret": {"value": value, "expires_at": int(secret.expires_at.timestamp())},
        "persona": {"slug": persona.slug, "name": persona.name},
        "ice_servers": ice_servers(user=f"org{persona.org_id}"),
        "calls_url": "/v1/realtime/calls",
        "websocket_url": f"/v1/realtime?model={persona.slug}",
    }
