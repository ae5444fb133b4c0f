"""Fluid's CRDs in the local cluster: which files of its chart are applied, and that a
second `up` applies none of them again (on a stand-in for the module's chart and a
stand-in for the client; no cluster needed)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

import fluid_files  # noqa: E402
import startup  # noqa: E402

CRD = """---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    controller-gen.kubebuilder.io/version: v0.14.0
  name: {plural}.data.fluid.io
spec:
  group: data.fluid.io
"""


class FakeKube:
    """Stores what is applied, each CRD Established at once."""

    def __init__(self) -> None:
        self.stored: dict[str, dict[str, Any]] = {}
        self.applied: list[str] = []

    def apply(self, doc: dict[str, Any]) -> None:
        name = doc["metadata"]["name"]
        self.applied.append(name)
        self.stored[name] = {
            **doc,
            "status": {"conditions": [{"type": "Established", "status": "True"}]},
        }

    def get(self, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
        assert (api_version, kind) == ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        return self.stored.get(name)


@pytest.fixture
def module(tmp_path: Path) -> Path:
    crds = tmp_path / fluid_files.CRD_DIR
    crds.mkdir(parents=True)
    for plural in ("datasets", "alluxioruntimes", "dataloads"):
        (crds / f"data.fluid.io_{plural}.yaml").write_text(CRD.format(plural=plural))
    (crds / "README.md").write_text("not a CRD")
    return tmp_path


def test_every_data_fluid_io_crd_of_the_chart_is_applied(module: Path):
    assert [p.name for p in fluid_files.fluid_crd_paths(module)] == [
        "data.fluid.io_alluxioruntimes.yaml",
        "data.fluid.io_dataloads.yaml",
        "data.fluid.io_datasets.yaml",
    ]


def test_a_second_up_applies_no_unchanged_crd_again(module: Path, monkeypatch):
    monkeypatch.setattr(fluid_files, "fluid_module", lambda: module)
    kube = FakeKube()
    fluid_files.apply_fluid_crds(kube)
    assert sorted(kube.applied) == [
        "alluxioruntimes.data.fluid.io",
        "dataloads.data.fluid.io",
        "datasets.data.fluid.io",
    ]
    kube.applied.clear()
    fluid_files.apply_fluid_crds(kube)
    assert kube.applied == []
    # A changed file is applied again, and only that one.
    path = module / fluid_files.CRD_DIR / "data.fluid.io_datasets.yaml"
    path.write_text(path.read_text() + "  scope: Namespaced\n")
    fluid_files.apply_fluid_crds(kube)
    assert kube.applied == ["datasets.data.fluid.io"]


def test_up_applies_them_in_the_background_before_kwok(monkeypatch):
    submitted: list[Any] = []

    class Background:
        def submit(self, fn: Any, *args: Any) -> str:
            submitted.append(fn)
            return "future"

    monkeypatch.setattr(startup, "ensure_base_objects", lambda kube: None)
    up = startup.Up(Path("/nonexistent"), Path("/nonexistent"), None, {}, Background())  # type: ignore[arg-type]
    startup.BEFORE["kwok"](up)
    assert startup.apply_fluid_crds in submitted and up.fluid_crds == "future"
