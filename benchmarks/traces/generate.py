# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tidal day of traffic, drawn from one seeded ``random.Random``: the same parameters
give the same trace, on any machine, and no global state is read or changed.

The cluster is ``gpus / 8`` IDC nodes of 8 GPUs. Hours below are hours of the day, a
day being ``day_seconds`` long (24 h by default; a shorter day compresses every time
and duration alike).

Each job comes from one of four streams, drawn by its share:

=========== ===== ========================== ============================ ============ ==============
stream      share submitted (hour of day)    class, billing type          GPUs (alpha, duration
                                                                          bound H)     median, sigma
=========== ===== ========================== ============================ ============ ==============
interactive 0.60  triangular 07-21, mode 13  debug 60 % (subscription);   1.5, 16      debug 10 min,
                                             normal 40 % (subscription                 normal 30 min;
                                             70 %, payg 30 %)                          0.8
critical    0.05  uniform                    critical, subscription       1.5, 16      2 h; 0.5
training    0.12  triangular 18-30 (past 24: large from 32 GPUs, else     0.8, 72      2 h; 0.7;
                  the next morning), mode 23 normal; subscription 60 %,                scaled
                                             payg 40 %
spot        0.23  uniform                    spot, bidding uniform        1.0, 72      30 min; 1.0;
                                             0.10-1.00 per GPU-hour                    scaled
=========== ===== ========================== ============================ ============ ==============

* **GPUs**: a bounded Pareto distribution on [1, H] of shape alpha (density proportional
  to x^-(alpha+1)), drawn by its inverse CDF and rounded down to a shape a job has: 1, 2
  or 4 GPUs, else a multiple of 8 (8-GPU pods); so 1 to 8 GPUs for H 16 and 1 to 64 for
  H 72, and never more than the IDC's GPUs (H is at most the IDC's GPUs + 8). The tail
  is heavy: in the training stream one job in 32 asks for 32 GPUs or more, and those
  ask for 30 % of the stream's GPUs; the 16 % of 8 GPUs or more ask for two thirds.
* **Pods**: 8 GPUs or fewer is one pod (a ``single`` job; a quarter of the normal ones of
  2 or 4 GPUs are two pods, ``pytorch_ddp`` or ``ray``); more is 8-GPU pods of
  ``pytorch_ddp`` (50 %), ``mpi`` (20 %), ``ray`` (15 %), ``ps_worker`` (10 %) or
  ``spark`` (5 %). Debug and critical jobs are one ``single`` pod.
* **Durations**: log-normal with the median and sigma (of the logarithm) above. The scaled
  streams' durations are then multiplied by one factor so that the GPU-hours asked are
  ``load`` times the cluster's GPU-hours of the day (1.0 by default), each kept between
  1 second and the day; the summary says what the day asks in the end.
* **Tenants**: ``tenants`` in all; all but the last (the only one, with one) exist from
  the start and share 60 % of the IDC's GPUs as subscriptions (weights uniform in 1-4,
  rounded down); each holds, with chance 1/3, its share (by new weights) of 10 % of the
  IDC's GPUs as a pay-as-you-go grant; with chance 0.6 it has two or three teams
  (``train``, ``infer``, ``research``) sharing its subscription the same way. Every
  tenant may run critical jobs. A job's tenant is drawn among the tenants that exist
  when it is submitted, weighted by the GPUs each bought (plus one), and a subscription
  job's team by the GPUs each deserves (plus one).
* **Purchases by day**: with two tenants or more, the last is bought by a ``create`` at
  a time uniform in 09-12, with 10 % of the IDC's GPUs; ``max(1, tenants // 2)``
  ``update`` events, uniform in 09-17, each add 5 % of the IDC's GPUs to the
  subscription of a tenant that exists then; each takes at most what is left unsold
  (rule oversell-guard), and an update with nothing left is dropped.
* **Fitting the rules**: a subscription job larger than its tenant's subscription goes
  to pay-as-you-go instead (a debug or critical job is made smaller; with no
  subscription at all, it becomes a pay-as-you-go normal job).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    FieldError,
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.quantity import GPU
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.spot_price import price_text

