# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant's NetworkPolicy, the cluster networks it keeps out, and the rule for
its external egress.

Inside the tenant namespace everything may talk to everything (the three
queue types share one namespace). Out of it, only DNS to kube-system on port
53 and the ``egress_cidrs`` the platform allows, always with the cluster's
own networks cut out: the pod and service CIDRs (the design document's
example allows ``10.0.0.0/8``, which on most clusters opens every other
tenant's pods), the nodes' addresses (kubelets, host-network daemons) and the
cloud metadata address. A CIDR that covers a cluster network gets it as an
``except``; an egress CIDR inside one of them (or made only of them) is refused.
``egress_to_nodes`` and ``egress_to_metadata`` open the node and metadata
addresses; nothing opens the pod and service networks.

The pod and service networks are the cluster's own, read where the cluster
tells them (rule cluster-networks): the nodes' ``spec.podCIDRs`` and the
``ServiceCIDR`` objects of the API server. When the cluster does not tell, the
caller gives them; nothing is guessed.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from ..common.errors import FieldError
from ..common.names import namespace_name, tenant_labels

NETWORK_POLICY_NAME = "deny-cross-tenant"
DEFAULT_EGRESS_CIDRS = ("0.0.0.0/0",)
# Where clouds serve instance metadata and credentials (AWS, GCP, Azure, OpenStack).
METADATA_CIDR = "169.254.169.254/32"

Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]  # noqa: UP007 - a runtime alias pylint can read


def parse_cidr(value: object, field: str) -> tuple[Network | None, list[FieldError]]:
    """Rule cidr: an IP network in CIDR notation with no host bits set."""
    if not isinstance(value, str) or not value.strip():
        return None, [
            FieldError(
                field, f"{value!r} is not a CIDR (for example '0.0.0.0/0' or '192.0.2.0/24')"
            )
        ]
    if "/" not in value:
        return None, [
            FieldError(
                field,
                f"{value!r} is not a CIDR: it has no prefix length (for example '{value}/32')",
            )
        ]
    try:
        return ipaddress.ip_network(value.strip(), strict=True), []
    except ValueError as exc:
        try:
            fixed = ipaddress.ip_network(value.strip(), strict=False)
        except ValueError:
            return None, [FieldError(field, f"{value!r} is not a CIDR ({exc})")]
        return None, [FieldError(field, f"{value!r} has host bits set; the network is {fixed}")]


def rule_egress_outside_cluster(
    cidr: Network, field: str, cluster: Sequence[tuple[str, Network]]
) -> tuple[list[str], list[FieldError]]:
    """Rule egress-outside-cluster: an egress CIDR must not open a path to
    other tenants. Returns the cluster CIDRs to cut out of it as ``except``.

    A CIDR that contains a cluster CIDR gets that CIDR as an exception; a CIDR
    that equals or lies inside one is refused."""
    excepts: list[str] = []
    errors: list[FieldError] = []
    for what, net in cluster:
        if cidr.version != net.version or not cidr.overlaps(net):
            continue
        if cidr != net and net.subnet_of(cidr):  # type: ignore[arg-type]
            excepts.append(str(net))
        else:
            errors.append(
                FieldError(
                    field,
                    f"{cidr} lies inside the cluster's {what} CIDR {net}: it would open every tenant's "
                    f"{'pods' if what == 'pod' else 'services'} to this one; give external networks only",
                )
            )
    return sorted(excepts), errors


def network_policy(tenant: str, egress: Sequence[tuple[Network, list[str]]]) -> dict[str, Any]:
    """Deny cross-tenant traffic: all inside the namespace, DNS to kube-system
    on port 53 (UDP and TCP), and the allowed external CIDRs."""
    egress_rules: list[dict[str, Any]] = [
        {"to": [{"podSelector": {}}]},
        {
            "to": [
                {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "kube-system"}
                    }
                }
            ],
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
        },
    ]
    blocks = []
    for cidr, excepts in egress:
        block: dict[str, Any] = {"cidr": str(cidr)}
        if excepts:
            block["except"] = list(excepts)
        blocks.append({"ipBlock": block})
    if blocks:
        egress_rules.append({"to": blocks})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": NETWORK_POLICY_NAME,
            "namespace": namespace_name(tenant),
            "labels": tenant_labels(tenant),
        },
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": {}}]}],
            "egress": egress_rules,
        },
    }


@dataclass(frozen=True)
class ClusterNetworks:
    """The networks a tenant's egress never reaches (unless allowed)."""

    pods: list[Network] = field(default_factory=list)
    services: list[Network] = field(default_factory=list)
    nodes: list[Network] = field(default_factory=list)


def _host(address: str) -> Network | None:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    return ipaddress.ip_network(f"{ip}/{ip.max_prefixlen}")


def discovered_networks(
    nodes: Iterable[Mapping[str, Any]], service_cidrs: Iterable[Mapping[str, Any]]
) -> ClusterNetworks:
    """Rule cluster-networks: the pod CIDRs the nodes were given (``spec.podCIDRs``, else
    ``spec.podCIDR``), the service CIDRs of the ``ServiceCIDR`` objects, and each node's
    addresses, collapsed into as few networks as cover them."""
    pods: list[Network] = []
    hosts: list[Network] = []
    for node in nodes:
        spec = node.get("spec") or {}
        for value in spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else []):
            net, errors = parse_cidr(value, "podCIDR")
            if net is not None and not errors:
                pods.append(net)
        for address in (node.get("status") or {}).get("addresses") or []:
            if address.get("type") in ("InternalIP", "ExternalIP"):
                host = _host(str(address.get("address", "")))
                if host is not None:
                    hosts.append(host)
    services: list[Network] = []
    for obj in service_cidrs:
        for value in (obj.get("spec") or {}).get("cidrs") or []:
            net, errors = parse_cidr(value, "cidrs")
            if net is not None and not errors:
                services.append(net)
    return ClusterNetworks(
        pods=_collapse(pods), services=_collapse(services), nodes=_collapse(hosts)
    )


