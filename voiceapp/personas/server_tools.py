"""Server tools: functions a persona's model may call, run by POSTing the call to
the business's own URL. No code on the business's side but the endpoint.

Each call is one POST, signed as our webhooks are (Standard Webhooks headers,
with the tool's own `whsec_` secret), sent only to a public address (the
webhooks' guard, `webhooks/netguard.py`) unless WEBHOOK_ALLOW_PRIVATE_NETWORKS
is on, and over https unless that setting is on too (a local test endpoint).
The body is JSON:

    {"type": "tool.call", "tool": "lookup_order", "call_id": "<our call id>",
     "arguments": {"order_number": "A1234"}}

(`webhook-id` is new for every request: a business can log it, or use it to
ignore a request it has seen.)

A 2xx answer's body (at most TOOL_OUTPUT_MAX_CHARS of it) is the tool's output,
which the model then speaks from. Anything else (an error status, no answer
within the tool's timeout, a refused address) is an error: the caller hears an
apology, the call goes on, and the record says what went wrong."""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from voiceapp.personas.models import (
    MAX_TOOLS_PER_PERSONA,
    TOOL_NAME_PATTERN,
    Action,
    Persona,
    PersonaTool,
)
from voiceapp.tenants import crypto
from webhooks import netguard, signing

TOOL_OUTPUT_MAX_CHARS = 4000
MAX_HEADERS = 10
_HEADER_NAME = re.compile(r"^[A-Za-z0-9-]{1,64}$")
# Headers the request sets itself: a tool's own may not replace them.
_RESERVED_HEADERS = {
    "content-type", "content-length", "host", "user-agent", "connection", "transfer-encoding",
    "webhook-id", "webhook-timestamp", "webhook-signature",
}  # fmt: skip
TOOL_FIELDS = ("name", "description", "parameters", "url", "timeout_ms", "enabled")


@dataclass(frozen=True)
class ToolResponse:
    """What one POST to a tool came back with."""

    ok: bool
    output: str  # the body (ok), or what went wrong
    status: int | None
    ms: int


@dataclass(frozen=True)
class ToolTarget:
    """A tool as a call runs it: read from the database once, when the call starts."""

    name: str
    description: str
    parameters: dict[str, Any]
    url: str
    timeout_s: float
    headers: dict[str, str]
    secret: str


# ----- validation ---------------------------------------------------------------


def _allow_private() -> bool:
    return bool(settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS)


def clean_url(url: str) -> str:
    url = (url or "").strip()
    try:
        scheme, *_ = netguard.parse(url)
    except netguard.UnsafeURL as exc:
        raise ValidationError({"url": str(exc)}) from exc
    if scheme != "https" and not _allow_private():
        raise ValidationError({"url": "Use an https:// URL."})
    return url


def clean_parameters(parameters: Any) -> dict[str, Any]:
    if parameters in (None, "", {}):
        return {"type": "object", "properties": {}}
    if isinstance(parameters, str):
        try:
            parameters = json.loads(parameters)
        except ValueError as exc:
            raise ValidationError({"parameters": f"This is not valid JSON: {exc}."}) from exc
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        raise ValidationError(
            {"parameters": 'Give a JSON schema of an object: {"type": "object", ...}.'}
        )
    if not isinstance(parameters.get("properties", {}), dict):
        raise ValidationError({"parameters": "“properties” must be an object."})
    if len(json.dumps(parameters)) > 8000:
        raise ValidationError({"parameters": "Keep the schema under 8000 characters."})
    return parameters


