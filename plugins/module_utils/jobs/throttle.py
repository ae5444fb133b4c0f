# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The large-job submission throttle (design 6.4.2) as a pure state machine.

While a large job (PriorityClass ``large-job``) waits in a queue for the GPUs
that preemption is freeing, new jobs below ``large-job`` in that queue are
held, so they cannot take those GPUs first. The state of one tenant namespace
is its ConfigMap ``platform-throttle``:

* ``queues``, ``until``, ``reason``: what the ValidatingAdmissionPolicy
  ``gpucloud-large-job-throttle`` reads (the queues it refuses, until when,
  why);
* ``entries.json``: one entry per waiting large job (its Volcano Job's uid,
  queue, job, GPUs, engage time, deadline and state ``engaged`` or
  ``expired``), so the deadline survives between runs and a job whose wait
  timed out does not engage the throttle again.

What a large job is (a large-job PodGroup and its Volcano Job) and rule
throttle-can-help, whether holding its queue can get it its GPUs, are ``large_job``'s;
the cluster reads and writes are ``throttle_io``'s.

Rule tenant-namespace-live (``unknown_namespace_errors``): the namespaces a run is limited
to are tenants' namespaces the platform made, judged from the namespace list the run reads
anyway; rule tenant-namespace (``common.names``) checked their form before it.

Transitions (``reconcile``), for each large job of the namespace:

* waiting, no entry, preemption can help -> engaged, deadline = now + timeout
* waiting, preemption cannot help        -> no entry (released; the reason is reported)
* engaged, waiting, now < deadline -> unchanged
* engaged, waiting, deadline passed -> expired (its queue is no longer listed)
* expired, waiting            -> unchanged (never engages again)
* any entry, job running or gone -> dropped

A queue is listed while at least one of its entries is engaged; a namespace
without entries has no ConfigMap.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import (
    LABEL_MANAGED_BY,
    LABEL_TENANT,
    MANAGED_BY,
    tenant_namespace_errors,
)
from ..common.times import write_rfc3339
from .large_job import LARGE_PRIORITY_CLASS, LargeJob, parse_time

CONFIGMAP = "platform-throttle"
KEY_QUEUES = "queues"
KEY_UNTIL = "until"
KEY_REASON = "reason"
KEY_ENTRIES = "entries.json"
DEFAULT_TIMEOUT = 300
ENGAGED = "engaged"
EXPIRED = "expired"


@dataclass(frozen=True)
class Entry:
    uid: str
    queue: str
    job: str
    gpus: int
    engaged_at: str
    until: str
    state: str = ENGAGED


def rfc3339(moment: datetime) -> str:
    return write_rfc3339(moment)


def read_entries(configmap: Mapping[str, Any] | None) -> list[Entry]:
    """The entries a ConfigMap holds; entries that cannot be read are dropped."""
    if not configmap:
        return []
    raw = (configmap.get("data") or {}).get(KEY_ENTRIES)
    if not raw:
        return []
    try:
        items = json.loads(raw)
    except ValueError:
        return []
    out = []
    for item in items if isinstance(items, list) else []:
        try:
            entry = Entry(**{k: item[k] for k in Entry.__dataclass_fields__ if k in item})
        except (TypeError, KeyError):
            continue
        if entry.state in (ENGAGED, EXPIRED) and parse_time(entry.until) is not None:
            out.append(entry)
    return out


def engage(entries: list[Entry], job: LargeJob, now: datetime, timeout: int) -> list[Entry]:
    """Rule throttle-engage: a waiting large job with no entry gets one, deadline now + timeout."""
    if any(e.uid == job.uid for e in entries):
        return list(entries)
    entry = Entry(
        uid=job.uid,
        queue=job.queue,
        job=job.job,
        gpus=job.gpus,
        engaged_at=rfc3339(now),
        until=rfc3339(now + timedelta(seconds=timeout)),
    )
    return [*entries, entry]