from .model import (
    VAR_CRITICAL,
    VAR_GPUS,
    VAR_TEAMS,
    VAR_TENANT,
    Change,
    Cluster,
    Event,
    Job,
    Nodes,
    Tenant,
    TenantState,
    Trace,
    change_at,
    tenant_history,
)

GPUS_PER_NODE = 8
DAY = 86_400
HOUR = 3_600
TEAMS = ("train", "infer", "research")
# A subscription's CPU and memory per GPU (tenant_create.yml's example: 40 GPUs, 160 CPUs, 640Gi).
CPU_PER_GPU = 4
MEMORY_GI_PER_GPU = 16
SOLD_AT_START = 0.60
PAYG_AT_START = 0.10
BOUGHT_BY_CREATE = 0.10
BOUGHT_BY_UPDATE = 0.05
LARGE_GPUS = 32
MULTI_POD_KINDS = (("pytorch_ddp", 50), ("mpi", 20), ("ray", 15), ("ps_worker", 10), ("spark", 5))


@dataclass(frozen=True)
class Stream:
    """One stream of the module docstring's table; ``when`` (low, high, mode) in hours of
    the day, None: uniform; ``median_hours`` by class."""

    name: str
    share: float
    when: tuple[float, float, float] | None
    alpha: float
    bound: int
    median_hours: dict[str, float]
    sigma: float
    scaled: bool


STREAMS = (
    Stream("interactive", 0.60, (7, 21, 13), 1.5, 16, {"debug": 1 / 6, "normal": 0.5}, 0.8, False),
    Stream("critical", 0.05, None, 1.5, 16, {"critical": 2.0}, 0.5, False),
    Stream("training", 0.12, (18, 30, 23), 0.8, 72, {"large": 2.0, "normal": 2.0}, 0.7, True),
    Stream("spot", 0.23, None, 1.0, 72, {"spot": 0.5}, 1.0, True),
)


@dataclass(frozen=True)
class Params:
    """What a generated day depends on (``--seed`` etc. of trace_generate.py)."""

    seed: int = 7
    jobs: int = 2000
    gpus: int = 128
    tenants: int = 4
    day_seconds: int = DAY
    load: float = 1.0

    def errors(self) -> list[FieldError]:
        """Rule trace-generate-params: what the generator can make a valid day of."""
        out = []
        if self.gpus < GPUS_PER_NODE or self.gpus % GPUS_PER_NODE:
            out.append(
                FieldError(
                    "gpus",
                    f"{self.gpus} must be a multiple of {GPUS_PER_NODE} (GPUs a node), {GPUS_PER_NODE} or more",
                )
            )
        for name, value, least in (
            ("jobs", self.jobs, 0),
            ("tenants", self.tenants, 1),
            ("day_seconds", self.day_seconds, 60),
        ):
            if value < least:
                out.append(FieldError(name, f"{value} must be at least {least}"))
        if not (math.isfinite(self.load) and self.load > 0):
            out.append(FieldError("load", f"{self.load} must be a number above 0"))
        return [FieldError(e.field, f"{e.message} (rule trace-generate-params)") for e in out]


def bounded_pareto(rng: random.Random, alpha: float, low: float, high: float) -> float:
    """One draw of a Pareto distribution of shape ``alpha`` bounded to [low, high]."""
    u = rng.random()
    return low * (1 - u * (1 - (low / high) ** alpha)) ** (-1 / alpha)


