"""The API's JSON parser: `voiceapp.safejson`, so a body nested too deep is a 400."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from voiceapp import safejson


class SafeJSONParser(JSONParser):
    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = stream.read().decode(encoding)
        except UnicodeDecodeError as exc:
            raise ParseError(f"The body is not {encoding} text.") from exc
        try:
            return safejson.loads(text)
        except safejson.JSONInputError as exc:
            raise ParseError(str(exc)) from exc
