#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_objects
short_description: Apply, patch or remove Kubernetes objects as kubernetes.core.k8s does, with one diff per object
description:
  - Writes each object of O(definition) the way M(kubernetes.core.k8s) writes it (the same client, the same
    client-side or server-side apply, merge patches, deletions and waits; in check mode the same dry runs), one
    after another in one process.
  - Its diff is one entry per object, under C(Kind/namespace/name), without the fields the API server, kubectl or a
    controller own (C(managedFields), C(resourceVersion), C(uid), C(creationTimestamp), C(generation), C(status),
    their annotations); a Secret's values are shown as digests.
  - "An object whose change is one value is one line, for example C(Node/gpu-node-7: label topology.volcano.sh/tor: tor-3 → tor-2)."
  - An object counts as changed only when something it says changes; a write that moves only server-owned fields
    (another field manager's ownership, a new C(resourceVersion)) is not a change.
  - The roles of the collection apply their objects with it, so C(--check --diff) of C(site.yml) lists what would
    change, object by object, and nothing on an unchanged cluster.
  - Runs through the module contract's steps (parse, gather, plan, apply) without an offline state - what an apply,
    a patch or a dry run makes of a live object is the API server's to decide, so there is no V(rendered),
    V(gathered) or V(parsed). Its requests are kubernetes.core's, so its result has no C(requests).
version_added: 0.1.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
options:
  definition:
    description:
      - The objects, as a list of mappings, one mapping or YAML text (several documents allowed).
    type: raw
    required: true
  state:
    description:
      - V(present) creates or updates each object, V(patched) patches objects that exist (a missing one is left
        missing, with a warning), V(absent) deletes them.
    type: str
    choices: [present, absent, patched]
    default: present
  apply:
    description: Client-side apply (the last applied configuration in an annotation), or server-side with O(server_side_apply).
    type: bool
    default: false
  server_side_apply:
    description: Server-side apply with O(apply=true).
    type: dict
    suboptions:
      field_manager:
        description: The field manager the writes are made as.
        type: str
        required: true
      force_conflicts:
        description: Take over fields another manager owns.
        type: bool
        default: false
  merge_type:
    description: The patch types tried, in order, for an update that is not an apply.
    type: list
    elements: str
    choices: [merge, strategic-merge]
  force:
    description: Replace an existing object instead of patching it.
    type: bool
    default: false
  wait:
    description: Wait for each object to be ready (a rollout finished, a deletion done); not in check mode.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait for each object.
    type: int
    default: 120
  wait_sleep:
    description: Seconds between two reads while waiting.
    type: int
    default: 5
  continue_on_error:
    description: Go on with the next object when one fails; its error is in its entry of C(results) in RV(result).
    type: bool
    default: false
notes:
  - Takes the options of M(kubernetes.core.k8s) the collection's roles use; for any other, use that module.
seealso:
  - module: kubernetes.core.k8s
"""

EXAMPLES = r"""
- name: The PriorityClasses, server-side applied
  gpucloud.platform.k8s_objects:
    state: present
    apply: true
    server_side_apply:
      field_manager: gpucloud-platform
      force_conflicts: true
    definition: "{{ priority_class_manifests }}"

- name: A Node's taints, merge-patched
  gpucloud.platform.k8s_objects:
    state: patched
    merge_type: merge
    definition:
      apiVersion: v1
      kind: Node
      metadata: {name: gpu-node-7}
      spec:
        taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
"""

RETURN = r"""
result:
  description:
    - "One object: the object as the API server returned it (in check mode, as it would be)."
    - Several objects, C(results), one entry per object in the order of O(definition), each with C(changed),
      C(method) and C(result) as M(kubernetes.core.k8s) returns them.
  returned: always
  type: dict
method:
  description: One object, how it was written (V(apply), V(update), V(create), V(delete)...).
  returned: when O(definition) is one object
  type: str
diff:
  description: One entry per object that changes, under C(Kind/namespace/name), without server-owned fields.
  returned: when diff mode is on
  type: list
  elements: dict
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.module import (
    argument_spec,
    platform_module,
    require_client,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.writes_io import run_writes

OPTIONS = dict(
    definition=dict(type="raw", required=True),
    state=dict(type="str", choices=["present", "absent", "patched"], default="present"),
    apply=dict(type="bool", default=False),
    server_side_apply=dict(
        type="dict",
        options=dict(
            field_manager=dict(type="str", required=True),
            force_conflicts=dict(type="bool", default=False),
        ),
    ),
    merge_type=dict(type="list", elements="str", choices=["merge", "strategic-merge"]),
    force=dict(type="bool", default=False),
    wait=dict(type="bool", default=False),
    wait_timeout=dict(type="int", default=120),
    wait_sleep=dict(type="int", default=5),
    continue_on_error=dict(type="bool", default=False),
)


def main() -> None:
    module = platform_module(
        argument_spec=argument_spec(**OPTIONS),
        supports_check_mode=True,
        mutually_exclusive=[("merge_type", "apply")],
    )
    require_client(module)
    run_writes(module)


if __name__ == "__main__":
    main()
