# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spot_capacities filter: each tenant's spot GPUs (rule spot-apportionment)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.quantity import GPU
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.apportion import apportion_spot
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import idle_for_spot


def _gpu_map(value: Any, field: str) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AnsibleFilterError(
            f"spot_capacities: {field}: {value!r} must be a mapping of tenant name to GPUs"
        )
    out = {}
    for tenant, gpus in value.items():
        if isinstance(gpus, bool) or not isinstance(gpus, int):
            raise AnsibleFilterError(
                f"spot_capacities: {field}.{tenant}: {gpus!r} is not a whole number of GPUs (0 or more)"
            )
        if gpus < 0:
            raise AnsibleFilterError(
                f"spot_capacities: {field}.{tenant}: {gpus} is negative; 0 or more GPUs"
            )
        out[str(tenant)] = gpus
    return out


def spot_capacities(subscriptions: Any, cluster_gpus: Any, payg_used: Any = None) -> dict[str, int]:
    """Map of tenant name to spot GPUs: idle = cluster_gpus - sum(subscriptions)
    - sum(payg_used), never below 0, shared out by subscription in whole GPUs
    (largest remainder). Every tenant named in either map appears."""
    subs = _gpu_map(subscriptions, "subscriptions")
    payg = _gpu_map(payg_used, "payg_used")
    if isinstance(cluster_gpus, bool) or not isinstance(cluster_gpus, int):
        raise AnsibleFilterError(
            f"spot_capacities: cluster_gpus: {cluster_gpus!r} is not a whole number of GPUs"
        )
    if cluster_gpus < 0:
        raise AnsibleFilterError(
            f"spot_capacities: cluster_gpus: {cluster_gpus} is negative; 0 or more GPUs"
        )
    idle = idle_for_spot(
        {GPU: Decimal(cluster_gpus)},
        [{GPU: Decimal(v)} for v in subs.values()],
        [{GPU: Decimal(v)} for v in payg.values()],
    )
    try:
        shares = apportion_spot({GPU: idle[GPU]}, subs)
    except PlatformValidationError as exc:  # pragma: no cover - inputs checked above
        raise AnsibleFilterError(f"spot_capacities: {exc}") from None
    result = {tenant: int(share.get(GPU, 0)) for tenant, share in shares.items()}
    for tenant in payg:
        result.setdefault(tenant, 0)
    return dict(sorted(result.items()))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"spot_capacities": spot_capacities}
