# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Replays a trace on the local cluster under one configuration; the only part of the
replay that talks to the cluster.

Time runs ``factor`` times faster than the trace says: a job submitted at ``at`` is
submitted ``at / factor`` wall-clock seconds after the start, kwok completes its pods
``duration_s / factor`` seconds after they run, and the platform's time settings (the
reconcilers' one-minute period, the throttle's grace and timeout, pay-as-you-go's grace)
shrink with it, down to what the machine can do: a reconciler's period is never shorter
than its own run, and the period the guarantees are judged by is the one measured.

* Tenants are bought with the platform's playbooks (``tenant_create.yml``,
  ``tenant_update.yml``), the trace's events run their playbooks at their time, and the
  replay's tenants are deleted with ``tenant_delete.yml`` at the end.
* Under ``platform`` the jobs are submitted through ``vcjob``'s own code (its feasibility
  rule and the large-job throttle), and ``spot_recompute``, ``arbiter_reconcile``,
  ``throttle_reconcile`` and ``payg_reconcile`` run on their schedules. The baselines
  write the same Volcano Jobs straight to the API server and run no reconciler.
* Under ``platform-events`` the collection's event source (``events/service.run_source``)
  watches the cluster in this process, and each event starts the reconciles the
  rulebook's rules name for it (``on_events``, ``triggers``), as
  ``platform_reconcile.yml`` does: one run of a reconcile at a time, the events that
  arrive during a run making one run after it.
  The schedules stay at the safety net's period (``awx_configure.yml``'s
  ``events_every_minutes``), compressed like the rest.
