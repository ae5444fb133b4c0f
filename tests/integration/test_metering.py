# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bill against ground truth, on the real Prometheus: kube-state-metrics, Volcano's
metrics and the platform's recording rules, as the local cluster runs them (scrape and
rule evaluation every 5 s).

One mixed period, every GPU pod's Running interval recorded by a watch on the API:

* tenant T1 (the job tests' namespace and leaf queues): a 10 s job in its team queue
  (subscription), a 25 s job in its pay-as-you-go queue, a 45 s spot job, a cheaper
  spot job that a real ``spot_reclaim`` deletes part-way, and a job on a cloud node;
* tenant T2, made by the ``tenant`` module after the period began and resized within it,
  running a plain Volcano Job with no platform label or annotation, submitted by a tenant
  identity (group ``tenant:T2``) against every admission policy.

The ledger's GPU-seconds per job are within one evaluation interval per edge of the
truth at every step tried, the ledgers of all steps are equal, T2 pays for its
subscription only from its creation, at each size for as long as it had it, and the
reconciliation finds nothing unclaimed; the reclaim's notice reaches T1's alert receiver
through the real Alertmanager, and not T2's. A second period has a GPU pod an administrator
placed in T1's namespace outside its queues: the reconciliation names it.
"""

from __future__ import annotations

import calendar
import contextlib
import csv
import io
import json
import math
import re
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid
from decimal import Decimal
from pathlib import Path

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.policy import admission as ap
from ansible_collections.gpucloud.platform.tests.integration import test_jobs as job_tests
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    apply_admission,
    identity,
    notified_alerts,
    prometheus_url,
    remove_tenants,
    route_tenant_alerts,
    run_playbook,
    wait_until,
)
from ansible_collections.gpucloud.platform.tests.integration.test_tenant import job_body

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "localcluster"))
import topology

# The job tests' tenant: a namespace with three leaf queues (team, payg, spot), no quota.
SMALL, VCJOBS = job_tests.SMALL, job_tests.VCJOBS
dyn = job_tests.dyn
platform_objects = job_tests.platform_objects
tenant = job_tests.tenant

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RES = 5  # the local cluster's scrape and metering evaluation interval
GPU = "nvidia.com/gpu"
CLOUD_NODE = "vk-metering-0"
# name -> (queue suffix, class, GPUs, bid, seconds it runs; None: until reclaimed)
T1_JOBS = {
    "short": ("algo", "normal", 1, None, 10),
    "medium": ("payg", "normal", 2, None, 15),
    "long": ("spot", "spot", 1, "0.3", 30),
    "cheap": ("spot", "spot", 1, "0.1", None),
    "cloud": ("payg", "normal", 12, None, 10),
}
CLOUD_JOB = {"placement": "cloud-ok", "max_gpus_per_node": 16, "checkpoint_command": ["save"]}
HAND_SECONDS = 25
RECLAIM_AFTER = 20
RESIZE_AFTER = 12
PRICES = {
    "subscription": {"gpu_hour": "2.00", "overage_gpu_hour": "3.00"},
    "payg": {"gpu_hour": "3.50"},
    "spot": {},
    "cloud": {"gpu_hour": "5.00"},
}
# Panels whose series only real hardware or finished jobs make (kwok pods never end):
# their rules are covered by tests/unit/promtool instead.
NEEDS_HARDWARE = re.compile(r"DCGM_FI_")
NEEDS_FINISHED_JOBS = ("platform:queue_job_failure:ratio1h",)
# kwok runs no model servers: the inference dashboard needs real traffic (docs/inference.md).
NEEDS_MODEL_SERVERS = "inference"


def prom(path: str, **params) -> dict:
    url = f"{prometheus_url()}/api/v1/{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=10) as resp:
        body = json.load(resp)
    assert body["status"] == "success", body
    return body["data"]


def rfc3339(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


class PodWatch:
    """Ground truth: when each GPU pod of the watched namespaces ran, from a watch on the
    API (the first event that shows it Running, the first that shows it not Running or
    deleted)."""

    def __init__(self, api_client, namespaces: set[str]):
        from kubernetes import client, watch

        self.core = client.CoreV1Api(api_client)
        self.namespaces = namespaces
        self.watch = watch.Watch()
        self.intervals: dict[tuple[str, str], list] = {}  # (ns, pod) -> [job, gpus, start, end]
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        for event in self.watch.stream(self.core.list_pod_for_all_namespaces, timeout_seconds=900):
            pod, now = event["object"], time.time()
            key = (pod.metadata.namespace, pod.metadata.name)
            if key[0] not in self.namespaces:
                continue
            running = event["type"] != "DELETED" and pod.status.phase == "Running"
            seen = self.intervals.get(key)
            if running and seen is None:
                labels = pod.metadata.labels or {}
                gpus = sum(
                    int((c.resources.requests or {}).get(GPU, 0)) for c in pod.spec.containers
                )
                self.intervals[key] = [labels.get("volcano.sh/job-name", ""), gpus, now, None]
            elif not running and seen is not None and seen[3] is None:
                seen[3] = now

    def __enter__(self) -> PodWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.watch.stop()

    def runs(self, ns: str, job: str) -> list[list]:
        """[job, gpus, start, end] of each pod of ``job`` in ``ns``."""
        return [
            run
            for (namespace, _pod), run in self.intervals.items()
            if namespace == ns and run[0] == job
        ]

    def started(self, ns: str, job: str) -> float | None:
        starts = [run[2] for run in self.runs(ns, job)]
        return min(starts) if starts else None

    def ended(self, ns: str, job: str) -> bool:
        runs = self.runs(ns, job)
        return bool(runs) and all(run[3] is not None for run in runs)

    def gpu_seconds(self, ns: str, job: str) -> float:
        runs = self.runs(ns, job)
        assert runs and all(run[3] for run in runs), (ns, job, runs)
        return sum(run[1] * (run[3] - run[2]) for run in runs)


def apply(dyn, manifest: dict) -> None:
    res = dyn.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    res.server_side_apply(
        body=manifest,
        namespace=manifest["metadata"].get("namespace"),
        field_manager="gpucloud-platform",
        force_conflicts=True,
    )


@pytest.fixture
def hybrid_admission(dyn, platform_objects):
    """Every admission policy, as a hybrid site runs them (tenant pods may tolerate the
    cloud taint), and one cloud GPU node of 16 GPUs labelled as node_groups labels it;
    the policies go back to the default (no cloud) afterwards and the node is removed."""
    apply_admission(dyn.client, cloud_burst=True)
    node = topology.cloud_node(CLOUD_NODE, "aliyun", "cn-hangzhou", gpus=16).manifest()
    status = node.pop("status")
    node["metadata"]["labels"]["platform.io/node-location"] = "cloud"
    nodes = dyn.resources.get(api_version="v1", kind="Node")
    nodes.create(body=node)
    nodes.status.patch(
        name=CLOUD_NODE, body={"status": status}, content_type="application/merge-patch+json"
    )
    yield
    with contextlib.suppress(Exception):
        nodes.delete(name=CLOUD_NODE)
    apply_admission(dyn.client)


def plain_job(name: str, namespace: str, queue: str) -> dict:
    """A Volcano Job as Volcano's docs write one: no platform label or annotation, only a
    platform PriorityClass (rule queue-priority)."""
    body = job_body(name, namespace, queue)
    del body["metadata"]["labels"]
    return body


def t2_args(name: str, gpus: int) -> dict:
    return {
        "name": name,
        "subscription": {GPU: gpus, "cpu": 64, "memory": "256Gi"},
        "teams": [{"name": "algo", "deserved": {GPU: gpus}}],
        "oversell_check": False,
    }


def report(
    run_module, start: float, end: float, tenants: list[str], step: int | None = None
) -> dict:
    out = run_module(
        "usage_report",
        {
            "prometheus_url": prometheus_url(),
            "start": rfc3339(start),
            "end": rfc3339(end),
            **({"step": step} if step else {}),
            "tenants": tenants,
            "prices": PRICES,
            "currency": "EUR",
        },
    )
    assert not out.get("failed"), out.get("msg")
    assert out["changed"] is False
    return out


def submit_t1(run_module, t1: str, ns: str) -> None:
    for name, (suffix, job_class, gpus, bid, _seconds) in T1_JOBS.items():
        out = run_module(
            "vcjob",
            dict(
                tenant=t1,
                name=name,
                queue=f"{ns}-{suffix}",
                kind="single",
                job_class=job_class,
                image="i",
                command=["x"],
                gpus_per_pod=gpus,
                **({"spot_price": bid} if bid else {}),
                # 12 GPUs fit only the 16-GPU cloud node; a cloud job saves checkpoints
                **(CLOUD_JOB if name == "cloud" else {}),
                **SMALL,
            ),
        )
        assert out.get("failed") is not True, (name, out.get("msg"))


def reclaim_cheap(run_module) -> dict:
    """A real reclaim that needs one GPU more than are free: the cheapest spot job goes."""
    probe = run_module("spot_reclaim", {"need": 0}, check=True)
    assert not probe.get("failed"), probe.get("msg")
    out = run_module("spot_reclaim", {"need": probe["free"] + 1, "demand_reason": "metering test"})
    assert not out.get("failed"), out.get("msg")
    return out


def queue_changed_at(dyn, name: str) -> float:
    """When the tenant module last wrote the queue's capability: its managedFields time."""
    queue = dyn.resources.get(api_version=job_tests.QUEUES[0], kind=job_tests.QUEUES[1]).get(
        name=name
    )
    stamps = [
        f["time"]
        for f in queue.to_dict()["metadata"].get("managedFields") or []
        if "f:capability" in json.dumps(f.get("fieldsV1") or {})
    ]
    return max(calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")) for s in stamps)


def test_the_ledger_of_a_mixed_period_is_what_ran(
    platform_scheduler_conf, hybrid_admission, tenant, dyn, api_client, run_module
):
    """The platform's scheduler configuration, not the chart's: only Volcano's capacity
    plugin writes volcano_queue_capacity_scalar_resources, and the dashboards are drawn
    for the platform's scheduler. Every panel is checked while the period runs."""
    t1, ns1 = tenant, f"tenant-{tenant}"
    # A GPU capability on the team queue, so Volcano reports one for the capability panel
    # (the job tests' queues have none).
    dyn.resources.get(api_version=job_tests.QUEUES[0], kind=job_tests.QUEUES[1]).patch(
        name=f"{ns1}-algo",
        body={"spec": {"capability": {GPU: 16}}},
        content_type="application/merge-patch+json",
    )
    t2 = f"mt{uuid.uuid4().hex[:6]}"
    ns2 = f"tenant-{t2}"
    # Each tenant's alerts to its own receiver: the reclaim's notice reaches T1's only.
    route_tenant_alerts(t1)
    route_tenant_alerts(t2)
    start = math.floor(time.time() / RES) * RES
    deadlines: dict[str, float] = {}
    with PodWatch(api_client, {ns1, ns2}) as truth:
        time.sleep(1)
        submit_t1(run_module, t1, ns1)
        made = run_module("tenant", t2_args(t2, 2))
        assert not made.get("failed"), made.get("msg")
        created = queue_changed_at(dyn, f"{ns2}-subscription")
        eve = identity("eve", t2)
        wait_until(
            lambda: _created(eve, plain_job("hand", ns2, f"{ns2}-algo")),
            60,
            1,
            "the tenant's plain job admitted",
        )
        try:
            jobs = dyn.resources.get(api_version=VCJOBS[0], kind=VCJOBS[1])
            resized = reclaimed = None
            t1_running = {}
            while True:
                now = time.time()
                for name, (*_rest, seconds) in T1_JOBS.items():
                    began = truth.started(ns1, name)
                    if began and name not in t1_running:
                        t1_running[name] = began
                    # The spot queue's panel is read after the reclaim: "long" holds it.
                    held = name == "long" and reclaimed is None
                    ran = bool(seconds and began and now - began >= seconds)
                    if ran and not held and name not in deadlines:
                        jobs.delete(name=name, namespace=ns1)
                        deadlines[name] = now
                hand = truth.started(ns2, "hand")
                if hand and now - hand >= HAND_SECONDS and "hand" not in deadlines:
                    jobs.delete(name="hand", namespace=ns2)
                    deadlines["hand"] = now
                cheap = truth.started(ns1, "cheap")
                if resized is None and now - created >= RESIZE_AFTER:
                    out = run_module("tenant", t2_args(t2, 4))
                    assert not out.get("failed"), out.get("msg")
                    resized = queue_changed_at(dyn, f"{ns2}-subscription")
                if reclaimed is None and cheap and now - cheap >= RECLAIM_AFTER:
                    done = [j for j in ("short", "medium", "cloud") if truth.ended(ns1, j)]
                    if len(done) == 3:  # the free count holds still while it is read
                        reclaimed = reclaim_cheap(run_module)
                        check_dashboard_panels(t1, f"{ns1}-spot", 1)
                every = [*T1_JOBS, "hand"]
                if all(truth.ended(ns1 if j != "hand" else ns2, j) for j in every):
                    break
                assert now - start < 420, f"the period ran too long: {truth.intervals}"
                time.sleep(0.5)
        finally:
            for name in [*T1_JOBS]:
                with contextlib.suppress(Exception):
                    dyn.resources.get(api_version=VCJOBS[0], kind=VCJOBS[1]).delete(
                        name=name, namespace=ns1
                    )
        # The last scrape and evaluation after the last end; the period ends on a 20 s
        # boundary, so that steps of 1, 5 and 20 s all divide it.
        time.sleep(3 * RES)
        end = start + math.ceil((time.time() - start) / 20) * 20
        time.sleep(max(0.0, end - time.time()) + 2 * RES)
    try:
        assert [v["name"] for v in reclaimed["victims"]] == ["cheap"], reclaimed["victims"]
        check_reclaim_notice(t1, ns1, t2)
        check_ledger(run_module, truth, start, end, (t1, ns1), (t2, ns2), created, resized)
        check_unclaimed_pod(dyn, run_module, t1, ns1)
    finally:
        remove_tenants(run_module, api_client, [t2])


def check_reclaim_notice(t1: str, ns1: str, t2: str) -> None:
    """The reclaim's count on T1's spot queue, exported by kube-state-metrics, fired
    SpotJobsReclaimed in the real Prometheus, and the real Alertmanager sent it to T1's
    receiver (and on to the platform's), not to T2's."""
    (notice,) = wait_until(
        lambda: [
            a
            for a in notified_alerts(f"tenant/{t1}", "SpotJobsReclaimed")
            if a["labels"].get("queue") == f"{ns1}-spot"
        ][-1:],
        60,
        1,
        "SpotJobsReclaimed at T1's webhook receiver",
    )
    assert notice["labels"]["tenant"] == t1 and notice["labels"]["cause"] == "spot-reclaim"
    assert notice["labels"]["severity"] == "warning"
    assert any(
        a["labels"].get("tenant") == t1 for a in notified_alerts("platform", "SpotJobsReclaimed")
    )
    assert not notified_alerts(f"tenant/{t2}", "SpotJobsReclaimed")


def _created(client, body: dict) -> bool:
    from kubernetes.client.rest import ApiException

    try:
        client.resources.get(api_version=VCJOBS[0], kind=VCJOBS[1]).create(
            body=body, namespace=body["metadata"]["namespace"]
        )
        return True
    except ApiException as exc:
        if "no params found" in str(exc.body) or exc.status == 403:
            return False  # the policies' informers have not seen the new tenant yet
        raise


def close(got_hours: str, truth_seconds: float, gpus: int, what: str) -> None:
    """Rule exact-integral's promise: within one evaluation interval per edge."""
    got = float(Decimal(got_hours) * 3600)
    print(f"{what}: {got:.1f} GPU-seconds billed, {truth_seconds:.1f} ran")
    assert abs(got - truth_seconds) <= 2 * RES * gpus, (what, got, truth_seconds)


def check_ledger(run_module, truth, start, end, one, two, created, resized) -> None:
    (t1, ns1), (t2, ns2) = one, two
    ledgers = [
        report(run_module, start, end, [t1, t2], step)["ledger"] for step in (1, 5, 20, None)
    ]
    # The step only slices the reading: every step bills the same, to the character.
    assert all(ledger == ledgers[0] for ledger in ledgers), "the bill depends on the step"
    ledger = ledgers[0]
    assert ledger["resolution_seconds"] == str(RES) and ledger["currency"] == "EUR"
    rows = {(r["tenant"], r["billing_type"]): r for r in ledger["rows"]}
    close(rows[t1, "subscription"]["gpu_hours"], truth.gpu_seconds(ns1, "short"), 1, "10 s job")
    close(rows[t1, "payg"]["gpu_hours"], truth.gpu_seconds(ns1, "medium"), 2, "25 s job")
    close(rows[t1, "cloud"]["gpu_hours"], truth.gpu_seconds(ns1, "cloud"), 12, "cloud job")
    lines = {line["job"]: line for line in rows[t1, "spot"]["jobs"]}
    assert set(lines) == {"long", "cheap"} and lines["cheap"]["bid"] == "0.1", lines
    close(lines["long"]["gpu_hours"], truth.gpu_seconds(ns1, "long"), 1, "45 s spot job")
    close(lines["cheap"]["gpu_hours"], truth.gpu_seconds(ns1, "cheap"), 1, "reclaimed spot job")
    close(rows[t2, "subscription"]["gpu_hours"], truth.gpu_seconds(ns2, "hand"), 1, "plain job")
    assert (
        Decimal(rows[t2, "payg"]["gpu_hours"]) == 0 and Decimal(rows[t2, "spot"]["gpu_hours"]) == 0
    )
    # T2 pays from its creation, at 2 GPUs until the resize, then at 4.
    sizes = {s["subscription_gpus"]: s for s in rows[t2, "subscription"]["sizes"]}
    assert set(sizes) == {"2", "4"}, sizes
    for gpus, since, until in (("2", created, resized), ("4", resized, end)):
        held = float(Decimal(sizes[gpus]["hours"]) * 3600)
        print(f"T2 at {gpus} GPUs: {held:.0f} s billed, {until - since:.0f} s held")
        # the queue's write time has whole seconds: one more second per edge
        assert abs(held - (until - since)) <= 2 * (RES + 1), (gpus, held, until - since)
    assert (
        Decimal(rows[t2, "subscription"]["included_gpu_hours"]) < Decimal(4 * (end - start)) / 3600
    )
    assert ledger["reconciliation"] == {"unclaimed_gpu_hours": "0.000000", "pods": []}
    # The CSV says the same as the ledger.
    out = report(run_module, start, end, [t1, t2])
    table = list(csv.DictReader(io.StringIO(out["csv"])))
    spot = {r["job"]: r for r in table if r["kind"] == "spot_job"}
    assert spot["cheap"]["gpu_hours"] == lines["cheap"]["gpu_hours"]
    assert len([r for r in table if r["kind"] == "subscription_size" and r["tenant"] == t2]) == 2
    assert any(line.startswith("reconciliation: 0.000000 GPU-h") for line in out["summary"])


def check_unclaimed_pod(dyn, run_module, t1: str, ns1: str) -> None:
    """An administrator switches pod placement off and places a GPU pod in T1's
    namespace by node name, outside every queue: the reconciliation names it."""
    bindings = dyn.resources.get(
        api_version="admissionregistration.k8s.io/v1", kind="ValidatingAdmissionPolicyBinding"
    )
    pods = dyn.resources.get(api_version="v1", kind="Pod")
    placement = "gpucloud-pod-placement"
    start = math.floor(time.time() / RES) * RES
    bindings.delete(name=placement)
    try:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "admin-probe", "namespace": ns1},
            "spec": {
                "nodeName": "gpu-node-0",
                "containers": [
                    {"name": "main", "image": "probe", "resources": {"limits": {GPU: 1}}}
                ],
            },
        }
        wait_until(lambda: _pod_created(pods, pod), 60, 1, "the admin pod admitted")
        wait_until(
            lambda: pods.get(name="admin-probe", namespace=ns1).status.phase == "Running",
            60,
            0.5,
            "the admin pod Running",
        )
        began = time.time()
        time.sleep(10)
        pods.delete(name="admin-probe", namespace=ns1, grace_period_seconds=0)
        ran = time.time() - began
    finally:
        with contextlib.suppress(Exception):
            pods.delete(name="admin-probe", namespace=ns1, grace_period_seconds=0)
        for manifest in ap.admission_manifests():
            if manifest["metadata"]["name"] == placement and manifest["kind"].endswith("Binding"):
                apply(dyn, manifest)
    time.sleep(3 * RES)
    end = start + math.ceil((time.time() - start) / RES) * RES
    time.sleep(max(0.0, end - time.time()) + RES)
    check = report(run_module, start, end, [t1])["ledger"]["reconciliation"]
    assert [(p["namespace"], p["pod"]) for p in check["pods"]] == [(ns1, "admin-probe")], check
    close(check["unclaimed_gpu_hours"], ran, 1, "the administrator's pod, unclaimed")


