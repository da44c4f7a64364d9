from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import urlsplit

from django.contrib.auth.models import AbstractUser, BaseUserManager
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone


class UserManager(BaseUserManager):
    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **extra: Any) -> User:
        if not email:
            raise ValueError("An email address is required.")
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **extra: Any) -> User:
        extra.setdefault("is_staff", True)
        extra.setdefault("is_superuser", True)
        return self.create_user(email, password, **extra)


class User(AbstractUser):
    """A person who logs in with an email address."""

    username = None  # email is the login
    email = models.EmailField("email address", unique=True)

    USERNAME_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    objects: ClassVar[UserManager] = UserManager()

    def __str__(self) -> str:
        return self.email


class Organization(models.Model):
    """The tenant: everything a customer owns hangs off one of these."""

    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=60, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    members = models.ManyToManyField(User, through="Membership", related_name="organizations")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    MEMBER = "member", "Member"


class Membership(models.Model):
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["org", "user"], name="membership_unique_user_per_org")
        ]
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.user} in {self.org} ({self.role})"

    @property
    def can_manage(self) -> bool:
        return self.role in (Role.OWNER, Role.ADMIN)


class Invitation(models.Model):
    """An emailed invitation to join an organization; the token is stored hashed."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    token_hash = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Invitation of {self.email} to {self.org}"

    @property
    def is_pending(self) -> bool:
        return (
            self.accepted_at is None
            and self.revoked_at is None
            and self.expires_at > timezone.now()
        )


class SecretKey(models.Model):
    """A server-to-server API key (``sk_...``). Only its SHA-256 is stored."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="secret_keys")
    name = models.CharField(max_length=80)
    prefix = models.CharField(max_length=16, help_text="The first characters, to recognise it.")
    key_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class PublishableKey(models.Model):
    """A public key (``pk_...``) for the embeddable widget, valid only from allowed origins."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="publishable_keys")
    name = models.CharField(max_length=80)
    key = models.CharField(max_length=64, unique=True)
    allowed_origins = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.key[:12]}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


def validate_endpoint_url(value: str) -> None:
    """An http(s) base URL with a host, without credentials, query or fragment."""
    try:
        parts = urlsplit(value.strip())
        _ = parts.port  # raises ValueError for a port that is not a number in range
    except ValueError as exc:
        raise ValidationError(f"This is not a valid URL: {exc}.") from exc
    if parts.scheme not in ("http", "https"):
        raise ValidationError("Use an http:// or https:// URL, e.g. http://10.0.0.5:8000/v1.")
    if not parts.hostname:
        raise ValidationError("The URL needs a host name, e.g. http://10.0.0.5:8000/v1.")
    if parts.username or parts.password:
        raise ValidationError("Put the API key in its own field, not in the URL.")
    if parts.query or parts.fragment:
        raise ValidationError("The base URL cannot have a query (?…) or fragment (#…).")


class LLMEndpoint(models.Model):
    """An organization's own OpenAI-compatible LLM server (vLLM, llama.cpp, Ollama, hosted).

    The API key is stored encrypted (`voiceapp.tenants.crypto`) and never shown
    again; `api_key_hint` keeps its last four characters to recognise it.
    """

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="llm_endpoints")
    name = models.CharField(max_length=80)
    base_url = models.CharField(
        "base URL",
        max_length=500,
        validators=[validate_endpoint_url],
        help_text="The OpenAI-compatible API root, usually ending in /v1.",
    )
    model = models.CharField(max_length=200, help_text="The model name the server expects.")
    api_key_encrypted = models.TextField(blank=True, editable=False)
    api_key_hint = models.CharField(max_length=8, blank=True, editable=False)
    timeout_s = models.FloatField(
        "timeout (s)",
        default=10.0,
        validators=[
            MinValueValidator(1.0, "The timeout must be between 1 and 120 seconds."),
            MaxValueValidator(120.0, "The timeout must be between 1 and 120 seconds."),
        ],
        help_text="How long to wait for the connection, the first token and each next one.",
    )
    is_default = models.BooleanField(
        "organization default",
        default=False,
        help_text="Personas without an endpoint of their own use this one.",
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "LLM endpoint"
        constraints = [
            models.UniqueConstraint(
                fields=["org", "name"],
                name="llm_endpoint_unique_name",
                violation_error_message="Another endpoint of this organization has this name.",
            ),
            models.UniqueConstraint(
                fields=["org"],
                condition=models.Q(is_default=True),
                name="llm_endpoint_one_default_per_org",
                violation_error_message="Another endpoint is already this organization's default.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_encrypted)