def clean_headers(headers: Any) -> dict[str, str]:
    """Headers as given: a dict, or "Name: value" lines."""
    if headers in (None, ""):
        return {}
    if isinstance(headers, str):
        parsed: dict[str, str] = {}
        for line in headers.splitlines():
            if not line.strip():
                continue
            name, sep, value = line.partition(":")
            if not sep:
                raise ValidationError({"headers": f"Write each header as “Name: value”: {line!r}"})
            parsed[name.strip()] = value.strip()
        headers = parsed
    if not isinstance(headers, dict):
        raise ValidationError({"headers": "Give the headers as an object of names to values."})
    if len(headers) > MAX_HEADERS:
        raise ValidationError({"headers": f"At most {MAX_HEADERS} headers."})
    clean: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not _HEADER_NAME.match(name):
            raise ValidationError({"headers": f"“{name}” is not a header name."})
        if name.lower() in _RESERVED_HEADERS:
            raise ValidationError({"headers": f"“{name}” is set by the request itself."})
        if not isinstance(value, str) or len(value) > 1000 or "\n" in value or "\r" in value:
            raise ValidationError({"headers": f"The value of “{name}” must be one line of text."})
        clean[name] = value
    return clean


def _check_name(persona: Persona, name: str, *, exclude_pk: int | None = None) -> str:
    name = (name or "").strip()
    if not re.match(TOOL_NAME_PATTERN, name):
        raise ValidationError(
            {"name": "Use 1 to 64 letters, digits, _ or -, starting with a letter or _."}
        )
    if name in Action.values:
        raise ValidationError({"name": f"“{name}” is a built-in action: choose another name."})
    taken = PersonaTool.objects.filter(persona=persona, name=name).exclude(pk=exclude_pk)
    if taken.exists():
        raise ValidationError({"name": f"This persona already has a tool named “{name}”."})
    return name


def _apply(tool: PersonaTool, data: dict[str, Any]) -> None:
    if "name" in data:
        tool.name = _check_name(tool.persona, data["name"], exclude_pk=tool.pk)
    if "description" in data:
        tool.description = str(data["description"] or "").strip()
        if not tool.description:
            raise ValidationError({"description": "Say when the model should call this tool."})
    if "parameters" in data:
        tool.parameters = clean_parameters(data["parameters"])
    if "url" in data:
        tool.url = clean_url(data["url"])
    if "timeout_ms" in data:
        tool.timeout_ms = int(data["timeout_ms"])
    if "enabled" in data:
        tool.enabled = bool(data["enabled"])
    if "headers" in data:
        headers = clean_headers(data["headers"])
        tool.headers_encrypted = crypto.encrypt(json.dumps(headers)) if headers else ""
    tool.full_clean(exclude=["persona", "secret_encrypted", "headers_encrypted"])


# ----- services -----------------------------------------------------------------


@transaction.atomic
def persona_tool_create(*, persona: Persona, **data: Any) -> tuple[PersonaTool, str]:
    """A new tool and its signing secret (shown once; stored encrypted)."""
    if persona.tools.count() >= MAX_TOOLS_PER_PERSONA:
        raise ValidationError(f"A persona can have at most {MAX_TOOLS_PER_PERSONA} tools.")
    secret = signing.secret_generate()
    tool = PersonaTool(persona=persona, secret_encrypted=crypto.encrypt(secret))
    data.setdefault("parameters", None)
    for required in ("name", "description", "url"):
        data.setdefault(required, "")
    _apply(tool, data)
    tool.save()
    return tool, secret


@transaction.atomic
def persona_tool_update(*, tool: PersonaTool, **data: Any) -> PersonaTool:
    """Change the fields given; `headers` replaces all of them (None or "" clears)."""
    _apply(tool, data)
    tool.save()
    return tool


def persona_tool_delete(*, tool: PersonaTool) -> None:
    tool.delete()


def persona_tool_headers(*, tool: PersonaTool) -> dict[str, str]:
    """The tool's headers, decrypted (raises crypto.DecryptionError)."""
    if not tool.headers_encrypted:
        return {}
    value = json.loads(crypto.decrypt(tool.headers_encrypted))
    return {str(k): str(v) for k, v in value.items()}


def persona_tool_secret(*, tool: PersonaTool) -> str:
    return crypto.decrypt(tool.secret_encrypted)


