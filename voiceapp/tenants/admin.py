from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.http import HttpRequest

from voiceapp.tenants import services
from voiceapp.tenants.models import (
    Invitation,
    LLMEndpoint,
    Membership,
    Organization,
    PublishableKey,
    SecretKey,
    User,
)


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ["email"]
    list_display = ["email", "first_name", "last_name", "is_staff", "date_joined"]
    search_fields = ["email", "first_name", "last_name"]
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Name", {"fields": ("first_name", "last_name")}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    inlines = [MembershipInline]


@admin.register(SecretKey)
class SecretKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "prefix", "org", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["org"]
    search_fields = ["name", "prefix", "org__name"]
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]

    def has_add_permission(self, request):
        return False  # keys are created in the dashboard or with create_api_key, shown once


@admin.register(PublishableKey)
class PublishableKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "key", "org", "created_at", "revoked_at"]
    list_filter = ["org"]
    search_fields = ["name", "key", "org__name"]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["email", "org", "role", "created_at", "expires_at", "accepted_at"]
    list_filter = ["org", "role"]
    search_fields = ["email"]
    exclude = ["token_hash"]


class LLMEndpointAdminForm(forms.ModelForm):
    """The API key is write-only: it is never rendered back, only replaced or removed."""

    api_key = forms.CharField(
        label="API key",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted. Leave empty to keep the current key.",
    )
    clear_api_key = forms.BooleanField(label="Remove the stored API key", required=False)

    class Meta:
        model = LLMEndpoint
        fields = ["org", "name", "base_url", "model", "timeout_s", "is_default"]

    def clean_api_key(self) -> str:
        try:
            return services.llm_api_key_clean(self.cleaned_data.get("api_key") or "")
        except forms.ValidationError as exc:
            raise forms.ValidationError(exc.message_dict["api_key"]) from exc


@admin.register(LLMEndpoint)
class LLMEndpointAdmin(admin.ModelAdmin):
    form = LLMEndpointAdminForm
    list_display = ["name", "org", "base_url", "model", "key", "timeout_s", "is_default"]
    list_filter = ["org", "is_default"]
    search_fields = ["name", "base_url", "model", "org__name"]
    readonly_fields = ["key", "created_at", "updated_at"]
    fields = [
        "org",
        "name",
        "base_url",
        "model",
        "key",
        "api_key",
        "clear_api_key",
        "timeout_s",
        "is_default",
        "created_at",
        "updated_at",
    ]

    @admin.display(description="stored key")
    def key(self, obj: LLMEndpoint) -> str:
        if not obj.has_api_key:
            return "none"
        return f"set, ending in {obj.api_key_hint}" if obj.api_key_hint else "set"

    def save_model(self, request: HttpRequest, obj: LLMEndpoint, form: Any, change: bool) -> None:
        data = form.cleaned_data
        api_key = "" if data.get("clear_api_key") else (data.get("api_key") or None)
        services.llm_endpoint_update(endpoint=obj, api_key=api_key)