def reconcile(
    entries: list[Entry],
    jobs: Iterable[LargeJob],
    now: datetime,
    timeout: int,
    blocked: Mapping[str, str] | None = None,
) -> list[Entry]:
    """Rule throttle-reconcile: the next entries of one namespace (see the module docstring);
    ``blocked`` maps the uid of a waiting job that rule throttle-can-help turns away to why."""
    blocked = blocked or {}
    by_uid = {j.uid: j for j in jobs}
    out: list[Entry] = []
    for entry in entries:
        job = by_uid.get(entry.uid)
        if job is None or not job.waiting or entry.uid in blocked:
            continue  # the job runs, is gone, or preemption cannot help it: release
        until = parse_time(entry.until)
        if entry.state == ENGAGED and until is not None and now >= until:
            entry = replace(entry, state=EXPIRED)
        out.append(entry)
    for job in by_uid.values():
        if job.waiting and job.uid not in blocked:
            out = engage(out, job, now, timeout)
    return sorted(out, key=lambda e: (e.queue, e.engaged_at, e.uid))


def throttled_queues(entries: Iterable[Entry]) -> list[str]:
    return sorted({e.queue for e in entries if e.state == ENGAGED})


def reason_text(entries: Iterable[Entry], namespace: str) -> str:
    engaged = [e for e in entries if e.state == ENGAGED]
    parts = [
        f"large job {namespace}/{e.job} ({e.gpus} GPUs) is waiting for GPUs in {e.queue}"
        for e in engaged
    ]
    return "; ".join(parts) + " (preemption is freeing them)" if parts else ""


def configmap_data(entries: list[Entry], namespace: str) -> dict[str, str]:
    """What the admission policy reads plus the entries. ``until`` is the latest deadline of the
    engaged entries: no queue stays throttled past it."""
    engaged = [e for e in entries if e.state == ENGAGED]
    data = {
        KEY_QUEUES: ",".join(throttled_queues(entries)),
        KEY_UNTIL: max((e.until for e in engaged), default=""),
        KEY_REASON: reason_text(entries, namespace),
        KEY_ENTRIES: json.dumps([asdict(e) for e in entries], sort_keys=True),
    }
    return data


def configmap_manifest(namespace: str, tenant: str, entries: list[Entry]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": CONFIGMAP,
            "namespace": namespace,
            "labels": {LABEL_TENANT: tenant, LABEL_MANAGED_BY: MANAGED_BY},
        },
        "data": configmap_data(entries, namespace),
    }


@dataclass(frozen=True)
class Change:
    """What reconciling one namespace does: ``apply`` (a manifest), ``delete`` or nothing."""

    namespace: str
    before: list[Entry]
    after: list[Entry]
    action: str  # "apply", "delete" or "none"
    manifest: dict[str, Any] | None

    @property
    def engaged(self) -> list[str]:
        had = {e.uid for e in self.before}
        return [f"{self.namespace}/{e.job}" for e in self.after if e.uid not in had]

    @property
    def released(self) -> list[str]:
        keep = {e.uid for e in self.after}
        return [f"{self.namespace}/{e.job}" for e in self.before if e.uid not in keep]

    @property
    def expired(self) -> list[str]:
        was = {e.uid: e.state for e in self.before}
        return [
            f"{self.namespace}/{e.job}"
            for e in self.after
            if e.state == EXPIRED and was.get(e.uid) == ENGAGED
        ]


def plan_namespace(
    namespace: str,
    tenant: str,
    configmap: Mapping[str, Any] | None,
    jobs: Iterable[LargeJob],
    now: datetime,
    timeout: int,
    blocked: Mapping[str, str] | None = None,
) -> Change:
    """Rule throttle-state: the ConfigMap a namespace should have after reconciling, and
    whether writing it changes anything."""
    before = read_entries(configmap)
    mine = [j for j in jobs if j.namespace == namespace]
    after = reconcile(before, mine, now, timeout, blocked)
    if not after:
        return Change(namespace, before, after, "delete" if configmap else "none", None)
    manifest = configmap_manifest(namespace, tenant, after)
    live_data = (configmap or {}).get("data") or {}
    live_labels = ((configmap or {}).get("metadata") or {}).get("labels") or {}
    same = live_data == manifest["data"] and all(
        live_labels.get(k) == v for k, v in manifest["metadata"]["labels"].items()
    )
    return Change(namespace, before, after, "none" if same else "apply", manifest)


