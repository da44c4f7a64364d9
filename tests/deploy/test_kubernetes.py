"""deploy/kubernetes, rendered as kustomize renders this base and validated against
the Kubernetes API schemas (kubernetes-validate, strict: an unknown field fails),
and checked against the code it runs: commands, probes, settings and metrics."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from django.core.management import get_commands

from voiceapp.health import PROBES

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "deploy" / "kubernetes"
# The oldest Kubernetes minor still in its providers' support, and the newest schemas.
VERSIONS = ("1.31.0", kubernetes_validate.latest_version())
USER_SECRET = "voiceapp-secrets"  # made by the operator (docs/KUBERNETES.md)
KNOWN_FIELDS = {"apiVersion", "kind", "labels", "resources", "images"}


def render(base: Path = BASE) -> list[dict[str, Any]]:
    """What `kubectl kustomize` makes of this base: its resources, with the common
    labels on every object and the image names replaced. A kustomization field this
    renderer does not apply fails, so the test never passes on a half rendering."""
    kustomization = yaml.safe_load((base / "kustomization.yaml").read_text())
    unknown = set(kustomization) - KNOWN_FIELDS
    assert not unknown, f"render() does not apply {unknown}: teach it first"
    labels: dict[str, str] = {}
    for entry in kustomization.get("labels", []):
        assert set(entry) == {"pairs"}, entry  # no selector or template labels
        labels.update(entry["pairs"])
    images = {
        i["name"]: f"{i.get('newName', i['name'])}:{i['newTag']}" for i in kustomization["images"]
    }
    out = []
    for name in kustomization["resources"]:
        for doc in yaml.safe_load_all((base / name).read_text()):
            if doc is None:
                continue
            doc["metadata"].setdefault("labels", {}).update(labels)
            for container in _containers(doc):
                container["image"] = images.get(container["image"], container["image"])
            out.append(doc)
    return out


def _containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc.get("spec", {})
    pod = spec.get("template", {}).get("spec", {})
    return [*pod.get("initContainers", []), *pod.get("containers", [])]


def _by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


@pytest.fixture(scope="module")
def docs() -> list[dict[str, Any]]:
    return render()


def test_every_file_of_the_base_is_one_of_its_resources() -> None:
    listed = set(yaml.safe_load((BASE / "kustomization.yaml").read_text())["resources"])
    on_disk = {p.name for p in BASE.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk


@pytest.mark.parametrize("version", VERSIONS)
def test_the_rendered_base_validates_against_the_kubernetes_schemas(
    docs: list[dict[str, Any]], version: str
) -> None:
    assert {d["kind"] for d in docs} >= {
        "ConfigMap", "PersistentVolumeClaim", "Job", "Deployment", "Service",
        "PodDisruptionBudget", "HorizontalPodAutoscaler",
    }  # fmt: skip
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)


def test_a_misspelt_field_is_refused(docs: list[dict[str, Any]]) -> None:
    web = copy.deepcopy(_by_kind(docs, "Deployment")["voiceapp-web"])
    web["spec"]["replica"] = web["spec"].pop("replicas")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(web, VERSIONS[-1], strict=True)


def test_selectors_targets_and_references_meet(docs: list[dict[str, Any]]) -> None:
    deployments = _by_kind(docs, "Deployment")
    templates = {n: d["spec"]["template"]["metadata"]["labels"] for n, d in deployments.items()}
    for name, d in deployments.items():
        assert d["spec"]["selector"]["matchLabels"].items() <= templates[name].items()

    def selects(selector: dict[str, str]) -> list[str]:
        return [n for n, labels in templates.items() if selector.items() <= labels.items()]

    for pdb in _by_kind(docs, "PodDisruptionBudget").values():
        assert len(selects(pdb["spec"]["selector"]["matchLabels"])) == 1, pdb["metadata"]
    for service in _by_kind(docs, "Service").values():
        assert selects(service["spec"]["selector"]) == ["voiceapp-web"]
    for hpa in _by_kind(docs, "HorizontalPodAutoscaler").values():
        assert hpa["spec"]["scaleTargetRef"]["name"] in deployments
    config_maps = set(_by_kind(docs, "ConfigMap"))
    claims = set(_by_kind(docs, "PersistentVolumeClaim"))
    for doc in docs:
        pod = doc.get("spec", {}).get("template", {}).get("spec", {})
        for volume in pod.get("volumes", []):
            assert volume["persistentVolumeClaim"]["claimName"] in claims
        for container in _containers(doc):
            assert container["image"] == "voiceapp:latest"
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    assert source["configMapRef"]["name"] in config_maps
                else:
                    assert source["secretRef"]["name"] == USER_SECRET


def test_the_commands_probes_settings_and_metrics_exist(docs: list[dict[str, Any]]) -> None:
    commands = get_commands()
    settings_source = (ROOT / "voiceapp" / "settings.py").read_text()
    for doc in docs:
        for container in _containers(doc):
            line = " ".join(container["command"])
            for sub in re.findall(r"manage\.py (\w+)", line):
                assert sub in commands, f"{doc['metadata']['name']}: no command {sub}"
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                if "httpGet" in container.get(probe, {}):
                    assert container[probe]["httpGet"]["path"] in PROBES
            for var in container.get("env", []):
                assert re.search(rf'env\.\w+\("{var["name"]}"', settings_source), var
    for name in _by_kind(docs, "ConfigMap")["voiceapp-config"]["data"]:
        assert re.search(rf'env\.\w+\("{name}"', settings_source), f"no setting reads {name}"
    metrics_source = (ROOT / "voiceapp" / "metrics.py").read_text()
    for hpa in _by_kind(docs, "HorizontalPodAutoscaler").values():
        for metric in hpa["spec"]["metrics"]:
            if metric["type"] == "External":
                assert f'"{metric["external"]["metric"]["name"]}"' in metrics_source


def test_a_web_pod_drains_before_it_stops(docs: list[dict[str, Any]]) -> None:
    web = _by_kind(docs, "Deployment")["voiceapp-web"]
    pod = web["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    hook = container["lifecycle"]["preStop"]["exec"]["command"]
    assert hook[:3] == ["python", "manage.py", "drain_web"]
    wait_s = float(hook[hook.index("--wait") + 1])
    # the hook's wait fits in the grace period, with time left for the records
    assert wait_s + 30 <= pod["terminationGracePeriodSeconds"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["readinessProbe"]["failureThreshold"] == 1
    assert {"name": "WEB_INSTANCE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in (
        container["env"]
    )
    assert web["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
