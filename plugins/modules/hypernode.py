#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import HYPERNODE_API

DOCUMENTATION = r"""
module: hypernode
short_description: One Volcano HyperNode, present or absent, checked against the topology rules
description:
  - Creates, updates or deletes one HyperNode (C(topology.volcano.sh/v1alpha1)) labelled
    C(platform.io/managed-by=gpucloud-platform).
  - Before any write, checks the HyperNode's own rules (tier 1 or more; at least one member; exactly one selector
    per member; members all of type Node or all of type HyperNode; a HyperNode member matched by C(exactMatch) only,
    so C(regexMatch) and C(labelMatch) only in a leaf) and the rules of the tree it joins (tiers increase upward,
    no cycles, one parent per HyperNode, every node in at most one leaf, members exist). Only problems this change
    would introduce are refused; problems already in the cluster are left to M(gpucloud.platform.topology).
  - Never changes or deletes a HyperNode without the managed-by label, for example one made by Volcano's discovery.
  - Reads the cluster with one list call for HyperNodes (and one for Nodes when a leaf uses C(regexMatch) or
    C(labelMatch)), and writes with server-side apply under the field manager C(gpucloud-platform).
version_added: 0.1.0
author:
  - gpucloud platform team (@gpucloud)
requirements:
  - kubernetes >= 24.2.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
options:
  name:
    description: The HyperNode's name (a DNS-1123 subdomain).
    type: str
    required: true
  state:
    description: Whether the HyperNode should exist.
    type: str
    choices: [present, absent]
    default: present
  tier:
    description: The HyperNode's tier, 1 or more; lower tiers are closer to the nodes. Required when O(state=present).
    type: int
  tier_name:
    description: A name for the tier (C(spec.tierName)), for example C(tor) or C(spine).
    type: str
  members:
    description:
      - The members, as in the HyperNode CRD. Required when O(state=present).
    type: list
    elements: dict
    suboptions:
      type:
        description: V(Node) for a leaf's nodes, V(HyperNode) for a member switch.
        type: str
        required: true
        choices: [Node, HyperNode]
      selector:
        description:
          - Exactly one of C(exactMatch) (C({name}) of a node or HyperNode), C(regexMatch) (C({pattern}), Node members only)
            or C(labelMatch) (a label selector, Node members only).
        type: dict
        required: true
notes:
  - Supports check mode (writes are sent as server-side dry runs) and diff mode.
seealso:
  - module: gpucloud.platform.topology
"""

EXAMPLES = r"""
- name: A leaf switch with two nodes
  gpucloud.platform.hypernode:
    name: tor-0
    tier: 1
    tier_name: tor
    members:
      - {type: Node, selector: {exactMatch: {name: gpu-0}}}
      - {type: Node, selector: {exactMatch: {name: gpu-1}}}

- name: A spine over two leaves
  gpucloud.platform.hypernode:
    name: spine-0
    tier: 2
    members:
      - {type: HyperNode, selector: {exactMatch: {name: tor-0}}}
      - {type: HyperNode, selector: {exactMatch: {name: tor-1}}}

- name: A leaf holding a rack by label
  gpucloud.platform.hypernode:
    name: tor-7
    tier: 1
    members:
      - type: Node
        selector:
          labelMatch:
            matchLabels: {topology.volcano.sh/tor: rack-07}

- name: Remove a switch no longer listed by any parent
  gpucloud.platform.hypernode:
    name: tor-7
    state: absent
"""

