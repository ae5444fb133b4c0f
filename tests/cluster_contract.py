# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection relies on from the API server, as cases that run against
both ``tests/unit/fake_cluster.FakeCluster`` (tests/unit/kube/test_fake_cluster.py)
and the local cluster's real kube-apiserver through ``kube.cluster.Cluster``
(tests/integration/test_cluster_contract.py). A case that passes on the real
server and fails on the fake means the fake drifted.

Each case takes ``(cluster, namespace)``: a Cluster-like object and a fresh
namespace. Its objects carry the label ``contract``, so that what the cluster
puts there by itself (the ``kube-root-ca.crt`` ConfigMap) stays out of the lists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.dynamic.exceptions import ConflictError

MANAGER = "gpucloud-platform"


def configmap(namespace: str, name: str, data: dict[str, str], **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"contract": "", **labels}},
        "data": data,
    }


def case_create_then_get(cluster, ns):
    made = cluster.create(configmap(ns, "a", {"k": "v"}))
    got = cluster.get("v1", "ConfigMap", "a", namespace=ns)
    assert got["data"] == {"k": "v"}
    assert got["metadata"]["uid"] == made["metadata"]["uid"]
    assert got["metadata"]["resourceVersion"]


def case_get_missing_is_none(cluster, ns):
    assert cluster.get("v1", "ConfigMap", "missing", namespace=ns) is None


def case_duplicate_create_conflicts(cluster, ns):
    cluster.create(configmap(ns, "a", {"k": "v"}))
    with pytest.raises(ConflictError):
        cluster.create(configmap(ns, "a", {"k": "w"}))


def case_list_by_label_selector(cluster, ns):
    cluster.create(configmap(ns, "a", {}, tier="x"))
    cluster.create(configmap(ns, "b", {}, tier="y"))
    cluster.create(configmap(ns, "c", {}))

    def names(selector):
        listed = cluster.list("v1", "ConfigMap", ns, label_selector=f"contract,{selector}")
        return sorted(o["metadata"]["name"] for o in listed)

    assert names("tier=x") == ["a"]
    assert names("tier") == ["a", "b"]
    assert names("tier!=x") == ["b", "c"]
    assert names("!tier") == ["c"]


def case_apply_merges_maps_and_keeps_other_managers_fields(cluster, ns):
    cluster.apply(configmap(ns, "a", {"one": "1"}))
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": ns},
            "data": {"two": "2"},
        },
        field_manager="someone-else",
    )
    assert cluster.get("v1", "ConfigMap", "a", namespace=ns)["data"] == {"one": "1", "two": "2"}


def case_apply_again_drops_what_the_manager_no_longer_names(cluster, ns):
    cluster.apply(configmap(ns, "a", {"one": "1", "two": "2"}))
    cluster.apply(configmap(ns, "a", {"one": "1"}))
    assert cluster.get("v1", "ConfigMap", "a", namespace=ns)["data"] == {"one": "1"}


def case_unchanged_apply_keeps_resource_version(cluster, ns):
    first = cluster.apply(configmap(ns, "a", {"one": "1"}))
    again = cluster.apply(configmap(ns, "a", {"one": "1"}))
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def case_replace_with_stale_version_conflicts(cluster, ns):
    made = cluster.create(configmap(ns, "a", {"k": "1"}))
    fresh = dict(made, data={"k": "2"})
    cluster.replace(fresh)
    with pytest.raises(ConflictError):
        cluster.replace(dict(made, data={"k": "3"}))  # made's resourceVersion is stale now
    assert cluster.get("v1", "ConfigMap", "a", namespace=ns)["data"] == {"k": "2"}


def case_delete_with_stale_uid_conflicts_and_missing_is_false(cluster, ns):
    cluster.create(configmap(ns, "a", {}))
    with pytest.raises(ConflictError):
        cluster.delete("v1", "ConfigMap", "a", namespace=ns, preconditions={"uid": "not-its-uid"})
    assert cluster.get("v1", "ConfigMap", "a", namespace=ns) is not None
    uid = cluster.get("v1", "ConfigMap", "a", namespace=ns)["metadata"]["uid"]
    assert cluster.delete("v1", "ConfigMap", "a", namespace=ns, preconditions={"uid": uid})
    # Foreground deletion: the object may linger, marked, until the garbage
    # collector lets it go; a delete is done once the deletion is recorded.
    after = cluster.get("v1", "ConfigMap", "a", namespace=ns)
    assert after is None or after["metadata"].get("deletionTimestamp")
    assert cluster.delete("v1", "ConfigMap", "never-made", namespace=ns) is False