def job_size(x: float) -> int:
    """GPUs a job has: 1, 2 or 4 below 8, else a multiple of 8, at or below ``x``."""
    if x < GPUS_PER_NODE:
        return 2 ** int(math.log2(x))
    return GPUS_PER_NODE * int(x // GPUS_PER_NODE)


def _weighted(rng: random.Random, choices: Sequence[tuple[str, float]]) -> str:
    names = [c for c, _ in choices]
    return rng.choices(names, weights=[w for _, w in choices])[0]


def _hour(rng: random.Random, stream: Stream) -> float:
    if stream.when is None:
        return rng.uniform(0, 24)
    low, high, mode = stream.when
    return rng.triangular(low, high, mode) % 24


def _subscription_vars(name: str, gpus: int) -> dict[str, object]:
    return {
        VAR_TENANT: name,
        VAR_GPUS: gpus,
        "tenant_cpu": str(CPU_PER_GPU * gpus),
        "tenant_memory": f"{MEMORY_GI_PER_GPU * gpus}Gi",
        VAR_CRITICAL: True,
    }


def _shares(rng: random.Random, total: int, count: int) -> list[int]:
    """``total`` GPUs split into ``count`` parts by weights uniform in 1-4 (rounded down)."""
    weights = [rng.uniform(1, 4) for _ in range(count)]
    return [int(total * w / sum(weights)) for w in weights]


def _teams(rng: random.Random, subscription: int) -> dict[str, int]:
    if rng.random() >= 0.6:
        return {}
    names = TEAMS[: rng.randint(2, 3)]
    return dict(zip(names, _shares(rng, subscription, len(names)), strict=True))


def _tenants(rng: random.Random, params: Params, idc: int) -> tuple[list[Tenant], list[Event]]:
    width = max(2, len(str(params.tenants - 1)))
    names = [f"t{i:0{width}d}" for i in range(params.tenants)]
    first = names if params.tenants == 1 else names[:-1]
    subscriptions = _shares(rng, int(idc * SOLD_AT_START), len(first))
    payg_shares = _shares(rng, int(idc * PAYG_AT_START), len(first))
    tenants = [
        Tenant(
            name=name,
            subscription_gpus=subscription,
            teams=_teams(rng, subscription),
            payg_gpus=payg if rng.random() < 1 / 3 else 0,
            allow_critical=True,
        )
        for name, subscription, payg in zip(first, subscriptions, payg_shares, strict=True)
    ]
    sold = sum(t.subscription_gpus + t.payg_gpus for t in tenants)
    times: list[tuple[float, str]] = []
    if params.tenants > 1:
        times.append((rng.uniform(9, 12), "create"))
    times += [(rng.uniform(9, 17), "update") for _ in range(max(1, params.tenants // 2))]
    events = []
    subscription_of = {t.name: t.subscription_gpus for t in tenants}
    for hour, action in sorted(times):
        at = int(hour * params.day_seconds / 24)
        step = min(
            idc - sold,
            max(1, int(idc * (BOUGHT_BY_CREATE if action == "create" else BOUGHT_BY_UPDATE))),
        )
        if action == "create":
            name = names[-1]
            gpus = max(0, step)
            variables = _subscription_vars(name, gpus)
            teams = _teams(rng, gpus)
            if teams:
                variables[VAR_TEAMS] = [{"name": n, "deserved": {GPU: d}} for n, d in teams.items()]
        else:
            if step <= 0:
                continue
            name = rng.choice(sorted(subscription_of))
            gpus = subscription_of[name] + step
            variables = _subscription_vars(name, gpus)
        sold += gpus - subscription_of.get(name, 0)
        subscription_of[name] = gpus
        events.append(Event(at=at, action=action, vars=variables))
    return tenants, events


def _shape(rng: random.Random, gpus: int, job_class: str) -> tuple[str, int, int]:
    """(kind, replicas, gpus_per_pod) of a job of ``gpus`` GPUs."""
    if job_class in ("debug", "critical") or gpus == 1:
        return "single", 1, gpus
    if gpus <= GPUS_PER_NODE:
        if job_class == "normal" and rng.random() < 0.25:
            return rng.choice(("pytorch_ddp", "ray")), 2, gpus // 2
        return "single", 1, gpus
    return _weighted(rng, MULTI_POD_KINDS), gpus // GPUS_PER_NODE, GPUS_PER_NODE


@dataclass
class _Draft:
    """A job before its duration is scaled."""

    stream: Stream
    job: Job


def _class_and_billing(rng: random.Random, stream: Stream, gpus: int) -> tuple[str, str]:
    if stream.name == "interactive":
        if rng.random() < 0.6:
            return "debug", "subscription"
        return "normal", ("subscription" if rng.random() < 0.7 else "payg")
    if stream.name == "critical":
        return "critical", "subscription"
    if stream.name == "training":
        billing = "subscription" if rng.random() < 0.6 else "payg"
        return ("large" if gpus >= LARGE_GPUS else "normal"), billing
    return "spot", "spot"


def _fit(job_class: str, billing: str, gpus: int, state: TenantState) -> tuple[str, str, int]:
    """Class, billing type and GPUs that the tenant's subscription can hold."""
    if billing != "subscription" or gpus <= state.subscription_gpus:
        return job_class, billing, gpus
    if job_class in ("debug", "critical") and state.subscription_gpus >= 1:
        return job_class, billing, job_size(state.subscription_gpus)
    if job_class in ("debug", "critical"):
        return "normal", "payg", gpus
    return job_class, "payg", gpus


def _draft(
    rng: random.Random, params: Params, idc: int, history: Mapping[str, Sequence[Change]]
) -> _Draft:
    stream = rng.choices(STREAMS, weights=[s.share for s in STREAMS])[0]
    at = int(_hour(rng, stream) * params.day_seconds / 24)
    # Below idc + 8, every shape is at most the IDC's GPUs (a multiple of 8).
    gpus = job_size(bounded_pareto(rng, stream.alpha, 1, min(stream.bound, idc + GPUS_PER_NODE)))
    job_class, billing = _class_and_billing(rng, stream, gpus)
    median = stream.median_hours[job_class] * HOUR * params.day_seconds / DAY
    duration = rng.lognormvariate(math.log(median), stream.sigma)
    states = {name: change_at(changes, at) for name, changes in history.items()}
    present = sorted(
        (n, c.state) for n, c in states.items() if c is not None and c.state is not None
    )
    names = [n for n, _ in present]
    name = rng.choices(names, weights=[s.sold_gpus + 1 for _, s in present])[0]
    state = dict(present)[name]
    job_class, billing, gpus = _fit(job_class, billing, gpus, state)
    team = None
    if billing == "subscription" and state.teams:
        teams = sorted(state.teams.items())
        team = rng.choices([t for t, _ in teams], weights=[d + 1 for _, d in teams])[0]
    kind, replicas, per_pod = _shape(rng, gpus, job_class)
    price = price_text(f"{rng.uniform(0.10, 1.00):.2f}") if billing == "spot" else None
    job = Job(
        at=at,
        tenant=name,
        billing=billing,
        job_class=job_class,
        kind=kind,
        replicas=replicas,
        gpus_per_pod=per_pod,
        duration_s=duration,
        team=team,
        spot_price=price,
    )
    return _Draft(stream, job)


def _scaled(drafts: list[_Draft], params: Params, gpus: int) -> list[Job]:
    """The jobs with whole-second durations, the scaled streams' multiplied so that the
    day asks ``load`` times the cluster's GPU-seconds (each kept within 1 s and the day)."""
    fixed = sum(d.job.gpus * d.job.duration_s for d in drafts if not d.stream.scaled)
    scalable = sum(d.job.gpus * d.job.duration_s for d in drafts if d.stream.scaled)
    target = params.load * gpus * params.day_seconds
    factor = max(target - fixed, 0) / scalable if scalable else 1.0
    jobs = []
    for d in drafts:
        seconds = d.job.duration_s * (factor if d.stream.scaled else 1.0)
        whole = min(max(1, round(seconds)), params.day_seconds)
        jobs.append(replace(d.job, duration_s=whole))
    return jobs


def generate(params: Params) -> Trace:
    """The trace of ``params`` (PlatformValidationError when it cannot be made)."""
    errors = params.errors()
    if errors:
        raise PlatformValidationError(errors)
    rng = random.Random(params.seed)
    cluster = Cluster((Nodes(params.gpus // GPUS_PER_NODE, GPUS_PER_NODE),))
    tenants, events = _tenants(rng, params, cluster.idc_gpus)
    history = tenant_history(enumerate(tenants), enumerate(events))
    drafts = [_draft(rng, params, cluster.idc_gpus, history) for _ in range(params.jobs)]
    jobs = sorted(_scaled(drafts, params, cluster.gpus()), key=lambda j: j.at)
    return Trace(cluster=cluster, tenants=tuple(tenants), jobs=tuple(jobs), events=tuple(events))
