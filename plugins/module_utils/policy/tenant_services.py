# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule tenant-services-in-cluster: a tenant's Services stay inside the cluster.

A tenant may make Services (its Role grants them, for its own pods to find each
other), but a ``LoadBalancer`` or ``NodePort`` Service opens its pods on every node
or an external address, and ``externalIPs`` lets a Service claim any address
(kube-proxy then routes traffic for it, whoever owns it). The platform exposes a
tenant's models through the serving gateway instead ([inference](inference.md)).
``ClusterIP`` (headless too) and ``ExternalName`` stay allowed: KServe and the
tenant's own pods use them.
"""

from __future__ import annotations

from typing import Any

from .vap import POLICY_PREFIX, cel_list, policy, tenant_match

POLICY_TENANT_SERVICES = POLICY_PREFIX + "tenant-services"
EXPOSING_TYPES = ("LoadBalancer", "NodePort")


def tenant_services_policy() -> dict[str, Any]:
    """Rule tenant-services-in-cluster, over Services in tenant namespaces."""
    return policy(
        POLICY_TENANT_SERVICES,
        {
            "matchConstraints": tenant_match([("", "services")], ["CREATE", "UPDATE"]),
            "validations": [
                {
                    "expression": (
                        f"!has(object.spec.type) || !(object.spec.type in {cel_list(EXPOSING_TYPES)})"
                    ),
                    "messageExpression": (
                        "'spec.type: ' + object.spec.type + ' opens the pods outside the cluster; use "
                        "ClusterIP (the serving gateway exposes models)'"
                    ),
                    "reason": "Forbidden",
                },
                {
                    "expression": "!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0",
                    "messageExpression": (
                        "'spec.externalIPs: ' + object.spec.externalIPs.join(', ') + ' would claim "
                        "addresses for this Service; remove externalIPs'"
                    ),
                    "reason": "Forbidden",
                },
            ],
        },
    )
