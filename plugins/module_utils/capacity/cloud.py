# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pay-as-you-go growth into the cloud: the IDC's unsold GPUs first, then the cloud up
to the tenant's burst quota (docs/hybrid-cloud.md).

With node groups (``hybrid/queues``) a PAYG queue prefers the IDC groups and may use
the cloud groups after them, and its capability is a total wherever it runs. A tenant's
cloud quota is its burst leaf ``tenant-<tenant>-burst`` under ``cloud-burst``. A PAYG
grant may hold cloud GPUs out of that quota; they are recorded on the PAYG queue, so
that no IDC pool counts them and no cloud GPU is sold twice.

Rules held here:

* Rule payg-cloud-part (``cloud_part_after``, ``cloud_annotation``): the GPUs of a PAYG
  grant that are cloud GPUs are the annotation ``platform.io/payg-cloud-gpus`` on the
  PAYG queue, written with its capability by the same apply (rule committed reads it,
  ``workload.pool``). A grant is IDC GPUs below, cloud GPUs on top: a growth adds its
  cloud part on top; a shrink gives back cloud GPUs first.
* Rule payg-burst-headroom (``burst_headroom``): the cloud GPUs a growth may take is the
  smaller of the tenant's headroom (its burst quota - what its burst leaf uses, by rule
  payg-in-use - the cloud GPUs its PAYG grant holds already) and the cloud's (the GPUs
  ``cloud-burst`` caps the cloud at - what every burst leaf uses - every tenant's PAYG
  cloud GPUs), never below 0; 0 when the cluster has no ``cloud-burst`` queue, the tenant
  no burst leaf, or its PAYG queue's affinity names no cloud group (its pods could never
  reach a cloud node).
* Rule payg-idc-first (``idc_available``, ``payg_split``): a growth takes what the IDC
  can give first: its unsold GPUs (pool - sold, rule unsold-reclaim-need), or without
  ``reclaim`` only as many of them as need no spot job reclaimed; the rest comes from the
  cloud. With no cloud headroom the whole growth is the IDC's and is judged as before
  (oversell guard, unsold-reclaim-need). A cloud part above the headroom is refused
  (``cloud_short_error``).

Pure: the caller reads the queues, the jobs and the pool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..common.errors import FieldError
from ..common.names import ANNOTATION_PAYG_CLOUD_GPUS, BURST_QUEUE, LABEL_TENANT
from ..common.quantity import GPU
from ..hybrid.burst import allocated_gpus, burst_leaf_name, capability_gpus
from ..hybrid.queues import affinity_of
from ..spot.victims import unsold_reclaim_need
from ..workload.pool import TenantCommitment

_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True)
class CloudRoom:
    """What rule payg-burst-headroom reads for one tenant, in GPUs."""

    quota: int  # the tenant's burst leaf capability
    leaf_in_use: int  # what the leaf uses (rule payg-in-use)
    payg_cloud: int  # the cloud GPUs the tenant's PAYG grant holds already
    cloud: int  # cloud-burst's capability: the GPUs the cloud declares
    cloud_in_use: int  # what every burst leaf uses
    cloud_sold: int  # every tenant's PAYG cloud GPUs
    reaches_cloud: bool  # the PAYG queue's affinity names a cloud group

    @property
    def tenant_headroom(self) -> int:
        return self.quota - self.leaf_in_use - self.payg_cloud

    @property
    def cloud_headroom(self) -> int:
        return self.cloud - self.cloud_in_use - self.cloud_sold


def burst_headroom(room: CloudRoom | None) -> int:
    """Rule payg-burst-headroom: the cloud GPUs a growth may take, the smaller of the
    tenant's headroom and the cloud's, never below 0 (see the module docstring)."""
    if room is None or not room.reaches_cloud:
        return 0
    return max(0, min(room.tenant_headroom, room.cloud_headroom))


def _groups(affinity: Mapping[str, Any], *keys: str) -> set[str]:
    terms = affinity.get("nodeGroupAffinity") or {}
    return {g for key in keys for g in terms.get(key) or []}


