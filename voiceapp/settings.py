"""Settings for the voice agent platform, read from the environment in one place.

With nothing set this is the embedded default: SQLite, the in-memory channel
layer, Celery tasks run eagerly and the inference worker runs inside the web
process. With DATABASE_URL and REDIS_URL set it is the production topology.
Every variable is listed, with its default, in .env.example.
"""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path

import environ
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
# Local settings (./dev run writes one with a SECRET_KEY kept across restarts); real
# environment variables win over it. ENV_FILE names another file, or none when empty.
env_file = env.str("ENV_FILE", default=str(BASE_DIR / ".env"))
if env_file and Path(env_file).is_file():
    environ.Env.read_env(env_file)

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = secrets.token_urlsafe(50)

# Encrypts secrets stored in the database (LLM endpoint API keys). Default: derived
# from SECRET_KEY, so changing SECRET_KEY then makes stored keys unreadable; set it
# on its own to rotate SECRET_KEY freely. Old keys listed here still decrypt.
FIELD_ENCRYPTION_KEY = env.str("FIELD_ENCRYPTION_KEY", default="")
FIELD_ENCRYPTION_OLD_KEYS = env.list("FIELD_ENCRYPTION_OLD_KEYS", default=[])

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
SITE_URL = env.str("SITE_URL", default="http://127.0.0.1:8000").rstrip("/")
# The name emails are signed with ("[Voice Agents] Please confirm..."); with SITE_URL's
# host it is written into the sites framework's Site at every migrate.
SITE_NAME = env.str("SITE_NAME", default="Voice Agents")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.sites",
    "channels",
    "rest_framework",
    "drf_spectacular",
    "allauth",
    "allauth.account",
    "voiceapp.tenants",
    "voiceapp.personas",
    "voiceapp.knowledge",
    "voiceapp.dashboard",
    "voiceapp.inference",
    "sessions.apps.CallsConfig",
    "django_celery_beat",
    "billing",
    "webhooks",
    "telephony",
]

MIDDLEWARE = [
    "voiceapp.health.ProbeMiddleware",  # /healthz, /readyz: before host checks and redirects
    "voiceapp.clientip.ClientIPMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "voiceapp.tenants.middleware.CurrentOrganizationMiddleware",
]

ROOT_URLCONF = "voiceapp.urls"
ASGI_APPLICATION = "voiceapp.asgi.application"
WSGI_APPLICATION = "voiceapp.wsgi.application"
SITE_ID = 1

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "voiceapp.tenants.context_processors.current_organization",
                "sessions.context_processors.unread_messages",
            ],
        },
    },
]

# --- Data stores -----------------------------------------------------------
DATA_DIR = Path(env.str("DATA_DIR", default=str(BASE_DIR / "var")))
DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'db.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    # Concurrent calls write transcripts from many threads: WAL lets readers and
    # one writer work at once, IMMEDIATE takes the write lock when a transaction
    # begins (so a waiting writer waits instead of failing on the upgrade), and
    # the timeout is how long a writer waits for the lock.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": env.float("SQLITE_BUSY_TIMEOUT_S", default=20.0),
        }
    )
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DB_CONN_MAX_AGE", default=0)
# Separate test databases let several test runs share one Postgres server.
if env.str("TEST_DATABASE_NAME", default=""):
    DATABASES["default"]["TEST"] = {"NAME": env.str("TEST_DATABASE_NAME")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env.str("REDIS_URL", default="")
# The channel layer's key prefix; the inference pool (its workers' capacity adverts
# and its call slots) is named after it, since its workers serve that layer.
CHANNELS_PREFIX = env.str("CHANNELS_PREFIX", default="asgi")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # redis-py 8 reads with a 5 s socket timeout, the same as channels_redis's
                # blocking pop: idle receivers would fail with TimeoutError. Give them slack.
                "hosts": [{"address": REDIS_URL, "socket_timeout": 30}],
                "capacity": 1000,
                "expiry": 30,
                "prefix": CHANNELS_PREFIX,
            },
        }
    }
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    }
else:
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 1000}}
    }
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Celery ----------------------------------------------------------------
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL or "memory://")
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=REDIS_URL or "cache+memory://")
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = True
# The queue tasks go to and a worker reads (tests give their worker a queue of its own).
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_TASK_DEFAULT_QUEUE", default="celery")
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# --- Auth and accounts -----------------------------------------------------
AUTH_USER_MODEL = "tenants.User"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
# How passwords are hashed: Django's list (PBKDF2 first) unless set. `./dev test` puts
# a fast hasher first for the suite, where each test's users would otherwise cost a
# quarter of a second of PBKDF2 each; never set a fast one in production.
PASSWORD_HASHERS = env.list(
    "PASSWORD_HASHERS",
    default=[
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
        "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
        "django.contrib.auth.hashers.Argon2PasswordHasher",
        "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
        "django.contrib.auth.hashers.ScryptPasswordHasher",
    ],
)
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_USER_MODEL_USERNAME_FIELD = None
ACCOUNT_EMAIL_VERIFICATION = env.str("ACCOUNT_EMAIL_VERIFICATION", default="optional")
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_FORMS = {"signup": "voiceapp.dashboard.forms.SignupForm"}
ACCOUNT_ADAPTER = "voiceapp.tenants.adapters.AccountAdapter"
SIGNUP_OPEN = env.bool("SIGNUP_OPEN", default=True)
LOGIN_REDIRECT_URL = "dashboard:home"
LOGIN_URL = "account_login"
ACCOUNT_LOGOUT_REDIRECT_URL = "landing"

