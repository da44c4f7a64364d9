"""Pages keep to the window's width in a real browser, whatever the names in them."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from tests.support.tenants import Tenant

pytestmark = pytest.mark.django_db(transaction=True)

LONG_NAME = "Supercalifragilisticexpialidocious-Dental-And-Orthodontics-Of-Springfield"


@pytest.mark.parametrize("width", [390, 1280])
def test_a_long_organization_name_does_not_widen_the_page(
    live_server: Any, page: Any, tenant_a: Tenant, width: int
) -> None:
    # given an organization named without spaces, its owner logged in
    tenant_a.org.name = LONG_NAME
    tenant_a.org.save(update_fields=["name"])
    client = Client()
    client.force_login(tenant_a.owner)
    page.context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
            }
        ]
    )
    page.set_viewport_size({"width": width, "height": 800})

    for path in ("/dashboard/", "/dashboard/organizations/new/", "/dashboard/team/"):
        # when a page that shows the name opens
        page.goto(live_server.url + path)
        assert LONG_NAME in page.content()

        # then nothing reaches past the window's right edge
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{path} is {overflow}px wider than the window at {width}px"


def test_sign_up_errors_look_like_errors(live_server: Any, page: Any) -> None:
    # given the sign-up page
    page.goto(live_server.url + "/accounts/signup/")

    # when the password is too short
    page.fill("#id_email", "ann@sunny.test")
    page.fill("#id_password1", "short")
    page.fill("#id_password2", "short")
    page.click("button[type=submit]")

    # then its error is shown in the error colour under the password, not as help text
    error = page.locator("#id_password1_error")
    assert "too short" in error.inner_text()
    color = error.evaluate("e => getComputedStyle(e).color")
    assert color == "rgb(180, 35, 24)"  # --danger
    below = page.evaluate(
        "document.querySelector('#id_password1_error').getBoundingClientRect().top"
        " - document.querySelector('#id_password1').getBoundingClientRect().bottom"
    )
    assert below > 0
