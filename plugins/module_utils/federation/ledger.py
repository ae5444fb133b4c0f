# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One ledger for a federation: the usage each member's Prometheus recorded, merged into
the facts ``metering`` bills (pure: no I/O; the reads are ``federation/ledger_io``).

Rule held here:

* Rule federation-ledger (``merge_member_usage``): every series of usage, spot jobs and
  unclaimed GPUs a member recorded takes the member's location as its ``location`` (rule
  federation-member: a GPU-second in a cloud member is a cloud GPU-second, whatever its
  node's label says) and the member's name as ``member``; the subscription sizes come from
  the IDC members only, each tenant's size counted once at a time; the tenants are
  Karmada's Namespaces (the templates every member's copy is made from); members whose
  rules' intervals differ are refused naming the member (rule
  ``federation_ledger_errors``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from ..common.errors import FieldError, raise_if
from ..metering.prices import read_decimal
from ..metering.report import UsageFacts
from .members import IDC, Member, member_errors

LOCATION_LABEL = "location"
MEMBER_LABEL = "member"


@dataclass(frozen=True)
class MemberUsage:
    """What one member's Prometheus recorded over the period (its ``namespaces`` are not
    used: the federation's tenants are Karmada's)."""

    member: Member
    facts: UsageFacts


def asked_members(
    clusters: Iterable[Mapping[str, Any]], asked: Iterable[str]
) -> list[Mapping[str, Any]]:
    """The Karmada ``Cluster`` of each member asked for, by name; raises naming each asked
    member Karmada does not have, and each one rule federation-member refuses (a member
    not labelled idc or cloud cannot be billed: its GPU-seconds would have no line)."""
    by_name = {(c.get("metadata") or {}).get("name"): c for c in clusters}
    known = ", ".join(sorted(n for n in by_name if n)) or "none"
    errors = [
        FieldError(
            f"members.{name}",
            f"is not a member of the federation: Karmada has no Cluster {name!r} "
            f"(its members: {known}) (rule federation-ledger)",
        )
        for name in asked
        if name not in by_name
    ]
    raise_if(errors)
    wanted = sorted(asked)
    raise_if([e for name in wanted for e in member_errors(by_name[name])])
    return [by_name[name] for name in wanted]


def federation_ledger_errors(readings: Sequence[MemberUsage]) -> list[FieldError]:
    """Members whose rules are evaluated at another interval than the first member's (by
    name): a sample stands for one interval (rule exact-integral), and one ledger has one."""
    if not readings:
        return []
    first = readings[0]
    return [
        FieldError(
            f"members.{r.member.name}",
            f"its metering rules are evaluated every {r.facts.resolution} s and "
            f"{first.member.name}'s every {first.facts.resolution} s: one ledger has one "
            "resolution; give every member the same monitoring_metering_interval "
            "(rule federation-ledger)",
        )
        for r in readings[1:]
        if r.facts.resolution != first.facts.resolution
    ]


def _located(series: Mapping[str, Any], member: Member) -> dict[str, Any]:
    metric = dict(series.get("metric") or {})
    metric[LOCATION_LABEL] = member.location
    metric[MEMBER_LABEL] = member.name
    return {**series, "metric": metric}


def _count(value: object) -> Decimal:
    number = read_decimal(value)
    return number if number is not None and number > 0 else Decimal(0)


def _chosen_members(readings: Sequence[MemberUsage]) -> dict[tuple[str, float], str]:
    """(tenant, point) -> the one IDC member whose sizes count there: the one that saw the
    subscription most often in the point's step (the first by name on a tie)."""
    seen: dict[tuple[str, float], dict[str, Decimal]] = {}
    for reading in readings:
        for series in reading.facts.subscription_sizes:
            tenant = (series.get("metric") or {}).get("tenant", "")
            for stamp, value in series.get("values") or []:
                counts = seen.setdefault((tenant, float(stamp)), {})
                name = reading.member.name
                counts[name] = counts.get(name, Decimal(0)) + _count(value)
    return {
        key: min(counts, key=lambda name: (-counts[name], name)) for key, counts in seen.items()
    }


def sizes_once(readings: Sequence[MemberUsage]) -> tuple[dict[str, Any], ...]:
    """The subscription-size series of the IDC members, each tenant's points kept from one
    member only (``_chosen_members``). A subscription is bought once for the federation,
    and every IDC member holds a copy of its Queue (propagated from one Karmada template):
    summing them would bill it once per member."""
    idc = [r for r in readings if r.member.location == IDC]
    chosen = _chosen_members(idc)
    out = []
    for reading in idc:
        for series in reading.facts.subscription_sizes:
            tenant = (series.get("metric") or {}).get("tenant", "")
            kept = [
                point
                for point in series.get("values") or []
                if chosen.get((tenant, float(point[0]))) == reading.member.name
            ]
            if kept:
                out.append({**_located(series, reading.member), "values": kept})
    return tuple(out)


def merge_member_usage(
    readings: Sequence[MemberUsage], namespaces: Iterable[Mapping[str, Any]]
) -> UsageFacts:
    """Rule federation-ledger: the facts of one ledger from every member's readings and
    Karmada's Namespaces; raises naming a member whose rules' interval differs.

    Usage, spot-job and unclaimed series are taken from every member, located where the
    member is: the location of a GPU-second is its member's (rule federation-member), as
    a member's nodes need not carry ``platform.io/node-location`` themselves. The
    subscription sizes are the IDC members' only, counted once (``sizes_once``): a
    subscription is IDC capacity (rule ledger-line bills cloud GPU-seconds on the cloud
    line, never against a subscription), bought once whatever the number of members."""
    ordered = sorted(readings, key=lambda r: r.member.name)
    raise_if(federation_ledger_errors(ordered))
    merged = UsageFacts(
        period=ordered[0].facts.period if ordered else None,
        namespaces=tuple(namespaces),
        resolution=ordered[0].facts.resolution if ordered else Decimal(0),
        queries=sum(r.facts.queries for r in ordered),
    )

    def located(key: str) -> tuple[dict[str, Any], ...]:
        return tuple(_located(s, r.member) for r in ordered for s in getattr(r.facts, key))

    return replace(
        merged,
        tenant_billing=located("tenant_billing"),
        spot_jobs=located("spot_jobs"),
        unclaimed=located("unclaimed"),
        subscription_sizes=sizes_once(ordered),
    )
