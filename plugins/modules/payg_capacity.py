#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    JOB_API,
    QUEUE_API,
)

DOCUMENTATION = r"""
module: payg_capacity
short_description: Grow a tenant's pay-as-you-go queue before use and shrink it after release
description:
  - Sets the capability of a tenant's pay-as-you-go Queue (C(tenant-<tenant>-payg)) and keeps its deserved equal to it,
    so what the tenant runs there is never reclaimed by other tenants.
  - "Never below what the queue uses: the larger, per resource, of its C(status.allocated) and what its unfinished
    Volcano Jobs ask for. A O(capability) below that is refused before any change."
  - "Growing is checked against the pool first (oversell guard: all subscriptions plus all pay-as-you-go grants must
    fit in the pool). When fewer GPUs are free (pool - allocated) than the growth, spot jobs are reclaimed first, by the
    same rules and the same code as M(gpucloud.platform.spot_reclaim) (Lease, Events, history)."
  - With O(fit_to_use=true) the queue (or, without O(tenant), every tenant's pay-as-you-go queue) shrinks to what it uses;
    it never grows. Safe to run every minute.
  - One list call for Queues and one for Volcano Jobs; Nodes and Pods are read only when a queue grows. Writes only the
    queues whose value changes, with a server-side apply of just C(spec.capability) and C(spec.deserved) under the field
    manager C(gpucloud-platform-capacity).
version_added: 0.1.0
author:
  - gpucloud platform team (@gpucloud)
requirements:
  - kubernetes >= 24.2.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
options:
  tenant:
    description: The tenant. Required with O(capability); without it O(fit_to_use=true) acts on every tenant.
    type: str
  capability:
    description:
      - "The pay-as-you-go queue's new capability (= deserved), a map of resource name to quantity of
        C(nvidia.com/gpu), C(cpu) and C(memory), for example C({nvidia.com/gpu: 16, cpu: 128, memory: 1Ti})."
      - Resources not named keep their live value.
    type: dict
  fit_to_use:
    description: Shrink the queue(s) to what they use now instead of setting O(capability).
    type: bool
    default: false
  node_selector:
    description: Node labels (name to value) a node must carry to count in the pool. Empty means every Ready, schedulable node.
    type: dict
    default: {}
  reclaim:
    description: When a growth finds too few free GPUs, reclaim spot jobs first. When false such a growth fails.
    type: bool
    default: true
  demand_reason:
    description: What the growth is for, written into the reclaim Events and history. Defaults to the tenant and the growth.
    type: str
  history_size:
    description: How many reclaims the history ConfigMap keeps (newest first).
    type: int
    default: 100
  lease_duration:
    description: Seconds the reclaim Lease is valid.
    type: int
    default: 60
  holder_identity:
    description: The name a reclaim holds the Lease under. Defaults to the controller's host name and process id.
    type: str
  wait:
    description: After a reclaim, wait until the growth's GPUs are actually free.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait with O(wait=true) before failing.
    type: int
    default: 300
notes:
  - Supports check mode (writes are sent as server-side dry runs; a reclaim only reports its victims) and diff mode.
seealso:
  - module: gpucloud.platform.spot_reclaim
  - module: gpucloud.platform.spot_capacity
"""

EXAMPLES = r"""
- name: Grow tenant alpha's pay-as-you-go queue to 16 GPUs before submitting
  gpucloud.platform.payg_capacity:
    tenant: alpha
    capability:
      nvidia.com/gpu: 16
      cpu: "128"
      memory: 1Ti
    demand_reason: pay-as-you-go job train-42 of tenant alpha
    wait: true

- name: Shrink every pay-as-you-go queue to what it uses
  gpucloud.platform.payg_capacity:
    fit_to_use: true
"""

