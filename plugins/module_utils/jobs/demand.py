# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule job-demand: how much a pod and a Volcano Job ask for.

One rule for every caller (spot reclaim, pay-as-you-go resizing, the large-job
throttle and the job builders), so the same job never counts differently:

* a container asks for its ``requests``, else its ``limits`` (Kubernetes
  defaults a missing request to the limit);
* a pod asks for the sum over its containers, or the largest single init
  container where that is more (init containers run one at a time, before the
  others);
* a Volcano Job asks for, per task, ``replicas`` x one pod. A task without
  ``replicas`` counts ``DEFAULT_REPLICAS`` = 0 pods: that is what Volcano's
  job controller creates for it (the field is a plain ``int32``).

A quantity that is not a quantity is refused with the object's path: counting
it as 0 would make a job look smaller than the scheduler sees it.

Whether a job fits its queue, its nodes and its PVCs is rule job-never-runs
(``jobs/feasibility``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, DecimalException
from typing import Any

from ..common.errors import FieldError, PlatformValidationError
from ..common.quantity import CPU, GPU, MEMORY, Resources, parse

# The resources the pool, the queues and the reclaim count.
DEMAND_RESOURCES = (GPU, CPU, MEMORY)
DEFAULT_REPLICAS = 0


def _zero() -> Resources:
    return {name: Decimal(0) for name in DEMAND_RESOURCES}


def container_demand(container: Mapping[str, Any], path: str) -> Resources:
    """One container: requests, else limits, per demand resource."""
    res = container.get("resources") or {}
    requests = res.get("requests") or {}
    limits = res.get("limits") or {}
    out = _zero()
    for name in DEMAND_RESOURCES:
        raw = requests[name] if name in requests else limits.get(name)
        if raw is not None:
            out[name] = parse(raw, f"{path}.resources.{name}")
    return out


def pod_demand(pod_spec: Mapping[str, Any], path: str = "spec") -> Resources:
    """Rule job-demand for one pod: containers summed, at least the largest init container."""
    total = _zero()
    for i, container in enumerate(pod_spec.get("containers") or []):
        part = container_demand(container, f"{path}.containers[{i}]")
        for name in DEMAND_RESOURCES:
            total[name] += part[name]
    for i, container in enumerate(pod_spec.get("initContainers") or []):
        part = container_demand(container, f"{path}.initContainers[{i}]")
        for name in DEMAND_RESOURCES:
            total[name] = max(total[name], part[name])
    return total


def replicas_of(task: Mapping[str, Any]) -> int:
    """A task's replicas; missing (or not an integer) counts DEFAULT_REPLICAS."""
    value = task.get("replicas", DEFAULT_REPLICAS)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return DEFAULT_REPLICAS
    return value


@dataclass(frozen=True)
class JobDemand:
    """What a Volcano Job asks for when all its pods run."""

    pods: int = 0
    resources: Resources = field(default_factory=_zero)

    @property
    def gpus(self) -> int:
        return int(self.resources[GPU])


def job_demand(job: Mapping[str, Any]) -> JobDemand:
    """Rule job-demand for a Volcano Job (a manifest or a live object)."""
    name = (job.get("metadata") or {}).get("name", "")
    pods = 0
    total = _zero()
    for t, task in enumerate((job.get("spec") or {}).get("tasks") or []):
        replicas = replicas_of(task)
        spec = (task.get("template") or {}).get("spec") or {}
        one = pod_demand(spec, f"{name}.spec.tasks[{t}].template.spec")
        pods += replicas
        try:
            for resource in DEMAND_RESOURCES:
                total[resource] += one[resource] * replicas
        except DecimalException:
            # Only a count no int32 holds, times a huge quantity, gets here: refused,
            # not counted as something else.
            raise PlatformValidationError(
                [
                    FieldError(
                        f"{name}.spec.tasks[{t}]",
                        "replicas times the pod's requests is more than can be counted"
                        " (replicas is an int32)",
                    )
                ]
            ) from None
    return JobDemand(pods=pods, resources=total)