* Every ``sample_s`` wall-clock seconds one LIST of Pods and one of Volcano Jobs say what
  runs (``observe``), and one of Queues and one of PodGroups why the others wait
  (``idle``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ansible_collections.gpucloud.platform.benchmarks.replay import idle, observe, reconcilers
from ansible_collections.gpucloud.platform.benchmarks.replay.jobs import job_name, manifest
from ansible_collections.gpucloud.platform.benchmarks.replay.on_events import EventTriggers
from ansible_collections.gpucloud.platform.benchmarks.replay.records import (
    PLATFORM_EVENTS,
    PLATFORMS,
    STATIC,
    VOLCANO,
    JobRecord,
    Mark,
    Run,
    Sample,
)
from ansible_collections.gpucloud.platform.benchmarks.traces.model import (
    QUEUE_TYPE_SPOT,
    Event,
    Job,
    TenantState,
    Trace,
    change_at,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import queue_name
from ansible_collections.gpucloud.platform.plugins.module_utils.common.quantity import GPU
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import Cluster

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS = ROOT / "playbooks"
JOB_API = "batch.volcano.sh/v1alpha1"
QUEUE_API = "scheduling.volcano.sh/v1beta1"
SCHEDULER_CONFIGMAP = ("volcano-system", "volcano-scheduler-configmap")
SCHEDULER_CONF_KEY = "volcano-scheduler.conf"
# Production's settings (AWX schedules and the playbooks' defaults), traced seconds.
RECONCILE_PERIOD_S = 60
SCHEDULE_PERIOD_S = 1  # Volcano's schedulePeriod: wall-clock, not compressed
THROTTLE_GRACE_S = 15
THROTTLE_TIMEOUT_S = 300
PAYG_GRACE_MIN = 30
ARBITER_SETTLE_S = 10
RECONCILERS = reconcilers.NAMES
PLAYBOOKS_MODE = "playbooks"  # --reconcilers: the playbooks themselves, not in-process
SUBMITTERS = 8
PROGRESS_S = 30


def log(text: str) -> None:
    print(f"replay: {text}", file=sys.stderr, flush=True)


def rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def module_params(options: Mapping[str, Mapping[str, Any]], **given: Any) -> dict[str, Any]:
    """A module's parameters as Ansible would give them: every default, then ``given``."""
    return {key: spec.get("default") for key, spec in options.items()} | given


@dataclass(frozen=True)
class Settings:
    trace_path: str
    configuration: str
    factor: float
    kubeconfig: str
    day_s: float = 86400.0  # the traced length replayed
    sample_s: float = 1.0
    seed: int | None = None
    # Where usage_report reads the day's samples: the local cluster's own Prometheus,
    # which it names in ``prometheus-url`` beside its kubeconfig (a cluster started
    # with offset ports listens elsewhere than the local inventory says).
    prometheus_url: str | None = None
    reconcilers: str = "in-process"  # or PLAYBOOKS_MODE
    # The site's spot_offer (spot/offer): what spot may hold under the platform.
    spot_offer: str = "unsold"
    # The site's spot_apportion (spot/lending): how the offer is shared among tenants.
    spot_apportion: str = "share"


def prometheus_beside(kubeconfig: str) -> str | None:
    """The Prometheus address the local cluster wrote beside its kubeconfig, if any."""
    where = Path(kubeconfig).parent / "prometheus-url"
    return where.read_text().strip() if where.is_file() else None


def tenant_vars(name: str, state: TenantState) -> dict[str, Any]:
    """tenant_create.yml's variables for a tenant of the trace: 4 CPUs and 16 Gi a GPU."""
    gpus = state.subscription_gpus
    out: dict[str, Any] = {
        "tenant_name": name,
        "tenant_gpus": gpus,
        "tenant_cpu": str(max(4, 4 * gpus)),
        "tenant_memory": f"{max(16, 16 * gpus)}Gi",
        "tenant_allow_critical": state.allow_critical,
    }
    if state.teams:
        out["tenant_teams"] = [
            {"name": team, "deserved": {GPU: deserved}} for team, deserved in state.teams.items()
        ]
    return out


class Replay:
    """One configuration's replay of one trace."""

    def __init__(self, trace: Trace, settings: Settings):
        self.trace = trace
        self.s = settings
        self.cluster = Cluster.from_kubeconfig(settings.kubeconfig)
        self.history = trace.history()
        self.billing_of_queue = {job.queue: job.billing for job in trace.jobs}
        # The GPUs of each job's pods, by job name, for rule gang-fits-nodes.
        self.pods_of = {
            job_name(i): (job.gpus_per_pod,) * job.replicas for i, job in enumerate(trace.jobs)
        }
        self.node_gpus: dict[str, int] = {}  # schedulable node -> allocatable GPUs
        self.tracked: dict[str, observe.Tracked] = {}
        # Jobs in the platform's submission (a pay-as-you-go purchase, the throttle's
        # hold), with what they have waited so far by cause.
        self.submitting: dict[str, tuple[JobRecord, dict[str, float]]] = {}
        self.samples: list[Sample] = []
        self.marks: list[Mark] = []
        self.reconciles: list[tuple[str, float, float]] = []  # name, start, end (wall)
        self.failures: list[str] = []  # playbooks that failed (reconciles, events, bill)
        self.refusals: list[str] = []  # jobs refused at submission, with the reason
        self.crashed: list[str] = []
        self.held: dict[str, int] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        # Pay-as-you-go: one purchase at a time per tenant.
        self.payg_locks: dict[str, threading.Lock] = {}
        # The events run before the jobs of their second: a job waits for them.
        self.events_done = threading.Condition()
        self.events_until = -1.0
        self.t0 = 0.0
        self.wall0 = 0.0
        self.capacity = 0
        self.day_s = settings.day_s
        # platform-events: the event source and the reconciles its events want run.
        self.triggers = (
            EventTriggers.production(RECONCILERS)
            if settings.configuration == PLATFORM_EVENTS
            else None
        )

    # --- time -------------------------------------------------------------
    def now(self) -> float:
        """Traced seconds since the start."""
        return (time.monotonic() - self.t0) * self.s.factor

    def to_traced(self, stamp: str) -> float:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        return (when - self.wall0) * self.s.factor

    def sleep_until(self, traced: float) -> bool:
        """Wait for a traced moment; False when the replay is stopping."""
        delay = traced / self.s.factor - (time.monotonic() - self.t0)
        return not self.stop.wait(delay) if delay > 0 else not self.stop.is_set()

    # --- playbooks --------------------------------------------------------
    def playbook(
        self, name: str, extra: Mapping[str, Any] | None = None, inventory: str | None = None
    ) -> tuple[bool, str]:
        cmd = [str(Path(sys.executable).parent / "ansible-playbook"), str(PLAYBOOKS / name)]
        if inventory:
            cmd += ["-i", str(ROOT / inventory)]
        if name in reconcilers.SPOT_SITE_PLAYBOOKS and self.s.configuration in PLATFORMS:
            # The site's spot_offer and spot_apportion, as an inventory would give them to
            # every playbook.
            site = {"spot_offer": self.s.spot_offer, "spot_apportion": self.s.spot_apportion}
            extra = {**site, **(extra or {})}
        if extra:
            cmd += ["-e", json.dumps(dict(extra))]
        env = dict(os.environ, KUBECONFIG=self.s.kubeconfig, ANSIBLE_NOCOLOR="1")
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
        text = out.stdout + out.stderr
        if out.returncode != 0:
            tail = "\n".join(
                line for line in text.splitlines() if "msg" in line or "FAILED" in line
            )
            self.failures.append(f"{name}: {tail[-400:] or text[-400:]}")
        return out.returncode == 0, text

    # --- tenants ----------------------------------------------------------
    def tenant_names(self) -> list[str]:
        names = [t.name for t in self.trace.tenants]
        names += [e.tenant for e in self.trace.events if e.action == "create"]
        return sorted(set(names))

    def delete_tenants(self) -> None:
        for name in self.tenant_names():
            if self.cluster.get("v1", "Namespace", f"tenant-{name}") is None:
                continue
            log(f"deleting tenant {name}")
            self.playbook(
                "tenant_delete.yml",
                {"tenant_name": name, "tenant_confirm": name, "tenant_force": True},
            )
        self.wait_namespaces_gone()

    def wait_namespaces_gone(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            left = [
                n
                for n in self.tenant_names()
                if self.cluster.get("v1", "Namespace", f"tenant-{n}") is not None
            ]
            if not left:
                return
            time.sleep(2)
        raise RuntimeError(f"tenant namespaces still there after {timeout:.0f} s: {left}")

    def create_tenants(self) -> None:
        for tenant in self.trace.tenants:
            state = change_at(self.history[tenant.name], -1.0)
            assert state is not None and state.state is not None
            log(f"buying tenant {tenant.name}: {state.state.subscription_gpus} GPUs")
            ok, _text = self.playbook("tenant_create.yml", tenant_vars(tenant.name, state.state))
            if ok and state.state.payg_gpus:
                update = tenant_vars(tenant.name, state.state) | {
                    "tenant_payg_gpus": state.state.payg_gpus
                }
                ok, _text = self.playbook("tenant_update.yml", update)
            if not ok:
                raise RuntimeError(f"buying tenant {tenant.name} failed: {self.failures[-1]}")
            self.configure_tenant(tenant.name, 0.0)

    def configure_tenant(self, tenant: str, at: float) -> None:
        """The static partition: every team capped at what it deserves (no borrowing) and
        no spot. The other configurations keep the platform's queues."""
        if self.s.configuration != STATIC:
            return
        change = change_at(self.history[tenant], at)
        state = change.state if change else None
        if state is None:
            return
        caps = {queue_name(tenant, QUEUE_TYPE_SPOT): 0}
        for team, deserved in state.teams.items():
            caps[queue_name(tenant, "team", team)] = deserved
        for queue, gpus in caps.items():
            self.cluster.merge_patch(
                QUEUE_API, "Queue", queue, {"spec": {"capability": {GPU: gpus}}}
            )

    # --- scheduler configuration -----------------------------------------
    def swap_scheduler_conf(self) -> str | None:
        """Under ``volcano``, the chart's default configuration; returns the platform's."""
        if self.s.configuration != VOLCANO:
            return None
        ns, name = SCHEDULER_CONFIGMAP
        live = self.cluster.get("v1", "ConfigMap", name, ns)
        assert live is not None, "the Volcano scheduler ConfigMap is missing"
        saved = live["data"][SCHEDULER_CONF_KEY]
        sys.path.insert(0, str(ROOT / "tools" / "localcluster"))
        import cluster as localcluster

        default = localcluster.default_scheduler_conf()
        self.cluster.merge_patch(
            "v1", "ConfigMap", name, {"data": {SCHEDULER_CONF_KEY: default}}, ns
        )
        time.sleep(3)  # the sync copies it to vc-scheduler's file, which reloads it
        return saved

    def restore_scheduler_conf(self, saved: str | None) -> None:
        if saved is None:
            return
        ns, name = SCHEDULER_CONFIGMAP
        self.cluster.merge_patch("v1", "ConfigMap", name, {"data": {SCHEDULER_CONF_KEY: saved}}, ns)

    # --- jobs -------------------------------------------------------------
    def deserved(self, job: Job, at: float) -> int:
        change = change_at(self.history[job.tenant], at)
        state = change.state if change else None
        if state is None:
            return 0
        if job.team:
            return state.teams.get(job.team, 0)
        return state.subscription_gpus

    def submit(self, index: int, job: Job) -> None:
        name = job_name(index)
        self.wait_for_events(job)
        at = self.now()
        with self.lock:
            held = self.held.get(job.queue, 0)
        within = job.billing == "subscription" and held + job.gpus <= self.deserved(job, job.at)
        record = JobRecord(
            name=name,
            tenant=job.tenant,
            billing=job.billing,
            job_class=job.job_class,
            queue=job.queue,
            gpus=job.gpus,
            at=max(job.at, at),  # when the API server got it: waits are the platform's
            duration_s=job.duration_s,
            within_share=within,
        )
        desired = manifest(job, index, self.s.factor)
        waited: dict[str, float] = {}
        with self.lock:
            self.submitting[name] = (record, waited)
        try:
            if job.billing == "payg" and self.s.configuration != STATIC:
                self.buy_payg(job)
            if self.s.configuration in PLATFORMS:
                self.submit_through_vcjob(job, desired)
            else:
                self.cluster.create(desired)
        except Exception as exc:
            with self.lock:
                del self.submitting[name]
                self.refusals.append(f"{name} ({job.tenant}, {job.gpus} GPUs) at {at:.0f} s: {exc}")
            return
        with self.lock:
            del self.submitting[name]
            self.tracked[name] = observe.Tracked(record=record, waited=waited)

    def payg_asked(self, tenant: str) -> int:
        """The GPUs of the tenant's pay-as-you-go jobs that have not ended."""
        with self.lock:
            return sum(
                t.record.gpus
                for t in self.tracked.values()
                if t.record.tenant == tenant and t.record.billing == "payg" and not t.done()
            )

    def payg_room(self, tenant: str) -> tuple[int, int]:
        """The tenant's pay-as-you-go grant now and the most it can grow to: its grant plus
        the GPUs no tenant has bought (one LIST of Queues). The scheduled reconcile
        shrinks an unused grant after its grace, so no copy of the grant is kept here."""
        from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
            commitments_from_queues,
            committed_total,
        )

        commitments = commitments_from_queues(self.cluster.list(QUEUE_API, "Queue"))
        sold = int(committed_total(commitments.values())[GPU])
        mine = commitments.get(tenant)
        live = int(mine.payg_granted[GPU]) if mine is not None else 0
        return live, live + max(0, self.capacity - sold)

    def buy_payg(self, job: Job) -> None:
        """A pay-as-you-go tenant buys before it submits, as payg_scale.yml does: its queue
        grows to what its unfinished jobs and this one ask, when that is more than it has,
        and never past what is unsold (the oversell guard would refuse the purchase; the
        job then waits in the queue for the tenant's own jobs to end). payg_capacity's own
        code makes the purchase: unsold GPUs first, spot reclaimed when short. The
        scheduled payg_reconcile shrinks it back after its grace."""
        lock = self.payg_locks.setdefault(job.tenant, threading.Lock())
        with lock:
            live, most = self.payg_room(job.tenant)
            want = min(self.payg_asked(job.tenant) + job.gpus, most)
            if want <= live:
                return
            from ansible_collections.gpucloud.platform.plugins.module_utils.capacity import service
            from ansible_collections.gpucloud.platform.plugins.modules.payg_capacity import OPTIONS

            params = module_params(
                OPTIONS,
                tenant=job.tenant,
                capability={GPU: want},
                demand_reason=f"pay-as-you-go job of {job.gpus} GPUs (trace replay)",
            )
            service.run(params, self.cluster, False)

    def submit_through_vcjob(self, job: Job, desired: dict[str, Any]) -> None:
        from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import service
        from ansible_collections.gpucloud.platform.plugins.modules.vcjob import OPTIONS

        params = module_params(
            OPTIONS,
            tenant=job.tenant,
            manifest=desired,
            job_class=job.job_class,
            spot_price=job.spot_price,
            throttle_grace=max(1, round(THROTTLE_GRACE_S / self.s.factor)),
            throttle_timeout=max(1, round(THROTTLE_TIMEOUT_S / self.s.factor)),
            wait_sleep=1,
        )
        service.run(params, self.cluster, False)

    # --- the loops ----------------------------------------------------------
    def sampler(self) -> None:
        while not self.stop.is_set():
            at = self.now()
            pods = self.cluster.list(
                "v1", "Pod", field_selector="status.phase=Running,spec.schedulerName=volcano"
            )
            jobs = self.cluster.list(JOB_API, "Job")
            rooms = idle.queue_rooms(self.cluster.list(QUEUE_API, "Queue"))
            groups = observe.group_phases(self.cluster.list(QUEUE_API, "PodGroup"))
            held = observe.held_by_queue(pods)
            backlog = observe.backlog(jobs)
            free = self.capacity - sum(held.values())
            since = at - self.samples[-1].at if self.samples else 0.0
            with self.lock:
                self.held = held
                observe.look(self.tracked, jobs, at)
                billing = self.by_billing(held)
                waiting = observe.waiting(
                    self.tracked,
                    [r for r, _w in self.submitting.values()],
                    jobs,
                    self.pods_of,
                    groups,
                )
                nodes = observe.free_by_node(self.node_gpus, pods)
                causes = idle.look_causes(waiting, rooms, free, nodes)
                self.charge_waits(causes, since)
            self.samples.append(
                Sample(
                    at=at,
                    allocated=sum(held.values()),
                    capacity=self.capacity,
                    by_billing=billing,
                    backlog=backlog,
                    idle_by_cause=idle.idle_by_cause(waiting, causes, free),
                )
            )
            self.stop.wait(self.s.sample_s)

    def charge_waits(self, causes: Mapping[str, str], seconds: float) -> None:
        """Each waiting job's tally gains the time since the last look, under the cause
        this look gives it (called with the lock held)."""
        for name, cause in causes.items():
            if name in self.tracked:
                observe.charge(self.tracked[name].waited, cause, seconds)
            elif name in self.submitting:
                observe.charge(self.submitting[name][1], cause, seconds)

    def by_billing(self, held: Mapping[str, int]) -> dict[str, int]:
        """GPUs held by billing type: each queue's is the billing of the trace's jobs that
        run in it (a queue holds one billing type's jobs)."""
        out: dict[str, int] = {}
        for queue, gpus in held.items():
            kind = self.billing_of_queue.get(queue, "subscription")
            out[kind] = out.get(kind, 0) + gpus
        return out

    def reconciler(self, name: str) -> None:
        """One reconciler on its schedule, compressed: its playbook's module tasks in this
        process (``reconcilers``), or the playbook itself under ``--reconcilers
        playbooks``. A run that fails is recorded and the schedule goes on, as in AWX."""
        timeout_s = max(1, round(THROTTLE_TIMEOUT_S / self.s.factor))
        grace_min = max(1, round(PAYG_GRACE_MIN / self.s.factor))
        settle_s = max(1, round(ARBITER_SETTLE_S / self.s.factor))
        extra = {
            "spot_recompute": {},
            "throttle_reconcile": {"throttle_timeout": timeout_s},
            "payg_reconcile": {"payg_grace_minutes": grace_min},
            "arbiter_reconcile": {"arbiter_settle_seconds": settle_s},
        }[name]
        in_process = reconcilers.steps(
            name, timeout_s, grace_min, settle_s, self.s.spot_offer, self.s.spot_apportion
        )
        period = self.period_of(name)
        wanted = self.triggers.wanted[name] if self.triggers else None
        while not self.stop.is_set():
            if wanted is not None:
                wanted.clear()  # what arrives from now on makes another run
            start = time.monotonic()
            if self.s.reconcilers == PLAYBOOKS_MODE:
                self.playbook(f"{name}.yml", extra)
            else:
                try:
                    reconcilers.run(in_process, self.cluster)
                except Exception as exc:
                    self.failures.append(f"{name}: {type(exc).__name__}: {exc}"[:600])
            end = time.monotonic()
            self.reconciles.append((name, start, end))
            rest = max(0.0, period - (end - start))
            if wanted is None:
                self.stop.wait(rest)
            elif wanted.wait(rest):
                continue  # an event: run again now (its playbook's lock, one run at a time)

    def period_of(self, name: str) -> float:
        """A reconciler's schedule, wall-clock seconds: production's one minute, or under
        ``platform-events`` the safety net's period for a reconcile the events start."""
        traced = float(RECONCILE_PERIOD_S)
        if self.triggers is not None:
            traced = self.triggers.period_s(name, traced)
        return traced / self.s.factor

    def event_source(self) -> None:
        """The collection's event source in this process (``platform-events``)."""
        assert self.triggers is not None
        self.triggers.follow(self.s.kubeconfig, self.s.factor, self.stop)

    def events(self) -> None:
        for event in self.trace.events:
            if not self.sleep_until(event.at):
                break
            self.run_event(event)
            self.events_ran(event.at)
        self.events_ran(float("inf"))

    def events_ran(self, until: float) -> None:
        with self.events_done:
            self.events_until = until
            self.events_done.notify_all()

    def wait_for_events(self, job: Job) -> None:
        """The events of the job's tenant up to its ``at`` have run (a tenant bought at
        1800 s exists for its first job at 1800 s, however long its playbook took); the
        other tenants' jobs do not wait for them."""
        pending = [e.at for e in self.trace.events if e.at <= job.at and e.tenant == job.tenant]
        if not pending:
            return
        with self.events_done:
            self.events_done.wait_for(
                lambda: self.events_until >= max(pending) or self.stop.is_set()
            )

    def run_event(self, event: Event) -> None:
        log(f"{event.action} {event.tenant} at {self.now():.0f} s")
        extra = dict(event.vars)
        if event.action == "delete":
            extra.setdefault("tenant_force", True)
        if event.action in ("create", "update"):
            extra.setdefault("tenant_reclaim_timeout", max(5, round(300 / self.s.factor)))
        ok, _text = self.playbook(event.playbook, extra)
        label = f"{event.action} {event.tenant}" + ("" if ok else " (refused)")
        self.marks.append(Mark(at=event.at, label=label))
        if ok and event.action != "delete":
            self.configure_tenant(event.tenant, event.at)

    def submitter(self, pool: ThreadPoolExecutor) -> None:
        order = sorted(range(len(self.trace.jobs)), key=lambda i: self.trace.jobs[i].at)
        for index in order:
            job = self.trace.jobs[index]
            if self.s.configuration == STATIC and job.billing == "spot":
                continue  # the static partition sells no spot
            if not self.sleep_until(job.at):
                return
            pool.submit(self.submit, index, job)

    def reporter(self) -> None:
        """A line of progress every PROGRESS_S wall-clock seconds."""
        while not self.stop.wait(PROGRESS_S):
            self.progress()

    def progress(self) -> None:
        with self.lock:
            submitted = len(self.tracked)
            running = sum(1 for t in self.tracked.values() if t.running_since is not None)
            finished = sum(1 for t in self.tracked.values() if t.record.finished is not None)
        last = self.samples[-1] if self.samples else None
        alloc = f"{100 * last.allocated / last.capacity:.0f} %" if last and last.capacity else "-"
        log(
            f"{self.s.configuration}: {self.now() / 3600:.2f} h of {self.day_s / 3600:.2f}; "
            f"submitted {submitted}, running {running}, finished {finished}; GPUs allocated {alloc}"
        )

    # --- the run ------------------------------------------------------------

    def read_capacity(self) -> int:
        """The cluster's schedulable GPUs, which must be the trace's: every figure is a
        share of them."""
        total = 0
        for node in self.cluster.list("v1", "Node"):
            if (node.get("spec") or {}).get("unschedulable"):
                continue
            gpus = int(((node.get("status") or {}).get("allocatable") or {}).get(GPU, 0) or 0)
            self.node_gpus[str(node["metadata"]["name"])] = gpus
            total += gpus
        if total != self.trace.cluster.gpus():
            raise RuntimeError(
                f"the cluster has {total} schedulable GPUs and the trace's cluster "
                f"{self.trace.cluster.gpus()}: start the local cluster with a topology of "
                "the trace's nodes (tools/localcluster/cluster.py up --topology FILE)"
            )
        return total

    def check_platform(self) -> None:
        """The platform is in place before anything is bought, or the replay would measure
        something else: its PriorityClasses, which every replayed job names (without them
        Volcano's job controller cannot create one pod), and, for ``platform`` and
        ``static``, its scheduler configuration (rule platform-policy: the tenants' team
        queues need hierarchical capacity)."""
        from ansible_collections.gpucloud.platform.plugins.module_utils.policy.priority_classes import (
            priority_class_manifests,
        )
        from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_reader import (
            parse_conf,
        )
        from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_tier_rules import (
            platform_policy_errors,
        )

        bring_up = "bring the platform up on this cluster first (ansible-playbook site.yml)"
        classes = self.cluster.list("scheduling.k8s.io/v1", "PriorityClass")
        live = {pc["metadata"]["name"] for pc in classes}
        wanted = [m["metadata"]["name"] for m in priority_class_manifests()]
        missing = [name for name in wanted if name not in live]
        if missing:
            raise RuntimeError(
                f"the platform's PriorityClasses {', '.join(missing)} are missing: {bring_up}"
            )
        ns, name = SCHEDULER_CONFIGMAP
        configmap = self.cluster.get("v1", "ConfigMap", name, ns)
        if configmap is None:
            raise RuntimeError(f"Volcano's scheduler configuration {ns}/{name} is missing")
        if self.s.configuration == VOLCANO:
            return  # it swaps in the chart's default
        conf, errors = parse_conf((configmap.get("data") or {}).get(SCHEDULER_CONF_KEY))
        errors = errors or platform_policy_errors(conf)
        if errors:
            raise RuntimeError(
                f"Volcano's scheduler configuration is not the platform's ({errors[0]}): {bring_up}"
            )

    def run(self) -> Run:
        day = self.day_s
        self.capacity = self.read_capacity()
        self.check_platform()
        log(
            f"{self.s.configuration}: {self.s.trace_path}, {len(self.trace.jobs)} jobs, "
            f"{self.capacity} GPUs, {day / self.s.factor / 60:.1f} min at {self.s.factor:g}x"
        )
        self.delete_tenants()
        saved = self.swap_scheduler_conf()
        try:
            self.create_tenants()
            self.replay(day)
            causes = observe.cause_times(self.cluster.list("v1", "Event"), self.to_traced)
            return replace(self.result(day, causes), bills=self.bill())
        finally:
            # The cluster as it was, whatever happened: the platform's scheduler
            # configuration back, and the replay's tenants gone.
            self.stop.set()
            self.restore_scheduler_conf(saved)
            self.delete_tenants()

    def guarded(self, target: Any, *args: Any) -> threading.Thread:
        """A thread whose crash stops the replay and fails it: a replay that lost its
        sampler or its events measures nothing true."""

        def body() -> None:
            try:
                target(*args)
            except Exception as exc:
                self.crashed.append(f"{target.__name__}: {type(exc).__name__}: {exc}")
                self.stop.set()

        return threading.Thread(target=body, daemon=True)

    def replay(self, day: float) -> None:
        self.t0, self.wall0 = time.monotonic(), time.time()
        threads = [self.guarded(t) for t in (self.sampler, self.events, self.reporter)]
        if self.s.configuration in PLATFORMS:
            threads += [self.guarded(self.reconciler, name) for name in RECONCILERS]
        if self.s.configuration == PLATFORM_EVENTS:
            threads.append(self.guarded(self.event_source))
        for thread in threads:
            thread.start()
        with ThreadPoolExecutor(SUBMITTERS) as pool:
            self.submitter(pool)
            self.sleep_until(day)
            self.stop.set()
            if self.triggers is not None:
                self.triggers.wake_all()  # the reconcilers see the stop
        self.progress()
        for thread in threads:
            thread.join(timeout=120)
        if self.crashed:
            raise RuntimeError("the replay stopped: " + "; ".join(self.crashed))

    def bill(self) -> dict[str, float]:
        """Each tenant's GPU-hours of the replay as usage_report.yml bills them (the local
        inventory's Prometheus and prices), over the replay's wall-clock period, in traced
        GPU-hours (times the factor). Metering reads Prometheus' samples: a job shorter
        than its scrape interval is billed from what the scrapes saw."""
        start = int(self.wall0)
        end = int(time.time()) + 1
        with tempfile.TemporaryDirectory() as where:
            extra = {
                "usage_start": rfc3339(start),
                "usage_end": rfc3339(end),
                "usage_report_dir": where,
                # Every tenant the period knows (rule metering-known-tenant): naming the
                # trace's would refuse one created and deleted without a job or a scrape.
            }
            if self.s.prometheus_url:
                extra["metering_prometheus_url"] = self.s.prometheus_url
            ok, _text = self.playbook("usage_report.yml", extra, inventory="inventories/local")
            ledgers = list(Path(where).glob("usage-*.json"))
            if not ok or not ledgers:
                return {}
            ledger = json.loads(ledgers[0].read_text())
        out: dict[str, float] = {}
        traced = set(self.tenant_names())
        for row in ledger.get("rows") or []:
            if row["tenant"] not in traced:
                continue  # a tenant of the cluster that the trace does not have
            hours = float(row.get("gpu_hours") or 0) * self.s.factor
            out[row["tenant"]] = out.get(row["tenant"], 0.0) + hours
        return out

    def reconcile_period(self) -> float:
        """The measured period of the reconcilers, traced seconds: the mean gap between the
        starts of one reconciler's runs, the slowest reconciler's. Under
        ``platform-events`` only the reconcilers on production's one-minute schedule
        count: the others run when the events say, so both platform runs are judged by
        the same bound."""
        worst = 0.0
        for name in RECONCILERS:
            if self.triggers is not None and self.triggers.starts(name):
                continue
            starts = [s for n, s, _e in self.reconciles if n == name]
            if len(starts) > 1:
                worst = max(worst, (starts[-1] - starts[0]) / (len(starts) - 1))
        return worst * self.s.factor

    def result(self, day: float, causes: Mapping[str, list[tuple[float, str]]]) -> Run:
        period = self.reconcile_period()
        window = max(period, RECONCILE_PERIOD_S) * 2
        records = []
        for t in self.tracked.values():
            evictions = observe.attribute(t.evictions, list(causes.get(t.record.name, [])), window)
            records.append(replace(t.record, evictions=evictions, waited_by_cause=dict(t.waited)))
        return Run(
            configuration=self.s.configuration,
            trace=self.s.trace_path,
            factor=self.s.factor,
            day_s=day,
            reconcile_period_s=period,
            schedule_period_s=SCHEDULE_PERIOD_S * self.s.factor,
            throttle_window_s=THROTTLE_TIMEOUT_S,
            jobs=tuple(sorted(records, key=lambda r: r.name)),
            samples=tuple(self.samples),
            marks=tuple(self.marks),
            seed=self.s.seed,
            refused=len(self.refusals),
            refusals=tuple(self.refusals),
            reconcile_runs={
                name: sum(1 for n, _s, _e in self.reconciles if n == name)
                for name in RECONCILERS
                if self.s.configuration in PLATFORMS
            },
            events=self.triggers.counts() if self.triggers else {},
        )


def replay(trace: Trace, settings: Settings) -> tuple[Run, list[str]]:
    """Replay ``trace`` under one configuration; the run (with the jobs refused at
    submission) and the playbook runs that failed on the way."""
    r = Replay(trace, settings)
    run = r.run()
    return run, r.failures
