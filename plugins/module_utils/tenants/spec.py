# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant as the ``tenant`` and ``team_queue`` modules take it. Pure.

``parse_tenant_spec`` checks the whole input and raises one
``PlatformValidationError`` carrying every problem, before anything is read
or written. ``tenants.plan.plan_tenant`` then adds what live state says (running jobs,
allocated resources, team queues made by ``team_queue``) and returns the
desired objects, or every rule the change would break. The queues a tenant gets are
``tenants.tenant_queues``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..common import quantity
from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..common.names import (
    QUEUE_TYPE_SUBSCRIPTION,
    queue_name,
    team_name_errors,
    tenant_name_errors,
)
from ..hybrid.vgpu import vgpu_purchase
from .bounds import TenantBounds, bounds_from
from .network import (
    DEFAULT_EGRESS_CIDRS,
    ClusterNetworks,
    Network,
    egress_blocks,
    parse_cidr,
)
from .rbac import default_subjects, subject_errors
from .tenant_queues import TeamSpec, input_tree_errors

TEAM_FIELDS = ("name", "deserved", "capability", "guarantee")


@dataclass
class TenantSpec:
    name: str
    subscription: quantity.Resources
    subscription_guarantee: quantity.Resources = field(default_factory=dict)
    payg: quantity.Resources | None = None
    teams: list[TeamSpec] | None = None
    subjects: list[dict[str, str]] = field(default_factory=list)
    egress_cidrs: list[Network] = field(default_factory=list)
    pod_cidr: Network | None = None  # None: the cluster's own (rule cluster-networks)
    service_cidr: Network | None = None
    egress_to_nodes: bool = False
    egress_to_metadata: bool = False
    allow_critical: bool = False
    bounds: TenantBounds | None = None  # None: derived from the purchase (rule tenant-bounds)
    vgpu: quantity.Resources | None = None  # None: no vGPU bought (rule vgpu-purchase)


def _resources(
    raw: object, path: str, errors: list[FieldError], allow_empty: bool = True
) -> quantity.Resources:
    try:
        return quantity.parse_resources(raw, path, allow_empty=allow_empty)
    except PlatformValidationError as exc:
        errors.extend(exc.errors)
        return {}


def kept_guarantee(
    spec: TenantSpec, given: object, live_queues: Mapping[str, Mapping[str, Any]]
) -> TenantSpec:
    """Rule guarantee-kept: a ``subscription_guarantee`` left out keeps the live
    subscription queue's guarantee, as a left-out ``payg`` keeps the live grant and
    left-out ``teams`` keep the team queues. A purchase flow that only changes sizes or
    networks (``tenant_update.yml``) then never drops a guarantee its teams still name;
    an empty mapping given says "no guarantee"."""
    if given is not None:
        return spec
    live = live_queues.get(queue_name(spec.name, QUEUE_TYPE_SUBSCRIPTION)) or {}
    guarantee = ((live.get("spec") or {}).get("guarantee") or {}).get("resource") or {}
    if not guarantee:
        return spec
    kept = quantity.parse_resources(guarantee, "live subscription queue guarantee")
    return replace(spec, subscription_guarantee=kept)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def parse_team(tenant: str, raw: object, path: str, errors: list[FieldError]) -> TeamSpec | None:
    """One team entry: {name, deserved, capability, guarantee}. ``path`` ""
    means the team's fields are top-level options (``team_queue``)."""
    if not isinstance(raw, Mapping):
        errors.append(
            FieldError(
                path or "team",
                f"{raw!r} must be a mapping with name, deserved, capability, guarantee",
            )
        )
        return None
    for key in sorted(set(raw) - set(TEAM_FIELDS)):
        errors.append(
            FieldError(_join(path, key), f"is not a team field; use {', '.join(TEAM_FIELDS)}")
        )
    name_errors = team_name_errors(tenant, raw.get("name"), _join(path, "name"))
    errors += name_errors
    team = TeamSpec(
        name=str(raw.get("name")),
        deserved=_resources(raw.get("deserved"), _join(path, "deserved"), errors),
        capability=_resources(raw.get("capability"), _join(path, "capability"), errors),
        guarantee=_resources(raw.get("guarantee"), _join(path, "guarantee"), errors),
        source=path,
    )
    return None if name_errors else team


def parse_teams(
    tenant: str, raw: object, field_name: str = "teams"
) -> tuple[list[TeamSpec] | None, list[FieldError]]:
    if raw is None:
        return None, []
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return None, [FieldError(field_name, f"{raw!r} must be a list of teams")]
    errors: list[FieldError] = []
    teams: list[TeamSpec] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(raw):
        team = parse_team(tenant, entry, f"{field_name}[{i}]", errors)
        if team is None:
            continue
        if team.name in seen:
            errors.append(
                FieldError(
                    f"{field_name}[{i}].name",
                    f"{team.name!r} is already {field_name}[{seen[team.name]}]; team names are unique",
                )
            )
            continue
        seen[team.name] = i
        teams.append(team)
    return teams, errors