def case_merge_patch_sets_removes_and_conflicts_on_a_stale_version(cluster, ns):
    made = cluster.create(configmap(ns, "a", {"keep": "1", "drop": "2"}))
    patched = cluster.merge_patch(
        "v1", "ConfigMap", "a", {"data": {"drop": None, "new": "3"}}, namespace=ns
    )
    assert patched["data"] == {"keep": "1", "new": "3"}
    stale = {
        "metadata": {"resourceVersion": made["metadata"]["resourceVersion"]},
        "data": {"x": "y"},
    }
    with pytest.raises(ConflictError):
        cluster.merge_patch("v1", "ConfigMap", "a", stale, namespace=ns)
    assert cluster.get("v1", "ConfigMap", "a", namespace=ns)["data"] == {"keep": "1", "new": "3"}


def case_requests_are_counted(cluster, ns):
    before = cluster.requests
    cluster.list("v1", "ConfigMap", ns)
    cluster.get("v1", "ConfigMap", "missing", namespace=ns)
    cluster.apply(configmap(ns, "a", {}))
    assert cluster.requests - before == 3


def case_apply_all_writes_every_manifest_and_returns_results_in_order(cluster, ns):
    manifests = [configmap(ns, f"many-{i:02d}", {"i": str(i)}) for i in range(20)]
    results = cluster.apply_all(manifests, workers=6)
    assert [r["metadata"]["name"] for r in results] == [f"many-{i:02d}" for i in range(20)]
    listed = cluster.list("v1", "ConfigMap", ns)
    assert {
        c["metadata"]["name"]: c["data"] for c in listed if "many-" in c["metadata"]["name"]
    } == {f"many-{i:02d}": {"i": str(i)} for i in range(20)}


def case_concurrently_returns_each_failure_in_its_place(cluster, ns):
    cluster.create(configmap(ns, "taken", {}))
    calls = [
        lambda: cluster.create(configmap(ns, "fresh", {})),
        lambda: cluster.create(configmap(ns, "taken", {})),
        lambda: cluster.get("v1", "ConfigMap", "fresh", namespace=ns),
    ]
    results = cluster.concurrently(calls, workers=1)
    assert results[0]["metadata"]["name"] == "fresh"
    assert isinstance(results[1], ConflictError)
    assert results[2]["metadata"]["name"] == "fresh"


def case_list_returns_plain_dicts(cluster, ns):
    cluster.apply(configmap(ns, "plain", {"k": "v"}, app="x"))
    (item,) = cluster.list("v1", "ConfigMap", ns, label_selector="app=x")
    # Exactly dict, not a subclass such as the dynamic client's ResourceField.
    assert type(item) is dict and type(item["metadata"]) is dict  # pylint: disable=unidiomatic-typecheck
    assert (item["apiVersion"], item["kind"]) == ("v1", "ConfigMap")  # as a GET gives them
    assert item["data"] == {"k": "v"}


CASES: dict[str, Callable[[Any, str], None]] = {
    name[len("case_") :]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")
}


def dry_run_case(cluster, ns, existing: str) -> None:
    """In a dry run (check mode) every write answers as it would and stores nothing:
    apply and create make no object, delete removes none. ``existing`` names a
    ConfigMap of ``ns`` that was made before (outside the dry run)."""
    answer = cluster.apply(configmap(ns, "dry", {"k": "v"}))
    assert answer["data"] == {"k": "v"}
    assert cluster.get("v1", "ConfigMap", "dry", namespace=ns) is None
    cluster.create(configmap(ns, "dry-created", {}))
    assert cluster.get("v1", "ConfigMap", "dry-created", namespace=ns) is None
    assert cluster.delete("v1", "ConfigMap", existing, namespace=ns) is True
    kept = cluster.get("v1", "ConfigMap", existing, namespace=ns)
    assert kept is not None and not kept["metadata"].get("deletionTimestamp")