RETURN = r"""
hypernode:
  description: The HyperNode as the API server returned it (absent when deleted or never existed).
  returned: when O(state=present)
  type: dict
action:
  description: What the run did, V(created), V(updated), V(deleted) or V(none).
  returned: always
  type: str
  sample: created
requests:
  description: API requests the run made.
  returned: always
  type: int
diff:
  description: The HyperNode before and after (diff mode only).
  returned: when diff mode is on
  type: dict
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    FieldError,
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.objects import (
    differs,
    strip_server_fields,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import (
    ApiException,
    Cluster,
    api_error_message,
    argument_spec,
    platform_module,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.manifests import (
    hypernode_from_manifest,
    hypernode_manifest,
    is_managed,
    tree_from_manifests,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.plan import (
    unmanaged_conflict,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.tree import (
    KIND,
    MEMBER_NODE,
    hypernode_errors,
    tree_errors,
)


def _fail(module, errors: list[FieldError], **extra) -> None:
    err = PlatformValidationError(errors)
    module.fail_json(msg=str(err), errors=err.messages, **extra)


def _needs_nodes(tree) -> bool:
    return any(
        m.type == MEMBER_NODE and not m.exact_name for hn in tree.values() for m in hn.members
    )


def main() -> None:
    module = platform_module(
        argument_spec=argument_spec(
            name=dict(type="str", required=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            tier=dict(type="int"),
            tier_name=dict(type="str"),
            members=dict(
                type="list",
                elements="dict",
                options=dict(
                    type=dict(type="str", required=True, choices=["Node", "HyperNode"]),
                    selector=dict(type="dict", required=True),
                ),
            ),
        ),
        required_if=[("state", "present", ["tier", "members"])],
        supports_check_mode=True,
    )
    p = module.params
    name = p["name"]
    desired = None
    if p["state"] == "present":
        spec = {
            "tier": p["tier"],
            "members": [{"type": m["type"], "selector": m["selector"]} for m in p["members"]],
        }
        if p["tier_name"]:
            spec["tierName"] = p["tier_name"]
        hn, errors = hypernode_from_manifest(
            {"kind": KIND, "metadata": {"name": name}, "spec": spec}
        )
        if hn is not None:
            errors += hypernode_errors(hn)
        if errors or hn is None:
            _fail(module, errors)
        desired = hypernode_manifest(hn)

    cluster = Cluster.from_module(module)
    try:
        live_all = cluster.list(HYPERNODE_API, KIND)
    except ApiException as exc:
        module.fail_json(msg=f"reading HyperNodes failed: {api_error_message(exc)}")
    live = next((o for o in live_all if o["metadata"]["name"] == name), None)
    if live is not None and not is_managed(live):
        _fail(module, [unmanaged_conflict(name, live)])

    # Rules of the tree this HyperNode joins: refuse only what the change introduces.
    others = [o for o in live_all if o["metadata"]["name"] != name]
    before_tree, _unused = tree_from_manifests(live_all)
    after_tree, _unused = tree_from_manifests(others + ([desired] if desired else []))
    nodes = None
    if _needs_nodes(before_tree) or _needs_nodes(after_tree):
        try:
            nodes = cluster.list("v1", "Node")
        except ApiException as exc:
            module.fail_json(msg=f"reading Nodes failed: {api_error_message(exc)}")
    before = {str(e) for e in tree_errors(before_tree, nodes)}
    introduced = [e for e in tree_errors(after_tree, nodes) if str(e) not in before]
    if introduced:
        _fail(module, introduced)

    result: dict = dict(changed=False, action="none")
    try:
        if desired is None:
            if live is not None:
                cluster.delete(HYPERNODE_API, KIND, name)
                result.update(changed=True, action="deleted")
        elif live is None or differs(desired, live):
            result["hypernode"] = cluster.apply(desired)
            result.update(changed=True, action="created" if live is None else "updated")
        else:
            result["hypernode"] = live
    except ApiException as exc:
        module.fail_json(
            msg=f"writing HyperNode {name!r} failed: {api_error_message(exc)}",
            requests=cluster.requests,
        )
    result["requests"] = cluster.requests
    if module._diff:
        result["diff"] = dict(before=strip_server_fields(live) or {}, after=desired or {})
    module.exit_json(**result)


if __name__ == "__main__":
    main()
