# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant's NetworkPolicy and the rule for its external egress.

Inside the tenant namespace everything may talk to everything (the three
queue types share one namespace). Out of it, only DNS to kube-system on port
53 and the ``egress_cidrs`` the platform allows, always with the cluster's
pod and service CIDRs cut out. The design document's example allows
``10.0.0.0/8``: on a cluster whose pod network is ``10.244.0.0/16`` that one
rule lets every tenant reach every other tenant's pods and services, which is
the one thing the policy exists to stop. So a CIDR that covers a cluster CIDR
gets it as an ``except``, and a CIDR inside a cluster CIDR is refused.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any, Union

from ..common.errors import FieldError
from ..common.names import namespace_name, tenant_labels

NETWORK_POLICY_NAME = "deny-cross-tenant"
DEFAULT_EGRESS_CIDRS = ("0.0.0.0/0",)
DEFAULT_POD_CIDR = "10.244.0.0/16"
DEFAULT_SERVICE_CIDR = "10.96.0.0/12"

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
