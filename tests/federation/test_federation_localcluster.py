# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local federation (tools/localcluster/federation.py, docs/localcluster.md "A
federation (Karmada)"): two small local clusters of their own, ``fed-idc`` and
``fed-cloud``, joined to a Karmada control plane ``fed-test``; both Clusters become
Ready with their location labels, a policy's clusterAffinity on the location label puts a
Namespace and a ConfigMap on exactly the member it selects, a second ``up`` changes
nothing, and ``down`` leaves no process. Everything is wiped afterwards.

It needs Karmada's binaries: ``scripts/test federation`` builds them first
(``tools/localcluster/build_federation.py``, about 4 minutes cold on 2 cores); without
them the fixture fails, naming the command.
"""

from __future__ import annotations

import time
import uuid

import pytest

from ansible_collections.gpucloud.platform.tests.federation.federation_helpers import (
    FED_OFFSET,
    LOCATION,
    MEMBERS,
    _fed,
    _fed_state,
    _pids,
    _running,
    dynamic,
)
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    wait_until,
)

pytestmark = pytest.mark.federation


def _clusters(fed) -> dict[str, dict]:
    clusters = dynamic(fed["karmada"]).resources.get(
        api_version="cluster.karmada.io/v1alpha1", kind="Cluster"
    )
    return {c["metadata"]["name"]: c.to_dict() for c in clusters.get().items}


def _ready(cluster: dict) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in (cluster.get("status") or {}).get("conditions") or []
    )


def test_both_members_are_ready_with_their_location(federation):
    clusters = wait_until(
        lambda: (c := _clusters(federation)) and all(_ready(x) for x in c.values()) and c,
        120,
        1,
        "both Clusters Ready",
    )
    assert set(clusters) == set(MEMBERS)
    for name, (location, offset) in MEMBERS.items():
        spec, labels = clusters[name]["spec"], clusters[name]["metadata"]["labels"]
        assert labels[LOCATION] == location
        assert spec["syncMode"] == "Push"
        assert spec["apiEndpoint"] == f"https://127.0.0.1:{26443 + offset}"


def _exists(api, kind: str, name: str, namespace: str | None = None) -> bool:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core = client.CoreV1Api(api)
    try:
        if kind == "Namespace":
            core.read_namespace(name)
        else:
            core.read_namespaced_config_map(name, namespace)
        return True
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise


def test_a_policy_places_a_namespace_and_a_configmap_on_the_selected_location(federation):
    karmada = dynamic(federation["karmada"])
    ns = f"fed-{uuid.uuid4().hex[:6]}"
    affinity = {"clusterAffinity": {"labelSelector": {"matchLabels": {LOCATION: "cloud"}}}}
    # A namespace goes to every member by itself (Karmada's namespace-sync controller)
    # unless it says not to; then a ClusterPropagationPolicy places it like anything else.
    karmada.resources.get(
        api_version="policy.karmada.io/v1alpha1", kind="ClusterPropagationPolicy"
    ).create(
        body={
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "ClusterPropagationPolicy",
            "metadata": {"name": ns},
            "spec": {
                "resourceSelectors": [{"apiVersion": "v1", "kind": "Namespace", "name": ns}],
                "placement": affinity,
            },
        }
    )
    core = karmada.resources.get(api_version="v1", kind="Namespace")
    core.create(
        body={
            "metadata": {
                "name": ns,
                "labels": {"namespace.karmada.io/skip-auto-propagation": "true"},
            }
        }
    )
    karmada.resources.get(
        api_version="policy.karmada.io/v1alpha1", kind="PropagationPolicy"
    ).create(
        namespace=ns,
        body={
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": "settings", "namespace": ns},
            "spec": {
                "resourceSelectors": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "settings"}
                ],
                "placement": affinity,
            },
        },
    )
    karmada.resources.get(api_version="v1", kind="ConfigMap").create(
        namespace=ns,
        body={"metadata": {"name": "settings", "namespace": ns}, "data": {"where": "cloud"}},
    )
    cloud, idc = federation["members"]["fed-cloud"], federation["members"]["fed-idc"]
    wait_until(
        lambda: _exists(cloud, "ConfigMap", "settings", ns), 60, 0.5, "ConfigMap on fed-cloud"
    )
    assert _exists(cloud, "Namespace", ns)
    # the scheduler placed both on fed-cloud alone
    bindings = karmada.resources.get(api_version="work.karmada.io/v1alpha2", kind="ResourceBinding")
    binding = wait_until(
        lambda: next(iter(bindings.get(namespace=ns).items), None), 30, 0.5, "a ResourceBinding"
    )
    assert [c["name"] for c in binding["spec"]["clusters"]] == ["fed-cloud"]
    time.sleep(3)  # what Karmada would have pushed to fed-idc, it has pushed by now
    assert not _exists(idc, "Namespace", ns)
    assert not _exists(idc, "ConfigMap", "settings", ns)


def test_a_second_up_changes_nothing(federation):
    karmada = dynamic(federation["karmada"])
    secrets = karmada.resources.get(api_version="v1", kind="Secret")

    def versions() -> dict[str, str]:
        items = secrets.get(namespace="karmada-cluster").items
        found = {s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in items}
        for name, cluster in _clusters(federation).items():
            found[f"Cluster/{name}"] = str(cluster["metadata"].get("generation"))
        return found

    before, pids = versions(), _pids(_fed_state())
    started = time.monotonic()
    up = _fed("up", f"--port-offset={FED_OFFSET}")  # the members: those of the first `up`
    assert up.returncode == 0, up.stderr
    assert "already running, nothing to start" in up.stdout
    for name, (location, _offset) in MEMBERS.items():  # the cloud member: module-joined
        joined = f"member {name} ({location}): already joined, nothing changed"
        assert (joined in up.stdout) == (location == "idc"), up.stdout
    assert _pids(_fed_state()) == pids
    assert versions() == before
    assert up.stdout.strip().splitlines()[-1] == federation["kubeconfig"]
    print(f"second up: {time.monotonic() - started:.1f}s; first: {federation['up_seconds']:.1f}s")


def test_down_leaves_no_process_and_up_starts_it_again(federation):
    pids = _pids(_fed_state())
    assert len(pids) == 7
    down = _fed("down", timeout=180)
    assert down.returncode == 0, down.stderr
    assert [pid for pid in pids.values() if _running(pid)] == []
    status = _fed("status")
    assert status.returncode == 3 and "not running" in status.stdout
    # A warm start from the state kept (the suite's later files use the federation again):
    # the same members, Ready again.
    up = _fed("up", f"--port-offset={FED_OFFSET}")
    assert up.returncode == 0, f"{up.stdout}\n{up.stderr}"
    assert up.stdout.strip().splitlines()[-1] == federation["kubeconfig"]
    assert _fed("status").returncode == 0
    # `up` waits for the member it joined; the module-joined one is Ready again by itself.
    wait_until(
        lambda: (c := _clusters(federation)) and all(_ready(x) for x in c.values()),
        120,
        1,
        "both Clusters Ready again",
    )