def blocks(configmap: Mapping[str, Any] | None, queue: str, priority_class: str | None) -> bool:
    """Rule large-job-throttle (client side, the same as the admission policy): a job below
    large-job is held while its queue is listed."""
    if priority_class in ("critical-job", LARGE_PRIORITY_CLASS):
        return False
    listed = ((configmap or {}).get("data") or {}).get(KEY_QUEUES) or ""
    return queue in [q.strip() for q in listed.split(",") if q.strip()]


def check_reconcile_input(params: Mapping[str, Any]) -> None:
    """large_job_throttle's input checks, before connecting: the timeout is 0 or more
    seconds, and every entry of ``namespaces`` passes rule tenant-namespace."""
    errors = []
    if params["timeout"] < 0:
        errors.append(FieldError("timeout", f"{params['timeout']} must be 0 or more seconds"))
    for i, namespace in enumerate(params.get("namespaces") or []):
        errors += tenant_namespace_errors(namespace, f"namespaces[{i}]")
    raise_if(errors)


def unknown_namespace_errors(wanted: Sequence[str], tenants: Mapping[str, str]) -> list[FieldError]:
    """Rule tenant-namespace-live: every entry of ``namespaces`` is the namespace of a tenant
    the platform made, that is one the namespace list (``tenants``: namespace -> its
    ``platform.io/tenant`` label, a label only the platform writes) holds. A name of the
    tenant form that no tenant has, or a namespace someone else made under that name,
    would otherwise be reconciled as nothing and the run report success."""
    return [
        FieldError(
            f"namespaces[{i}]",
            f"{namespace!r} is no tenant's namespace (no namespace of that name is labelled "
            f"{LABEL_TENANT}); expected the namespace of a tenant the platform made "
            f"({', '.join(sorted(tenants)) or 'none yet'}) (rule tenant-namespace-live)",
        )
        for i, namespace in enumerate(wanted)
        if namespace not in tenants
    ]


def unmanaged_warning(namespace: str) -> str:
    return f"{namespace}: ConfigMap {CONFIGMAP} is not managed by the platform; left alone"


def not_engaged(jobs: Iterable[LargeJob], blocked: Mapping[str, str]) -> list[dict[str, str]]:
    """The waiting large jobs rule throttle-can-help turned away, with why."""
    return [
        {"job": f"{j.namespace}/{j.job}", "queue": j.queue, "reason": blocked[j.uid]}
        for j in sorted(jobs, key=lambda j: (j.namespace, j.job))
        if j.uid in blocked
    ]


def reconcile_report(
    changes: list[Change], skipped: list[str], turned_away: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    """large_job_throttle's result: who engaged, released or expired, who did not engage and
    why, each namespace's throttle after the run, and (for diff mode) the throttled queues
    before and after."""
    written = [c for c in changes if c.action != "none"]
    throttles = {}
    for c in changes:
        if c.after:
            data = configmap_data(c.after, c.namespace)
            throttles[c.namespace] = {
                "queues": throttled_queues(c.after),
                "until": data[KEY_UNTIL],
                "reason": data[KEY_REASON],
            }
    return {
        "changed": bool(written),
        "engaged": [j for c in changes for j in c.engaged],
        "released": [j for c in changes for j in c.released],
        "expired": [j for c in changes for j in c.expired],
        "not_engaged": list(turned_away or []),
        "skipped": skipped,
        "throttles": throttles,
        "diff": {
            "before": {c.namespace: throttled_queues(c.before) for c in written},
            "after": {c.namespace: throttled_queues(c.after) for c in written},
        },
    }


def engagement(
    job: str, change: Change, away: Sequence[Mapping[str, Any]]
) -> tuple[bool, str | None]:
    """Rule throttle-engage for a large job just created that is not Running within its
    grace: whether reconciling its namespace (``change``) engaged the throttle for it, and
    otherwise the reason ``away`` gives for it (None: none is given)."""
    return job in change.engaged, next((j["reason"] for j in away if j["job"] == job), None)


def podgroup_missing(
    job: str, namespace: str, waited: float
) -> tuple[Change, list[dict[str, str]]]:
    """A large job whose PodGroup Volcano has not created within ``waited`` seconds is not
    judged now: no change, and why (the scheduled ``large_job_throttle`` run judges it)."""
    why = (
        f"Volcano has not created its PodGroup within {waited} s; the "
        "scheduled large_job_throttle run judges it"
    )
    return Change(namespace, [], [], "none", None), [{"job": job, "reason": why}]
