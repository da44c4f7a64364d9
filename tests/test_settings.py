"""Settings come from the environment: embedded default with nothing set,
production topology with DATABASE_URL and REDIS_URL, and safe deploy checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEEP = ("PATH", "HOME", "LANG", "PYTHONPATH", "VIRTUAL_ENV", "TMPDIR")


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # ENV_FILE empty: not the checkout's .env (./dev run writes one with a SECRET_KEY).
    base = {k: v for k, v in os.environ.items() if k in KEEP} | {"ENV_FILE": ""}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


PRINT_SETTINGS = (
    "from django.conf import settings as s; import json; print(json.dumps({"
    "'db': s.DATABASES['default']['ENGINE'], 'layer': s.CHANNEL_LAYERS['default']['BACKEND'],"
    "'eager': s.CELERY_TASK_ALWAYS_EAGER, 'embedded': s.INFERENCE_EMBEDDED,"
    "'cache': s.CACHES['default']['BACKEND'], 'broker': s.CELERY_BROKER_URL}))"
)


def test_embedded_default_needs_no_services(tmp_path: Path) -> None:
    result = manage("shell", "-c", PRINT_SETTINGS, env={"DEBUG": "1", "DATA_DIR": str(tmp_path)})

    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout.strip().splitlines()[-1])
    assert values == {
        "db": "django.db.backends.sqlite3",
        "layer": "channels.layers.InMemoryChannelLayer",
        "eager": True,
        "embedded": True,
        "cache": "django.core.cache.backends.locmem.LocMemCache",
        "broker": "memory://",
    }


def test_production_settings_use_postgres_and_redis() -> None:
    env = {
        "SECRET_KEY": "k" * 60,
        "DATABASE_URL": "postgres://u@db:5432/voice",
        "REDIS_URL": "redis://cache:6379/0",
    }

    result = manage("shell", "-c", PRINT_SETTINGS, env=env)

    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout.strip().splitlines()[-1])
    assert values["db"] == "django.db.backends.postgresql"
    assert values["layer"] == "channels_redis.core.RedisChannelLayer"
    assert values["cache"] == "django.core.cache.backends.redis.RedisCache"
    assert values["broker"] == "redis://cache:6379/0"
    assert values["eager"] is False and values["embedded"] is False


def test_secret_key_is_required_when_debug_is_off() -> None:
    result = manage("check", env={"DEBUG": "0"})

    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off." in result.stderr


def test_check_deploy_passes_with_production_settings() -> None:
    env = {
        "SECRET_KEY": "x9$Lq2#vR7!mZ4@pW8^tK1&yB6*nC3(hD5)jF0-gH2+sA7=uE4~oI9",
        "ALLOWED_HOSTS": "voice.example.com",
        "DATABASE_URL": os.environ.get(
            "DATABASE_URL", "postgres://postgres@127.0.0.1:5432/voiceapp"
        ),
        "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
    }

    result = manage("check", "--deploy", "--fail-level", "WARNING", env=env)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_every_setting_read_from_the_environment_is_in_env_example() -> None:
    import re

    read = set(re.findall(r'env\.\w+\(\s*"([A-Z_]+)"', (ROOT / "voiceapp/settings.py").read_text()))
    listed = set(re.findall(r"^(?:# )?([A-Z_]+)=", (ROOT / ".env.example").read_text(), re.M))

    assert read, "the settings read no variables?"
    assert read - listed == set()


def test_the_settings_file_fills_in_what_the_environment_leaves_unset(tmp_path: Path) -> None:
    # given a settings file like the one ./dev run writes, and SITE_NAME in the environment
    env_file = tmp_path / "local.env"
    env_file.write_text("SECRET_KEY=from-the-file-" + "s" * 40 + "\nSITE_NAME=From the file\n")
    env = {"ENV_FILE": str(env_file), "DATA_DIR": str(tmp_path), "SITE_NAME": "From the env"}

    # when the settings are read with DEBUG off
    result = manage(
        "shell",
        "-c",
        "from django.conf import settings as s; print(s.SECRET_KEY[:13], '|', s.SITE_NAME)",
        env=env,
    )

    # then the file gave the SECRET_KEY, and the environment won over the file
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "from-the-file | From the env"


def test_device_settings_follow_inference_device_unless_set(tmp_path: Path) -> None:
    show = (
        "from django.conf import settings as s; "
        "print(repr((s.INFERENCE_DEVICE, s.ASR_DEVICE, s.LLM_GPU_LAYERS)))"
    )
    base = {"DEBUG": "1", "DATA_DIR": str(tmp_path)}
    # given nothing set: auto, and the per-model overrides empty (they follow it)
    unset = manage("shell", "-c", show, env=base)
    assert unset.returncode == 0, unset.stderr
    assert unset.stdout.strip().splitlines()[-1] == "('auto', '', None)"
    # given .env.example's empty values, and a layer count: the count is an override
    empty = manage("shell", "-c", show, env={**base, "ASR_DEVICE": "", "LLM_GPU_LAYERS": ""})
    assert empty.stdout.strip().splitlines()[-1] == "('auto', '', None)"
    layers = manage("shell", "-c", show, env={**base, "LLM_GPU_LAYERS": "-1"})
    assert layers.stdout.strip().splitlines()[-1] == "('auto', '', -1)"
    # and a value that is no layer count stops the settings, naming the variable
    bad = manage("shell", "-c", show, env={**base, "LLM_GPU_LAYERS": "all"})
    assert bad.returncode != 0
    assert "LLM_GPU_LAYERS must be empty, -1, 0 or a layer count." in bad.stderr
