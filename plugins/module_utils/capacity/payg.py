# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pay-as-you-go queue sizing.

Rules held here:

* Rule payg-in-use (``payg_in_use``): what a PAYG queue uses is the larger, per
  resource, of its ``status.allocated`` and what its unfinished Volcano Jobs
  ask for (a job the platform just grew the queue for is still Pending and
  allocates nothing yet; it must not be shrunk away).
* Rule payg-resize (``payg_target``): the new capability, never below what is
  in use; deserved always equals capability.
* Rule payg-growth (``payg_growth_gpus``): how many more GPUs a resize grants,
  which is the demand a grow puts on the pool.
* Rule payg-oversell (``payg_oversell_errors``): a growing grant passes the
  oversell guard against every subscription and every other PAYG grant, in its
  IDC part (its cloud GPUs are the burst quota's, rule payg-cloud-part).
* Rule payg-input (``payg_input_errors``): the checks ``payg_capacity`` makes
  before its first request.

``resize_table`` is what ``payg_capacity`` reports and writes for a plan; a
growth's split between the IDC and the cloud is ``capacity.cloud``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..common.names import JOB_FINISHED_PHASES, QUEUE_API, tenant_name_errors
from ..common.objects import differs
from ..common.quantity import GPU, Resources, fmt, parse_resources, render
from ..spot.reclaim import reclaim_option_errors
from ..workload.demand import job_demand
from ..workload.pool import POOL_RESOURCES, TenantCommitment, committed_total, selector_errors
from .cloud import (
    burst_headroom,
    cloud_annotation,
    cloud_part_after,
    cloud_room,
    cloud_short_error,
    leaf_allocated,
    payg_split,
)
from .oversell import oversell_errors


def payg_in_use(
    allocated: Mapping[str, Decimal], jobs: Iterable[Mapping[str, Any]], queue: str
) -> Resources:
    """Rule payg-in-use: max(status.allocated, demand of the queue's
    unfinished jobs), per pool resource."""
    asked = {r: Decimal(0) for r in POOL_RESOURCES}
    for job in jobs:
        if (job.get("spec") or {}).get("queue") != queue:
            continue
        if ((job.get("status") or {}).get("state") or {}).get("phase") in JOB_FINISHED_PHASES:
            continue
        demand = job_demand(job).resources
        for r in POOL_RESOURCES:
            asked[r] += demand[r]
    return {r: max(Decimal(allocated.get(r, 0)), asked[r]) for r in POOL_RESOURCES}


def parse_target(value: object, field: str = "capability") -> Resources:
    """The requested PAYG capacity: a resource list of GPUs, cpu and memory."""
    parsed = parse_resources(value, field, allow_empty=False)
    unknown = [r for r in parsed if r not in POOL_RESOURCES]
    if unknown:
        raise PlatformValidationError(
            [
                FieldError(
                    f"{field}.{r}",
                    f"a pay-as-you-go queue is sized in {', '.join(POOL_RESOURCES)} only",
                )
                for r in unknown
            ]
        )
    return parsed


def payg_target(
    tenant: str,
    live: Mapping[str, Decimal],
    requested: Mapping[str, Decimal] | None,
    in_use: Mapping[str, Decimal],
    field: str = "capability",
) -> Resources:
    """Rule payg-resize: the PAYG queue's new capability (= deserved).

    With ``requested`` the named resources take the requested values and the
    others keep their live values; without it the queue shrinks to what it
    uses (never grows: min(live, in use) per resource). ``live`` holds only
    the resources the live queue limits; one it leaves unlimited stays so
    unless requested. A request below what the queue uses is refused with
    the numbers.
    """
    if requested is None:
        return {r: min(Decimal(v), Decimal(in_use.get(r, 0))) for r, v in live.items()}
    target = {r: Decimal(v) for r, v in live.items()}
    errors = []
    for r, value in requested.items():
        used = Decimal(in_use.get(r, 0))
        if value < used:
            errors.append(
                FieldError(
                    f"{field}.{r}",
                    f"{fmt(value, r)} is below what tenant {tenant!r} uses in its pay-as-you-go queue now "
                    f"({fmt(used, r)}); release first, or ask for {fmt(used, r)} or more (rule payg-resize)",
                )
            )
        target[r] = value
    if errors:
        raise PlatformValidationError(errors)
    return target


def payg_growth_gpus(live: Mapping[str, Decimal], target: Mapping[str, Decimal]) -> int:
    """Rule payg-growth: the GPUs a resize grants beyond the live grant (0 for a shrink)."""
    grow = Decimal(target.get(GPU, 0)) - Decimal(live.get(GPU, 0))
    return int(grow) if grow > 0 else 0


def payg_queue_spec(target: Mapping[str, Decimal]) -> dict[str, Any]:
    """The queue fields a resize writes: deserved always equal to capability."""
    rendered = render({r: v for r, v in target.items() if r in POOL_RESOURCES})
    return {"capability": dict(rendered), "deserved": dict(rendered)}


def plan_payg(
    commitments: Mapping[str, Any],
    jobs: Iterable[Mapping[str, Any]],
    tenant: str | None,
    requested: Mapping[str, Decimal] | None,
) -> list[dict[str, Any]]:
    """The PAYG queues a run resizes: one tenant's (to ``requested``, or shrunk
    to what it uses) or, with no tenant, every tenant's shrunk to what it uses.

    Each entry: tenant, queue, live (granted), in_use, target, growth (GPUs),
    cloud_live and cloud (the grant's cloud GPUs before and after, rule
    payg-cloud-part; a growth is the IDC's until ``PaygResize.split``).
    Refuses an unknown tenant and a target below what is in use, all before
    any change. ``commitments`` is ``pool.commitments_from_queues``' result.
    """
    job_list = list(jobs)
    with_payg = sorted(t for t, c in commitments.items() if c.payg_queue)
    if tenant is not None and tenant not in with_payg:
        known = ", ".join(with_payg) or "none"
        raise PlatformValidationError(
            [
                FieldError(
                    "tenant",
                    f"{tenant!r} has no pay-as-you-go queue (a managed Queue labelled platform.io/tenant={tenant} and "
                    f"platform.io/queue-type=payg); tenants with one: {known}",
                )
            ]
        )
    rows = []
    errors: list[FieldError] = []
    for name in [tenant] if tenant is not None else with_payg:
        c = commitments[name]
        in_use = payg_in_use(c.payg_allocated, job_list, c.payg_queue)
        live = {r: c.payg_granted[r] for r in c.payg_limited}
        try:
            target = payg_target(name, live, requested, in_use)
        except PlatformValidationError as exc:
            errors.extend(exc.errors)
            continue
        cloud_live = int(c.payg_cloud)
        rows.append(
            {
                "tenant": name,
                "queue": c.payg_queue,
                "live": live,
                "in_use": in_use,
                "target": target,
                "growth": payg_growth_gpus(live, target),
                "cloud_live": cloud_live,
                "cloud": cloud_part_after(
                    int(live.get(GPU, 0)), cloud_live, int(target.get(GPU, 0)), 0
                ),
            }
        )
    if errors:
        raise PlatformValidationError(errors)
    return rows


def payg_queue_manifest(
    queue: str, target: Mapping[str, Decimal], cloud: int = 0
) -> dict[str, Any]:
    """A partial Queue for server-side apply: only the fields a resize owns (the
    grant's cloud GPUs among them, rule payg-cloud-part)."""
    manifest = {
        "apiVersion": QUEUE_API,
        "kind": "Queue",
        "metadata": {"name": queue},
        "spec": payg_queue_spec(target),
    }
    return cloud_annotation(manifest, cloud)


@dataclass
class PaygResize:
    """What one payg_capacity run reports and writes: ``table`` has a row per
    queue looked at, ``changes`` the (plan row, manifest) of each queue whose
    value changes, ``before``/``after`` their fields for the diff."""

    table: list[dict[str, Any]] = field(default_factory=list)
    changes: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)

    @property
    def growth(self) -> int:
        """The GPUs the changed queues grant beyond what they grant now."""
        return sum(row["growth"] for row, _unused in self.changes)

    @property
    def idc_growth(self) -> int:
        """The part of ``growth`` that comes out of the IDC (rule payg-idc-first)."""
        return sum(row["growth"] - row.get("from_cloud", 0) for row, _unused in self.changes)

    def split(self, queue: str, from_idc: int, from_cloud: int) -> None:
        """Rule payg-idc-first's answer for the growing ``queue``: its row, its report
        and its manifest say how many GPUs come from the IDC and how many from the
        cloud, and the grant's cloud GPUs grow by the cloud part (rule payg-cloud-part)."""
        for row, manifest in self.changes:
            if row["queue"] != queue:
                continue
            row.update(from_idc=from_idc, from_cloud=from_cloud)
            row["cloud"] = row.get("cloud_live", 0) + from_cloud
            cloud_annotation(manifest, row["cloud"])
        for entry in self.table:
            if entry["queue"] == queue:
                entry.update(from_idc=from_idc, from_cloud=from_cloud)
                entry["cloud_gpus"] = next(
                    row["cloud"] for row, _unused in self.changes if row["queue"] == queue
                )

    @property
    def growing(self) -> list[dict[str, Any]]:
        """The changed queues that grow in some resource (these meet the oversell guard)."""
        return [
            row
            for row, _unused in self.changes
            if any(v > row["live"].get(r, 0) for r, v in row["target"].items())
        ]

    @property
    def updated(self) -> list[str]:
        return [manifest["metadata"]["name"] for _unused, manifest in self.changes]


