# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``state: gathered``: the live tenants read back into catalog entries, so a cluster
built tenant by tenant can be put under one catalog.

Rule gathered-entry (``gather_tenant``): an entry says what the tenant's objects say:
the subscription queue's ``deserved`` and ``guarantee``, the pay-as-you-go queue's
capability, each team queue's deserved, capability and guarantee, the RoleBinding's
subjects, the namespace's ``platform.io/allow-critical``, and the NetworkPolicy's
egress blocks, the bounds that differ from the purchase's defaults (rule
tenant-bounds); ``egress_to_metadata`` / ``egress_to_nodes`` are true when a block
reaches the metadata address / a node address without cutting it out. Applying the
gathered catalog to the same cluster writes nothing. Pure.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

from ..common.names import (
    LABEL_QUEUE_TYPE,
    LABEL_TEAM,
    QUEUE_TYPE_PAYG,
    QUEUE_TYPE_SUBSCRIPTION,
    QUEUE_TYPE_TEAM,
    namespace_name,
)
from ..common.quantity import parse_resources, render
from ..hybrid.vgpu import purchase_of, without_vgpu
from ..policy.admission import LABEL_ALLOW_CRITICAL
from ..queues.model import read_live
from ..tenants.bounds import BOUNDS_NAME, read_bounds
from ..tenants.live import TenantLive
from ..tenants.network import NETWORK_POLICY_NAME, ClusterNetworks
from ..tenants.rbac import ROLE_NAME

METADATA_ADDRESS = ipaddress.ip_network("169.254.169.254/32")


def _subjects(binding: Mapping[str, Any] | None, tenant: str) -> list[dict[str, str]]:
    out = []
    for s in (binding or {}).get("subjects") or []:
        entry = {"kind": s.get("kind", ""), "name": s.get("name", "")}
        if s.get("kind") == "ServiceAccount" and s.get("namespace") not in (
            None,
            namespace_name(tenant),
        ):
            entry["namespace"] = s["namespace"]
        out.append(entry)
    return out


def _blocks(policy: Mapping[str, Any] | None) -> list[tuple[Any, list[Any]]]:
    blocks = []
    for rule in ((policy or {}).get("spec") or {}).get("egress") or []:
        for peer in rule.get("to") or []:
            block = peer.get("ipBlock")
            if block:
                cidr = ipaddress.ip_network(block["cidr"], strict=False)
                cut = [ipaddress.ip_network(e, strict=False) for e in block.get("except") or []]
                blocks.append((cidr, cut))
    return blocks


def _reaches(blocks: Sequence[tuple[Any, list[Any]]], target: Any) -> bool:
    """Some block covers ``target`` and none of its cut-outs covers it."""
    for cidr, cut in blocks:
        covered = target.version == cidr.version and target.subnet_of(cidr)
        if covered and not any(target.version == c.version and target.subnet_of(c) for c in cut):
            return True
    return False


def gather_tenant(live: TenantLive, networks: ClusterNetworks) -> dict[str, Any]:
    """Rule gathered-entry for one tenant."""
    entry: dict[str, Any] = {"name": live.name}
    teams = []
    for manifest in sorted(live.queues.values(), key=lambda q: q["metadata"]["name"]):
        labels = (manifest.get("metadata") or {}).get("labels") or {}
        queue = read_live(manifest)
        if queue is None:
            continue
        queue_type = labels.get(LABEL_QUEUE_TYPE)
        if queue_type == QUEUE_TYPE_SUBSCRIPTION:
            entry["subscription"] = render(without_vgpu(queue.deserved))
            bought = purchase_of(queue.capability)
            if bought:
                entry["vgpu"] = bought
            if queue.guarantee:
                entry["subscription_guarantee"] = render(queue.guarantee)
        elif queue_type == QUEUE_TYPE_PAYG:
            entry["payg"] = render(without_vgpu(queue.capability))
        elif queue_type == QUEUE_TYPE_TEAM:
            team: dict[str, Any] = {"name": labels.get(LABEL_TEAM, "")}
            for key in ("deserved", "capability", "guarantee"):
                # The vGPU keys a team carries are its tenant's purchase (entry vgpu).
                if without_vgpu(getattr(queue, key)):
                    team[key] = render(without_vgpu(getattr(queue, key)))
            teams.append(team)
    if teams:
        entry["teams"] = teams
    binding = live.objects.get("RoleBinding", {}).get(ROLE_NAME)
    entry["subjects"] = _subjects(binding, live.name)
    namespace = live.objects.get("Namespace", {}).get(namespace_name(live.name)) or {}
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    entry["allow_critical"] = labels.get(LABEL_ALLOW_CRITICAL) == "true"
    bounds = read_bounds(
        live.objects.get("ResourceQuota", {}).get(BOUNDS_NAME),
        live.objects.get("LimitRange", {}).get(BOUNDS_NAME),
        parse_resources(entry.get("subscription") or {}, "subscription"),
        parse_resources(entry["payg"], "payg") if "payg" in entry else None,
    )
    if bounds:
        entry["bounds"] = bounds
    policy = live.objects.get("NetworkPolicy", {}).get(NETWORK_POLICY_NAME)
    blocks = _blocks(policy)
    entry["egress_cidrs"] = [str(cidr) for cidr, _cut in blocks]
    entry["egress_to_metadata"] = _reaches(blocks, METADATA_ADDRESS)
    entry["egress_to_nodes"] = any(_reaches(blocks, n) for n in networks.nodes)
    return entry


def gather_fleet(
    tenants: Mapping[str, TenantLive], networks: ClusterNetworks
) -> list[dict[str, Any]]:
    """Every live tenant as a catalog entry, sorted by name."""
    return [gather_tenant(tenants[name], networks) for name in sorted(tenants)]
