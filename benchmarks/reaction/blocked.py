# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The blocked paying job: a subscription job submitted while spot jobs hold every GPU,
done when it is Running (``paying_job_blocked`` -> ``spot_recompute.yml`` deletes the
cheapest spot jobs that hold sold GPUs, and Volcano places the job).

The stage is what a stale spot capability leaves behind, as in
``tests/integration/test_event_driven.py``: the spot tenant's queue offered the whole
pool, and spot jobs filling every GPU but the 4 an owner's first job holds. The owner's
second job (4 GPUs of its subscription) is the change. The jobs are the platform's own
(``jobs/manifest.build_job``, what ``vcjob`` submits); kwok runs no container, so a pod is
Running without a process, which is all the scheduler and the reconcile look at."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    JOB_API,
    QUEUE_TYPE_SPOT,
    QUEUE_TYPE_SUBSCRIPTION,
    namespace_name,
    queue_name,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.manifest import build_job
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.request import JobRequest

from .changes import Change
from .pool import GPU, VOLCANO

KIND = "blocked paying job"
VCJOBS = (*JOB_API.split("/"), "jobs")
IMAGE = "bench.invalid/job:1"  # kwok runs no container
NODE_GPUS = 8


def job(name: str, tenant: str, queue_type: str, gpus: int, price: str | None = None) -> dict:
    """A one-pod job of ``gpus`` GPUs, as ``vcjob`` builds it."""
    return build_job(
        JobRequest(
            name=name,
            tenant=tenant,
            queue=queue_name(tenant, queue_type),
            queue_type=queue_type,
            kind="single",
            job_class="spot" if queue_type == QUEUE_TYPE_SPOT else "normal",
            image=IMAGE,
            command=["sleep", "infinity"],
            gpus_per_pod=gpus,
            cpu="1",
            memory="1Gi",
            spot_price=price,
        )
    )


def phase(custom: Any, namespace: str, name: str) -> str | None:
    from kubernetes.client.rest import ApiException

    try:
        live = custom.get_namespaced_custom_object(VCJOBS[0], VCJOBS[1], namespace, VCJOBS[2], name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return ((live.get("status") or {}).get("state") or {}).get("phase")


def gpus_in_use(core: Any, namespaces: tuple[str, ...]) -> int:
    """The GPUs the pods of ``namespaces`` request, while they exist."""
    total = 0
    for ns in namespaces:
        for pod in core.list_namespaced_pod(ns).items:
            for container in pod.spec.containers:
                total += int(((container.resources.requests or {}).get(GPU)) or 0)
    return total


class Stage:
    """The two tenants and the pool a blocked-job change is staged on."""

    def __init__(self, core: Any, custom: Any, owner: str, spot_tenant: str, pool: int):
        if pool % NODE_GPUS or pool < 4 * NODE_GPUS:
            raise SystemExit(f"the blocked job needs a pool of 8-GPU nodes, at least 32; {pool}")
        self.core, self.custom = core, custom
        self.owner, self.spot_tenant, self.pool = owner, spot_tenant, pool
        self.namespaces = (namespace_name(owner), namespace_name(spot_tenant))
        self.spot_queue = queue_name(spot_tenant, QUEUE_TYPE_SPOT)
        self.made: list[tuple[str, str]] = []

    def submit(self, body: dict) -> tuple[str, str]:
        meta = body["metadata"]
        self.custom.create_namespaced_custom_object(
            VCJOBS[0], VCJOBS[1], meta["namespace"], VCJOBS[2], body
        )
        self.made.append((meta["namespace"], meta["name"]))
        return meta["namespace"], meta["name"]

    def running(self, jobs: list[tuple[str, str]], timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while any(phase(self.custom, ns, name) != "Running" for ns, name in jobs):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the stage's jobs are not Running after {timeout:.0f} s")
            time.sleep(0.5)

    def fill(self, tag: str) -> None:
        """Spot offered the whole pool; spot jobs on every GPU but the owner's 4."""
        cap = {"spec": {"capability": {GPU: self.pool, "cpu": "1000", "memory": "4Ti"}}}
        self.custom.patch_cluster_custom_object(*VOLCANO, self.spot_queue, cap)
        spot, owner = self.spot_tenant, self.owner
        # Whole nodes first, so the 4-GPU jobs cannot scatter over the nodes they need.
        fills = [
            self.submit(job(f"spot-fill{i}-{tag}", spot, QUEUE_TYPE_SPOT, NODE_GPUS, "0.9"))
            for i in range(self.pool // NODE_GPUS - 2)
        ]
        self.running(fills)
        rest = [self.submit(job(f"own-1-{tag}", owner, QUEUE_TYPE_SUBSCRIPTION, 4))]
        rest.append(self.submit(job(f"spot-cheap-{tag}", spot, QUEUE_TYPE_SPOT, 4, "0.1")))
        for i in range(2):
            rest.append(self.submit(job(f"spot-mid{i}-{tag}", spot, QUEUE_TYPE_SPOT, 4, "0.2")))
        self.running(rest)

    def clear(self, timeout: float = 120) -> None:
        """Delete the stage's jobs and wait until their pods are gone."""
        from kubernetes.client.rest import ApiException

        for ns, name in self.made:
            try:
                self.custom.delete_namespaced_custom_object(
                    VCJOBS[0], VCJOBS[1], ns, VCJOBS[2], name, propagation_policy="Foreground"
                )
            except ApiException as exc:
                if exc.status != 404:
                    raise
        self.made.clear()
        deadline = time.monotonic() + timeout
        while gpus_in_use(self.core, self.namespaces):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the stage's pods are still there after {timeout:.0f} s")
            time.sleep(0.5)


def blocked_changes(stage: Stage, count: int) -> Iterator[Change]:
    """``count`` changes: each a fresh stage and the owner's second job."""
    for _i in range(count):
        tag = uuid.uuid4().hex[:5]
        name = f"own-2-{tag}"
        ns = namespace_name(stage.owner)
        yield Change(
            KIND,
            make=lambda n=name: stage.submit(job(n, stage.owner, QUEUE_TYPE_SUBSCRIPTION, 4)),
            done=lambda n=name, ns=ns: phase(stage.custom, ns, n) == "Running",
            prepare=lambda t=tag: stage.fill(t),
            cleanup=stage.clear,
        )