EMAIL_CONFIG = env.email_url("EMAIL_URL", default="consolemail://")
vars().update(EMAIL_CONFIG)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Voice Agents <noreply@localhost>")

# A persona's admin page posts about six fields per fact (MAX_FACTS_PER_PERSONA = 200).
DATA_UPLOAD_MAX_NUMBER_FIELDS = 2000

# --- API -------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["voiceapp.api.authentication.SecretKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["voiceapp.api.permissions.HasOrganization"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "voiceapp.api.exceptions.json_exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["voiceapp.api.parsers.SafeJSONParser"],
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Voice Agents API",
    "DESCRIPTION": "Manage personas and voices; read calls and usage. Authenticate with a "
    "secret key: "
    "`Authorization: Bearer sk_...`.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
}

# --- Static and media ------------------------------------------------------
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
MEDIA_URL = "/media/"
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(DATA_DIR / "media")))
# Calls being recorded spool raw audio here; the Celery worker encodes it, so in
# production it must be a folder the web and worker processes share (DATA_DIR is).
CALL_RECORDING_SPOOL_DIR = Path(
    env.str("CALL_RECORDING_SPOOL_DIR", default=str(DATA_DIR / "recording-spool"))
)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if env.bool("STATIC_MANIFEST", default=not DEBUG)
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG or not STORAGES["staticfiles"]["BACKEND"].startswith("whitenoise")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Security (production) -------------------------------------------------
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Proxies we run in front of the app (nginx, a load balancer): the client's IP is
# the TRUSTED_PROXY_HOPS-th X-Forwarded-For entry from the right. 0: the header is
# ignored and the connection's address is the client's (voiceapp/clientip.py).
TRUSTED_PROXY_HOPS = env.int("TRUSTED_PROXY_HOPS", default=0)
if TRUSTED_PROXY_HOPS < 0:
    raise ImproperlyConfigured("TRUSTED_PROXY_HOPS must be 0 or more.")
# allauth's rate limits read REMOTE_ADDR, which ClientIPMiddleware has already resolved.
ALLAUTH_TRUSTED_PROXY_COUNT = 0

