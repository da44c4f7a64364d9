"""Every page has an icon: linked from base.html, and at /favicon.ico for browsers
that ask there whatever the page says."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_pages_link_the_svg_icon_and_it_is_served(client: Client) -> None:
    # given the landing page (every page extends base.html)
    html = client.get("/").content.decode()

    # when the linked icon is fetched
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
    icon = client.get("/static/favicon.svg")

    # then it is an SVG image
    assert icon.status_code == 200
    assert icon["Content-Type"].startswith("image/svg+xml")
    assert b"<svg" in b"".join(icon.streaming_content)  # type: ignore[attr-defined]


def test_favicon_ico_leads_to_the_icon(client: Client) -> None:
    response = client.get("/favicon.ico")

    assert response.status_code == 302
    assert response["Location"] == "/static/favicon.svg"
