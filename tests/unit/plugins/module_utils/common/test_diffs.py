# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules diff-per-object and diff-shows-change."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.common.diffs import (
    changes,
    object_diff,
    one_line,
    per_object,
    shaped,
)


def test_one_diff_per_object_sorted_with_its_name_as_header():
    diff = {
        "before": {"q-b": {"capability": {"gpu": 1, "cpu": 1}}, "q-gone": {"capability": {}}},
        "after": {"q-b": {"capability": {"gpu": 2, "cpu": 2}}, "q-a": {"capability": {"gpu": 4}}},
    }
    assert per_object(diff) == [
        {
            "before_header": "q-a",
            "after_header": "q-a",
            "before": None,
            "after": {"capability": {"gpu": 4}},
        },
        {
            "before_header": "q-b",
            "after_header": "q-b",
            "before": {"capability": {"gpu": 1, "cpu": 1}},
            "after": {"capability": {"gpu": 2, "cpu": 2}},
        },
        {
            "before_header": "q-gone",
            "after_header": "q-gone",
            "before": {"capability": {}},
            "after": None,
        },
    ]


def test_every_written_object_keeps_its_entry():
    # a service keys only what it writes: an entry that looks unchanged is still a write
    same = {"spec": {"weight": 1}}
    (entry,) = per_object({"before": {"q": same}, "after": {"q": dict(same)}})
    assert entry["before_header"] == "q" and entry["before"] == entry["after"] == same
    assert per_object({"before": {}, "after": {}}) == per_object({}) == []


def test_what_ansible_cannot_render_is_wrapped():
    (entry,) = per_object({"before": {"node": ["a"]}, "after": {"node": "text"}})
    assert entry["before"] == {"value": ["a"]} and entry["after"] == "text"


def test_ansible_renders_each_entry_under_its_header():
    from ansible.plugins.callback import CallbackBase

    diff = {
        "before": {"q-a": {"w": 1, "v": 1}},
        "after": {"q-a": {"w": 2, "v": 2}, "q-b": {"w": 3}},
    }
    text = CallbackBase()._get_diff(per_object(diff))
    assert "--- before: q-a\n+++ after: q-a\n" in text
    assert '-    "v": 1,\n-    "w": 1\n+    "v": 2,\n+    "w": 2\n' in text
    assert "+++ after: q-b\n" in text and '+    "w": 3\n' in text


# -- rule diff-shows-change --------------------------------------------------------------

SERVER_META = {
    "managedFields": [{"manager": "kubectl", "operation": "Apply", "time": "2026-01-01T00:00:00Z"}],
    "resourceVersion": "4711",
    "uid": "0b5e",
    "creationTimestamp": "2026-01-01T00:00:00Z",
    "generation": 3,
    "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
        "node.alpha.kubernetes.io/ttl": "0",
        "deployment.kubernetes.io/revision": "2",
    },
}


def node(tor: str, **meta) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "gpu-node-7",
            "labels": {"topology.volcano.sh/tor": tor, "type": "kwok"},
            **meta,
        },
        "status": {"conditions": [{"type": "Ready", "lastHeartbeatTime": tor}]},
    }


def test_server_fields_are_no_part_of_a_diff():
    live = node("tor-3", **SERVER_META)
    # the same Node, as the server gives it back a second later: nothing to show
    again = node("tor-3", **{**SERVER_META, "resourceVersion": "4712", "generation": 4})
    assert shaped({"before": live, "after": again}) == {
        "before": without_status(node("tor-3")),
        "after": without_status(node("tor-3")),
    }
    (entry,) = per_object(
        {"before": {"Node/gpu-node-7": live}, "after": {"Node/gpu-node-7": again}}
    )
    assert not changes(entry)


def without_status(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k != "status"}


def test_an_annotation_of_the_collection_stays():
    before = node("tor-3", annotations={"platform.io/note": "a", **SERVER_META["annotations"]})
    after = node("tor-3", annotations={"platform.io/note": "b"})
    assert object_diff("Node/gpu-node-7", before, after) == {
        "prepared": "Node/gpu-node-7: annotation platform.io/note: a → b\n"
    }