# --- Calls -------------------------------------------------------------------
ORG_MAX_CONCURRENT_CALLS = env.int("ORG_MAX_CONCURRENT_CALLS", default=5)
REALTIME_MAX_MESSAGE_BYTES = env.int("REALTIME_MAX_MESSAGE_BYTES", default=1024 * 1024)
CLIENT_SECRET_TTL_S = env.int("CLIENT_SECRET_TTL_S", default=120)
CLIENT_SECRET_MAX_TTL_S = env.int("CLIENT_SECRET_MAX_TTL_S", default=7200)
SESSION_START_RATE_LIMIT_PER_MIN = env.int("SESSION_START_RATE_LIMIT_PER_MIN", default=30)
CALL_RESUME_WINDOW_S = env.int("CALL_RESUME_WINDOW_S", default=15)
# How often a running call checks that its key (secret or publishable) is not revoked.
CALL_KEY_CHECK_S = env.float("CALL_KEY_CHECK_S", default=2.0)
# A call whose process has not reported for this long is closed by Celery beat.
CALL_STALE_AFTER_S = env.int("CALL_STALE_AFTER_S", default=90)
# This web process's name for draining (sessions/drain.py): a Kubernetes pod's name
# (HOSTNAME), or the host's. Two processes on one host need names of their own.
WEB_INSTANCE = (
    env.str("WEB_INSTANCE", default="") or os.environ.get("HOSTNAME", "") or socket.gethostname()
)
# Bearer token for GET /metrics (Prometheus); empty: the endpoint answers 404.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
WEBRTC_STUN_URLS = env.list("WEBRTC_STUN_URLS", default=[])
TURN_URLS = env.list("TURN_URLS", default=[])
TURN_SECRET = env.str("TURN_SECRET", default="")
TURN_CREDENTIAL_TTL_S = env.int("TURN_CREDENTIAL_TTL_S", default=3600)
# A WebRTC peer that has not connected this long after its offer is closed.
WEBRTC_CONNECT_TIMEOUT_S = env.float("WEBRTC_CONNECT_TIMEOUT_S", default=15.0)
# Tests keep media on loopback: ICE gathers 127.0.0.1 only.
WEBRTC_LOOPBACK_ONLY = env.bool("WEBRTC_LOOPBACK_ONLY", default=False)
# Caller audio frames held for reordering before they reach the call (sessions/rtp_input.py).
# 0: none, each frame as it arrives (a late one is dropped); aiortc's own holds 4 (80 ms).
WEBRTC_INPUT_JITTER_FRAMES = env.int("WEBRTC_INPUT_JITTER_FRAMES", default=0)
# How often a call on a plan without overage re-reads the org's remaining time
# (sooner when less than this is left).
BILLING_QUOTA_CHECK_S = env.float("BILLING_QUOTA_CHECK_S", default=10.0)
CELERY_BEAT_SCHEDULE = {
    "reconcile-open-calls": {"task": "calls.reconcile_open_calls", "schedule": 60.0},
    "webhooks-retry-overdue": {"task": "webhooks.retry_overdue", "schedule": 60.0},
    # Documents given as URLs, fetched again when their refresh is due.
    "knowledge-refresh-due": {"task": "knowledge.refresh_due_documents", "schedule": 300.0},
    # Invoices of ended months (idempotent, so daily; the 1st's run does the work).
    "billing-close-periods": {
        "task": "billing.close_periods",
        "schedule": crontab(minute=20, hour=0),
    },
    # Calls past their plan's retention_days (the ledger and invoices are kept).
    "billing-purge-expired-calls": {
        "task": "billing.purge_expired_calls",
        "schedule": crontab(minute=40, hour=3),
    },
    # Call recordings past their persona's retention (the calls stay).
    "calls-purge-expired-recordings": {
        "task": "calls.purge_expired_recordings",
        "schedule": crontab(minute=50, hour=3),
    },
    # Ledger rows not yet in Stripe (a lost task, Stripe down for longer than the retries).
    "billing-stripe-resend": {"task": "billing.stripe_report_unreported", "schedule": 900.0},
}
# Beat keeps its schedule in Postgres (django-celery-beat). At start it writes the
# entries above into PeriodicTask rows; the admin shows them under "Periodic tasks".
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# Stripe metered billing (docs/BILLING.md): off unless both are set.
STRIPE_API_KEY = env.str("STRIPE_API_KEY", default="")
STRIPE_METER_EVENT_NAME = env.str("STRIPE_METER_EVENT_NAME", default="")
STRIPE_API_BASE = env.str("STRIPE_API_BASE", default="https://api.stripe.com").rstrip("/")
# Without a task broker, meter events are sent from a thread of the web process.
STRIPE_REPORT_THREAD = env.bool("STRIPE_REPORT_THREAD", default=not REDIS_URL)
# Webhooks (docs/WEBHOOKS.md): URLs resolving to private, loopback, link-local or
# unspecified addresses are refused unless this is on (for tests and closed networks).
WEBHOOK_ALLOW_PRIVATE_NETWORKS = env.bool("WEBHOOK_ALLOW_PRIVATE_NETWORKS", default=False)
WEBHOOK_TIMEOUT_S = env.float("WEBHOOK_TIMEOUT_S", default=10.0)
# Knowledge documents (docs/KNOWLEDGE.md): a URL is fetched within this many seconds
# (WEBHOOK_ALLOW_PRIVATE_NETWORKS also lets documents come from private addresses).
DOCUMENT_FETCH_TIMEOUT_S = env.float("DOCUMENT_FETCH_TIMEOUT_S", default=15.0)
# Without a task broker, calls are analysed after they end in a thread of the web
# process (sessions/analysis.py).
CALL_ANALYSIS_THREAD = env.bool("CALL_ANALYSIS_THREAD", default=not REDIS_URL)
# Without a task broker, documents are processed in a thread of the web process.
DOCUMENT_PROCESS_THREAD = env.bool("DOCUMENT_PROCESS_THREAD", default=not REDIS_URL)
# Without a task broker (the embedded default runs Celery tasks inline) deliveries
# are sent from a background thread of the web process, retries included.
WEBHOOK_DELIVERY_THREAD = env.bool("WEBHOOK_DELIVERY_THREAD", default=not REDIS_URL)
# The waits between a failed attempt and the next, in seconds (shorter ones: tests
# that run the whole schedule through a real Celery worker).
WEBHOOK_RETRY_DELAYS_S = tuple(
    int(d) if d == int(d) else d
    for d in env.list("WEBHOOK_RETRY_DELAYS_S", cast=float, default=[10, 60, 300, 1800, 7200])
)