def resize_table(
    rows: Iterable[Mapping[str, Any]], queues: Iterable[Mapping[str, Any]]
) -> PaygResize:
    """For ``plan_payg``'s rows and the live queues: the report rows, and the
    queues whose capability or deserved differ from the target."""
    live_specs = {q["metadata"]["name"]: q.get("spec") or {} for q in queues}
    resize = PaygResize()
    for row in rows:
        desired = payg_queue_spec(row["target"])
        live_spec = live_specs.get(row["queue"]) or {}
        live = {k: live_spec.get(k) for k in desired}
        changed = differs(desired, live)
        resize.table.append(
            {
                "tenant": row["tenant"],
                "queue": row["queue"],
                "old": dict(render(row["live"])),
                "in_use": dict(render(row["in_use"])),
                "new": dict(render(row["target"])),
                "growth": row["growth"],
                # Rule payg-idc-first: where the growth comes from; rule payg-cloud-part:
                # the cloud GPUs of the new grant.
                "from_idc": row["growth"] - row.get("from_cloud", 0),
                "from_cloud": row.get("from_cloud", 0),
                "cloud_gpus": row.get("cloud", 0),
                "changed": changed,
                # Rule payg-grace: an unused grant kept until then (capacity.grace).
                **({"kept_until": row["kept_until"]} if "kept_until" in row else {}),
            }
        )
        if changed:
            resize.changes.append(
                (dict(row), payg_queue_manifest(row["queue"], row["target"], row.get("cloud", 0)))
            )
            resize.before[row["queue"]] = live
            resize.after[row["queue"]] = desired
    return resize