def _collapse(networks: Iterable[Network]) -> list[Network]:
    networks = list(networks)  # read once per IP version
    out: list[Network] = []
    for version in (4, 6):
        same = [n for n in networks if n.version == version]
        out += list(ipaddress.collapse_addresses(same))  # type: ignore[arg-type]
    return out


def cluster_networks(
    given_pod: Network | None, given_service: Network | None, discovered: ClusterNetworks
) -> tuple[ClusterNetworks, list[FieldError]]:
    """The networks to keep out: what the caller gave, else what the cluster told; a pod or
    service network that neither gave is refused with the field to set (never guessed)."""
    pods = [given_pod] if given_pod is not None else discovered.pods
    services = [given_service] if given_service is not None else discovered.services
    errors = []
    if not pods:
        errors.append(
            FieldError(
                "pod_cidr",
                "is not set and the cluster does not tell its pod network (no node has "
                "spec.podCIDRs); give the cluster's pod CIDR",
            )
        )
    if not services:
        errors.append(
            FieldError(
                "service_cidr",
                "is not set and the cluster does not tell its service network (no ServiceCIDR "
                "object); give the cluster's service CIDR",
            )
        )
    return ClusterNetworks(pods=pods, services=services, nodes=discovered.nodes), errors


def egress_blocks(
    egress_cidrs: Sequence[Network],
    networks: ClusterNetworks,
    egress_to_nodes: bool = False,
    egress_to_metadata: bool = False,
) -> tuple[list[tuple[Network, list[str]]], list[FieldError]]:
    """Each allowed egress CIDR with the cluster networks it covers cut out (rule
    egress-outside-cluster for pods and services; node addresses and the metadata
    address too, unless allowed).

    An egress CIDR inside a network it must not reach (pod, service, a node address or the
    metadata address while not allowed), or one that holds nothing else, is refused: an
    ``except`` must be a strict part of its CIDR, and a block left without one would open
    exactly what it was to keep out.

    A fleet's tenants mostly share one egress list and every tenant the cluster's
    networks, so the answer is kept per input (``_egress_blocks``)."""
    blocks, errors = _egress_blocks(
        tuple(egress_cidrs),
        tuple(networks.pods),
        tuple(networks.services),
        () if egress_to_nodes else tuple(networks.nodes),
        egress_to_metadata,
    )
    return [(cidr, list(cut)) for cidr, cut in blocks], list(errors)


@functools.lru_cache(maxsize=64)
def _egress_blocks(
    egress_cidrs: tuple[Network, ...],
    pods: tuple[Network, ...],
    services: tuple[Network, ...],
    closed_nodes: tuple[Network, ...],
    egress_to_metadata: bool,
) -> tuple[tuple[tuple[Network, tuple[str, ...]], ...], tuple[FieldError, ...]]:
    """``egress_blocks`` over hashable inputs (the node addresses only when closed)."""
    cluster = [("pod", n) for n in pods] + [("service", n) for n in services]
    closed: list[tuple[str, Network]] = [("node", n) for n in closed_nodes]
    if not egress_to_metadata:
        closed.append(("metadata", ipaddress.ip_network(METADATA_CIDR)))
    out: list[tuple[Network, tuple[str, ...]]] = []
    errors: list[FieldError] = []
    for i, cidr in enumerate(egress_cidrs):
        path = f"egress_cidrs[{i}]"
        excepts, errs = rule_egress_outside_cluster(cidr, path, cluster)
        inside: list[Network] = []
        for what, net in closed:
            if net.version != cidr.version or not net.overlaps(cidr):
                continue
            if net != cidr and net.subnet_of(cidr):  # type: ignore[arg-type]
                inside.append(net)
            else:
                errs.append(FieldError(path, _closed_message(cidr, what, net)))
        cut = [ipaddress.ip_network(e) for e in excepts] + inside
        nets = _collapse(cut)
        if not errs and cidr in nets:  # the excepts add up to the whole CIDR
            errs.append(
                FieldError(
                    path,
                    f"{cidr} holds nothing but the cluster's own networks "
                    f"({', '.join(str(n) for n in cut)}); give external networks only",
                )
            )
        errors += errs
        out.append((cidr, tuple(str(n) for n in nets)))
    return tuple(out), tuple(errors)


def _closed_message(cidr: Network, what: str, net: Network) -> str:
    where = "is" if cidr == net else "lies inside"
    if what == "node":
        return (
            f"{cidr} {where} the cluster's node addresses {net}: it would open the nodes (kubelets, "
            "host-network daemons) to this tenant; give external networks only, or set "
            "egress_to_nodes: true"
        )
    return (
        f"{cidr} {where} the cloud metadata address {net}: it would give this tenant the "
        "nodes' cloud credentials; give external networks only, or set egress_to_metadata: true"
    )
