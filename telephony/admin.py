"""Trunks and numbers in the Django admin: superusers see every organization's,
other staff those of the organization they act for. Writes go through the
services, so the admin checks what the dashboard and the API check."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest

from telephony import services
from telephony.models import PhoneNumber, SipTrunk
from telephony.numbers import normalize_number
from voiceapp.personas.models import Persona
from voiceapp.tenants.middleware import current_membership
from voiceapp.tenants.models import Organization


def _acting_org_id(request: HttpRequest) -> int | None:
    membership = current_membership(request)
    return membership.org_id if membership else None


class _Scoped(admin.ModelAdmin):
    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        rows = super().get_queryset(request).select_related("org")
        return rows if request.user.is_superuser else rows.filter(org_id=_acting_org_id(request))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fixed = ["created_at"]
        return fixed if request.user.is_superuser else [*fixed, "org"]

    def _org_id(self, request: HttpRequest, form: Any, obj: Any) -> int:
        if request.user.is_superuser:
            return int(form.cleaned_data["org"].pk) if "org" in form.cleaned_data else obj.org_id
        org_id = _acting_org_id(request)
        if org_id is None:
            raise PermissionError("You act for no organization.")
        return org_id


class SipTrunkForm(forms.ModelForm):
    addresses = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One address or CIDR network a line, e.g. 203.0.113.7 or 198.51.100.0/24.",
    )
    password = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="The digest password. Leave empty to keep the current one.",
    )

    class Meta:
        model = SipTrunk
        fields = ["org", "name", "username", "enabled"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["addresses"].initial = "\n".join(self.instance.allowed_addresses)


@admin.register(SipTrunk)
class SipTrunkAdmin(_Scoped):
    form = SipTrunkForm
    list_display = ["name", "org", "username", "enabled", "created_at"]
    list_filter = ["enabled"]
    search_fields = ["name", "username", "org__name"]

    def save_model(self, request: HttpRequest, obj: SipTrunk, form: Any, change: bool) -> None:
        data = form.cleaned_data
        fields = {
            "name": data["name"],
            "allowed_addresses": [a for a in data["addresses"].split() if a],
            "username": data["username"],
            "password": data["password"],
        }
        if change:
            services.trunk_update(obj, **fields, enabled=data["enabled"])
        else:
            org = Organization.objects.get(pk=self._org_id(request, form, obj))
            created = services.trunk_create(org=org, **fields)
            obj.pk = created.pk

    def get_form(self, request: HttpRequest, obj: SipTrunk | None = None, **kwargs: Any) -> Any:
        base = super().get_form(request, obj, **kwargs)
        admin_ = self

        class CheckedForm(base):  # type: ignore[misc,valid-type]
            def clean(self) -> dict[str, Any]:
                data: dict[str, Any] = super().clean()
                trial = SipTrunk(
                    pk=obj.pk if obj else None,
                    org_id=obj.org_id if obj else admin_._org_id(request, self, obj),
                    name=data.get("name", ""),
                    username=data.get("username", ""),
                    password_encrypted=(obj.password_encrypted if obj else ""),
                )
                try:
                    trial.allowed_addresses = services.clean_addresses(
                        [a for a in data.get("addresses", "").split() if a]
                    )
                    if data.get("password"):
                        trial.password_encrypted = "set"
                    if not trial.username:
                        trial.password_encrypted = ""
                    services.check_trunk_auth(trial)
                except ValidationError as exc:
                    raise ValidationError(
                        exc.message_dict.get("allowed_addresses", exc.messages)
                        if hasattr(exc, "error_dict")
                        else exc.messages
                    ) from exc
                return data

        return CheckedForm


class PhoneNumberForm(forms.ModelForm):
    class Meta:
        model = PhoneNumber
        fields = ["org", "number", "persona", "trunk", "label"]

    def clean_number(self) -> str:
        try:
            return normalize_number(self.cleaned_data["number"])
        except ValueError as exc:
            raise ValidationError(str(exc)) from exc


@admin.register(PhoneNumber)
class PhoneNumberAdmin(_Scoped):
    form = PhoneNumberForm
    list_display = ["number", "persona", "org", "trunk", "label", "created_at"]
    search_fields = ["number", "label", "org__name", "persona__name"]

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if not request.user.is_superuser and db_field.name in ("persona", "trunk"):
            model = Persona if db_field.name == "persona" else SipTrunk
            kwargs["queryset"] = model.objects.filter(org_id=_acting_org_id(request))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_form(self, request: HttpRequest, obj: PhoneNumber | None = None, **kwargs: Any) -> Any:
        base = super().get_form(request, obj, **kwargs)
        admin_ = self

        class SameOrgForm(base):  # type: ignore[misc,valid-type]
            def clean(self) -> dict[str, Any]:
                data: dict[str, Any] = super().clean()
                org_id = obj.org_id if obj else admin_._org_id(request, self, obj)
                for name in ("persona", "trunk"):
                    chosen = data.get(name)
                    if chosen is not None and chosen.org_id != org_id:
                        self.add_error(name, "Choose one of this organization's.")
                return data

        return SameOrgForm

    def save_model(self, request: HttpRequest, obj: PhoneNumber, form: Any, change: bool) -> None:
        data = form.cleaned_data
        if change:
            services.phone_number_update(
                obj, persona=data["persona"], trunk=data.get("trunk"), label=data["label"]
            )
        else:
            created = services.phone_number_create(
                org=Organization.objects.get(pk=self._org_id(request, form, obj)),
                number=data["number"],
                persona=data["persona"],
                trunk=data.get("trunk"),
                label=data.get("label", ""),
            )
            obj.pk = created.pk

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fixed = super().get_readonly_fields(request, obj)
        return [*fixed, "number"] if obj is not None else fixed  # delete and add instead
