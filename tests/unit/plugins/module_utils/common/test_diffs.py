# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule diff-per-object."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.common.diffs import per_object


def test_one_diff_per_object_sorted_with_its_name_as_header():
    diff = {
        "before": {"q-b": {"capability": {"gpu": 1}}, "q-gone": {"capability": {}}},
        "after": {"q-b": {"capability": {"gpu": 2}}, "q-a": {"capability": {"gpu": 4}}},
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
            "before": {"capability": {"gpu": 1}},
            "after": {"capability": {"gpu": 2}},
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

    diff = {"before": {"q-a": {"w": 1}}, "after": {"q-a": {"w": 2}, "q-b": {"w": 3}}}
    text = CallbackBase()._get_diff(per_object(diff))
    assert "--- before: q-a\n+++ after: q-a\n" in text
    assert '-    "w": 1\n+    "w": 2\n' in text
    assert "+++ after: q-b\n" in text and '+    "w": 3\n' in text
