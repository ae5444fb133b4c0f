#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    PODGROUP_API,
    QUEUE_API,
)

DOCUMENTATION = r"""
module: team_queue
short_description: Add, resize or remove one team sub-queue of a tenant's subscription queue
version_added: 0.1.0
author: gpucloud platform team (@gpucloud)
description:
  - Manages the Volcano queue C(tenant-<tenant>-<name>) under C(tenant-<tenant>-subscription), leaving the
    tenant's other queues as they are.
  - The same rules as M(gpucloud.platform.tenant) apply - guarantee <= deserved <= capability per resource,
    a team's capability at most the subscription's, the teams' deserved (and guarantee) adding up to at most the
    subscription's.
  - Refuses to give a subscription queue its first team while jobs or pod groups run in it (Volcano runs jobs only
    in leaf queues), to put a capability below what the queue has allocated right now, and to remove a team queue
    that runs jobs; O(force=true) overrides the last two.
  - Keeps the subscription queue listed in the key C(queues) of ConfigMap C(platform-system/platform-parent-queues)
    while it has teams (added before its first team is created, removed after its last team is gone), so that the
    admission policy C(gpucloud-queue-leaf) refuses jobs in it; the ConfigMap is written only when the list changes.
  - Every input is checked before the first write; nothing is half-applied.
options:
  tenant:
    description:
      - The tenant whose subscription queue gets the team.
    type: str
    required: true
  name:
    description:
      - Team name; it may not end in C(subscription), C(payg) or C(spot).
    type: str
    required: true
  state:
    description:
      - V(present) adds or resizes the team queue, V(absent) removes it.
    type: str
    choices: [present, absent]
    default: present
  deserved:
    description:
      - "Deserved per resource, for example C({nvidia.com/gpu: 10})."
    type: dict
  capability:
    description:
      - Capability per resource; a resource left out is bounded by the subscription.
    type: dict
  guarantee:
    description:
      - Guarantee per resource.
    type: dict
  force:
    description:
      - Accept a capability below what the queue has allocated, or remove a team queue that runs jobs.
    type: bool
    default: false
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
requirements:
  - kubernetes >= 24.2.0
notes:
  - Supports check mode and diff mode.
"""

EXAMPLES = r"""
- name: Give tenant alpha a research team
  gpucloud.platform.team_queue:
    tenant: alpha
    name: research
    deserved: {nvidia.com/gpu: 8}
    capability: {nvidia.com/gpu: 16}

- name: Remove it again
  gpucloud.platform.team_queue:
    tenant: alpha
    name: research
    state: absent
"""

RETURN = r"""
changed:
  description: Whether the queue was (or in check mode would be) written or deleted.
  returned: always
  type: bool
objects:
  description: The queues written or deleted.
  returned: always
  type: list
  elements: dict
  sample: [{kind: Queue, name: tenant-alpha-research, action: create}]
diff:
  description: Before and after of the changed queue.
  returned: when diff mode is on
  type: dict
api_requests:
  description: How many API requests the run made.
  returned: always
  type: int
"""

from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    FieldError,
    PlatformValidationError,
    raise_if,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    namespace_name,
    queue_name,
    tenant_name_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.objects import index_by_name
from ansible_collections.gpucloud.platform.plugins.module_utils.kube import cluster as kube
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.parent_list import (
    parent_queue_names,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.plan import queue_steps
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.service import (
    Changes,
    busy_queues,
    read_parent_queues,
    run_queue_steps,
    sync_parent_queues,
    tenant_selector,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.spec import (
    TeamSpec,
    parse_team,
    plan_team_change,
)


def module_options() -> dict[str, Any]:
    return {
        "tenant": {"type": "str", "required": True},
        "name": {"type": "str", "required": True},
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        "deserved": {"type": "dict"},
        "capability": {"type": "dict"},
        "guarantee": {"type": "dict"},
        "force": {"type": "bool", "default": False},
    }


def parse_params(params: dict[str, Any]) -> TeamSpec | None:
    """Check every input; the team (None for state=absent)."""
    errors: list[FieldError] = list(tenant_name_errors(params.get("tenant"), "tenant"))
    tenant = params.get("tenant") if not errors else ""
    raw = {k: params.get(k) for k in ("name", "deserved", "capability", "guarantee")}
    team = parse_team(str(tenant), raw, "", errors)
    raise_if(errors)
    return team if params.get("state", "present") == "present" else None


def run(params: dict[str, Any], cluster: kube.Cluster, check_mode: bool = False) -> dict[str, Any]:
    """The module's logic without AnsibleModule (raises PlatformValidationError)."""
    team = parse_params(params)
    tenant = params["tenant"]
    live = index_by_name(cluster.list(QUEUE_API, "Queue", label_selector=tenant_selector(tenant)))
    podgroups = (
        cluster.list(PODGROUP_API, "PodGroup", namespace=namespace_name(tenant)) if live else []
    )
    busy = busy_queues(podgroups, live)
    remove = params["name"] if team is None else None
    queues = plan_team_change(tenant, team, remove, live, busy, force=params.get("force", False))
    deletes = [queue_name(tenant, "team", remove)] if remove else []
    changes = Changes()
    # The subscription queue is listed as a parent before its first team is
    # created and unlisted after its last team is removed.
    parents = parent_queue_names(queues)
    owned = set(live) | {q.name for q in queues}
    parent_list = sync_parent_queues(
        cluster, read_parent_queues(cluster), parents, parents, changes, check_mode
    )
    run_queue_steps(cluster, queue_steps(queues, live, deletes), live, changes, check_mode)
    sync_parent_queues(cluster, parent_list, parents, owned, changes, check_mode)
    return {"changed": changes.changed, "objects": changes.objects, "diff": changes.diff()}


def main() -> None:
    module = kube.platform_module(
        argument_spec=kube.argument_spec(**module_options()), supports_check_mode=True
    )
    params = dict(module.params)
    try:
        parse_params(params)
    except PlatformValidationError as exc:
        module.fail_json(msg=str(exc), errors=exc.messages, changed=False)
    cluster = kube.Cluster.from_module(module)
    try:
        result = run(params, cluster, module.check_mode)
    except PlatformValidationError as exc:
        module.fail_json(
            msg=str(exc), errors=exc.messages, changed=False, api_requests=cluster.requests
        )
    except kube.ApiException as exc:
        module.fail_json(msg=kube.api_error_message(exc), api_requests=cluster.requests)
    if not module._diff:
        result.pop("diff", None)
    result["api_requests"] = cluster.requests
    module.exit_json(**result)


if __name__ == "__main__":
    main()
