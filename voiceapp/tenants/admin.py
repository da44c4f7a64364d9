from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from voiceapp.tenants.models import (
    Invitation,
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
