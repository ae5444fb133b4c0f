#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: spot_reclaim
short_description: Free GPUs for a paying demand by deleting spot jobs, cheapest first
description:
  - "Given a demand of O(need) GPUs: free = pool - GPUs held by the unfinished pods on pool nodes now. If free >= O(need)
    nothing is touched. Otherwise O(need) - free GPUs are freed by deleting running spot Volcano Jobs."
  - "A job is a candidate only when it is in a spot queue (a managed Queue labelled C(platform.io/queue-type=spot)) and
    labelled C(platform.io/billing-type=spot); both must hold."
  - "Victim order: lowest C(platform.io/spot-price) annotation first (a missing price, or one that is not a number,
    counts as 0); at equal price single-pod jobs before multi-pod ones; then fewer GPUs first; then the most recently
    started first; then namespace and name. Deleting stops as soon as enough GPUs are freed, never more."
  - Holds the C(coordination.k8s.io/v1) Lease C(spot-reclaim) in C(platform-system) while it selects and deletes, so two
    runs never both delete; when another holder has it and it has not expired the module fails naming the holder.
  - Records a Kubernetes Event of reason C(SpotReclaimed) on every deleted job (price, GPUs and the demand that caused it)
    and adds the reclaim at the head of the ConfigMap C(spot-reclaim-history) in C(platform-system), keeping the newest
    O(history_size) entries.
  - In check mode it returns the victims it would delete and deletes nothing.
version_added: 0.1.0
author:
  - gpucloud platform team (@gpucloud)
requirements:
  - kubernetes >= 24.2.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
