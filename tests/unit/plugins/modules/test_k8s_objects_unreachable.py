# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An unreachable API server is said in one line, by k8s_objects as by every module of the
collection, also when the server is never reached at all: making the client asks it its
version when no discovery cache names it yet (a mistyped host or port)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import urllib3.exceptions

from ansible_collections.gpucloud.platform.plugins.module_utils.kube import cluster, writes_io
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import unreachable

REFUSED = urllib3.exceptions.MaxRetryError(
    None, "/version", reason=ConnectionRefusedError(111, "Connection refused")
)


class Failed(Exception):
    pass


class Module(SimpleNamespace):
    def fail_json(self, **result):
        self.failed = result
        raise Failed

    def fail_from_exception(self, exc):
        self.fail_json(msg=f"kubernetes.core: {exc}")


def test_a_connection_error_anywhere_in_the_chain_is_unreachable():
    refused = ConnectionRefusedError(111, "Connection refused")
    try:
        try:
            raise refused
        except ConnectionRefusedError as inner:
            raise RuntimeError("Failed to get client due to discovery") from inner
    except RuntimeError as outer:
        assert unreachable(outer)
    retries = urllib3.exceptions.MaxRetryError(None, "/api", reason=refused)
    assert unreachable(retries)


def test_an_api_refusal_is_not_unreachable():
    assert not unreachable(ValueError("ConfigMap is invalid"))


def test_a_client_that_cannot_reach_its_server_fails_in_one_line(monkeypatch):
    def no_server(module):
        raise REFUSED

    monkeypatch.setattr(cluster, "get_api_client", no_server)
    module = Module(params={})
    with pytest.raises(Failed):
        cluster.Cluster.from_module(module)
    assert module.failed["changed"] is False
    assert module.failed["msg"].startswith("cannot reach the Kubernetes API server: ")
    assert "Connection refused" in module.failed["msg"]
    # what a transport says over several lines is said in one
    said = cluster.unreachable_message(ConnectionError("refused\n  by 127.0.0.1:1"))
    assert said == "cannot reach the Kubernetes API server: refused by 127.0.0.1:1"


def test_kubernetes_cores_own_error_is_said_and_any_other_is_raised(monkeypatch):
    def bad_config(module):
        raise cluster.CoreException("Could not create API client: no kubeconfig")

    monkeypatch.setattr(cluster, "get_api_client", bad_config)
    module = Module(params={})
    with pytest.raises(Failed):
        cluster.Cluster.from_module(module)
    assert module.failed == {"msg": "Could not create API client: no kubeconfig"}

    def a_bug(module):
        raise KeyError("host")

    monkeypatch.setattr(cluster, "get_api_client", a_bug)
    with pytest.raises(KeyError):
        cluster.Cluster.from_module(Module(params={}))


def test_k8s_objects_says_a_server_never_reached_as_the_others_do():
    module = Module(params={})
    with pytest.raises(Failed):
        writes_io.failed_core(module, REFUSED)
    assert module.failed["msg"] == cluster.unreachable_message(REFUSED)
    module = Module(params={})
    with pytest.raises(Failed):
        writes_io.failed_core(module, cluster.CoreException("no definition"))
    assert module.failed == {"msg": "kubernetes.core: no definition"}
    with pytest.raises(KeyError):
        writes_io.failed_core(Module(params={}), KeyError("x"))
