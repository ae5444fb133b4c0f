# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules checkpoint-of-object, checkpoint-retention and checkpoint-buckets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.objectstore import (
    retention,
    retention_plan,
    summary,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.objectstore.connection import (
    StoreConnection,
)

T0 = datetime(2026, 12, 1, tzinfo=UTC)
STORE = StoreConnection("http://s3", "http://s3-admin", "root", "x")


def obj(key: str, minute: int, size: int = 1) -> dict:
    return {"Key": key, "LastModified": T0 + timedelta(minutes=minute), "Size": size}


def test_a_key_belongs_to_its_job_and_checkpoint():
    assert retention.checkpoint_of("llama/step-5.pt") == ("llama", "step-5.pt")
    assert retention.checkpoint_of("llama/step-5/shard-0") == ("llama", "step-5")
    assert retention.checkpoint_of("loose.pt") == ("", "loose.pt")


def test_a_checkpoint_of_many_objects_is_as_new_as_its_newest():
    found = retention.checkpoints(
        [obj("j/a/0", 1), obj("j/a/1", 9), obj("j/b/0", 5), obj("j/c.pt", 7)]
    )
    gone = retention.expired(found, 2)
    assert [c.where for c in gone] == ["j/b"]
    assert next(c for c in found if c.name == "a").keys == ("j/a/0", "j/a/1")


@given(
    st.dictionaries(
        st.sampled_from(["j1", "j2", "j3"]),
        st.lists(st.integers(0, 10_000), min_size=0, max_size=8, unique=True),
    ),
    st.integers(1, 5),
)
def test_each_job_keeps_its_newest_keep(jobs, keep):
    objects = [obj(f"{job}/ck-{m}", m) for job, minutes in jobs.items() for m in minutes]
    found = retention.checkpoints(objects)
    gone = {c.where for c in retention.expired(found, keep)}
    for job, minutes in jobs.items():
        kept = sorted(m for m in minutes if f"{job}/ck-{m}" not in gone)
        assert kept == sorted(minutes)[-keep:] if minutes else kept == []


@pytest.mark.parametrize("keep", [0, -1, True, "2"])
def test_keep_is_at_least_one(keep):
    with pytest.raises(PlatformValidationError, match="at least 1"):
        retention_plan.parse_retention({"keep": keep})


def test_only_the_tenants_own_checkpoint_buckets_are_swept():
    owners = {
        "tenant-a-checkpoints": "tenant-a",
        "tenant-b-checkpoints": "mallory",  # not b's: left alone
        "tenant-c-models": "tenant-c",
        "scratch": "root",
    }
    request = retention_plan.parse_retention({})
    assert retention_plan.checkpoint_buckets(request, owners) == {"tenant-a-checkpoints": "a"}
    only_c = retention_plan.parse_retention({"tenant": "c"})
    assert retention_plan.checkpoint_buckets(only_c, owners) == {}
    facts = retention_plan.RetentionFacts(connection=STORE)
    with pytest.raises(PlatformValidationError, match="has no checkpoint bucket of its own"):
        retention_plan.plan_retention(only_c, facts)


def test_the_plan_reports_what_goes_and_the_summary_says_it():
    request = retention_plan.parse_retention({"keep": 1, "job": "j"})
    facts = retention_plan.RetentionFacts(
        connection=STORE,
        buckets={"tenant-a-checkpoints": "a"},
        objects={"tenant-a-checkpoints": [obj("j/1", 1, 10), obj("j/2", 2, 20), obj("k/1", 0)]},
    )
    planned = retention_plan.plan_retention(request, facts)
    report = retention_plan.report_retention(request, planned)
    assert report["buckets"] == [
        {
            "bucket": "tenant-a-checkpoints",
            "tenant": "a",
            "checkpoints": 2,  # job k is not this run's
            "kept": 1,
            "deleted": ["j/1"],
            "objects_deleted": 1,
            "bytes_freed": 10,
        }
    ]
    lines = summary.retention_summary({}, report, True)
    assert lines == [
        "tenant-a-checkpoints (tenant a): 2 checkpoint(s), the newest 1 of each job kept; would "
        "delete 1 (1 object(s), 10 bytes): j/1"
    ]
    with pytest.raises(PlatformValidationError, match="job"):
        retention_plan.parse_retention({"job": "a/b"})