options:
  need:
    description: GPUs the demand needs free (0 or more).
    type: int
    required: true
  demand_reason:
    description: What the GPUs are for; written into the Events and the history (for example a purchase order).
    type: str
    default: an operator's request
  node_selector:
    description: Node labels (name to value) a node must carry to count in the pool. Empty means every Ready, schedulable node.
    type: dict
    default: {}
  allow_partial:
    description:
      - When the spot jobs together hold fewer GPUs than are missing, delete them all instead of failing.
      - Without it such a run fails before deleting anything.
    type: bool
    default: false
  history_size:
    description: How many reclaims the history ConfigMap keeps (newest first).
    type: int
    default: 100
  lease_duration:
    description: Seconds the Lease is valid; a run that dies holding it blocks others for at most this long.
    type: int
    default: 60
  holder_identity:
    description: The name this run holds the Lease under. Defaults to the controller's host name and process id.
    type: str
  wait:
    description: After deleting, wait until O(need) GPUs are actually free (the deleted jobs' pods are gone).
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait with O(wait=true) before failing.
    type: int
    default: 300
notes:
  - Supports check mode (nothing is deleted; the victims are returned) and diff mode.
  - Pass RV(reclaim) to M(ansible.builtin.set_stats) to show the reclaim in AWX.
seealso:
  - module: gpucloud.platform.spot_capacity
  - module: gpucloud.platform.payg_capacity
"""

EXAMPLES = r"""
- name: Free 20 GPUs for a new subscription
  gpucloud.platform.spot_reclaim:
    need: 20
    demand_reason: subscription order 4711 of tenant gamma
    wait: true
  register: reclaimed

- name: Show the reclaim in AWX
  ansible.builtin.set_stats:
    data:
      spot_reclaim: "{{ reclaimed.reclaim }}"

- name: Which jobs would go (nothing is deleted)
  gpucloud.platform.spot_reclaim:
    need: 12
  check_mode: true
  register: preview
"""

RETURN = r"""
demand:
  description: The GPUs asked for (O(need)).
  returned: always
  type: int
pool:
  description: GPUs in the pool.
  returned: always
  type: int
allocated:
  description: GPUs held by unfinished pods on pool nodes when the run read them (pods being deleted not counted).
  returned: always
  type: int
free:
  description: Pool - allocated.
  returned: always
  type: int
shortfall:
  description: GPUs that had to be reclaimed (0 when enough were free).
  returned: always
  type: int
freed:
  description: GPUs held by the deleted jobs.
  returned: always
  type: int
victims:
  description: The deleted jobs (in check mode, the jobs that would be deleted), in the order they were deleted.
  returned: always
  type: list
  elements: dict
  sample:
    - {namespace: tenant-alpha, name: spot-a, queue: tenant-alpha-spot, price: "0.1", gpus: 4, pods: 1,
       started_at: "2026-01-01T11:50:00Z"}
history:
  description: The reclaim history after this run, newest first.
  returned: always
  type: list
  elements: dict
reclaim:
  description: This run's summary (time, reason, demand, pool, allocated, free, shortfall, freed, victims), for M(ansible.builtin.set_stats).
  returned: always
  type: dict
waited:
  description: Whether the run waited for the GPUs to be free.
  returned: always
  type: bool
free_after:
  description: Free GPUs (pods on their way out counted as holding) when the wait ended.
  returned: when O(wait=true)
  type: int
requests:
  description: API requests the run made.
  returned: always
  type: int
diff:
  description: The victims before (running) and after (deleted).
  returned: when diff mode is on
  type: dict
"""

import os
import socket

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.pool import selector_errors
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    FieldError,
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import (
    ApiException,
    Cluster,
    api_error_message,
    argument_spec,
    platform_module,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.service import (
    ReclaimError,
    ReclaimRequest,
    reclaim,
    seconds_time,
    utc_now,
    validate_request,
    wait_until_free,
)


def input_errors(params: dict) -> list[FieldError]:
    """Every input check, before the first request."""
    errors = []
    if params["need"] < 0:
        errors.append(
            FieldError("need", f"{params['need']} is negative; a demand is 0 or more GPUs")
        )
    errors.extend(selector_errors(params["node_selector"]))
    errors.extend(validate_request(params))
    if not (params["demand_reason"] or "").strip():
        errors.append(
            FieldError("demand_reason", "must say what the GPUs are for (a non-empty string)")
        )
    return errors


def main() -> None:
    module = platform_module(
        argument_spec=argument_spec(
            need=dict(type="int", required=True),
            demand_reason=dict(type="str", default="an operator's request"),
            node_selector=dict(type="dict", default={}),
            allow_partial=dict(type="bool", default=False),
            history_size=dict(type="int", default=100),
            lease_duration=dict(type="int", default=60),
            holder_identity=dict(type="str"),
            wait=dict(type="bool", default=False),
            wait_timeout=dict(type="int", default=300),
        ),
        supports_check_mode=True,
    )
    p = module.params
    early = input_errors(p)
    if early:
        err = PlatformValidationError(early)
        module.fail_json(msg=str(err), errors=err.messages)

    request = ReclaimRequest(
        demand=p["need"],
        reason=p["demand_reason"],
        node_selector=p["node_selector"] or {},
        allow_partial=p["allow_partial"],
        history_size=p["history_size"],
        holder=p["holder_identity"] or f"{socket.gethostname()}-{os.getpid()}",
        lease_duration=p["lease_duration"],
    )
    cluster = Cluster.from_module(module)
    now = utc_now()
    try:
        result = reclaim(cluster, request, module.check_mode, now)
    except ReclaimError as exc:
        module.fail_json(msg=str(exc), requests=cluster.requests, **exc.result)
    except PlatformValidationError as exc:
        module.fail_json(msg=str(exc), errors=exc.messages, requests=cluster.requests)
    except ApiException as exc:
        module.fail_json(
            msg=f"spot reclaim failed: {api_error_message(exc)}", requests=cluster.requests
        )

    for warning in result.pop("warnings", []):
        module.warn(warning)
    result["reclaim"] = {
        "time": seconds_time(now),
        "reason": request.reason,
        **{
            k: result[k]
            for k in ("demand", "pool", "allocated", "free", "shortfall", "freed", "victims")
        },
    }
    result["waited"] = False
    if p["wait"] and not module.check_mode:
        try:
            reached, free_after = wait_until_free(
                cluster, request.node_selector, request.demand, p["wait_timeout"]
            )
        except ApiException as exc:
            module.fail_json(
                msg=f"waiting for free GPUs failed: {api_error_message(exc)}", **result
            )
        result["waited"] = True
        result["free_after"] = free_after
        if not reached:
            module.fail_json(
                msg=(
                    f"{request.demand} GPUs were not free within {p['wait_timeout']} s after deleting "
                    f"{len(result['victims'])} spot job(s): {free_after} free"
                ),
                requests=cluster.requests,
                **result,
            )
    result["requests"] = cluster.requests
    if module._diff:
        result["diff"] = dict(
            before={f"{v['namespace']}/{v['name']}": "running" for v in result["victims"]},
            after={f"{v['namespace']}/{v['name']}": "deleted" for v in result["victims"]},
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
