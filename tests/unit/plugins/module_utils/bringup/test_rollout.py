# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules release-workloads, workload-ready and go-duration (bringup/rollout)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.bringup.rollout import (
    go_duration_seconds,
    release_workloads,
    rollout_waiting,
    workload_waiting,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)


def deployment(replicas=2, available=2, updated=2, generation=3, observed=3, kind="Deployment"):
    return {
        "kind": kind,
        "metadata": {"name": "web", "namespace": "ns", "generation": generation},
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": observed,
            "availableReplicas": available,
            "readyReplicas": available,
            "updatedReplicas": updated,
        },
    }


def daemonset(desired=8, ready=8, updated=8):
    return {
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "ns", "generation": 1},
        "status": {
            "observedGeneration": 1,
            "desiredNumberScheduled": desired,
            "numberReady": ready,
            "updatedNumberScheduled": updated,
        },
    }


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("10m0s", 600),
        ("90s", 90),
        ("1h", 3600),
        ("1h30m", 5400),
        ("1500ms", 2),
        ("300", 300),
        (45, 45),
    ],
)
def test_a_go_duration_is_read_in_whole_seconds(text, seconds):
    assert go_duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "10 minutes", "5x", "m10", True, None, "10m0s "])
def test_a_bad_duration_names_the_field_and_the_value(text):
    if text == "10m0s ":
        assert go_duration_seconds(text) == 600  # surrounding blanks are not an error
        return
    with pytest.raises(PlatformValidationError) as exc:
        go_duration_seconds(text)
    assert "timeout" in str(exc.value) and repr(text) in str(exc.value)


@given(st.integers(0, 99), st.integers(0, 59), st.integers(0, 59))
def test_hours_minutes_and_seconds_add_up(h, m, s):
    assert go_duration_seconds(f"{h}h{m}m{s}s") == max(h * 3600 + m * 60 + s, 1)


def test_the_workloads_of_a_manifest_are_its_deployments_statefulsets_and_daemonsets():
    docs = [
        None,
        {"kind": "ConfigMap", "metadata": {"name": "c"}},
        {"kind": "DaemonSet", "metadata": {"name": "b"}},
        {"kind": "Deployment", "metadata": {"name": "a", "namespace": "other"}},
        {"kind": "StatefulSet", "metadata": {"name": "s"}},
        {"kind": "Job", "metadata": {"name": "hook"}},
    ]
    assert release_workloads(docs, "ns") == [
        {"kind": "DaemonSet", "name": "b", "namespace": "ns"},
        {"kind": "Deployment", "name": "a", "namespace": "other"},
        {"kind": "StatefulSet", "name": "s", "namespace": "ns"},
    ]


def test_a_manifest_document_that_is_not_an_object_is_refused_by_index():
    with pytest.raises(PlatformValidationError) as exc:
        release_workloads([{"kind": "Deployment"}, "text"], "ns")
    assert "manifest[1]" in str(exc.value) and "'text'" in str(exc.value)


def test_a_rolled_out_deployment_and_daemonset_are_ready():
    assert workload_waiting(deployment()) == ""
    assert workload_waiting(daemonset()) == ""
    assert workload_waiting(daemonset(desired=0, ready=0, updated=0)) == ""


@pytest.mark.parametrize(
    ("obj", "why"),
    [
        (deployment(observed=2), "its controller has not seen the latest spec yet"),
        (deployment(available=1), "1/2 replicas updated and ready"),
        (deployment(updated=0), "0/2 replicas updated and ready"),
        (daemonset(ready=5), "5/8 pods updated and ready"),
        (deployment(kind="StatefulSet", available=0), "0/2 replicas updated and ready"),
    ],
)
def test_what_a_workload_waits_for_is_said(obj, why):
    assert workload_waiting(obj) == why


def test_a_deployment_without_replicas_wants_one():
    obj = deployment()
    del obj["spec"]["replicas"]
    obj["status"] = {"observedGeneration": 3}
    assert workload_waiting(obj) == "0/1 replicas updated and ready"


def test_rollout_waiting_lists_the_missing_and_the_unready_only():
    workloads = [
        {"kind": "Deployment", "name": "web", "namespace": "ns"},
        {"kind": "DaemonSet", "name": "agent", "namespace": "ns"},
        {"kind": "StatefulSet", "name": "db", "namespace": "ns"},
    ]
    live = [deployment(available=0), daemonset()]
    assert rollout_waiting(workloads, live) == [
        "Deployment/ns/web - 0/2 replicas updated and ready",
        "StatefulSet/ns/db - not created yet",
    ]
    assert rollout_waiting(workloads[1:2], live) == []
