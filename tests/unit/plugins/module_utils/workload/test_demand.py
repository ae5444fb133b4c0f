# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule job-demand: what a container, a pod and a Volcano Job ask for."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.quantity import (
    CPU,
    GPU,
    MEMORY,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.demand import (
    DEMAND_RESOURCES,
    job_demand,
    pod_demand,
)

# Whole numbers per resource keep the sums exact and the expectations obvious.
AMOUNTS = st.fixed_dictionaries({}, optional={r: st.integers(0, 64) for r in DEMAND_RESOURCES})
CONTAINERS = st.lists(
    st.fixed_dictionaries({}, optional={"requests": AMOUNTS, "limits": AMOUNTS}), max_size=4
)
PODS = st.fixed_dictionaries({"containers": CONTAINERS}, optional={"initContainers": CONTAINERS})
TASKS = st.lists(
    st.fixed_dictionaries({"pod": PODS}, optional={"replicas": st.integers(0, 16)}), max_size=4
)


def container(resources):
    return {"name": "c", "resources": dict(resources)}


def pod_spec(pod):
    spec = {"containers": [container(c) for c in pod["containers"]]}
    if "initContainers" in pod:
        spec["initContainers"] = [container(c) for c in pod["initContainers"]]
    return spec


def job(tasks):
    out = []
    for i, task in enumerate(tasks):
        row = {"name": f"t{i}", "template": {"spec": pod_spec(task["pod"])}}
        if "replicas" in task:
            row["replicas"] = task["replicas"]
        out.append(row)
    return {"metadata": {"name": "j"}, "spec": {"tasks": out}}


def asks(resources, name):
    """What one container asks for of ``name``: its request, else its limit, else 0."""
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    return Decimal(requests[name] if name in requests else limits.get(name, 0))


@given(pod=PODS)
def test_a_pod_asks_for_its_containers_and_at_least_its_largest_init_container(pod):
    demand = pod_demand(pod_spec(pod))
    for name in DEMAND_RESOURCES:
        together = sum((asks(c, name) for c in pod["containers"]), Decimal(0))
        one_at_a_time = [asks(c, name) for c in pod.get("initContainers", [])]
        assert demand[name] == max([together, *one_at_a_time])


@given(requests=AMOUNTS, limits=AMOUNTS)
def test_requests_win_over_limits(requests, limits):
    demand = pod_demand({"containers": [container({"requests": requests, "limits": limits})]})
    for name in DEMAND_RESOURCES:
        expected = requests.get(name, limits.get(name, 0))
        assert demand[name] == expected


@given(tasks=TASKS)
def test_a_job_asks_for_replicas_times_one_pod_per_task(tasks):
    demand = job_demand(job(tasks))
    assert demand.pods == sum(t.get("replicas", 0) for t in tasks)
    for name in DEMAND_RESOURCES:
        per_task = [t.get("replicas", 0) * pod_demand(pod_spec(t["pod"]))[name] for t in tasks]
        assert demand.resources[name] == sum(per_task, Decimal(0))
    assert demand.gpus == int(demand.resources[GPU])


@given(pod=PODS)
def test_a_task_without_replicas_counts_no_pods(pod):
    """Volcano's job controller creates no pod for a task whose replicas are unset."""
    demand = job_demand(job([{"pod": pod}]))
    assert demand.pods == 0
    assert all(demand.resources[name] == 0 for name in DEMAND_RESOURCES)


def test_quantities_in_their_units():
    spec = {
        "containers": [
            container({"requests": {CPU: "500m", MEMORY: "1Gi"}, "limits": {GPU: 2}}),
            container({"requests": {CPU: "1.5", MEMORY: "512Mi", GPU: "1"}}),
        ]
    }
    demand = pod_demand(spec)
    assert demand == {CPU: Decimal(2), MEMORY: Decimal(1536 * 2**20), GPU: Decimal(3)}


def test_an_empty_job_asks_for_nothing():
    demand = job_demand({"metadata": {"name": "j"}, "spec": {}})
    assert demand.pods == 0 and demand.gpus == 0


@pytest.mark.parametrize("bad", ["lots", "", True, "-1", [1]])
def test_a_bad_quantity_is_refused_naming_its_path(bad):
    tasks = [
        {"name": "ok", "replicas": 1, "template": {"spec": {"containers": [container({})]}}},
        {
            "name": "bad",
            "replicas": 2,
            "template": {
                "spec": {
                    "containers": [container({})],
                    "initContainers": [container({"limits": {CPU: bad}})],
                }
            },
        },
    ]
    with pytest.raises(PlatformValidationError) as info:
        job_demand({"metadata": {"name": "j"}, "spec": {"tasks": tasks}})
    [error] = info.value.errors
    assert error.field == "j.spec.tasks[1].template.spec.initContainers[0].resources.cpu"