def test_one_value_changed_is_one_line():
    entry = object_diff("Node/gpu-node-7", node("tor-3", **SERVER_META), node("tor-2"))
    assert entry == {"prepared": "Node/gpu-node-7: label topology.volcano.sh/tor: tor-3 → tor-2\n"}
    assert changes(entry)
    assert one_line("q", {"spec": {"weight": 1}}, {"spec": {"weight": 2}}) == (
        "q: spec.weight: 1 → 2\n"
    )
    # added and removed values, and text that would read ambiguously
    assert one_line("q", {"spec": {}}, {"spec": {"x": True}}) == "q: spec.x: absent → true\n"
    assert one_line("q", {"spec": {"x": " a"}}, {"spec": {}}) == 'q: spec.x: " a" → absent\n'


def test_more_than_one_value_or_a_list_is_a_diff_of_the_object():
    assert one_line("q", {"a": 1, "b": 1}, {"a": 2, "b": 2}) is None
    assert one_line("q", {"a": [1]}, {"a": [2]}) is None
    assert one_line("q", {"a": 1}, {"a": {"b": 1}}) is None
    # a new or a removed object is shown whole
    assert one_line("q", None, {"a": 1}) is None and one_line("q", {"a": 1}, {}) is None
    entry = object_diff("q", {"a": 1, "b": 1}, {"a": 2, "b": 2})
    assert entry["before_header"] == "q" and entry["after"] == {"a": 2, "b": 2}


def test_what_the_write_leaves_alone_is_not_shown():
    # another field manager's fields (spot capability beside the tenant's vGPU limits)
    live = {"capability": {"nvidia.com/gpu": 25, "volcano.sh/vgpu-cores": "0"}, "weight": 1}
    wrote = {"capability": {"nvidia.com/gpu": 27}}
    (entry,) = per_object({"before": {"q": live}, "after": {"q": wrote}})
    assert entry == {"prepared": "q: capability.nvidia.com/gpu: 25 → 27\n"}
    # a single-object diff cuts only Kubernetes objects (a report keeps its keys)
    assert shaped({"before": {"a": 1, "b": 2}, "after": {"a": 1}}) == {
        "before": {"a": 1, "b": 2},
        "after": {"a": 1},
    }
    job = {
        "kind": "Job",
        "metadata": {"name": "j", **SERVER_META},
        "spec": {"queue": "q", "maxRetry": 3},
    }
    desired = {"kind": "Job", "metadata": {"name": "j"}, "spec": {"queue": "q"}}
    out = shaped({"before": job, "after": desired})
    assert out["before"] == out["after"] == desired


def test_a_secret_shows_that_a_value_changed_never_the_value():
    def secret(password: str) -> dict:
        return {"kind": "Secret", "metadata": {"name": "ufm"}, "stringData": {"password": password}}

    entry = object_diff("Secret/ufm", secret("hunter2"), secret("hunter3"))
    assert "hunter" not in str(entry) and changes(entry)
    assert entry["prepared"].startswith("Secret/ufm: stringData.password: (hidden, sha256 ")
    # a part of a Secret (no kind in it) is hidden when the caller says it is one
    part = object_diff("Secret/ufm", {"data": {"k": "YQ=="}}, {"data": {"k": "Yg=="}}, secret=True)
    assert "YQ==" not in str(part) and "Yg==" not in str(part)


def test_diffs_already_in_entries_pass_through():
    entries = [{"before": "a", "after": "b"}]
    assert shaped(entries) is entries and shaped(entries, by_object=True) is entries


def test_ansible_prints_a_one_line_entry_as_it_is():
    from ansible.plugins.callback import CallbackBase

    text = CallbackBase()._get_diff([object_diff("Node/gpu-node-7", node("tor-3"), node("tor-2"))])
    assert text == "Node/gpu-node-7: label topology.volcano.sh/tor: tor-3 → tor-2\n"
