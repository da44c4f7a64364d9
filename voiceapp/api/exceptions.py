"""Every API error is ``{"error": {"code": ..., "message": ..., "details": ...}}``."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler


def _first_message(detail: Any) -> str:
    if isinstance(detail, list) and detail:
        return _first_message(detail[0])
    if isinstance(detail, dict) and detail:
        field, value = next(iter(detail.items()))
        message = _first_message(value)
        return message if field == "non_field_errors" else f"{field}: {message}"
    return str(detail)


def json_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, RequestDataTooBig):
        message = f"The request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes."
        return Response(
            {"error": {"code": "request_too_large", "message": message}},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound("Not found.")
    response = exception_handler(exc, context)
    if response is None:
        return None
    code = "error"
    if isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else "invalid_request"
        if isinstance(exc, exceptions.ValidationError):
            code = "invalid_request"
    body: dict[str, Any] = {"code": code, "message": _first_message(response.data)}
    if isinstance(exc, exceptions.ValidationError):
        body["details"] = response.data
    response.data = {"error": body}
    return response


def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    return JsonResponse(
        {"error": {"code": "not_found", "message": f"No API endpoint at {request.path}."}},
        status=status.HTTP_404_NOT_FOUND,
    )
