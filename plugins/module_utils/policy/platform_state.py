# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule platform-state: the objects the platform keeps in a tenant's namespace
are the platform's.

The tenant Role may write ConfigMaps (jobs carry their configuration in them),
and RBAC cannot take one name out of a grant. The platform's own ConfigMaps in
a tenant namespace are all named ``platform-*`` (the throttle state
``platform-throttle`` and the tenant's queue list ``platform-queues``); this
policy lets only the platform's identities create, change or delete them:
members of ``platform_groups`` (default ``system:masters``) and the service
accounts of the platform namespace. Kubernetes' own controllers (the service
accounts of ``kube-system``) and the deletion of a whole namespace (which
removes its ConfigMaps with one delete-collection) pass as well, and so does
nothing else without a name: a delete-collection of ConfigMaps is judged too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..common.names import PLATFORM_NAMESPACE
from .vap import POLICY_PREFIX, cel_list, policy, tenant_match

POLICY_PLATFORM_STATE = POLICY_PREFIX + "platform-state"
PLATFORM_STATE_PREFIX = "platform-"
DEFAULT_PLATFORM_GROUPS = ("system:masters",)
# Kubernetes' controllers, with their own service account credentials (the garbage
# collector, the namespace controller).
CONTROLLERS = "system:serviceaccount:kube-system:"


def platform_state_policy(
    platform_groups: Sequence[str] = DEFAULT_PLATFORM_GROUPS,
) -> dict[str, Any]:
    """Rule platform-state: ``platform-*`` ConfigMaps in tenant namespaces are written by the platform only."""
    groups = cel_list(tuple(platform_groups))
    service_accounts = f"system:serviceaccount:{PLATFORM_NAMESPACE}:"
    return policy(
        POLICY_PLATFORM_STATE,
        {
            "matchConstraints": tenant_match([("", "configmaps")], ["CREATE", "UPDATE", "DELETE"]),
            "matchConditions": [
                {
                    # a name that is the platform's, or none (a delete-collection)
                    "name": "platform-object",
                    "expression": (
                        f"!has(request.name) || request.name == '' || "
                        f"request.name.startsWith('{PLATFORM_STATE_PREFIX}')"
                    ),
                }
            ],
            "validations": [
                {
                    "expression": (
                        f"request.userInfo.username.startsWith('{service_accounts}') || "
                        f"request.userInfo.username.startsWith('{CONTROLLERS}') || "
                        f"(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in {groups})) || "
                        "(has(namespaceObject.metadata.deletionTimestamp))"
                    ),
                    "messageExpression": (
                        "'metadata.name: ' + (has(request.name) && request.name != '' ? request.name : "
                        "'(every ConfigMap)') + ' is platform state (ConfigMaps named "
                        f"{PLATFORM_STATE_PREFIX}*) and only the platform writes it; use another name for your own "
                        "ConfigMaps'"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    )