RETURN = r"""
queues:
  description: One row per pay-as-you-go queue the run looked at, with the granted capacity before and after.
  returned: always
  type: list
  elements: dict
  sample:
    - {tenant: alpha, queue: tenant-alpha-payg, old: {nvidia.com/gpu: 8}, in_use: {nvidia.com/gpu: 4},
       new: {nvidia.com/gpu: 16}, growth: 8, changed: true}
updated:
  description: Queues whose capability was changed (in check mode, would be).
  returned: always
  type: list
  elements: str
reclaim:
  description: The spot reclaim the growth needed (same fields as M(gpucloud.platform.spot_reclaim) returns), or null.
  returned: always
  type: dict
requests:
  description: API requests the run made.
  returned: always
  type: int
diff:
  description: The changed queues' capability and deserved before and after, by queue name.
  returned: when diff mode is on
  type: dict
"""

import os
import socket

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.payg import (
    parse_target,
    payg_queue_spec,
    plan_payg,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.pool import (
    check_oversell,
    commitments_from_queues,
    committed_total,
    selector_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    FieldError,
    PartialWrite,
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    CAPACITY_FIELD_MANAGER,
    queue_name,
    tenant_name_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.objects import differs
from ansible_collections.gpucloud.platform.plugins.module_utils.common.quantity import GPU, render
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import (
    ApiException,
    Cluster,
    api_error_message,
    argument_spec,
    platform_module,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import failure
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.service import (
    ReclaimError,
    ReclaimRequest,
    read_pool,
    read_queues,
    reclaim,
    validate_request,
    wait_until_free,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.victims import reclaim_need


def input_errors(params: dict) -> tuple[list[FieldError], dict | None]:
    errors: list[FieldError] = []
    if params["tenant"] is not None:
        errors.extend(tenant_name_errors(params["tenant"], "tenant"))
    requested = None
    if params["capability"] is not None:
        try:
            requested = parse_target(params["capability"])
        except PlatformValidationError as exc:
            errors.extend(exc.errors)
    errors.extend(selector_errors(params["node_selector"]))
    errors.extend(validate_request(params))
    return errors, requested


def main() -> None:
    module = platform_module(
        argument_spec=argument_spec(
            tenant=dict(type="str"),
            capability=dict(type="dict"),
            fit_to_use=dict(type="bool", default=False),
            node_selector=dict(type="dict", default={}),
            reclaim=dict(type="bool", default=True),
            demand_reason=dict(type="str"),
            history_size=dict(type="int", default=100),
            lease_duration=dict(type="int", default=60),
            holder_identity=dict(type="str"),
            wait=dict(type="bool", default=False),
            wait_timeout=dict(type="int", default=300),
        ),
        mutually_exclusive=[("capability", "fit_to_use")],
        required_by={"capability": ("tenant",)},
        supports_check_mode=True,
    )
    p = module.params
    if p["capability"] is None and not p["fit_to_use"]:
        module.fail_json(
            msg="capability: give the new capability (with tenant), or set fit_to_use: true"
        )
    early, requested = input_errors(p)
    if early:
        err = PlatformValidationError(early)
        module.fail_json(msg=str(err), errors=err.messages)
    selector = p["node_selector"] or {}

    cluster = Cluster.from_module(module)
    try:
        queues = read_queues(cluster)
        jobs = cluster.list(JOB_API, "Job")
    except ApiException as exc:
        module.fail_json(msg=f"reading Queues and Volcano Jobs failed: {api_error_message(exc)}")
    try:
        commitments = commitments_from_queues(queues)
        rows = plan_payg(commitments, jobs, p["tenant"], requested)
    except PlatformValidationError as exc:
        module.fail_json(msg=str(exc), errors=exc.messages, requests=cluster.requests)

    live_specs = {q["metadata"]["name"]: q.get("spec") or {} for q in queues}
    table, changes, before, after = [], [], {}, {}
    for row in rows:
        desired = payg_queue_spec(row["target"])
        live_spec = live_specs.get(row["queue"]) or {}
        changed = differs(desired, {k: live_spec.get(k) for k in desired})
        table.append(
            {
                "tenant": row["tenant"],
                "queue": row["queue"],
                "old": dict(render(row["live"])),
                "in_use": dict(render(row["in_use"])),
                "new": dict(render(row["target"])),
                "growth": row["growth"],
                "changed": changed,
            }
        )
        if changed:
            changes.append((row, desired))
            before[row["queue"]] = {k: live_spec.get(k) for k in desired}
            after[row["queue"]] = desired

    reclaimed = None
    growth = sum(row["growth"] for row, _unused in changes)
    growing = [
        row
        for row, _unused in changes
        if any(row["target"].get(r, 0) > row["live"].get(r, 0) for r in row["target"])
    ]
    try:
        if growing:
            state = read_pool(cluster, selector)
            for row in growing:
                grown = {r: v for r, v in row["target"].items() if v > row["live"].get(r, 0)}
                check_oversell(
                    "capability",
                    state.pool,
                    committed_total(commitments.values(), skip_payg_of=row["tenant"]),
                    grown,
                    what=f"the pay-as-you-go queue of tenant {row['tenant']!r}",
                )
            shortfall = reclaim_need(state.pool_gpus, state.allocated_gpus, growth)
            if shortfall and not p["reclaim"]:
                raise PlatformValidationError(
                    [
                        FieldError(
                            f"capability.{GPU}",
                            f"growing by {growth} GPUs needs {shortfall} more free GPUs than the {state.free_gpus} free "
                            f"of {state.pool_gpus}; set reclaim: true to reclaim spot jobs first",
                        )
                    ]
                )
            if shortfall:
                tenant = p["tenant"] or ", ".join(row["tenant"] for row in growing)
                request = ReclaimRequest(
                    demand=growth,
                    reason=p["demand_reason"]
                    or f"pay-as-you-go growth of tenant {tenant} by {growth} GPUs",
                    node_selector=selector,
                    allow_partial=False,
                    history_size=p["history_size"],
                    holder=p["holder_identity"] or f"{socket.gethostname()}-{os.getpid()}",
                    lease_duration=p["lease_duration"],
                )
                reclaimed = reclaim(cluster, request, module.check_mode)
                for warning in reclaimed.pop("warnings", []):
                    module.warn(warning)
    except PlatformValidationError as exc:
        module.fail_json(msg=str(exc), errors=exc.messages, queues=table, requests=cluster.requests)
    except ReclaimError as exc:
        module.fail_json(msg=str(exc), queues=table, reclaim=exc.result, requests=cluster.requests)
    except ApiException as exc:
        module.fail_json(msg=f"reclaiming spot GPUs failed: {api_error_message(exc)}", queues=table)

    done: list[str] = []
    try:
        for row, desired in changes:
            manifest = {
                "apiVersion": QUEUE_API,
                "kind": "Queue",
                "metadata": {"name": row["queue"] or queue_name(row["tenant"], "payg")},
                "spec": desired,
            }
            cluster.apply(manifest, field_manager=CAPACITY_FIELD_MANAGER)
            done.append(manifest["metadata"]["name"])
        if reclaimed and reclaimed.get("victims") and p["wait"] and not module.check_mode:
            reached, free_after = wait_until_free(cluster, selector, growth, p["wait_timeout"])
            reclaimed["waited"] = True
            reclaimed["free_after"] = free_after
            if not reached:
                module.fail_json(
                    msg=f"{growth} GPUs were not free within {p['wait_timeout']} s after the reclaim: {free_after} free",
                    queues=table,
                    reclaim=reclaimed,
                    updated=done,
                    requests=cluster.requests,
                )
    except ApiException as exc:
        module.fail_json(
            requests=cluster.requests,
            **failure(
                PartialWrite(
                    "updating pay-as-you-go queues",
                    done,
                    exc,
                    queues=table,
                    reclaim=reclaimed,
                    updated=done,
                )
            ),
        )

    result = dict(
        changed=bool(changes) or bool(reclaimed and reclaimed.get("changed")),
        queues=table,
        updated=[row["queue"] for row, _unused in changes],
        reclaim=reclaimed,
        requests=cluster.requests,
    )
    if module._diff:
        result["diff"] = dict(before=before, after=after)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