def _pod_created(pods, body: dict) -> bool:
    from kubernetes.client.rest import ApiException

    try:
        pods.create(body=body, namespace=body["metadata"]["namespace"])
        return True
    except ApiException as exc:
        if exc.status == 409:
            return True
        if "gpucloud-pod-placement" in str(exc.body):
            return False  # the API server has not dropped the binding yet
        raise


def dashboard_queries() -> list[tuple[str, str, str]]:
    """(dashboard, unit, expr) of every panel target."""
    out = []
    for path in sorted((ROOT / "roles/monitoring/files/dashboards").glob("*.json")):
        board = json.loads(path.read_text())
        for panel in board["panels"]:
            unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit", "")
            for target in panel.get("targets", []):
                out.append((path.stem, unit, target["expr"]))
    return out


def check_dashboard_panels(name: str, queue: str, gpus: int) -> None:
    """Each panel's query has data, in its unit, once the rules have seen the jobs; ``queue``
    holds ``gpus`` GPUs."""
    skipped, checked, needs_traffic = [], [], []
    for board, unit, expr in dashboard_queries():
        if board == NEEDS_MODEL_SERVERS:
            needs_traffic.append(expr)
            continue
        if NEEDS_HARDWARE.search(expr) or any(n in expr for n in NEEDS_FINISHED_JOBS):
            skipped.append(expr)
            continue
        query = expr.replace("$tenant", name)
        result = wait_until(
            lambda q=query: prom("query", query=q)["result"], 30, 1, f"{board}: data for {query}"
        )
        values = [float(r["value"][1]) for r in result]
        if unit == "percentunit":
            assert all(0 <= v <= 1 for v in values), (query, values)
        if unit == "s":
            assert all(v >= 0 for v in values), (query, values)
        checked.append(query)
    # The queue GPU panels are in whole GPUs (Volcano's milli-units divided out).
    query = f'platform:queue_gpus:allocated{{queue_name="{queue}"}}'
    wait_until(
        lambda: [float(r["value"][1]) for r in prom("query", query=query)["result"]] == [gpus],
        30,
        1,
        f"{query} == {gpus}",
    )
    # 3 DCGM panels and the failure ratio are left to promtool
    assert len(skipped) == 4, skipped
    # the inference dashboard's 6 queries are left to promtool too (tests/unit/promtool)
    assert len(needs_traffic) == 6, needs_traffic
    assert len(checked) + len(skipped) + len(needs_traffic) == len(dashboard_queries())


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"end": "2026-01-01T00:00:00Z"}, "end"),
        ({"tenants": ["nosuchtenant"]}, "tenants"),
        ({"prices": {**PRICES, "payg": None}}, "prices.payg"),
        ({"end": "2083-01-01T00:00:00Z"}, "rule period-max"),
        ({"prometheus_url": "http://127.0.0.1:9"}, "prometheus_url"),
    ],
)
def test_usage_report_refuses_bad_input_naming_the_field(run_module, localcluster, change, field):
    args = {
        "prometheus_url": prometheus_url(),
        "start": "2026-01-02T00:00:00Z",
        "end": "2026-01-02T01:00:00Z",
        "step": 60,
        "prices": PRICES,
        **change,
    }
    out = run_module("usage_report", args)
    assert out.get("failed") is True
    assert field in out["msg"], out["msg"]


