# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``tenant_info`` through the flow contract: the report as a table of cases over
facts (no cluster, no fake), and ``parsed`` of ``gathered`` against the normal run on the
fake cluster."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants import info
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.service import INFO_FLOW
from ansible_collections.gpucloud.platform.plugins.modules import tenant_info
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster
from ansible_collections.gpucloud.platform.tests.unit.flow_checks import assert_parsed_is_the_run
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import queue

GPU = "nvidia.com/gpu"


def params(**given):
    return {n: s.get("default") for n, s in tenant_info.OPTIONS.items()} | given


def namespace(tenant):
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": f"tenant-{tenant}", "labels": {"platform.io/tenant": tenant}},
    }


def job(name, tenant, phase="Running", queue_type="spot"):
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": f"tenant-{tenant}"},
        "spec": {"queue": f"tenant-{tenant}-{queue_type}"},
        "status": {"state": {"phase": phase}},
    }


def open_queue(tenant, queue_type, gpus=4):
    obj = queue(tenant, queue_type, deserved={GPU: gpus}, allocated={GPU: str(gpus)})
    obj["status"]["state"] = "Open"
    return obj


AB = info.TenantInfoFacts(
    (namespace("a"), namespace("b")),
    (open_queue("a", "subscription"), open_queue("a", "spot"), open_queue("b", "spot")),
    (job("j1", "a"), job("j2", "a", "Completed"), job("j3", "b", "Pending"), job("x", "c")),
)

# (case, options, facts, {tenant: (namespace, active jobs, queues)})
CASES = [
    (
        "every tenant",
        {},
        AB,
        {"a": ("tenant-a", 1, 2), "b": ("tenant-b", 1, 1)},
    ),
    ("one tenant of facts that hold more", {"name": "b"}, AB, {"b": ("tenant-b", 1, 1)}),
    ("a tenant the facts do not hold", {"name": "c"}, AB, {}),
    (
        "queues without a namespace",
        {},
        info.TenantInfoFacts((), (open_queue("a", "spot"),), (job("j1", "a"),)),
        {"a": (None, 0, 1)},
    ),
    ("nothing", {}, info.TenantInfoFacts(), {}),
]


@pytest.mark.parametrize(
    "options,facts,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_report_over_facts(options, facts, expected):
    request = info.parse_info(params(**options))
    said = info.report_info(request, info.plan_info(request, facts))
    assert {
        t["name"]: (t["namespace"], t["active_jobs"], len(t["queues"])) for t in said["tenants"]
    } == expected


def test_a_bad_name_is_refused_before_any_read():
    with pytest.raises(PlatformValidationError, match="name"):
        info.parse_info(params(name="Bad_Name"))


def test_gathered_keeps_only_what_the_report_reads():
    data = info.facts_out(AB)
    assert data["jobs"][0] == {
        "metadata": {"name": "j1", "namespace": "tenant-a"},
        "spec": {"queue": "tenant-a-spot"},
        "status": {"state": {"phase": "Running"}},
    }
    assert data["queues"][0]["status"] == {"allocated": {GPU: "4"}, "state": "Open"}


TENANTS = ["a", "b", "c"]
PHASES = st.sampled_from(["Running", "Pending", "Completed", "Failed"])


@settings(max_examples=50, deadline=None)
@given(
    with_namespace=st.sets(st.sampled_from(TENANTS)),
    with_queues=st.sets(st.sampled_from(TENANTS)),
    jobs=st.lists(st.tuples(st.sampled_from(TENANTS), PHASES), max_size=6),
    name=st.sampled_from([None, *TENANTS, "nobody"]),
)
def test_parsed_of_gathered_is_the_normal_run(with_namespace, with_queues, jobs, name):
    objects = [namespace(t) for t in sorted(with_namespace)]
    objects += [
        open_queue(t, kind) for t in sorted(with_queues) for kind in ("subscription", "spot")
    ]
    objects += [job(f"j{i}", t, phase) for i, (t, phase) in enumerate(jobs)]
    cluster = FakeCluster(objects)
    gathered = INFO_FLOW.run(params(state="gathered", name=name), cluster, False)["gathered"]
    assert_parsed_is_the_run(
        INFO_FLOW,
        lambda: INFO_FLOW.run(params(name=name), FakeCluster(objects), False),
        params(state="parsed", facts=gathered, name=name),
    )
