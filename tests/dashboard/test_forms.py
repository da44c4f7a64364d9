"""How dashboard and sign-up forms present themselves: starting values, one error
per bad entry, errors under the field they belong to."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from tests.support.tenants import PASSWORD, Tenant
from voiceapp.personas.models import Voice

pytestmark = pytest.mark.django_db


def test_new_persona_form_starts_on_the_default_voice(tenant_a: Tenant) -> None:
    # given the deployment's voices (the default persona uses the default one)
    default = tenant_a.org.personas.get().voice

    # when the form for a new persona opens
    html = tenant_a.client.get(reverse("dashboard:persona_create")).content.decode()

    # then the voice select has the default voice selected, not "---------"
    select = re.search(r'<select name="voice".*?</select>', html, re.S)
    assert select is not None
    selected = re.findall(r'<option value="(\d+)"[^>]*selected', select.group())
    assert selected == [str(default.pk)]
    assert Voice.objects.filter(is_available=True).count() >= 1


@pytest.mark.parametrize("page", ["publishable_key", "persona"])
def test_one_error_per_bad_origin(tenant_a: Tenant, page: str) -> None:
    # given origins with one unreadable entry among good ones
    origins = "https://ok.test\nnot a url\nhttps://also-ok.test, ftp://nope.test"

    # when a form with them is sent
    if page == "publishable_key":
        response = tenant_a.client.post(
            reverse("dashboard:publishable_key_create"),
            {"name": "site", "allowed_origins": origins},
        )
    else:
        from tests.dashboard.test_pages import persona_form

        voice_pk = tenant_a.org.personas.get().voice_id
        response = tenant_a.client.post(
            reverse("dashboard:persona_create"), persona_form(voice_pk, allowed_origins=origins)
        )

    # then each bad entry gets one error, in its own words
    errors = re.findall(r"<li>([^<]*is not an origin[^<]*)</li>", response.content.decode())
    assert errors == [
        "“not a url” is not an origin like https://example.com.",
        "“ftp://nope.test” is not an origin like https://example.com.",
    ]


def test_sign_up_password_errors_are_under_the_password_field(client: Client) -> None:
    # when someone signs up with passwords that do not match
    html = client.post(
        reverse("account_signup"),
        {"email": "ann@sunny.test", "password1": PASSWORD, "password2": PASSWORD + "x"},
    ).content.decode()

    # then the error follows the repeated password's label, not the email field
    email_label = html.index('for="id_email"')
    password_label = html.index('for="id_password1"')
    repeat_label = html.index('for="id_password2"')
    error = html.index("You must type the same password each time.")
    assert email_label < password_label < repeat_label < error
    # and the input names the error for screen readers
    assert re.search(r'aria-describedby="[^"]*id_password2_error[^"]*" id="id_password2"', html)
    assert 'id="id_password2_error"' in html
