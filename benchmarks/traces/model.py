# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trace: a cluster, its tenants, the jobs they submit over a day and the timed
purchases, resizes and deletions (docs/trace-replay.md). Pure: no I/O (``load`` reads
files).

Every key of the YAML file is described once, here (``SECTIONS``); rule trace-keys
(``validate``) refuses any other. The classes are built from a mapping that passed
``validate``; ``as_mapping`` gives the mapping back, in the documented key order.

A tenant's subscription, teams, pay-as-you-go grant and whether it may run critical jobs
change with the events, as the playbooks change them (``tenant_history``): ``create``
(tenant_create.yml) starts a tenant, ``update`` (tenant_update.yml) sets its subscription,
replaces its teams only when ``tenant_teams`` is given, keeps its pay-as-you-go grant
unless ``tenant_payg_gpus`` is given, and sets ``tenant_allow_critical`` to what it says
(the playbook's default, false, when left out); ``delete`` (tenant_delete.yml) ends it.
Events at the same second apply in the order they are listed, and before the jobs of
that second.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    NODE_LOCATIONS,
    QUEUE_TYPE_PAYG,
    QUEUE_TYPE_SPOT,
    QUEUE_TYPE_SUBSCRIPTION,
    QUEUE_TYPE_TEAM,
    queue_name,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.quantity import GPU
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.placement import (
    CLOUD_PLACEMENTS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.spot_price import price_text

IDC = "idc"
CLOUD = "cloud"
# The playbook each action runs, with the event's vars as its variables.
ACTIONS = {
    "create": "tenant_create.yml",
    "update": "tenant_update.yml",
    "delete": "tenant_delete.yml",
}
# The playbook variables the trace itself reads (the others are passed on as they are).
VAR_TENANT = "tenant_name"
VAR_GPUS = "tenant_gpus"
VAR_PAYG = "tenant_payg_gpus"
VAR_TEAMS = "tenant_teams"
VAR_CRITICAL = "tenant_allow_critical"
VAR_CONFIRM = "tenant_confirm"
VAR_QUANTITIES = ("tenant_cpu", "tenant_memory")
# Before every event: the tenants of the trace's own list exist from the start.
START = -math.inf


@dataclass(frozen=True)
class Section:
    """The keys one kind of mapping in the file takes: key -> what it holds."""

    what: str
    required: Mapping[str, str]
    optional: Mapping[str, str] = field(default_factory=dict)

    @property
    def keys(self) -> tuple[str, ...]:
        return (*self.required, *self.optional)


SECTIONS: dict[str, Section] = {
    "trace": Section(
        "a trace",
        {
            "cluster": "the nodes (nodes: a list of count, gpus and group)",
            "jobs": "the jobs, each submitted at its own second",
        },
        {
            "tenants": "the tenants that exist from the start",
            "events": "timed purchases, resizes and deletions, in the order they happen",
        },
    ),
    "cluster": Section("the cluster", {"nodes": "a list of node kinds: count, gpus and group"}),
    "nodes": Section(
        "a kind of node",
        {"count": "how many such nodes (1 or more)", "gpus": "the GPUs of each (1 or more)"},
        {"group": "idc (the default) or cloud"},
    ),
    "tenant": Section(
        "a tenant",
        {
            "name": "the tenant's name (a DNS-1123 label)",
            "subscription_gpus": "the GPUs it subscribes (0 or more)",
        },
        {
            "teams": "team name -> the GPUs it deserves, at most the subscription in all",
            "payg_gpus": "its pay-as-you-go grant in GPUs (default 0)",
            "allow_critical": "whether it may run critical jobs (default false)",
        },
    ),
    "job": Section(
        "a job",
        {
            "at": "when it is submitted, in seconds from the start (0 or more)",
            "tenant": "the tenant that submits it",
            "billing": "subscription, payg or spot: the queue it goes to",
            "class": "critical, large, normal, debug or spot",
            "kind": "pytorch_ddp, ps_worker, mpi, spark, ray or single",
            "replicas": "its GPU pods (1 or more)",
            "gpus_per_pod": "the GPUs of each pod (1 or more)",
            "duration_s": "how long it runs once all its pods run, in seconds (more than 0)",
        },
        {
            "team": "the team queue of a subscription job",
            "spot_price": "the price per GPU-hour a spot job bids (spot jobs only)",
            "placement": "local-only, local-first or cloud-ok",
        },
    ),
    "event": Section(
        "an event",
        {
            "at": "when it happens, in seconds from the start (0 or more)",
            "action": "create, update or delete: tenant_create.yml, tenant_update.yml or "
            "tenant_delete.yml",
            "vars": "the playbook's variables, as -e would give them",
        },
    ),
}


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class Nodes:
    """``count`` nodes of ``gpus`` GPUs each, in node group ``group`` (idc or cloud)."""

    count: int
    gpus: int
    group: str = IDC

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Nodes:
        return cls(count=data["count"], gpus=data["gpus"], group=data.get("group", IDC))

    def as_mapping(self) -> dict[str, Any]:
        out: dict[str, Any] = {"count": self.count, "gpus": self.gpus}
        if self.group != IDC:
            out["group"] = self.group
        return out


@dataclass(frozen=True)
class Cluster:
    nodes: tuple[Nodes, ...]

    def gpus(self, groups: Iterable[str] = NODE_LOCATIONS) -> int:
        """The GPUs of the nodes in ``groups``."""
        wanted = set(groups)
        return sum(n.count * n.gpus for n in self.nodes if n.group in wanted)

    @property
    def idc_gpus(self) -> int:
        """What subscriptions and pay-as-you-go grants are sold from (the pool leaves
        cloud nodes out)."""
        return self.gpus((IDC,))

    def largest_node(self, groups: Iterable[str]) -> int:
        """The GPUs of the largest node in ``groups`` (0: none)."""
        wanted = set(groups)
        return max((n.gpus for n in self.nodes if n.group in wanted and n.count), default=0)

    def pods_that_fit(self, gpus_per_pod: int, groups: Iterable[str]) -> int:
        """How many pods of ``gpus_per_pod`` GPUs the nodes in ``groups`` hold at once."""
        wanted = set(groups)
        return sum(n.count * (n.gpus // gpus_per_pod) for n in self.nodes if n.group in wanted)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Cluster:
        return cls(nodes=tuple(Nodes.from_mapping(n) for n in data["nodes"]))

    def as_mapping(self) -> dict[str, Any]:
        return {"nodes": [n.as_mapping() for n in self.nodes]}


@dataclass(frozen=True)
class Tenant:
    """A tenant that exists from the start: ``teams`` maps team name -> deserved GPUs."""

    name: str
    subscription_gpus: int
    teams: Mapping[str, int] = field(default_factory=dict, hash=False)
    payg_gpus: int = 0
    allow_critical: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "teams", _frozen(self.teams))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Tenant:
        return cls(
            name=data["name"],
            subscription_gpus=data["subscription_gpus"],
            teams=data.get("teams") or {},
            payg_gpus=data.get("payg_gpus", 0),
            allow_critical=data.get("allow_critical", False),
        )

    def as_mapping(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "subscription_gpus": self.subscription_gpus}
        if self.teams:
            out["teams"] = dict(self.teams)
        if self.payg_gpus:
            out["payg_gpus"] = self.payg_gpus
        if self.allow_critical:
            out["allow_critical"] = True
        return out


@dataclass(frozen=True)
class Job:
    """One job; ``job_class`` is the file's ``class``."""

    at: float
    tenant: str
    billing: str
    job_class: str
    kind: str
    replicas: int
    gpus_per_pod: int
    duration_s: float
    team: str | None = None
    spot_price: str | None = None
    placement: str | None = None

    @property
    def gpus(self) -> int:
        return self.replicas * self.gpus_per_pod

    @property
    def node_groups(self) -> tuple[str, ...]:
        """Where its pods may run: cloud nodes too only with a cloud placement (without
        one a pod does not tolerate the Virtual Kubelet taint; ``hybrid/placement``)."""
        return (IDC, CLOUD) if self.placement in CLOUD_PLACEMENTS else (IDC,)

    @property
    def queue_type(self) -> str:
        if self.billing == QUEUE_TYPE_SUBSCRIPTION and self.team:
            return QUEUE_TYPE_TEAM
        return {"payg": QUEUE_TYPE_PAYG, "spot": QUEUE_TYPE_SPOT}.get(
            self.billing, QUEUE_TYPE_SUBSCRIPTION
        )

    @property
    def queue(self) -> str:
        """The queue it is submitted to (CONVENTIONS.md)."""
        return queue_name(self.tenant, self.queue_type, self.team)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Job:
        price = data.get("spot_price")
        return cls(
            at=data["at"],
            tenant=data["tenant"],
            billing=data["billing"],
            job_class=data["class"],
            kind=data["kind"],
            replicas=data["replicas"],
            gpus_per_pod=data["gpus_per_pod"],
            duration_s=data["duration_s"],
            team=data.get("team"),
            spot_price=None if price is None else price_text(price),
            placement=data.get("placement"),
        )

    def as_mapping(self) -> dict[str, Any]:
        out: dict[str, Any] = {"at": self.at, "tenant": self.tenant, "billing": self.billing}
        if self.team is not None:
            out["team"] = self.team
        out |= {
            "class": self.job_class,
            "kind": self.kind,
            "replicas": self.replicas,
            "gpus_per_pod": self.gpus_per_pod,
            "duration_s": self.duration_s,
        }
        if self.spot_price is not None:
            out["spot_price"] = self.spot_price
        if self.placement is not None:
            out["placement"] = self.placement
        return out


@dataclass(frozen=True)
class Event:
    """A playbook run at ``at``: ``action`` names it (``ACTIONS``), ``vars`` are its
    variables."""

    at: float
    action: str
    vars: Mapping[str, Any] = field(hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "vars", _frozen(self.vars))

    @property
    def tenant(self) -> str:
        return str(self.vars[VAR_TENANT])

    @property
    def playbook(self) -> str:
        return ACTIONS[self.action]

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Event:
        return cls(at=data["at"], action=data["action"], vars=data["vars"])

    def as_mapping(self) -> dict[str, Any]:
        return {"at": self.at, "action": self.action, "vars": dict(self.vars)}


@dataclass(frozen=True)
class Trace:
    cluster: Cluster
    tenants: tuple[Tenant, ...] = ()
    jobs: tuple[Job, ...] = ()
    events: tuple[Event, ...] = ()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Trace:
        """The trace of a mapping that passed ``validate``."""
        return cls(
            cluster=Cluster.from_mapping(data["cluster"]),
            tenants=tuple(Tenant.from_mapping(t) for t in data.get("tenants") or ()),
            jobs=tuple(Job.from_mapping(j) for j in data["jobs"]),
            events=tuple(Event.from_mapping(e) for e in data.get("events") or ()),
        )

    def as_mapping(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cluster": self.cluster.as_mapping()}
        out["tenants"] = [t.as_mapping() for t in self.tenants]
        out["jobs"] = [j.as_mapping() for j in self.jobs]
        if self.events:
            out["events"] = [e.as_mapping() for e in self.events]
        return out

    def history(self) -> dict[str, list[Change]]:
        return tenant_history(enumerate(self.tenants), enumerate(self.events))


# --------------------------------------------------------------------------
# Tenants over time
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class TenantState:
    """What a tenant has bought at one time."""

    subscription_gpus: int
    teams: Mapping[str, int] = field(hash=False)
    payg_gpus: int = 0
    allow_critical: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "teams", _frozen(self.teams))

    @property
    def sold_gpus(self) -> int:
        """What it takes from the IDC's pool: its subscription and pay-as-you-go grant."""
        return self.subscription_gpus + self.payg_gpus


@dataclass(frozen=True)
class Change:
    """A tenant's state from ``at`` on, set by ``source`` (``tenants[0]``, ``events[3]``);
    ``state`` None: it does not exist (deleted)."""

    at: float
    source: str
    state: TenantState | None


def teams_of(tenant_teams: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The playbooks' ``tenant_teams`` (name, deserved) as team name -> deserved GPUs."""
    return {t["name"]: int((t.get("deserved") or {}).get(GPU, 0)) for t in tenant_teams}


def state_of(tenant: Tenant) -> TenantState:
    return TenantState(
        tenant.subscription_gpus, tenant.teams, tenant.payg_gpus, tenant.allow_critical
    )


def after_event(state: TenantState | None, event: Event) -> TenantState | None:
    """The tenant's state after ``event`` ran its playbook (see the module docstring)."""
    v = event.vars
    if event.action == "delete":
        return None
    teams = state.teams if state is not None else {}
    if event.action == "create" or v.get(VAR_TEAMS) is not None:
        teams = teams_of(v.get(VAR_TEAMS) or ())
    payg = state.payg_gpus if state is not None else 0
    if event.action == "update" and v.get(VAR_PAYG) is not None:
        payg = v[VAR_PAYG]
    return TenantState(v[VAR_GPUS], teams, payg, bool(v.get(VAR_CRITICAL, False)))


def tenant_history(
    tenants: Iterable[tuple[int, Tenant]], events: Iterable[tuple[int, Event]]
) -> dict[str, list[Change]]:
    """Tenant name -> its changes in time order: one at ``START`` for each tenant of the
    list, then one per event; both given as (index in the file, entry), events in the
    order they happen."""
    out: dict[str, list[Change]] = {}
    for i, tenant in tenants:
        out.setdefault(tenant.name, []).append(Change(START, f"tenants[{i}]", state_of(tenant)))
    for i, event in events:
        changes = out.setdefault(event.tenant, [])
        before = changes[-1].state if changes else None
        changes.append(Change(event.at, f"events[{i}]", after_event(before, event)))
    return out


def change_at(changes: Sequence[Change], at: float) -> Change | None:
    """The change in force at ``at`` (events at ``at`` included); None: none yet."""
    found = None
    for change in changes:
        if change.at > at:
            break
        found = change
    return found


def states_from(changes: Sequence[Change], at: float) -> list[TenantState]:
    """The tenant's states from ``at`` on while it exists: the one in force then and
    every later one up to its deletion."""
    current = change_at(changes, at)
    out = [current.state] if current is not None and current.state is not None else []
    if not out:
        return out
    for change in changes:
        if change.at <= at:
            continue
        if change.state is None:
            break
        out.append(change.state)
    return out
