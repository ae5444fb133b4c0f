"""The local cluster's components as data: every template renders for a cluster,
in the order `up` starts them, with its ports, paths and identities (no cluster
needed)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

import cluster  # noqa: E402
import components  # noqa: E402


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "test"
    path.mkdir()
    return path


@pytest.fixture
def rendered(state: Path, tmp_path: Path, monkeypatch) -> dict[str, cluster.Component]:
    # kwok's stages are read from its Go module (`go mod download`): not needed here.
    monkeypatch.setattr(components, "kwok_stages", lambda s: s / "kwok-stages.yaml")
    return {c.name: c for c in cluster.components(state, tmp_path / "bin")}


def test_every_component_renders_in_start_order(rendered):
    assert list(rendered) == cluster.ORDER
    for comp in rendered.values():
        text = " ".join([*comp.argv, comp.health or "", *(comp.env or {}).values()])
        assert "{" not in text and "}" not in text, comp.name


def test_binaries_ports_and_identities(rendered, state: Path, tmp_path: Path):
    etcd = rendered["etcd"]
    assert etcd.argv[0] == str(tmp_path / "bin" / "etcd") and etcd.program == "etcd"
    assert f"--listen-client-urls=http://127.0.0.1:{cluster.PORTS['etcd']}" in etcd.argv
    assert f"--data-dir={state / 'etcd'}" in etcd.argv
    assert rendered["kube-apiserver"].health == f"{cluster.APISERVER}/readyz"
    kcm = rendered["kube-controller-manager"].argv
    assert f"--kubeconfig={state / 'kube-controller-manager.kubeconfig'}" in kcm
    assert (state / "kube-controller-manager.kubeconfig").exists()
    assert f"--tls-cert-file={state / 'pki' / 'apiserver.crt'}" in kcm
    assert rendered["kwok"].health is None
    kserve = rendered["kserve-controller"]
    assert kserve.program == "kserve-manager"
    assert kserve.env == {"POD_NAMESPACE": "kserve", "TMPDIR": str(state / "kserve-tmp")}
    assert rendered["etcd"].env is None


def test_the_scheduler_conf_sync_runs_this_tool_for_this_cluster(rendered):
    sync = rendered["scheduler-conf-sync"]
    assert sync.argv == [
        sys.executable,
        str(HERE / "cluster.py"),
        "sync-scheduler-conf",
        "--name",
        "test",
    ]
    assert sync.program == "cluster.py" and sync.health is None


def test_the_specs_are_frozen_and_named_once():
    with pytest.raises(dataclasses.FrozenInstanceError):
        components.COMPONENTS[0].name = "other"  # type: ignore[misc]
    assert len(set(cluster.ORDER)) == len(components.COMPONENTS)


def test_alertmanager_runs_from_its_own_binaries_with_no_gossip_port(rendered, state: Path):
    alertmanager = rendered["alertmanager"]
    assert alertmanager.argv[0] == str(cluster.build_alerting.bin_dir() / "alertmanager")
    assert f"--config.file={state / 'alertmanager.yml'}" in alertmanager.argv
    assert "--cluster.listen-address=" in alertmanager.argv
    assert alertmanager.health == f"{components.ALERTMANAGER}/-/ready"
    sink = rendered["alert-sink"]
    assert sink.argv[1:] == [str(HERE / "cluster.py"), "alert-sink", "--name", "test"]
    # Prometheus starts after both: its first alert has somewhere to go.
    assert cluster.ORDER.index("alertmanager") < cluster.ORDER.index("prometheus")