def parse_egress(
    egress_cidrs: object, pod_cidr: object, service_cidr: object
) -> tuple[list[Network], Network | None, Network | None, list[FieldError]]:
    """The egress CIDRs and the pod and service CIDRs the caller gave (None: read the
    cluster's); each must be a CIDR. Whether an egress CIDR reaches into the cluster is
    ``network.egress_blocks``' decision (``given_egress_errors`` and ``plan_tenant``)."""
    errors: list[FieldError] = []
    given: list[Network | None] = []
    for value, path in ((pod_cidr, "pod_cidr"), (service_cidr, "service_cidr")):
        net = None
        if value is not None:
            net, errs = parse_cidr(value, path)
            errors += errs
        given.append(net)
    if egress_cidrs is None:
        egress_cidrs = list(DEFAULT_EGRESS_CIDRS)
    egress, egress_errors = parse_cidrs(egress_cidrs, "egress_cidrs")
    return egress, given[0], given[1], errors + egress_errors


def parse_cidrs(raw: object, field_name: str) -> tuple[list[Network], list[FieldError]]:
    """A list of CIDRs (rule cidr each), the bad ones named ``<field_name>[i]``."""
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return [], [FieldError(field_name, f"{raw!r} must be a list of CIDRs")]
    nets: list[Network] = []
    errors: list[FieldError] = []
    for i, value in enumerate(raw):
        net, errs = parse_cidr(value, f"{field_name}[{i}]")
        errors += errs
        if net is not None:
            nets.append(net)
    return nets, errors


def given_egress_errors(
    egress: Sequence[Network],
    pod_cidr: Network | None,
    service_cidr: Network | None,
    egress_to_metadata: bool,
) -> list[FieldError]:
    """Rule egress-outside-cluster against what is known before any request (the pod and
    service CIDRs given, the metadata address), so that such an egress CIDR is reported with
    the other input errors; ``plan_tenant`` judges it again with the cluster's networks."""
    given = ClusterNetworks(
        pods=[pod_cidr] if pod_cidr is not None else [],
        services=[service_cidr] if service_cidr is not None else [],
    )
    return egress_blocks(egress, given, egress_to_metadata=egress_to_metadata)[1]


def parse_tenant_spec(params: Mapping[str, Any]) -> TenantSpec:
    """Check every input of ``state: present``; raise once with every error."""
    errors: list[FieldError] = []
    name = params.get("name")
    errors += tenant_name_errors(name, "name")
    tenant = name if isinstance(name, str) else ""
    subscription = _resources(params.get("subscription"), "subscription", errors, allow_empty=False)
    if params.get("subscription") is not None and subscription and quantity.GPU not in subscription:
        errors.append(
            FieldError(
                f"subscription.{quantity.GPU}",
                "is missing; the purchase names its GPUs (0 is allowed)",
            )
        )
    if params.get("subscription") is None:
        errors.append(
            FieldError("subscription", "is required: the purchased nvidia.com/gpu, cpu and memory")
        )
    guarantee = _resources(params.get("subscription_guarantee"), "subscription_guarantee", errors)
    payg = None
    if params.get("payg") is not None:
        payg = _resources(params.get("payg"), "payg", errors)
    teams, team_errors = parse_teams(tenant, params.get("teams"))
    errors += team_errors
    subjects = params.get("subjects")
    if subjects is None:
        subjects = default_subjects(tenant)
    errors += subject_errors(subjects)
    egress, pod_cidr, service_cidr, egress_errors = parse_egress(
        params.get("egress_cidrs"), params.get("pod_cidr"), params.get("service_cidr")
    )
    errors += egress_errors
    errors += given_egress_errors(
        egress, pod_cidr, service_cidr, bool(params.get("egress_to_metadata", False))
    )
    if tenant and subscription and teams and not tenant_name_errors(name, "name"):
        errors += input_tree_errors(tenant, subscription, guarantee, teams)
    bounds = bounds_from(params.get("bounds"), subscription, payg, errors)
    vgpu = vgpu_purchase(params.get("vgpu"), "vgpu", errors)
    raise_if(errors)
    return TenantSpec(
        name=tenant,
        subscription=subscription,
        subscription_guarantee=guarantee,
        payg=payg,
        teams=teams,
        subjects=[dict(s) for s in subjects],
        egress_cidrs=egress,
        pod_cidr=pod_cidr,
        service_cidr=service_cidr,
        egress_to_nodes=bool(params.get("egress_to_nodes", False)),
        egress_to_metadata=bool(params.get("egress_to_metadata", False)),
        allow_critical=bool(params.get("allow_critical", False)),
        bounds=bounds,
        vgpu=vgpu,
    )
