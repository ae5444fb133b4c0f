# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.queues.model import (
    Queue,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.parent_list import (
    parent_queue_names,
    parse_queue_list,
    updated_queue_list,
)


def q(name, parent="root"):
    return Queue(name=name, parent=parent)


def test_parse_trims_and_drops_empty_entries_like_the_policy():
    assert parse_queue_list(" a, b,,c ,") == ["a", "b", "c"]
    assert parse_queue_list(None) == []
    assert parse_queue_list("") == []


def test_parents_are_queues_named_as_parent_by_another():
    queues = [q("t-sub"), q("t-algo", "t-sub"), q("t-payg")]
    assert parent_queue_names(queues) == {"t-sub"}
    assert parent_queue_names([q("t-sub"), q("t-payg")]) == set()


def test_adds_removes_and_keeps_other_names():
    assert updated_queue_list(None, ["a-sub"], ["a-sub"]) == "a-sub"
    assert updated_queue_list("z-sub", ["a-sub"], ["a-sub", "a-payg"]) == "a-sub,z-sub"
    assert updated_queue_list("a-sub,z-sub", [], ["a-sub", "a-payg"]) == "z-sub"
    assert updated_queue_list("a-sub,z-sub", [], ["a-sub"]) == "z-sub"


def test_no_write_when_already_right():
    assert updated_queue_list("z-sub, a-sub", ["a-sub"], ["a-sub"]) is None
    assert updated_queue_list("", [], ["a-sub"]) is None
    assert updated_queue_list(None, [], ["a-sub"]) is None


def test_a_duplicate_entry_is_cleaned_up():
    assert updated_queue_list("a-sub,a-sub", ["a-sub"], ["a-sub"]) == "a-sub"


names = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=6)


@given(names, names, names)
def test_rule_parent_queues_list(current, parents, owned):
    new = updated_queue_list(",".join(current), parents, owned)
    listed = parse_queue_list(new) if new is not None else current
    assert set(parents) <= set(listed)
    assert not (set(owned) - set(parents)) & set(listed)
    assert {n for n in current if n not in set(owned) | set(parents)} <= set(listed)
    # applying the result again changes nothing
    assert updated_queue_list(",".join(listed), parents, owned) is None
