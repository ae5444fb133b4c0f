# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules node-labels-apply and node-taints-patch: the gpu_node role writes a Node only
when something it manages differs, and a label it set and no longer wants is removed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.nodes.node_changes import (
    labels_apply,
    node_changes,
    owned_label_keys,
    taints_patch,
    wanted_taints,
)

MANAGER = "gpucloud-platform"
TOR = "platform.io/tor"
SPINE = "platform.io/spine"


def node(labels=None, owned=(), taints=None, manager=MANAGER, operation="Apply"):
    fields = [
        {
            "manager": manager,
            "operation": operation,
            "fieldsV1": {"f:metadata": {"f:labels": {f"f:{k}": {} for k in owned}}},
        }
    ]
    return {
        "metadata": {"name": "n1", "labels": labels or {}, "managedFields": fields},
        "spec": {"taints": taints} if taints is not None else {},
    }


def test_owned_keys_are_the_managers_apply_entries_only():
    n = node(owned=[TOR, SPINE])
    n["metadata"]["managedFields"].append(
        {
            "manager": "kubelet",
            "operation": "Apply",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:x": {}}}},
        }
    )
    n["metadata"]["managedFields"].append(
        {
            "manager": MANAGER,
            "operation": "Update",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:y": {}}}},
        }
    )
    assert owned_label_keys(n, MANAGER) == [SPINE, TOR]


def test_an_unchanged_node_is_not_written():
    n = node({TOR: "t1", "kubernetes.io/hostname": "n1"}, owned=[TOR])
    assert labels_apply(n, {TOR: "t1"}, MANAGER) is False


@pytest.mark.parametrize(
    "live, owned, wanted",
    [
        ({}, [], {TOR: "t1"}),  # missing
        ({TOR: "t0"}, [TOR], {TOR: "t1"}),  # another value
        ({TOR: "t1", SPINE: "s1"}, [TOR, SPINE], {TOR: "t1"}),  # one the role set is dropped
        ({TOR: "t1"}, [TOR], {}),  # every one dropped
        ({TOR: "t1"}, [], {TOR: "t1"}),  # set by someone else: the role takes it over
    ],
)
def test_the_apply_runs_when_a_label_differs_or_an_owned_one_is_dropped(live, owned, wanted):
    assert labels_apply(node(live, owned), wanted, MANAGER) is True


def test_nothing_wanted_and_nothing_owned_never_applies():
    assert labels_apply(node({TOR: "t1"}), {}, MANAGER) is False


def test_taints_keep_the_unmanaged_ones_and_leave_out_empty_fields():
    live = [{"key": "other", "effect": "NoSchedule"}, {"key": "gpu", "effect": "NoSchedule"}]
    want = [{"key": "gpu", "value": "", "effect": "NoExecute"}]
    assert wanted_taints(node(taints=live), want, ["old"]) == [
        {"key": "other", "effect": "NoSchedule"},
        {"key": "gpu", "effect": "NoExecute"},
    ]
    assert taints_patch(node(taints=live), want, []) is True


def test_taints_in_another_order_are_unchanged_and_nothing_managed_is_no_patch():
    live = [{"key": "gpu", "effect": "NoSchedule"}, {"key": "other", "effect": "NoSchedule"}]
    assert taints_patch(node(taints=live), [{"key": "gpu", "effect": "NoSchedule"}], []) is False
    assert taints_patch(node(taints=live), [], []) is False


def test_an_absent_key_present_is_patched_away():
    live = [{"key": "old", "effect": "NoSchedule"}]
    assert taints_patch(node(taints=live), [], ["old"]) is True
    assert wanted_taints(node(taints=live), [], ["old"]) == []
    assert taints_patch(node(taints=[]), [], ["old"]) is False


def test_a_node_not_in_the_cluster_needs_nothing():
    assert node_changes(None, {TOR: "t1"}, [], [], MANAGER) == {
        "found": False,
        "apply_labels": False,
        "patch_taints": False,
        "taints": [],
    }


label_keys = st.sampled_from([TOR, SPINE, "platform.io/gpu-product", "x/y"])
label_maps = st.dictionaries(label_keys, st.sampled_from(["a", "b"]), max_size=4)


@given(label_maps, label_maps, st.lists(label_keys, unique=True, max_size=4))
def test_after_an_apply_the_same_labels_are_unchanged(live, wanted, owned):
    """What a server-side apply leaves (the wanted labels set, the manager owning exactly
    their keys, labels it no longer wants gone) never asks for another apply."""
    after = {k: v for k, v in live.items() if k not in owned or k in wanted} | wanted
    applied = node(after, owned=sorted(wanted))
    assert labels_apply(applied, wanted, MANAGER) is False
