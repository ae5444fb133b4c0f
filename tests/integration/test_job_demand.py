# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule job-demand against what Volcano's job controller really creates: a task
without ``replicas`` gets no pod, so the rule counts it as 0 pods."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import JOB_API
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.demand import job_demand
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    wait_until,
)

pytestmark = pytest.mark.integration


def task(name: str, cpu: str, replicas: int | None) -> dict:
    out = {
        "name": name,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
                ],
            }
        },
    }
    if replicas is not None:
        out["replicas"] = replicas
    return out


def test_a_task_without_replicas_gets_no_pod(api_client, namespace):
    from kubernetes import client, dynamic

    job = {
        "apiVersion": JOB_API,
        "kind": "Job",
        "metadata": {"name": "demand", "namespace": namespace},
        "spec": {
            "schedulerName": "volcano",
            "queue": "default",
            "minAvailable": 2,
            "tasks": [task("two", "1", 2), task("none", "3", None)],
        },
    }
    jobs = dynamic.DynamicClient(api_client).resources.get(api_version=JOB_API, kind="Job")
    jobs.create(body=job, namespace=namespace)
    core = client.CoreV1Api(api_client)

    def running_pods():
        pods = core.list_namespaced_pod(namespace).items
        return pods if pods and all(p.status.phase == "Running" for p in pods) else None

    pods = wait_until(running_pods, 120, 1, "the job's pods to run")
    live = jobs.get(name="demand", namespace=namespace).to_dict()
    demand = job_demand(live)
    assert "replicas" not in live["spec"]["tasks"][1]  # Volcano does not default it
    assert sorted(p.metadata.name for p in pods) == ["demand-two-0", "demand-two-1"]
    assert demand.pods == len(pods) == 2
    assert demand.resources["cpu"] == 2  # the task without replicas adds nothing
