# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""spot.reclaim: what a reclaim asks for, checks and reports."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    ANNOTATION_SPOT_RECLAIMED,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.stop_counts import (
    count_patch,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim import (
    history_entry,
    lease_manifest,
    lease_takeover,
    raised_count,
    reclaim_diff,
    reclaim_input_errors,
    reclaim_option_errors,
    reclaim_request,
    reclaim_summary,
    reclaimed_jobs,
    reclaims_per_queue,
    validate_reclaim_input,
)
from ansible_collections.gpucloud.platform.plugins.modules import spot_reclaim
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import NOW

OPTIONS = {name: spec.get("default") for name, spec in spot_reclaim.OPTIONS.items()}
RESULT = {
    "demand": 16,
    "pool": 64,
    "allocated": 60,
    "free": 4,
    "shortfall": 12,
    "freed": 12,
    "victims": [{"namespace": "t", "name": "a", "gpus": 4}, {"namespace": "t", "name": "b"}],
    "history": [],
}


def test_option_errors_name_each_option_and_its_least_value():
    errors = reclaim_option_errors({"history_size": -1, "lease_duration": 0, "wait_timeout": -5})
    assert [str(e) for e in errors] == [
        "history_size: -1 is too small; 0 or more is accepted",
        "lease_duration: 0 is too small; 1 or more is accepted",
        "wait_timeout: -5 is too small; 0 or more is accepted",
    ]
    assert reclaim_option_errors({"history_size": 0, "lease_duration": 1}) == []


def test_input_errors_collect_every_problem():
    errors = reclaim_input_errors(
        OPTIONS | {"need": -1, "node_selector": {"a": 1}, "demand_reason": "", "history_size": -1}
    )
    assert [e.field for e in errors] == ["need", "node_selector.a", "history_size", "demand_reason"]
    assert reclaim_input_errors(OPTIONS | {"need": 0}) == []
    with pytest.raises(PlatformValidationError, match="need: -1 is negative"):
        validate_reclaim_input(OPTIONS | {"need": -1})


def test_request_takes_the_module_options():
    request = reclaim_request(
        OPTIONS | {"need": 3, "node_selector": {"pool": "main"}}, 3, "why", "host-1"
    )
    assert (request.demand, request.reason, request.holder) == (3, "why", "host-1")
    assert request.node_selector == {"pool": "main"} and request.allow_partial is False
    assert (request.history_size, request.lease_duration) == (100, 60)
    named = reclaim_request(OPTIONS | {"holder_identity": "me"}, 3, "why", "host-1", True)
    assert named.holder == "me" and named.allow_partial is True
    run = reclaim_request(OPTIONS | {"holder_identity": "me"}, 3, "why", "host-1", run_id="r1")
    assert run.holder == "me/r1"


def test_summary_history_and_diff_repeat_the_run():
    summary = reclaim_summary(RESULT, "order 7", NOW)
    assert summary["time"] == "2026-01-01T12:00:00Z" and summary["reason"] == "order 7"
    assert summary["victims"] == RESULT["victims"] and "history" not in summary
    entry = history_entry(RESULT, "order 7", "me", NOW)
    assert entry == {**summary, "holder": "me"}
    assert reclaim_diff(RESULT["victims"], {}) == {
        "before": {"t/a": "running", "t/b": "running"},
        "after": {"t/a": "deleted", "t/b": "deleted"},
    }
    counted = {"t-spot": {"before": 5, "after": 7}}
    assert reclaim_diff(RESULT["victims"], counted) == {
        "before": {
            "t/a": "running",
            "t/b": "running",
            "t-spot platform.io/spot-reclaimed-jobs": "5",
        },
        "after": {
            "t/a": "deleted",
            "t/b": "deleted",
            "t-spot platform.io/spot-reclaimed-jobs": "7",
        },
    }


def test_lease_takeover_is_guarded_and_counts_a_new_holder():
    live = lease_manifest("dead-run", 60, NOW - timedelta(minutes=5), transitions=2)
    live["metadata"]["resourceVersion"] = "41"
    taken = lease_takeover(live, "me", 30, NOW)
    assert taken["metadata"]["resourceVersion"] == "41"
    assert taken["spec"]["holderIdentity"] == "me" and taken["spec"]["leaseTransitions"] == 3
    assert taken["spec"]["leaseDurationSeconds"] == 30
    again = lease_takeover(taken, "me", 30, NOW)
    assert again["spec"]["leaseTransitions"] == 3  # the same holder renews


# --- rule spot-reclaim-count ----------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "count"),
    [
        (None, 0),
        ("0", 0),
        ("7", 7),
        (" 12 ", 12),
        ("-1", 0),
        ("1.5", 0),
        ("many", 0),
        ("\u0663", 0),
        (7, 0),
    ],
)
def test_a_queue_s_reclaim_count_is_its_annotation_or_zero(written, count):
    annotations = {} if written is None else {"platform.io/spot-reclaimed-jobs": written}
    assert reclaimed_jobs({"metadata": {"annotations": annotations}}) == count


def test_the_count_patch_adds_to_the_version_read():
    queue = {
        "metadata": {
            "name": "tenant-a-spot",
            "resourceVersion": "41",
            "annotations": {"platform.io/spot-reclaimed-jobs": "5"},
        }
    }
    assert count_patch(queue, ANNOTATION_SPOT_RECLAIMED, 3) == {
        "metadata": {
            "resourceVersion": "41",
            "annotations": {"platform.io/spot-reclaimed-jobs": "8"},
        }
    }
    assert count_patch({"metadata": {}}, ANNOTATION_SPOT_RECLAIMED, 2)["metadata"][
        "annotations"
    ] == {"platform.io/spot-reclaimed-jobs": "2"}
    assert raised_count(queue, 3) == {"before": 5, "after": 8}


def test_reclaims_are_counted_per_queue_the_victims_come_from():
    victims = [
        {"name": "a", "queue": "q2"},
        {"name": "b", "queue": "q1"},
        {"name": "c", "queue": "q2"},
        {"name": "d"},  # no queue: nothing to count on
    ]
    assert reclaims_per_queue(victims) == {"q1": 1, "q2": 2}
    assert list(reclaims_per_queue(victims)) == ["q1", "q2"]