def payg_oversell_errors(
    growing: Sequence[Mapping[str, Any]],
    pool: Mapping[str, Decimal],
    commitments: Mapping[str, TenantCommitment],
) -> list[FieldError]:
    """Rule payg-oversell: each growing grant, in the resources its IDC part grows
    (the grant less its cloud GPUs, rule payg-cloud-part), must fit in the pool beside
    every subscription (its own tenant's included) and every other tenant's PAYG
    grant (rule oversell-guard)."""
    errors: list[FieldError] = []
    for row in growing:
        target = {**row["target"]}
        live = {**row["live"]}
        if GPU in target:
            target[GPU] = Decimal(target[GPU]) - row.get("cloud", 0)
            live[GPU] = Decimal(live.get(GPU, 0)) - row.get("cloud_live", 0)
        grown = {r: v for r, v in target.items() if v > live.get(r, 0)}
        errors += oversell_errors(
            "capability",
            pool,
            committed_total(commitments.values(), skip_payg_of=row["tenant"]),
            grown,
            what=f"the pay-as-you-go queue of tenant {row['tenant']!r}",
        )
    return errors


def no_reclaim_error(
    growth: int,
    shortfall: int,
    unsold: int,
    spot: int,
    field: str = f"capability.{GPU}",
    sale: str = "growing by",
) -> FieldError:
    """A growth that needs spot GPUs reclaimed while ``reclaim`` is off (rule
    unsold-reclaim-need: ``unsold`` GPUs nobody has bought, ``spot`` held by spot jobs).
    ``field`` and ``sale`` name what sells (a PAYG queue's growth by default)."""
    return FieldError(
        field,
        f"{sale} {growth} GPUs needs {shortfall} spot GPUs reclaimed: {unsold} GPUs are "
        f"unsold and spot jobs hold {spot}; set reclaim: true to reclaim spot jobs first",
    )


