#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: large_job_throttle
short_description: Engage and release the large-job submission throttle of every tenant namespace
description:
  - "Design 6.4.2: while a large job (PriorityClass C(large-job)) waits in a queue for the GPUs that preemption frees,
    jobs below C(large-job) must not be admitted to that queue, or they take those GPUs first. The admission policy
    C(gpucloud-large-job-throttle) refuses them while the queue is listed in the namespace's ConfigMap
    C(platform-throttle) (keys C(queues), C(until), C(reason)); this module keeps that ConfigMap right."
  - "Engage: a large-job PodGroup whose phase is C(Pending) or C(Inqueue) with fewer than C(minMember) pods running
    gets an entry (key C(entries.json)) with its queue and a deadline O(timeout) seconds from now; its queue is listed."
  - "Release: the entry goes when the job runs or is gone. When the deadline passes first the entry is kept as
    C(expired) and the queue is no longer listed, so small jobs are never blocked for long and the same job does not
    engage the throttle again. A namespace without entries has no ConfigMap."
  - "One list of tenant Namespaces (label C(platform.io/tenant)), one of PodGroups and one of throttle ConfigMaps for
    all tenants; writes only the ConfigMaps that change. A C(platform-throttle) ConfigMap without
    C(platform.io/managed-by=gpucloud-platform) is left alone and reported. Safe to run every minute."
version_added: 0.1.0
author:
  - gpucloud platform team (@gpucloud)
requirements:
  - kubernetes >= 24.2.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
options:
  timeout:
    description: Seconds a large job may hold its queue before the throttle is released anyway (design, 5 minutes).
    type: int
    default: 300
  namespaces:
    description: Reconcile only these tenant namespaces. Empty means every tenant namespace.
    type: list
    elements: str
    default: []
notes:
  - Supports check mode (server-side dry run of the writes) and diff mode.
seealso:
  - module: gpucloud.platform.vcjob
"""

EXAMPLES = r"""
- name: Engage and release the throttle of every tenant
  gpucloud.platform.large_job_throttle:
  register: throttle

- name: A shorter wait for one tenant
  gpucloud.platform.large_job_throttle:
    namespaces: [tenant-alpha]
    timeout: 120
"""

RETURN = r"""
engaged:
  description: Large jobs (namespace/name) whose queue this run started to throttle.
  returned: always
  type: list
  elements: str
released:
  description: Large jobs whose entry this run removed (the job runs or is gone).
  returned: always
  type: list
  elements: str
expired:
  description: Large jobs whose wait passed the timeout in this run (their queue is no longer throttled).
  returned: always
  type: list
  elements: str
throttles:
  description: Per namespace with a throttle ConfigMap after the run, the throttled queues, until when, and why.
  returned: always
  type: dict
  sample: {tenant-alpha: {queues: [tenant-alpha-algo], until: "2026-01-01T12:05:00Z", reason: "large job ..."}}
skipped:
  description: Namespaces whose C(platform-throttle) ConfigMap is not managed by the platform.
  returned: always
  type: list
  elements: str
requests:
  description: API requests the run made.
  returned: always
  type: int
diff:
  description: Throttled queues per namespace before and after.
  returned: when diff mode is on
  type: dict
"""

from datetime import UTC, datetime

from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.service import (
    reconcile_all,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.throttle import (
    KEY_REASON,
    KEY_UNTIL,
    configmap_data,
    throttled_queues,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import (
    ApiException,
    Cluster,
    api_error_message,
    argument_spec,
    platform_module,
)


def main() -> None:
    module = platform_module(
        argument_spec=argument_spec(
            timeout=dict(type="int", default=300),
            namespaces=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["timeout"] < 0:
        module.fail_json(msg=f"timeout: {p['timeout']} must be 0 or more seconds", requests=0)
    cluster = Cluster.from_module(module)
    try:
        changes, skipped = reconcile_all(cluster, datetime.now(UTC), p["timeout"], p["namespaces"])
    except ApiException as exc:
        module.fail_json(
            msg=f"throttle reconcile failed: {api_error_message(exc)}", requests=cluster.requests
        )
    result = {
        "changed": any(c.action != "none" for c in changes),
        "engaged": [j for c in changes for j in c.engaged],
        "released": [j for c in changes for j in c.released],
        "expired": [j for c in changes for j in c.expired],
        "skipped": skipped,
        "requests": cluster.requests,
        "throttles": {},
    }
    for c in changes:
        if c.after:
            data = configmap_data(c.after, c.namespace)
            result["throttles"][c.namespace] = {
                "queues": throttled_queues(c.after),
                "until": data[KEY_UNTIL],
                "reason": data[KEY_REASON],
            }
    for ns in skipped:
        module.warn(f"{ns}: ConfigMap platform-throttle is not managed by the platform; left alone")
    if module._diff:
        result["diff"] = {
            "before": {
                c.namespace: throttled_queues(c.before) for c in changes if c.action != "none"
            },
            "after": {
                c.namespace: throttled_queues(c.after) for c in changes if c.action != "none"
            },
        }
    module.exit_json(**result)


if __name__ == "__main__":
    main()
