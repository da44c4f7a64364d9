from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from voiceapp.tenants import origins
from voiceapp.tenants.origins import origin_normalize, origins_normalize


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("https://Example.com", "https://example.com"),
        ("https://example.com:443/", "https://example.com"),
        ("http://localhost:8000", "http://localhost:8000"),
        ("http://[::1]:3000", "http://[::1]:3000"),
    ],
)
def test_origins_are_normalized(given: str, expected: str) -> None:
    assert origin_normalize(given) == expected


@pytest.mark.parametrize(
    "bad",
    [
        "example.com",
        "ftp://example.com",
        "https://example.com/path",
        "https://a.com?x=1",
        "https://",
    ],
)
def test_bad_origins_are_rejected(bad: str) -> None:
    with pytest.raises(ValidationError):
        origin_normalize(bad)


def test_origins_are_deduplicated_and_every_bad_one_is_reported() -> None:
    assert origins_normalize(["https://A.test", " ", "https://a.test:443/"]) == ["https://a.test"]
    with pytest.raises(ValidationError) as caught:
        origins_normalize(["ftp://x.test", "https://ok.test", "https://y.test/path"])
    assert len(caught.value.messages) == 2


def test_the_module_imports_no_models() -> None:
    """Models of any app use it, so it imports no app's code and no ORM."""
    tree = ast.parse(Path(origins.__file__).read_text())
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert not [m for m in imported if m.startswith(("voiceapp", "sessions", "django.db"))]
