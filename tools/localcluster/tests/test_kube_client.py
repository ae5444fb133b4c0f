"""The local cluster's use of the kubernetes client: its configuration, and
what an apply the API server refuses reports (no cluster needed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError, api_exception

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

import cluster  # noqa: E402

QUEUE = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "Queue",
    "metadata": {"name": "q1"},
    "spec": {"weight": 1},
}


def refusal(status: int, message: str) -> Exception:
    """What the dynamic client raises for an API server's Status answer."""
    exc = ApiException(status=status, reason="Refused")
    exc.body = json.dumps({"kind": "Status", "status": "Failure", "message": message})
    exc.headers = {"Content-Type": "application/json"}
    return api_exception(exc)


class FakeResource:
    def __init__(self, error: Exception | None = None, subresources: dict | None = None):
        self.error = error
        self.subresources = subresources or {}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def server_side_apply(self, **kwargs: Any) -> Any:
        self.calls.append(("apply", kwargs))
        if self.error:
            raise self.error
        return kwargs["body"]

    def get(self, **kwargs: Any) -> Any:
        self.calls.append(("get", kwargs))
        if self.error:
            raise self.error
        return {"metadata": {"name": kwargs["name"]}}


@pytest.fixture
def kube(tmp_path: Path) -> cluster.Kube:
    return cluster.Kube(tmp_path)


def test_the_client_is_configured_with_the_admin_certificate(tmp_path: Path):
    kube = cluster.Kube(tmp_path)
    cfg = kube.client.configuration
    assert cfg.host == cluster.APISERVER
    assert (cfg.ssl_ca_cert, cfg.cert_file, cfg.key_file) == tuple(
        str(tmp_path / "pki" / f) for f in ("ca.crt", "admin.crt", "admin.key")
    )


def test_apply_is_a_forced_server_side_apply(kube, monkeypatch):
    resource = FakeResource()
    looked_up = []
    monkeypatch.setattr(kube, "resource", lambda *key: looked_up.append(key) or resource)
    kube.apply(QUEUE)
    assert looked_up == [("scheduling.volcano.sh/v1beta1", "Queue")]
    (_, kwargs) = resource.calls[0]
    assert kwargs["body"] == QUEUE
    assert kwargs["field_manager"] == cluster.FIELD_MANAGER
    assert kwargs["force_conflicts"] is True


def test_status_is_applied_to_the_subresource(kube, monkeypatch):
    status = FakeResource()
    monkeypatch.setattr(
        kube, "resource", lambda *key: FakeResource(subresources={"status": status})
    )
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {}}
    kube.apply(node, subresource="status")
    assert status.calls[0][1]["body"] == node


def test_a_refused_apply_names_kind_name_and_the_servers_message(kube, monkeypatch):
    error = refusal(422, 'admission webhook "validatequeue.volcano.sh" denied the request')
    monkeypatch.setattr(kube, "resource", lambda *key: FakeResource(error))
    with pytest.raises(SystemExit) as exc:
        kube.apply(QUEUE)
    assert str(exc.value) == (
        "localcluster: applying Queue q1: "
        'admission webhook "validatequeue.volcano.sh" denied the request'
    )


def test_an_unserved_kind_stops_with_its_name(kube, monkeypatch):
    def missing(*key):
        raise ResourceNotFoundError(f"No matches found for {key}")

    monkeypatch.setattr(kube, "resource", missing)
    with pytest.raises(SystemExit) as exc:
        kube.apply(QUEUE)
    assert str(exc.value) == (
        "localcluster: applying Queue q1: "
        "the API server serves no scheduling.volcano.sh/v1beta1 Queue"
    )


def test_get_is_none_for_a_missing_object_or_kind(kube, monkeypatch):
    monkeypatch.setattr(kube, "resource", lambda *key: FakeResource(refusal(404, "not found")))
    assert kube.get("v1", "ConfigMap", "cm", "ns") is None

    def missing(*key):
        raise ResourceNotFoundError("No matches")

    monkeypatch.setattr(kube, "resource", missing)
    assert kube.get("scheduling.volcano.sh/v1beta1", "Queue", "root") is None
    monkeypatch.setattr(kube, "resource", lambda *key: FakeResource())
    assert kube.get("v1", "ConfigMap", "cm", "ns") == {"metadata": {"name": "cm"}}


def test_other_errors_of_a_get_are_raised(kube, monkeypatch):
    monkeypatch.setattr(kube, "resource", lambda *key: FakeResource(refusal(403, "forbidden")))
    with pytest.raises(ApiException):
        kube.get("v1", "ConfigMap", "cm", "ns")
