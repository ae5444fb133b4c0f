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
accounts of the platform namespace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..common.names import PLATFORM_NAMESPACE
from .vap import POLICY_PREFIX, cel_list, policy, tenant_match

POLICY_PLATFORM_STATE = POLICY_PREFIX + "platform-state"
PLATFORM_STATE_PREFIX = "platform-"
DEFAULT_PLATFORM_GROUPS = ("system:masters",)


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
                    "name": "platform-object",
                    "expression": f"request.name.startsWith('{PLATFORM_STATE_PREFIX}')",
                }
            ],
            "validations": [
                {
                    "expression": (
                        f"request.userInfo.username.startsWith('{service_accounts}') || "
                        f"(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in {groups}))"
                    ),
                    "messageExpression": (
                        "'metadata.name: ' + request.name + ' is platform state (ConfigMaps named "
                        f"{PLATFORM_STATE_PREFIX}*) and only the platform writes it; use another name for your own "
                        "ConfigMaps'"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    )
