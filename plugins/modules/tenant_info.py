#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    JOB_API,
    QUEUE_API,
)

DOCUMENTATION = r"""
module: tenant_info
short_description: Report tenants with their queues, quotas, allocation and running jobs
version_added: 0.1.0
author: gpucloud platform team (@gpucloud)
description:
  - Lists every tenant, or the one named by O(name), with each of its Volcano queues - type, team, parent,
    guarantee, deserved, capability and allocated per resource, queue state, and active Volcano Jobs.
  - Reads with one list call per kind (Namespaces, Queues, Volcano Jobs), however many tenants there are.
options:
  name:
    description:
      - Only this tenant. Default is every tenant (every object labelled C(platform.io/tenant)).
    type: str
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
requirements:
  - kubernetes >= 24.2.0
notes:
  - Supports check mode (it never writes).
"""

EXAMPLES = r"""
- name: Every tenant
  gpucloud.platform.tenant_info:
  register: tenants

- name: One tenant's GPUs in use
  gpucloud.platform.tenant_info:
    name: alpha
  register: alpha

- name: Show them
  ansible.builtin.debug:
    msg: "{{ alpha.tenants[0].queues | map(attribute='allocated') | list }}"
"""

RETURN = r"""
tenants:
  description: One entry per tenant, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Tenant name.
      type: str
    namespace:
      description: The tenant namespace, or null when it does not exist.
      type: str
    active_jobs:
      description: Volcano Jobs in the tenant namespace that have not finished.
      type: int
    queues:
      description: The tenant's queues, parents first.
      type: list
      elements: dict
      sample:
        - name: tenant-alpha-subscription
          type: subscription
          team: null
          parent: root
          state: Open
          guarantee: {}
          deserved: {nvidia.com/gpu: 40, cpu: "160", memory: 640Gi}
          capability: {nvidia.com/gpu: 40, cpu: "160", memory: 640Gi}
          allocated: {nvidia.com/gpu: 8, cpu: "32", memory: 128Gi, pods: 2}
          active_jobs: 0
api_requests:
  description: How many API requests the run made.
  returned: always
  type: int
"""

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.common import quantity
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    raise_if,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    LABEL_TENANT,
    ROOT_QUEUE,
    tenant_name_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube import cluster as kube
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.model import (
    Queue,
    allocated,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.service import (
    active_jobs,
)


def summarize(
    namespaces: Sequence[Mapping[str, Any]],
    queues: Sequence[Mapping[str, Any]],
    jobs: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Group listed objects by tenant label (pure; the module lists, this sums)."""
    tenants: dict[str, dict[str, Any]] = {}

    def entry(name: str) -> dict[str, Any]:
        return tenants.setdefault(
            name, {"name": name, "namespace": None, "active_jobs": 0, "queues": []}
        )

    ns_tenant: dict[str, str] = {}
    for ns in namespaces:
        meta = ns.get("metadata") or {}
        tenant = (meta.get("labels") or {}).get(LABEL_TENANT)
        if tenant:
            entry(tenant)["namespace"] = meta["name"]
            ns_tenant[meta["name"]] = tenant
    per_queue: dict[str, int] = {}
    for job in active_jobs(jobs):
        ns = (job.get("metadata") or {}).get("namespace")
        if ns in ns_tenant:
            entry(ns_tenant[ns])["active_jobs"] += 1
            q = (job.get("spec") or {}).get("queue")
            if q:
                per_queue[q] = per_queue.get(q, 0) + 1
    for manifest in queues:
        try:
            q = Queue.from_manifest(manifest)
        except PlatformValidationError:
            continue
        if not q.tenant:
            continue
        entry(q.tenant)["queues"].append(
            {
                "name": q.name,
                "type": q.queue_type,
                "team": q.team,
                "parent": q.parent,
                "state": (manifest.get("status") or {}).get("state"),
                "guarantee": quantity.render(q.guarantee),
                "deserved": quantity.render(q.deserved),
                "capability": quantity.render(q.capability),
                "allocated": quantity.render(allocated(manifest)),
                "active_jobs": per_queue.get(q.name, 0),
            }
        )
    for t in tenants.values():
        t["queues"].sort(key=lambda q: (q["parent"] != ROOT_QUEUE, q["name"]))
    return [tenants[k] for k in sorted(tenants)]


def run(params: Mapping[str, Any], cluster: kube.Cluster) -> dict[str, Any]:
    name = params.get("name")
    if name is not None:
        raise_if(tenant_name_errors(name, "name"))
    selector = f"{LABEL_TENANT}={name}" if name else LABEL_TENANT
    namespaces = cluster.list("v1", "Namespace", label_selector=selector)
    queues = cluster.list(QUEUE_API, "Queue", label_selector=selector)
    if name:
        jobs = cluster.list(JOB_API, "Job", namespace=f"tenant-{name}") if namespaces else []
    else:
        jobs = cluster.list(JOB_API, "Job")
    return {"changed": False, "tenants": summarize(namespaces, queues, jobs)}


def main() -> None:
    module = kube.platform_module(
        argument_spec=kube.argument_spec(name={"type": "str"}), supports_check_mode=True
    )
    cluster = kube.Cluster.from_module(module)
    try:
        result = run(module.params, cluster)
    except PlatformValidationError as exc:
        module.fail_json(msg=str(exc), errors=exc.messages)
    except kube.ApiException as exc:
        module.fail_json(msg=kube.api_error_message(exc), api_requests=cluster.requests)
    result["api_requests"] = cluster.requests
    module.exit_json(**result)


if __name__ == "__main__":
    main()