# --- Models and inference --------------------------------------------------
# Paths default to the model packages installed from the package index; an
# empty value means "use the packaged default".
VOICE_MODELS_DIR = env.str("VOICE_MODELS_DIR", default=str(DATA_DIR / "voices"))
VOICE_PREVIEW_TEXT = env.str(
    "VOICE_PREVIEW_TEXT", default="Hello! Thanks for calling. How can I help you today?"
)
DEFAULT_VOICE = env.str("DEFAULT_VOICE", default="en_US-joe-medium")
ASR_MODEL_PATH = env.str("ASR_MODEL_PATH", default="")
# Devices (docs/GPU.md): INFERENCE_DEVICE auto (a GPU when one is usable, else the CPU),
# cpu or cuda (a GPU or refuse to start). Set, these override it for one model:
# ASR_DEVICE cpu, cuda or auto; ASR_COMPUTE_TYPE ("default": int8 on the CPU, float16
# on a GPU); LLM_GPU_LAYERS 0 none, -1 all (the end-of-utterance model follows it).
INFERENCE_DEVICE = env.str("INFERENCE_DEVICE", default="auto")
ASR_DEVICE = env.str("ASR_DEVICE", default="")
ASR_COMPUTE_TYPE = env.str("ASR_COMPUTE_TYPE", default="default")
# Whisper replicas for turns' final readings (two calls' turns can end together)
# and threads per replica; on 2 cores one thread is as fast as two.
ASR_THREADS = env.int("ASR_THREADS", default=1)
ASR_REPLICAS = env.int("ASR_REPLICAS", default=2)
# Live captions (partial transcripts) read on a Whisper instance of their own, on
# their own queue (`inference.caption`), at this nice value: under load they yield
# the cores to the turns that are waiting for an answer. -1: they share the
# replicas above (still on their own queue).
ASR_CAPTION_NICE = env.int("ASR_CAPTION_NICE", default=10)
# A pause between a turn's words is read by the ASR as this long at most (ms); 0 reads
# it whole. tiny.en dropped the words after a long pause far less often with 256
# (docs/QUALITY.md, "A pause inside a turn").
ASR_PAUSE_READ_MS = env.int("ASR_PAUSE_READ_MS", default=256)
LLM_MODEL_PATH = env.str("LLM_MODEL_PATH", default="")
# Token generation on one core leaves the other to TTS of the first clause. Alone,
# SmolLM2-135M writes a token in about 10 ms with 2 threads and 18 with 1, but in a
# call (beside the end-of-turn scorer, daphne and the client) two threads made the
# first clause slower (docs/PERFORMANCE.md, 2026-12-06). Prompts are read with one
# thread too: two read a turn twice as fast alone, but beside one busy core (another
# call) 2.2x slower than one (docs/CAPACITY.md, 2026-12-06).
LLM_THREADS = env.int("LLM_THREADS", default=1)
LLM_BATCH_THREADS = env.int("LLM_BATCH_THREADS", default=1)
LLM_CONTEXT_TOKENS = env.int("LLM_CONTEXT_TOKENS", default=2048)
# The embedded LLM reads the caller's words while they talk, as live captions bring
# them, so a turn's request reads only what the last caption missed (readahead.py).
LLM_READ_CAPTIONS = env.bool("LLM_READ_CAPTIONS", default=True)
# llama contexts per worker: replies written at once, and the calls whose prompts a
# worker keeps read (a call's next turn goes back to its own context).
LLM_CONTEXTS = env.int("LLM_CONTEXTS", default=2)
# A call whose llama context another call took keeps its prompt's KV cache (a copy,
# about 23 KB a token) and its next turn loads it instead of reading the prompt
# again: up to this many MiB per worker; 0 keeps none (docs/CAPACITY.md).
LLM_SNAPSHOT_MB = env.int("LLM_SNAPSHOT_MB", default=128)
# Empty (the default): follow INFERENCE_DEVICE, so only a value actually set overrides it.
_llm_gpu_layers = env.str("LLM_GPU_LAYERS", default="").strip()
if _llm_gpu_layers and not _llm_gpu_layers.lstrip("-").isdigit():
    raise ImproperlyConfigured("LLM_GPU_LAYERS must be empty, -1, 0 or a layer count.")
