# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``burst_quota`` through the flow contract: its plan as a table of cases over
facts (no cluster), and ``parsed`` of ``gathered`` as the check-mode run."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import burst, quota
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.service import BURST_FLOW
from ansible_collections.gpucloud.platform.plugins.modules import burst_quota
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.flow_checks import (
    assert_parsed_is_the_check_run,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.hybrid.test_burst_quota import (
    BURST_LABELS,
    params,
    queue,
    tenant_objects,
)

PAYG = tenant_objects()[1]
LIST = tenant_objects()[2]


def leaf(gpus, allocated=None):
    """The leaf as the module writes it, holding ``allocated`` GPUs."""
    out = burst.burst_leaf("alpha", gpus, "cloud-burst")
    if allocated is not None:
        out["status"] = {"allocated": {"nvidia.com/gpu": str(allocated)}}
    return out


def job(name, queue_name="tenant-alpha-burst", phase="Running"):
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "tenant-alpha"},
        "spec": {"queue": queue_name},
        "status": {"state": {"phase": phase}},
    }


CLOUD = queue("cloud-burst", BURST_LABELS, 16)


def facts(queues=(PAYG,), jobs=None, parent=(CLOUD,), cm=(LIST,)):
    return quota.BurstFacts(tuple(queues), jobs, parent, cm)


# (case, options, facts, the writes planned or the refusal's type and words)
CASES = [
    (
        "a new leaf and its list entry",
        {},
        facts(),
        ["Queue/tenant-alpha-burst", "ConfigMap/platform-queues"],
    ),
    (
        "in step",
        {},
        facts(queues=(PAYG, leaf(8)), cm=({**LIST, "data": {"tenant-alpha-burst": "payg"}},)),
        [],
    ),
    (
        "resized",
        {"gpus": 12},
        facts(queues=(PAYG, leaf(8)), cm=({**LIST, "data": {"tenant-alpha-burst": "payg"}},)),
        ["Queue/tenant-alpha-burst"],
    ),
    ("no tenant", {}, facts(queues=()), (PlatformValidationError, "is not a tenant")),
    ("no burst queue", {}, facts(parent=()), (Refused, "does not exist")),
    ("above the cloud", {"gpus": 20}, facts(), (PlatformValidationError, "rule burst-quota")),
    (
        "root as the parent",
        {"burst_queue": "root"},
        facts(),
        (PlatformValidationError, "Volcano's own"),
    ),
    (
        "below what it holds",
        {"gpus": 2},
        facts(queues=(PAYG, leaf(8, 4))),
        (Refused, "below the 4"),
    ),
    (
        "below what it holds, forced",
        {"gpus": 2, "force": True},
        facts(queues=(PAYG, leaf(8, 4))),
        ["Queue/tenant-alpha-burst", "ConfigMap/platform-queues"],
    ),
    (
        "removed",
        {"state": "absent"},
        facts(queues=(PAYG, leaf(8)), jobs=(job("done", phase="Completed"),)),
        ["ConfigMap/tenant-alpha/platform-queues", "Queue/tenant-alpha-burst"],
    ),
    (
        "removed with a job",
        {"state": "absent"},
        facts(queues=(PAYG, leaf(8)), jobs=(job("train"),)),
        (Refused, "holds jobs train"),
    ),
    ("removed, not there", {"state": "absent"}, facts(), None),
]


@pytest.mark.parametrize(
    "options,given,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_plan_over_facts(options, given, expected):
    request = quota.parse_burst(params(**options))
    if isinstance(expected, tuple):
        kind, words = expected
        with pytest.raises(kind, match=words):
            quota.plan(request, given)
        return
    said = quota.report(request, quota.plan(request, given))
    assert said.get("writes") == expected and said["changed"] is bool(expected)


def test_the_request_is_refused_before_anything_is_read():
    with pytest.raises(PlatformValidationError, match="gpus: is required with state: parsed"):
        quota.parse_burst(params(gpus=None, state="parsed"))


CLUSTERS = {
    "new": tenant_objects(),
    "in step": [*tenant_objects(), leaf(16)],
    "holding more": [*tenant_objects(), leaf(16, 12)],
    "no tenant": tenant_objects()[:1],
    "no burst queue": tenant_objects()[1:],
    "a small cloud": tenant_objects(cloud_gpus=4),
    "no queue list": tenant_objects()[:2],
}


@pytest.mark.parametrize(
    "given", [{}, {"gpus": 4}, {"gpus": 8, "force": True}, {"burst_queue": "default"}]
)
@pytest.mark.parametrize("name", sorted(CLUSTERS))
def test_parsed_of_gathered_is_the_check_mode_run(name, given):
    objects = CLUSTERS[name]
    gathered = BURST_FLOW.run(
        params(state="gathered", **given), FakeCluster(copy.deepcopy(objects)), False
    )["gathered"]
    assert_parsed_is_the_check_run(
        BURST_FLOW,
        lambda: BURST_FLOW.run(
            params(**given), FakeCluster(copy.deepcopy(objects), dry_run=True), True
        ),
        params(state="parsed", facts=gathered, **given),
    )


def test_gathered_reads_as_a_run_does(run_module):
    cluster = FakeCluster([*tenant_objects(), leaf(16)])
    run = run_module(
        burst_quota, FakeCluster([*tenant_objects(), leaf(16)]), tenant="alpha", gpus=8
    )
    out = run_module(burst_quota, cluster, tenant="alpha", gpus=8, state="gathered")
    # One list and two GETs, as the run makes before its writes.
    assert out["changed"] is False and out["requests"] == 3 == run["requests"] - len(run["writes"])
    assert sorted(out["gathered"]) == ["burst_queue", "queue_list", "queues"]
    assert cluster.writes == []


def test_the_module_plans_offline(run_module):
    cluster = FakeCluster([])
    facts_given = {"queues": [PAYG], "burst_queue": [queue("cloud-burst", BURST_LABELS, 16)]}
    out = run_module(
        burst_quota, cluster, tenant="alpha", gpus=8, state="parsed", facts=facts_given
    )
    assert out["requests"] == 0 and cluster.requests == 0 and out["changed"] is False
    assert out["state"] == "parsed"
    assert out["writes"] == ["Queue/tenant-alpha-burst", "ConfigMap/platform-queues"]