def test_the_playbook_writes_the_inventorys_ledger_and_the_same_bytes_again(
    ansible_env, localcluster, tmp_path
):
    """playbooks/usage_report.yml with the local inventory: the inventory's currency and
    prices are the ledger's (no play variable outranks them), a period before the cluster
    existed costs nothing, a second run of the period writes the same bytes, and the run
    ends with a summary a person reads."""
    import yaml

    inventory = yaml.safe_load((ROOT / "inventories/local/group_vars/all/platform.yml").read_text())
    extra = {
        "usage_start": "2026-01-01T00:00:00Z",
        "usage_end": "2026-01-01T01:00:00Z",
        "usage_report_dir": str(tmp_path),
    }
    stem = tmp_path / "usage-20260101T000000Z-20260101T010000Z"
    written = []
    for _run in range(2):
        rc, tasks = run_playbook(
            ansible_env, "usage_report.yml", extra, inventory="inventories/local"
        )
        assert rc == 0, {n: r.get("msg") for n, r in tasks.items() if r.get("failed")}
        written.append(
            (stem.with_suffix(".json").read_bytes(), stem.with_suffix(".csv").read_bytes())
        )
    assert written[0] == written[1]
    ledger = json.loads(written[0][0])
    assert ledger["currency"] == inventory["metering_currency"] == "EUR"
    assert ledger["prices"] == inventory["metering_prices"]
    assert ledger["period"] == {"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T01:00:00Z"}
    assert ledger["totals"]["amount"] == "0.00"
    header = next(csv.reader(io.StringIO(written[0][1].decode())))
    assert header[:3] == ["kind", "tenant", "billing_type"]
    summary = tasks["Summary"]["msg"]
    assert summary[0].startswith(
        "period 2026-01-01T00:00:00Z - 2026-01-01T01:00:00Z, resolution 5 s"
    )
    assert summary[1].startswith("total 0.00 EUR: subscription 0.00")
    assert summary[-1] == f"files: {tmp_path}/usage-20260101T000000Z-20260101T010000Z.json, .csv"


def test_the_playbook_refuses_a_misspelt_variable_before_any_query(ansible_env, localcluster):
    rc, tasks = run_playbook(
        ansible_env,
        "usage_report.yml",
        {"usage_strat": "2026-01-01T00:00:00Z"},
        inventory="inventories/local",
    )
    assert rc != 0
    failed = {n: r.get("msg") for n, r in tasks.items() if r.get("failed")}
    assert list(failed) == ["Refuse misspelt variables"], failed
    assert failed["Refuse misspelt variables"] == (
        "usage_strat: not a variable of usage_report.yml; did you mean usage_start? "
        "(rule playbook-variables)"
    )
    # nothing after the check ran: no query, no file
    assert "Bill the period" not in tasks
