# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule arbiter-eviction-count: each Queue's count of the jobs the arbiter evicted from it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter.count import (
    counts_to_raise,
    evicted_jobs,
    evictions_per_queue,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    ANNOTATION_ARBITER_EVICTED,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.stop_counts import (
    count_patch,
)


def queue(name="tenant-a-algo", count=None, version="7"):
    meta = {"name": name, "resourceVersion": version}
    if count is not None:
        meta["annotations"] = {ANNOTATION_ARBITER_EVICTED: count}
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (None, 0),
        ("0", 0),
        ("12", 12),
        (" 3 ", 3),
        ("-1", 0),
        ("2.5", 0),
        ("x", 0),
        ("١٢", 0),
        (7, 0),
    ],
)
def test_a_count_that_is_not_a_whole_number_restarts_at_0(count, expected):
    assert evicted_jobs(queue(count=count)) == expected


def test_the_patch_raises_the_count_against_the_version_read():
    assert count_patch(queue(count="3"), ANNOTATION_ARBITER_EVICTED, 2) == {
        "metadata": {"resourceVersion": "7", "annotations": {ANNOTATION_ARBITER_EVICTED: "5"}}
    }


def test_victims_are_counted_per_queue_and_check_mode_reads_the_queues_given():
    victims = [{"queue": "q1"}, {"queue": "q2"}, {"queue": "q1"}, {"queue": ""}]
    assert evictions_per_queue(victims) == {"q1": 2, "q2": 1}
    # q2 was not read: it counts nothing
    assert counts_to_raise([queue("q1", "4")], victims) == {"q1": {"before": 4, "after": 6}}


@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=1, max_value=100))
def test_the_count_only_grows_by_the_jobs_evicted(before, jobs):
    patched = count_patch(queue(count=str(before)), ANNOTATION_ARBITER_EVICTED, jobs)
    after = patched["metadata"]["annotations"][ANNOTATION_ARBITER_EVICTED]
    assert evicted_jobs(queue(count=after)) == before + jobs