def persona_tool_targets(*, persona: Persona) -> list[ToolTarget]:
    """The persona's enabled tools, as a call runs them. A tool whose secrets cannot
    be decrypted (the key changed) is left out, and says so when tested."""
    targets = []
    for tool in persona.tools.filter(enabled=True).order_by("name"):
        try:
            headers = persona_tool_headers(tool=tool)
            secret = persona_tool_secret(tool=tool)
        except crypto.DecryptionError:
            continue
        targets.append(
            ToolTarget(
                name=tool.name,
                description=tool.description,
                parameters=tool.parameters or {"type": "object", "properties": {}},
                url=tool.url,
                timeout_s=tool.timeout_ms / 1000.0,
                headers=headers,
                secret=secret,
            )
        )
    return targets


def persona_tool_target(*, tool: PersonaTool) -> ToolTarget:
    """One tool as a call would run it (for the Test tool button); raises
    crypto.DecryptionError."""
    return ToolTarget(
        name=tool.name,
        description=tool.description,
        parameters=tool.parameters or {"type": "object", "properties": {}},
        url=tool.url,
        timeout_s=tool.timeout_ms / 1000.0,
        headers=persona_tool_headers(tool=tool),
        secret=persona_tool_secret(tool=tool),
    )


# ----- calling a tool -----------------------------------------------------------


def tool_call(target: ToolTarget, *, call_id: str, arguments: dict[str, Any]) -> ToolResponse:
    """POST one call of `target`, signed; blocking (run it in a thread)."""
    started = time.monotonic()

    def done(ok: bool, output: str, status: int | None = None) -> ToolResponse:
        return ToolResponse(ok, output, status, round(1000 * (time.monotonic() - started)))

    body = json.dumps(
        {
            "type": "tool.call",
            "tool": target.name,
            "call_id": call_id,
            "arguments": arguments,
        },
        separators=(",", ":"),
    ).encode()
    try:
        address = netguard.resolve(target.url, allow_private=_allow_private(), what="Tool calls")
    except netguard.UnsafeURL as exc:
        return done(False, str(exc))
    headers = {
        **target.headers,
        "Content-Type": "application/json",
        "User-Agent": "voiceapp-tools/1",
        **signing.headers(
            secret=target.secret,
            msg_id=f"msg_tool_{uuid.uuid4().hex}",
            timestamp=int(time.time()),
            body=body,
        ),
    }
    try:
        status, raw = netguard.request(
            address, body=body, headers=headers, timeout_s=target.timeout_s
        )
    except TimeoutError:
        return done(False, f"No answer within {target.timeout_s:g} s.")
    except Exception as exc:  # refused, reset, TLS, a malformed answer
        return done(False, f"{type(exc).__name__}: {exc}"[:300])
    text = raw.decode("utf-8", errors="replace").strip()[:TOOL_OUTPUT_MAX_CHARS]
    if not 200 <= status < 300:
        return done(False, f"HTTP {status}" + (f": {text[:200]}" if text else ""), status)
    return done(True, text or "{}", status)


# ----- selectors ----------------------------------------------------------------


def persona_tool_list(*, persona: Persona) -> list[PersonaTool]:
    return list(persona.tools.order_by("name"))


def persona_tool_get(*, persona: Persona, pk: int) -> PersonaTool:
    """The persona's tool `pk` (the persona already checked to be the org's);
    PersonaTool.DoesNotExist otherwise."""
    return PersonaTool.objects.get(persona=persona, pk=pk)


def sample_arguments(tool: PersonaTool) -> dict[str, Any]:
    """Arguments for a test call: each property of the schema, with a placeholder."""
    placeholders = {"string": "test", "integer": 1, "number": 1, "boolean": True}
    properties = (tool.parameters or {}).get("properties", {})
    return {
        name: placeholders.get(str(spec.get("type")) if isinstance(spec, dict) else "", "test")
        for name, spec in properties.items()
    }
