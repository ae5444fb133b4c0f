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

from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.common.diffs import (
    changes,
    object_diff,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.module import (
    argument_spec,
    platform_module,
    require_client,
)

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

# kubernetes.core.k8s's parameters this module leaves at their defaults.
K8S_DEFAULTS = dict(
    src=None,
    template=None,
    kind=None,
    api_version=None,
    name=None,
    namespace=None,
    generate_name=None,
    label_selectors=None,
    hidden_fields=None,
    delete_options=None,
    delete_all=False,
    wait_condition=None,
    validate=None,
    append_hash=False,
)

# What kubernetes.core.k8s compares with the live object (a create or a deletion it
# reports as a change without a diff).
COMPARED = ("apply", "update", "replace", "patch")


def header(definition: dict[str, Any], index: int) -> str:
    """``Kind/namespace/name`` (``Kind/name`` when cluster-scoped)."""
    meta = definition.get("metadata") or {}
    parts = [definition.get("kind"), meta.get("namespace"), meta.get("name")]
    return "/".join(str(p) for p in parts if p) or f"object {index}"


def entry_of(
    definition: dict[str, Any], index: int, result: dict[str, Any]
) -> dict[str, Any] | None:
    """The object's diff entry (rule diff-shows-change), or None when nothing it says
    changes; sets the result's ``changed`` to match for what kubernetes.core compared."""
    secret = definition.get("kind") == "Secret"
    method = result.get("method")
    name = header(definition, index)
    if method in COMPARED:
        raw = result.get("diff") or {}
        entry = object_diff(name, raw.get("before") or {}, raw.get("after") or {}, secret=secret)
        result["changed"] = changes(entry)
    elif result.get("changed") and method == "create":
        entry = object_diff(name, None, result.get("result") or definition, secret=secret)
    elif result.get("changed") and method == "delete":
        gone = result.get("result") or {}
        entry = object_diff(name, gone if gone.get("kind") else definition, None, secret=secret)
    else:
        return None
    return entry if changes(entry) else None


def unreachable(exc: BaseException) -> bool:
    """The API server could not be reached: a connection error anywhere in the chain
    (urllib3's, or Python's own), as the collection's other modules judge it."""
    import urllib3.exceptions

    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 10:
        if isinstance(current, ConnectionError | urllib3.exceptions.HTTPError):
            return True
        current = current.__cause__ or current.__context__
        seen += 1
    return False


def fail_unreachable(module: Any, exc: BaseException) -> None:
    """One line naming the server, as every module of the collection says it."""
    why = " ".join(str(exc).split())
    module.fail_json(msg=f"cannot reach the Kubernetes API server: {why}", changed=False)


def main() -> None:
    module = platform_module(
        argument_spec=argument_spec(**OPTIONS),
        supports_check_mode=True,
        mutually_exclusive=[("merge_type", "apply")],
    )
    require_client(module)
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import (
        CoreException,
    )
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.resource import (
        create_definitions,
    )
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.runner import perform_action
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.service import K8sService

    shown = module._diff
    # kubernetes.core compares with the live object only in diff mode; the comparison
    # decides "changed" here, so it is always made and dropped at the end when not asked.
    module._module._diff = True
    module.params.update(K8S_DEFAULTS, resource_definition=module.params["definition"])
    try:
        svc = K8sService(get_api_client(module), module)
        definitions = create_definitions(module.params)
    except CoreException as exc:
        if unreachable(exc):
            fail_unreachable(module, exc)
        module.fail_from_exception(exc)
    results, entries = [], []
    for index, definition in enumerate(definitions):
        try:
            result = perform_action(svc, definition, module.params)
        except Exception as exc:  # as kubernetes.core.k8s: the error names the object
            if unreachable(exc):
                fail_unreachable(module, exc)
            error = dict(getattr(exc, "result", None) or {})
            reason = getattr(exc.__cause__, "reason", None)
            if reason is not None:
                error["reason"] = reason
            error["msg"] = f"{header(definition, index)}: {exc}"
            if not module.params["continue_on_error"]:
                module.fail_json(**error)
            results.append({"changed": False, "result": {}, "error": error})
            continue
        entry = entry_of(definition, index, result)
        result.pop("diff", None)
        if entry is not None:
            entries.append(entry)
        results.append(result)
    if len(results) == 1:
        out = results[0]
    else:
        out = {"changed": any(r["changed"] for r in results), "result": {"results": results}}
    if shown:
        out["diff"] = entries
    module.exit_json(**out)


if __name__ == "__main__":
    main()