def growth_reason(
    params: Mapping[str, Any], growing: Sequence[Mapping[str, Any]], growth: int
) -> str:
    """What a growth's reclaim is for, in its Events and history."""
    tenant = params.get("tenant") or ", ".join(row["tenant"] for row in growing)
    return (
        params.get("demand_reason") or f"pay-as-you-go growth of tenant {tenant} by {growth} GPUs"
    )


def payg_input_errors(params: Mapping[str, Any]) -> list[FieldError]:
    """Rule payg-input: a capability (with a tenant) or fit_to_use; a DNS-1123
    tenant name; a capability of pool resources; a node selector; the reclaim
    options."""
    if params["capability"] is None and not params["fit_to_use"]:
        return [
            FieldError(
                "capability", "give the new capability (with tenant), or set fit_to_use: true"
            )
        ]
    errors: list[FieldError] = []
    if params["tenant"] is not None:
        errors.extend(tenant_name_errors(params["tenant"], "tenant"))
    if params["capability"] is not None:
        try:
            parse_target(params["capability"])
        except PlatformValidationError as exc:
            errors.extend(exc.errors)
    errors.extend(selector_errors(params["node_selector"]))
    errors.extend(reclaim_option_errors(params))
    return errors


def validate_payg_input(params: Mapping[str, Any]) -> None:
    """``payg_input_errors``, raising PlatformValidationError."""
    raise_if(payg_input_errors(params))


def cloud_split(
    resize: PaygResize,
    tenant: str,
    queues: Sequence[Mapping[str, Any]],
    burst: Sequence[Mapping[str, Any]],
    jobs: Sequence[Mapping[str, Any]],
    commitments: Mapping[str, TenantCommitment],
    available: int,
    reclaim: bool,
) -> tuple[str, int, int, list[FieldError]]:
    """Rule payg-idc-first for the one tenant's growth that the IDC cannot give in
    full (``available`` GPUs): the rest from the cloud, up to rule payg-burst-headroom
    over the burst queues ``burst``. Without cloud headroom the growth stays the IDC's.
    Returns the growing queue, its GPUs from the IDC and from the cloud, and the error
    when the cloud's part exceeds its headroom."""
    growth = resize.growth
    row = next(r for r, _unused in resize.changes if r["tenant"] == tenant)
    payg_queue = next(q for q in queues if q["metadata"]["name"] == row["queue"])
    in_use = {
        q["metadata"]["name"]: payg_in_use(leaf_allocated(q), jobs, q["metadata"]["name"])
        for q in burst
    }
    room = cloud_room(tenant, payg_queue, burst, in_use, commitments)
    headroom = burst_headroom(room)
    from_idc, from_cloud = payg_split(growth, available, headroom)
    errors = []
    if room is not None and from_cloud > headroom:
        errors.append(cloud_short_error(tenant, growth, from_idc, from_cloud, room, reclaim))
    return row["queue"], from_idc, from_cloud, errors