LLM_GPU_LAYERS = int(_llm_gpu_layers) if _llm_gpu_layers else None
LLM_HTTP_BASE_URL = env.str("LLM_HTTP_BASE_URL", default="")
LLM_HTTP_API_KEY = env.str("LLM_HTTP_API_KEY", default="")
TTS_THREADS = env.int("TTS_THREADS", default=1)
# A clause's audio in windows, its first sound after a third of the work (engine/piper_graph.py).
TTS_WINDOWED = env.bool("TTS_WINDOWED", default=True)
# Work nobody waits on yet runs in threads of this nice value, so that under load it
# yields the cores to other callers' first words: a reply's clauses with 2 s of its
# audio made ahead of them (the caller is hearing that), and the rest of an embedded
# reply once its first 12 words are written. -1: everything alike.
BACKGROUND_NICE = env.int("BACKGROUND_NICE", default=10)
INFERENCE_EMBEDDED = env.bool("INFERENCE_EMBEDDED", default=not REDIS_URL)
# Embedded mode: load the models when the server starts instead of on the first call.
PRELOAD_MODELS = env.bool("PRELOAD_MODELS", default=True)
INFERENCE_REQUEST_TIMEOUT_S = env.float("INFERENCE_REQUEST_TIMEOUT_S", default=10.0)
# A request no worker takes within this long fails (or fails over once).
INFERENCE_ACCEPT_TIMEOUT_S = env.float("INFERENCE_ACCEPT_TIMEOUT_S", default=3.0)
# A worker that sends nothing (not even a heartbeat) for this long is presumed dead.
INFERENCE_LIVENESS_TIMEOUT_S = env.float("INFERENCE_LIVENESS_TIMEOUT_S", default=1.0)
# Admission control (sessions/admission.py): each worker advertises the calls it is
# sized for: INFERENCE_MAX_CALLS, or (0) its cores times INFERENCE_CALLS_PER_CORE.
INFERENCE_MAX_CALLS = env.int("INFERENCE_MAX_CALLS", default=0)
# 0.5: the knee `./dev bench load` measures on a 2-core CPU worker (docs/CAPACITY.md).
INFERENCE_CALLS_PER_CORE = env.float("INFERENCE_CALLS_PER_CORE", default=0.5)
# A worker whose requests wait longer than this in the queue (p95) takes no new calls.
INFERENCE_WAIT_BUDGET_MS = env.float("INFERENCE_WAIT_BUDGET_MS", default=250.0)
ADMISSION_RETRY_AFTER_S = env.int("ADMISSION_RETRY_AFTER_S", default=5)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "aioice": {"level": "WARNING"},  # at INFO it logs every ICE check of every call
    },
}

# Phone calls (docs/TELEPHONY.md): `manage.py sip_server` listens for SIP on UDP and
# TCP at SIP_HOST:SIP_PORT and sends RTP from SIP_RTP_PORTS (two ports a call: RTP and
# RTCP). SIP_ADVERTISED_HOST is the address written in Contact and SDP (a public or
# NATed address); by default the bound one, or this machine's outgoing one for 0.0.0.0.
SIP_HOST = env.str("SIP_HOST", default="0.0.0.0")
SIP_PORT = env.int("SIP_PORT", default=5060)
SIP_ADVERTISED_HOST = env.str("SIP_ADVERTISED_HOST", default="")
SIP_RTP_PORTS = env.str("SIP_RTP_PORTS", default="20000-20999")
SIP_REALM = env.str("SIP_REALM", default="voiceapp")
# INVITEs taken from one address: a burst, then this many a minute (more get 503).
SIP_INVITES_PER_MINUTE = env.float("SIP_INVITES_PER_MINUTE", default=60.0)
SIP_INVITE_BURST = env.int("SIP_INVITE_BURST", default=10)
# INVITEs being checked at once, from all addresses (each holds an RTP port and reads
# the database until it is answered or refused); more get 503 with Retry-After.
SIP_MAX_PENDING_INVITES = env.int("SIP_MAX_PENDING_INVITES", default=50)
# Outbound phone calls an organization may place a minute (POST /api/v1/calls/).
OUTBOUND_CALLS_PER_MINUTE = env.int("OUTBOUND_CALLS_PER_MINUTE", default=10)
# How long an outbound call may ring before it counts as not answered.
OUTBOUND_RING_TIMEOUT_S = env.float("OUTBOUND_RING_TIMEOUT_S", default=30.0)