def cloud_room(
    tenant: str,
    payg_queue: Mapping[str, Any],
    burst_queues: Iterable[Mapping[str, Any]],
    in_use: Mapping[str, Mapping[str, Decimal]],
    commitments: Mapping[str, TenantCommitment],
) -> CloudRoom | None:
    """Rule payg-burst-headroom's inputs: ``burst_queues`` are the managed queues labelled
    ``platform.io/queue-type=burst`` (``cloud-burst`` and the tenants' leaves), ``in_use``
    what each leaf uses by name (rule payg-in-use). None without ``cloud-burst`` or
    without the tenant's leaf."""
    queues = {(q.get("metadata") or {}).get("name", ""): q for q in burst_queues}
    parent, leaf = queues.get(BURST_QUEUE), queues.get(burst_leaf_name(tenant))
    if parent is None or leaf is None:
        return None
    leaves = [
        name
        for name, q in queues.items()
        if ((q.get("metadata") or {}).get("labels") or {}).get(LABEL_TENANT)
    ]
    used = {name: int((in_use.get(name) or {}).get(GPU, 0)) for name in leaves}
    cloud_groups = _groups(affinity_of(parent), _REQUIRED)
    return CloudRoom(
        quota=capability_gpus(leaf) or 0,
        leaf_in_use=used.get(burst_leaf_name(tenant), 0),
        payg_cloud=int(commitments[tenant].payg_cloud) if tenant in commitments else 0,
        cloud=capability_gpus(parent) or 0,
        cloud_in_use=sum(used.values()),
        cloud_sold=int(sum(c.payg_cloud for c in commitments.values())),
        reaches_cloud=bool(cloud_groups & _groups(affinity_of(payg_queue), _PREFERRED, _REQUIRED)),
    )


def leaf_allocated(queue: Mapping[str, Any]) -> dict[str, Decimal]:
    """A burst leaf's ``status.allocated`` GPUs, for rule payg-in-use."""
    return {GPU: Decimal(allocated_gpus(queue))}


def idc_available(
    pool_gpus: int, sold_gpus: int, spot_gpus: int, allocated_gpus: int, reclaim: bool
) -> int:
    """Rule payg-idc-first, the IDC's share: its unsold GPUs (pool - sold); without
    ``reclaim`` the largest number of them for which rule unsold-reclaim-need asks for
    no spot GPU (it grows with the demand, so a bisection finds it)."""
    unsold = max(0, pool_gpus - sold_gpus)
    if reclaim:
        return unsold
    low, high = 0, unsold
    if unsold_reclaim_need(pool_gpus, sold_gpus, spot_gpus, allocated_gpus, 0):
        return 0
    while low < high:
        middle = (low + high + 1) // 2
        if unsold_reclaim_need(pool_gpus, sold_gpus, spot_gpus, allocated_gpus, middle):
            high = middle - 1
        else:
            low = middle
    return low


def payg_split(growth: int, available: int, headroom: int) -> tuple[int, int]:
    """Rule payg-idc-first: (GPUs from the IDC, GPUs from the cloud) of a growth. With no
    cloud headroom, (growth, 0): the IDC's, judged by the oversell guard as before.
    Otherwise the IDC gives ``available`` at most and the cloud the rest, which
    ``cloud_short_error`` refuses above ``headroom``."""
    if headroom <= 0:
        return growth, 0
    idc = max(0, min(growth, available))
    return idc, growth - idc


def cloud_short_error(
    tenant: str, growth: int, idc: int, cloud: int, room: CloudRoom, reclaim: bool
) -> FieldError:
    """A growth whose cloud part exceeds rule payg-burst-headroom, with the numbers."""
    idc_what = "unsold" if reclaim else "unsold and free of spot jobs (reclaim is off)"
    return FieldError(
        f"capability.{GPU}",
        f"growing tenant {tenant!r}'s pay-as-you-go queue by {growth} GPUs takes {idc} from the "
        f"IDC ({idc_what}) and {cloud} from the cloud, but the cloud has room for "
        f"{burst_headroom(room)}: burst quota {room.quota} - {room.leaf_in_use} its burst queue "
        f"uses - {room.payg_cloud} cloud GPUs its pay-as-you-go grant holds = "
        f"{room.tenant_headroom}; cloud {room.cloud} - {room.cloud_in_use} used by burst queues - "
        f"{room.cloud_sold} granted to pay-as-you-go = {room.cloud_headroom}; grow by at most "
        f"{idc + burst_headroom(room)} (rule payg-idc-first)",
    )


def cloud_part_after(live_gpus: int, cloud_live: int, target_gpus: int, from_cloud: int) -> int:
    """Rule payg-cloud-part: the cloud GPUs of the grant after a resize from ``live_gpus``
    (``cloud_live`` of them cloud) to ``target_gpus``: a growth adds ``from_cloud`` on top;
    a shrink gives back cloud GPUs first."""
    if target_gpus >= live_gpus:
        return cloud_live + from_cloud
    return min(cloud_live, max(0, target_gpus - (live_gpus - cloud_live)))


def cloud_annotation(manifest: dict[str, Any], cloud: int) -> dict[str, Any]:
    """Rule payg-cloud-part, written: the grant's manifest records its cloud GPUs, or
    records none (the apply then drops an earlier record of its field manager)."""
    meta = manifest.setdefault("metadata", {})
    annotations = meta.setdefault("annotations", {})
    if cloud > 0:
        annotations[ANNOTATION_PAYG_CLOUD_GPUS] = str(cloud)
    else:
        annotations.pop(ANNOTATION_PAYG_CLOUD_GPUS, None)
        if not annotations:
            del meta["annotations"]
    return manifest
