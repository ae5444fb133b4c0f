# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Job submission and the large-job throttle against the local cluster (real
kube-apiserver admission, Volcano webhooks, vc-controller-manager and
vc-scheduler; kwok nodes, so pods run without containers).

* each kind's manifest is accepted by Volcano's webhooks and its pods are
  Running on a kwok node;
* the design's race (6.4.2), with the collection's scheduler configuration
  loaded into vc-scheduler for the test: with the queue full of normal-job and
  debug-job jobs, a 32-GPU large-job is submitted and vcjob engages the
  throttle; gangpreempt evicts the debug jobs and the large job runs; the
  admission policy denies a normal-job to that queue but not to another queue
  while the throttle is engaged; a held submission goes in once the large job
  runs; a large job that can never fit lifts the throttle after the timeout.

Needs the whole cluster's GPUs (8 nodes x 8) to be free of other jobs for the
race. Creates the platform PriorityClasses and the throttle admission policy
when they are missing and removes what it created; puts back the scheduler
configuration it found.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import datetime

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import ADMISSION_API
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.kinds import KINDS
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.manifest import build_job
from ansible_collections.gpucloud.platform.plugins.module_utils.policy import admission as ap
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.priority_classes import (
    priority_class_manifests,
)
from ansible_collections.gpucloud.platform.tests.conformance.conformance_kube import evictions
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import wait_until

pytestmark = pytest.mark.integration

VCJOBS = ("batch.volcano.sh/v1alpha1", "Job")
QUEUES = ("scheduling.volcano.sh/v1beta1", "Queue")
GPU = "nvidia.com/gpu"


@pytest.fixture(scope="module")
def dyn(api_client):
    from kubernetes import dynamic

    return dynamic.DynamicClient(api_client)


def _ensure(dyn, manifests) -> list[dict]:
    """Create what is missing; return what was created (to delete afterwards)."""
    from kubernetes.dynamic.exceptions import NotFoundError

    created = []
    for m in manifests:
        res = dyn.resources.get(api_version=m["apiVersion"], kind=m["kind"])
        ns = m["metadata"].get("namespace")
        try:
            res.get(name=m["metadata"]["name"], namespace=ns)
        except NotFoundError:
            res.create(body=m, namespace=ns)
            created.append(m)
    return created


@pytest.fixture(scope="module")
def platform_objects(dyn) -> Iterator[None]:
    throttle = list(
        ap.admission_manifests(
            queue_tenant=False,
            queue_leaf=False,
            queue_priority=False,
            queue_billing=False,
            pod_placement=False,
            platform_state=False,
        )
    )
    # The leaf policy (when the scheduling policy is installed) denies without its parameter.
    created = _ensure(dyn, [*priority_class_manifests(), *throttle, ap.parent_queues_configmap()])
    time.sleep(5 if created else 0)  # the API server's policy and parameter informers
    yield
    # The throttle policy and its binding stay installed. Kubernetes 1.35 stops
    # the API server's ConfigMap parameter informer for good once no binding
    # with a ConfigMap paramKind is left, and a policy created later then never
    # finds its parameter (kubernetes/kubernetes#130887, #133827) until the API
    # server restarts. Left alone they only act where a platform-throttle
    # ConfigMap lists a queue.
    for m in reversed([m for m in created if m["apiVersion"] != ADMISSION_API]):
        dyn.resources.get(api_version=m["apiVersion"], kind=m["kind"]).delete(
            name=m["metadata"]["name"], namespace=m["metadata"].get("namespace")
        )


@pytest.fixture
def tenant(dyn, platform_objects) -> Iterator[str]:
    """A tenant namespace and three leaf queues: <ns>-algo (team), <ns>-payg, <ns>-spot."""
    name = f"jt{uuid.uuid4().hex[:6]}"
    ns = f"tenant-{name}"
    dyn.resources.get(api_version="v1", kind="Namespace").create(
        body={"metadata": {"name": ns, "labels": {"platform.io/tenant": name}}}
    )
    queues = dyn.resources.get(api_version=QUEUES[0], kind=QUEUES[1])
    for suffix, qtype in (("algo", "team"), ("payg", "payg"), ("spot", "spot")):
        queues.create(
            body={
                "apiVersion": QUEUES[0],
                "kind": "Queue",
                "metadata": {
                    "name": f"{ns}-{suffix}",
                    "labels": {
                        "platform.io/tenant": name,
                        "platform.io/queue-type": qtype,
                        "platform.io/managed-by": "gpucloud-platform",
                    },
                },
                "spec": {"parent": "root", "weight": 1, "reclaimable": False},
            }
        )
    # The tenant's queue list, as the tenant module writes it: vcjob reads it, and so do the
    # queue admission policies where the scheduling policy is installed.
    leaves = {f"{ns}-algo": "team", f"{ns}-payg": "payg", f"{ns}-spot": "spot"}
    dyn.resources.get(api_version="v1", kind="ConfigMap").create(
        body=ap.tenant_queues_configmap(name, leaves), namespace=ns
    )
    wait_until(lambda: _default_sa(dyn, ns), 60, 0.5, f"default ServiceAccount in {ns}")
    probe = build_job(
        {
            "name": "probe",
            "tenant": name,
            "queue": f"{ns}-algo",
            "kind": "single",
            "image": "i",
            "command": ["x"],
            "gpus_per_pod": 1,
            **SMALL,
        }
    )
    jobs = dyn.resources.get(api_version=VCJOBS[0], kind=VCJOBS[1])
    wait_until(
        lambda: not _denied_in_dry_run(jobs, probe), 60, 0.5, f"the policies to read {ns}'s queues"
    )
    yield name
    jobs = dyn.resources.get(api_version=VCJOBS[0], kind=VCJOBS[1])
    for job in jobs.get(namespace=ns).items:
        jobs.delete(name=job.metadata.name, namespace=ns)
    wait_until(lambda: not jobs.get(namespace=ns).items, 120, 1, f"jobs in {ns} gone")
    pods = dyn.resources.get(api_version="v1", kind="Pod")
    wait_until(lambda: not pods.get(namespace=ns).items, 120, 1, f"pods in {ns} gone")
    dyn.resources.get(api_version="v1", kind="Namespace").delete(name=ns)
    for suffix in ("algo", "payg", "spot"):
        wait_until(
            lambda s=suffix: _delete_queue(queues, f"{ns}-{s}"),
            60,
            1,
            f"queue {ns}-{suffix} deleted",
        )


def _default_sa(dyn, ns):
    from kubernetes.dynamic.exceptions import NotFoundError

    try:
        dyn.resources.get(api_version="v1", kind="ServiceAccount").get(name="default", namespace=ns)
        return True
    except NotFoundError:
        return False


def _delete_queue(queues, name):
    from kubernetes.dynamic.exceptions import ApiException, NotFoundError

    try:
        queues.delete(name=name)
    except NotFoundError:
        return True
    except ApiException:
        return False  # still has PodGroups; Volcano refuses until they are gone
    return True


def _pods(dyn, ns, job):
    pods = dyn.resources.get(api_version="v1", kind="Pod").get(
        namespace=ns, label_selector=f"volcano.sh/job-name={job}"
    )
    return pods.items


def _running_on_nodes(dyn, ns, job, count):
    pods = _pods(dyn, ns, job)
    ok = [
        p
        for p in pods
        if p.status.phase == "Running" and (p.spec.nodeName or "").startswith("gpu-node-")
    ]
    return len(ok) == count and ok


KIND_ARGS = {
    "pytorch_ddp": {"command": ["train.py"], "replicas": 2},
    "ps_worker": {"command": ["python", "train.py"], "replicas": 2, "ps_replicas": 1},
    "mpi": {"command": ["python", "train.py"], "replicas": 2},
    "spark": {"command": ["spark-submit", "app.py"], "replicas": 2},
    "ray": {"replicas": 2},
    "single": {"command": ["python", "train.py"], "replicas": 1},
}
PODS = {"pytorch_ddp": 2, "ps_worker": 3, "mpi": 3, "spark": 3, "ray": 3, "single": 1}
SMALL = {"cpu": "1", "memory": "1Gi", "head_cpu": "1", "head_memory": "1Gi"}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_is_accepted_and_runs(kind, tenant, dyn, run_module):
    ns = f"tenant-{tenant}"
    name = f"k-{kind.replace('_', '-')}"
    out = run_module(
        "vcjob",
        dict(
            tenant=tenant,
            name=name,
            queue=f"{ns}-algo",
            kind=kind,
            image="registry.example.com/train:v1",
            gpus_per_pod=1,
            shm_size="1Gi",
            wait=True,
            wait_timeout=90,
            wait_sleep=1,
            **SMALL,
            **KIND_ARGS[kind],
        ),
    )
    assert out.get("failed") is not True, out.get("msg")
    assert out["changed"] is True and out["phase"] == "Running"
    assert wait_until(
        lambda: _running_on_nodes(dyn, ns, name, PODS[kind]), 60, 1, f"{name} pods Running"
    )
    live = dyn.resources.get(api_version=VCJOBS[0], kind=VCJOBS[1]).get(name=name, namespace=ns)
    assert live.metadata.labels["platform.io/job-class"] == "normal"
    assert live.spec.priorityClassName == "normal-job"
    again = run_module(
        "vcjob",
        dict(
            tenant=tenant,
            name=name,
            queue=f"{ns}-algo",
            kind=kind,
            image="registry.example.com/train:v1",
            gpus_per_pod=1,
            shm_size="1Gi",
            **SMALL,
            **KIND_ARGS[kind],
        ),
    )
    assert again["changed"] is False


def _checkpoint_claim(dyn, ns: str, name: str) -> None:
    """A claim bound to a static volume of its own (the local cluster has no provisioner;
    kwok mounts nothing)."""
    volume = f"{ns}-{name}"
    dyn.resources.get(api_version="v1", kind="PersistentVolume").create(
        body={
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": volume},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "hostPath": {"path": f"/srv/{volume}"},
                "storageClassName": "",
                "claimRef": {"namespace": ns, "name": name},
            },
        }
    )
    dyn.resources.get(api_version="v1", kind="PersistentVolumeClaim").create(
        namespace=ns,
        body={
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": "",
                "volumeName": volume,
            },
        },
    )


def test_spot_job_with_price_and_checkpoint_runs(tenant, dyn, run_module):
    """A spot job with its price, a checkpoint command and the checkpoint convention: its
    pod runs with the 300 s grace, the variables, the claim, and the resume and upload
    containers (the upload a sidecar with its preStop), as the real API server took them."""
    ns = f"tenant-{tenant}"
    _checkpoint_claim(dyn, ns, "spot-checkpoints")
    out = run_module(
        "vcjob",
        dict(
            tenant=tenant,
            name="spot-1",
            queue=f"{ns}-spot",
            kind="single",
            job_class="spot",
            spot_price="0.3",
            image="i",
            command=["python", "ft.py"],
            gpus_per_pod=1,
            checkpoint_command=["/bin/sh", "-c", "python /scripts/checkpoint_save.py"],
            checkpoint={"claim": "spot-checkpoints", "image": "tools/aws-cli:2"},
            wait=True,
            wait_timeout=90,
            wait_sleep=1,
            **SMALL,
        ),
    )
    assert out.get("failed") is not True, out.get("msg")
    pod = wait_until(lambda: _running_on_nodes(dyn, ns, "spot-1", 1), 60, 1, "spot pod")[0]
    assert (
        pod.spec.terminationGracePeriodSeconds == 300 and pod.spec.priorityClassName == "spot-job"
    )
    env = {e.name: e.value for e in pod.spec.containers[0].env}
    assert env["CHECKPOINT_DIR"] == "/checkpoints/spot-1"
    assert env["CHECKPOINT_URI"] == f"s3://tenant-{tenant}-checkpoints/spot-1/"
    assert [(c.name, c.restartPolicy) for c in pod.spec.initContainers] == [
        ("checkpoint-resume", None),
        ("checkpoint-upload", "Always"),
    ]
    assert pod.spec.initContainers[1].lifecycle.preStop.exec.command[:2] == ["sh", "-c"]
    claims = [
        v.persistentVolumeClaim.claimName for v in pod.spec.volumes if v.persistentVolumeClaim
    ]
    assert claims == ["spot-checkpoints"]
    # The volume is the cluster's, not the namespace's: it goes with the test.
    dyn.resources.get(api_version="v1", kind="PersistentVolume").delete(
        name=f"{ns}-spot-checkpoints"
    )


def test_check_mode_creates_nothing(tenant, dyn, run_module):
    ns = f"tenant-{tenant}"
    out = run_module(
        "vcjob",
        dict(
            tenant=tenant,
            name="dry",
            queue=f"{ns}-algo",
            kind="single",
            image="i",
            command=["x"],
            gpus_per_pod=1,
            **SMALL,
        ),
        check=True,
    )
    assert out["changed"] is True
    assert not dyn.resources.get(api_version=VCJOBS[0], kind=VCJOBS[1]).get(namespace=ns).items


def _free_gpu_nodes(dyn) -> int:
    """Nodes none of whose GPUs an unfinished pod holds."""
    used: dict[str, int] = {}
    for pod in dyn.resources.get(api_version="v1", kind="Pod").get().items:
        if pod.status.phase in ("Succeeded", "Failed") or not pod.spec.nodeName:
            continue
        for c in pod.spec.containers:
            req = (c.resources.requests if c.resources and c.resources.requests else {}) or {}
            gpus = int(req.get("nvidia.com/gpu", 0) or 0)
            used[pod.spec.nodeName] = used.get(pod.spec.nodeName, 0) + gpus
    free = 0
    for node in dyn.resources.get(api_version="v1", kind="Node").get().items:
        gpus = int((node.status.allocatable or {}).get("nvidia.com/gpu", 0) or 0)
        if gpus >= 8 and used.get(node.metadata.name, 0) == 0:
            free += 1
    return free


def _gpu_pods_leaving(dyn) -> list[str]:
    """GPU pods on their way out: terminating, or orphaned by a deleted Volcano Job and
    waiting for the garbage collector. Their GPUs count as used until they are gone, so
    a node they hold would free up by itself in the middle of a test."""
    jobs = {
        (j.metadata.namespace, j.metadata.name)
        for j in dyn.resources.get(api_version=VCJOBS[0], kind=VCJOBS[1]).get().items
    }
    out = []
    for pod in dyn.resources.get(api_version="v1", kind="Pod").get().items:
        if not pod.spec.nodeName or pod.status.phase in ("Succeeded", "Failed"):
            continue
        gpus = sum(
            int(((c.resources.requests if c.resources else None) or {}).get("nvidia.com/gpu", 0))
            for c in pod.spec.containers
        )
        job = (pod.metadata.labels or {}).get("volcano.sh/job-name")
        orphan = job is not None and (pod.metadata.namespace, job) not in jobs
        if gpus and (pod.metadata.deletionTimestamp or orphan):
            out.append(f"{pod.metadata.namespace}/{pod.metadata.name}")
    return out


def _throttle_cm(dyn, ns):
    from kubernetes.dynamic.exceptions import NotFoundError

    try:
        return dyn.resources.get(api_version="v1", kind="ConfigMap").get(
            name="platform-throttle", namespace=ns
        )
    except NotFoundError:
        return None


def _filler(run_module, tenant, name, job_class, gpus=8):
    out = run_module(
        "vcjob",
        dict(
            tenant=tenant,
            name=name,
            queue=f"tenant-{tenant}-algo",
            kind="single",
            job_class=job_class,
            image="i",
            command=["sleep", "inf"],
            gpus_per_pod=gpus,
            wait=True,
            wait_timeout=90,
            wait_sleep=1,
            **SMALL,
        ),
    )
    assert out.get("failed") is not True and out["phase"] == "Running", out.get("msg")


def _denied_in_dry_run(jobs, body) -> bool:
    from kubernetes.dynamic.exceptions import ApiException

    try:
        jobs.create(body=body, dry_run="All")
    except ApiException as exc:
        return exc.status in (403, 422)
    return False


def _since(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_large_job_throttle_race(platform_scheduler_conf, tenant, dyn, run_module):
    ns = f"tenant-{tenant}"
    jobs = dyn.resources.get(api_version=VCJOBS[0], kind=VCJOBS[1])
    # A node a terminating pod still holds would free up on its own during the race.
    wait_until(lambda: not _gpu_pods_leaving(dyn), 120, 1, "departing GPU pods gone")
    free_nodes = _free_gpu_nodes(dyn)
    if free_nodes < 5:
        pytest.skip(f"needs 5 nodes with 8 free GPUs; {free_nodes} are free (other jobs run)")
    # A queue full of P100 and P50 jobs: one 8-GPU job per free node, 4 of them debug-job.
    normal = [f"normal-{i}" for i in range(free_nodes - 4)]
    debug = [f"debug-{i}" for i in range(4)]
    for name in normal:
        _filler(run_module, tenant, name, "normal")
    for name in debug:
        _filler(run_module, tenant, name, "debug")
    filler_on = {pod.spec.nodeName: job for job in normal + debug for pod in _pods(dyn, ns, job)}
    # throttle_grace 0: engage right after the create. gangpreempt frees the GPUs and the
    # large job runs within a scheduling cycle or two, well inside the default 15 s grace.
    big = run_module(
        "vcjob",
        dict(
            tenant=tenant,
            name="big",
            queue=f"{ns}-algo",
            kind="pytorch_ddp",
            job_class="large",
            image="i",
            command=["train.py"],
            replicas=4,
            gpus_per_pod=8,
            throttle_grace=0,
            wait_sleep=1,
            **SMALL,
        ),
    )
    assert big.get("failed") is not True, big.get("msg")
    # why the throttle was not engaged, when it was not (rule throttle-can-help)
    why = big.get("throttle_not_engaged")
    assert big["phase"] != "Running" and big["throttle_engaged"] is True, why
    cm = _throttle_cm(dyn, ns)
    assert cm.data["queues"] == f"{ns}-algo" and "large job" in cm.data["reason"]

    # While the throttle is engaged: a P100 job to that queue is denied by the admission
    # policy ...
    denied = run_module(
        "vcjob",
        dict(
            tenant=tenant,
            name="late",
            queue=f"{ns}-algo",
            kind="single",
            image="i",
            command=["x"],
            gpus_per_pod=1,
            **SMALL,
        ),
    )
    assert denied["failed"] and "accepts no jobs below large-job" in denied["msg"]
    from kubernetes.dynamic.exceptions import ApiException

    body = build_job(
        {
            "name": "late-raw",
            "tenant": tenant,
            "queue": f"{ns}-algo",
            "kind": "single",
            "image": "i",
            "command": ["x"],
            "gpus_per_pod": 1,
            **SMALL,
        }
    )
    # The API server reads the policy's ConfigMap parameter through an informer, which
    # may see the new platform-throttle a moment after vcjob wrote it: wait (with dry
    # runs, which admission also judges) until the policy denies, then create for real.
    wait_until(lambda: _denied_in_dry_run(jobs, body), 15, 0.5, "the throttle policy to deny")
    with pytest.raises(ApiException) as info:
        jobs.create(body=body)
    assert info.value.status in (403, 422)
    assert ap.POLICY_LARGE_JOB_THROTTLE in str(info.value.body)
    # ... and one to another queue of the tenant is not.
    other = run_module(
        "vcjob",
        dict(
            tenant=tenant,
            name="other",
            queue=f"{ns}-payg",
            kind="single",
            image="i",
            command=["x"],
            gpus_per_pod=1,
            **SMALL,
        ),
    )
    assert other["changed"] is True
    jobs.delete(name="other", namespace=ns)

    # vc-scheduler preempts: the large job runs on the GPUs of the evicted debug jobs.
    big_pods = wait_until(lambda: _running_on_nodes(dyn, ns, "big", 4), 60, 1, "big pods Running")
    # Each node the large job took had one filler (every free node got one).
    displaced = {filler_on[p.spec.nodeName] for p in big_pods if p.spec.nodeName in filler_on}
    # The held job goes in once the large job runs (vcjob releases the throttle itself).
    held = run_module(
        "vcjob",
        dict(
            tenant=tenant,
            name="late",
            queue=f"{ns}-algo",
            kind="single",
            image="i",
            command=["x"],
            gpus_per_pod=1,
            hold_when_throttled=True,
            hold_timeout=60,
            wait_sleep=1,
            **SMALL,
        ),
    )
    assert held.get("failed") is not True, held.get("msg")
    assert held["changed"] is True and _throttle_cm(dyn, ns) is None
    big_now = jobs.get(name="big", namespace=ns)
    late = jobs.get(name="late", namespace=ns)
    assert big_now.status.state.phase == "Running"
    assert _since(late.metadata.creationTimestamp) >= _since(
        big_now.status.state.lastTransitionTime
    )
    # gangpreempt evicted whole lower-priority jobs. The large job's hard
    # topology (one tier-2 HyperNode) makes it free whole nodes under one
    # spine, so which jobs go depends on where they sit: normal jobs may go
    # while debug jobs on the other spine keep running (measured; docs/jobs.md).
    core = platform_scheduler_conf.core
    made = wait_until(
        lambda: displaced <= {job for job, _action in evictions(core, ns)} and evictions(core, ns),
        30,
        1,
        "the Evict Events of the displaced jobs",
    )
    assert {action for _job, action in made} == {"gangpreempt"}, made
    victims = {job for job, _action in made}
    assert victims <= set(debug) | set(normal), made
    assert displaced <= victims, (displaced, made)
    assert len(displaced) == 4, (filler_on, [p.spec.nodeName for p in big_pods])


def large_args(tenant: str, name: str, replicas: int, **extra) -> dict:
    """vcjob's arguments for a large job of ``replicas`` x 8 GPUs in the tenant's team queue."""
    ns = f"tenant-{tenant}"
    args = dict(
        tenant=tenant,
        name=name,
        queue=f"{ns}-algo",
        kind="pytorch_ddp",
        job_class="large",
        image="i",
        command=["train.py"],
        replicas=replicas,
        gpus_per_pod=8,
        throttle_grace=3,
        throttle_timeout=15,
        wait_sleep=1,
        cpu="100m",
        memory="1Gi",
    )
    return {**args, **extra}


def small_args(tenant: str, name: str) -> dict:
    """vcjob's arguments for a one-GPU job in the tenant's team queue."""
    return dict(
        tenant=tenant,
        name=name,
        queue=f"tenant-{tenant}-algo",
        kind="single",
        image="i",
        command=["x"],
        gpus_per_pod=1,
        wait_sleep=1,
        wait_timeout=120,
        **SMALL,
    )


@pytest.fixture
def hypernodes(dyn, run_module) -> Iterator[None]:
    """The HyperNodes of the local cluster's ToR and spine labels (4 ToRs of 16 GPUs, 2
    spines of 32); the ones this fixture created are removed afterwards. Ask for it before
    ``tenant``, so that they go after the tenant's jobs: vc-scheduler 1.15.1 crashed once
    (a nil HyperNode in network-topology-aware's isEligibleHyperNode) when the HyperNodes
    went while a hard-topology job still waited."""
    created = run_module("topology", {})
    assert not created.get("failed"), created.get("msg")
    yield
    resource = dyn.resources.get(api_version="topology.volcano.sh/v1alpha1", kind="HyperNode")
    for name in created["created"]:
        resource.delete(name=name)


def test_the_throttle_turns_away_a_large_job_no_node_or_hypernode_can_hold(
    platform_scheduler_conf, hypernodes, tenant, dyn, run_module
):
    """Rule throttle-can-help on the real scheduler, with the platform's scheduler
    configuration: a large job whose pods ask for more cpu than any node has, and one whose
    hard topology (tier 2) fits no spine, engage nothing, say why, and hold nobody."""
    ns = f"tenant-{tenant}"
    never = run_module("vcjob", large_args(tenant, "never", 4, cpu="10000"))
    assert not never.get("failed"), never.get("msg")
    assert never["throttle_engaged"] is False
    assert never["throttle_not_engaged"] == (
        "a pod of its task 'master' asks for cpu 10000, memory 1Gi, nvidia.com/gpu 8, more "
        "than any node of the pool holds"
    )
    wide = run_module("vcjob", large_args(tenant, "wide", 5))
    assert not wide.get("failed"), wide.get("msg")
    assert wide["throttle_engaged"] is False and wide["phase"] != "Running"
    assert wide["throttle_not_engaged"] == (
        "its hard network topology (tier 2 or below) places at most 32 GPUs in one "
        "HyperNode, and it asks for 40"
    )
    reconcile = run_module("large_job_throttle", dict(namespaces=[ns]))
    assert reconcile["changed"] is False and reconcile["throttles"] == {}
    assert {j["job"] for j in reconcile["not_engaged"]} == {f"{ns}/never", f"{ns}/wide"}
    assert any("more than any node of the pool holds" in w for w in reconcile["warnings"])
    # Nobody is held: a small job of the team is admitted at once.
    small = run_module("vcjob", small_args(tenant, "small"))
    assert not small.get("failed"), small.get("msg")


def test_the_throttle_lets_go_of_a_large_job_its_full_queue_does_not_admit(
    platform_scheduler_conf, tenant, dyn, run_module
):
    """A team queue of 32 GPUs with 8 in use: a 32-GPU large job without an sla waiting time
    is never admitted by enqueue (capacity), so preemption never acts for it. vcjob engages while the PodGroup
    is new (enqueue may admit it in the next cycle); the scheduled reconcile after the
    settle time lets the queue go and says why, instead of holding the team for the
    whole timeout."""
    ns = f"tenant-{tenant}"
    queues = dyn.resources.get(api_version=QUEUES[0], kind=QUEUES[1])
    queues.patch(
        name=f"{ns}-algo",
        body={"spec": {"capability": {GPU: 32, "cpu": "1000", "memory": "4Ti"}}},
        content_type="application/merge-patch+json",
    )
    used = run_module("vcjob", {**small_args(tenant, "used"), "gpus_per_pod": 8, "wait": True})
    assert used.get("failed") is not True and used["phase"] == "Running", used.get("msg")
    # Without an sla waiting time (the class table's null): sla never admits it either.
    full = run_module(
        "vcjob",
        large_args(
            tenant,
            "full",
            4,
            throttle_timeout=300,
            job_classes={"large": {"sla_waiting_seconds": None}},
        ),
    )
    assert not full.get("failed"), full.get("msg")
    assert full["throttle_engaged"] is True, full.get("throttle_not_engaged")
    time.sleep(11)  # past the settle time: ten scheduling periods of enqueue refused it
    later = run_module("large_job_throttle", dict(namespaces=[ns]))
    assert later["released"] == [f"{ns}/full"] and later["throttles"] == {}
    (away,) = later["not_engaged"]
    assert away["reason"].startswith("its PodGroup has been Pending for ")
    assert "preemption acts only for admitted jobs" in away["reason"]
    small = run_module("vcjob", small_args(tenant, "small"))
    assert not small.get("failed"), small.get("msg")


def test_throttle_lifts_after_timeout_for_a_job_preemption_does_not_place(
    platform_scheduler_conf, tenant, dyn, run_module
):
    """A large job the rule cannot see is hopeless (its pods select a node label no node
    has) in a team queue of 32 GPUs with 8 in use, so that GPUs are what it waits for (rule
    job-waits-for), is admitted and engages; preemption frees nothing it can use, and its
    throttle expires after the timeout."""
    ns = f"tenant-{tenant}"
    _team_queue_of_32_with_8_used(dyn, run_module, tenant)
    container = {
        "name": "main",
        "image": "i",
        "command": ["train.py"],
        "resources": {"limits": {GPU: 8, "cpu": "100m", "memory": "1Gi"}},
    }
    manifest = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "never"},
        "spec": {
            "queue": f"{ns}-algo",
            "minAvailable": 4,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": 4,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "nodeSelector": {"gpucloud.test/no-such-node": "true"},
                            "containers": [container],
                        }
                    },
                }
            ],
        },
    }
    never = run_module(
        "vcjob",
        dict(
            tenant=tenant,
            name="never",
            job_class="large",
            manifest=manifest,
            throttle_grace=3,
            throttle_timeout=15,
            wait_sleep=1,
        ),
    )
    assert not never.get("failed"), never.get("msg")
    assert never["throttle_engaged"] is True, never.get("throttle_not_engaged")
    first = run_module("large_job_throttle", dict(namespaces=[ns], timeout=15))
    assert first["throttles"][ns]["queues"] == [f"{ns}-algo"] and first["changed"] is False
    time.sleep(16)
    late = run_module("large_job_throttle", dict(namespaces=[ns], timeout=15))
    assert late["expired"] == [f"{ns}/never"] and late["throttles"] == {
        ns: {"queues": [], "until": "", "reason": ""}
    }
    again = run_module("large_job_throttle", dict(namespaces=[ns], timeout=15))
    assert again["changed"] is False and again["engaged"] == []
    small = run_module(
        "vcjob",
        dict(
            tenant=tenant,
            name="small",
            queue=f"{ns}-algo",
            kind="single",
            image="i",
            command=["x"],
            gpus_per_pod=1,
            wait=True,
            wait_timeout=60,
            wait_sleep=1,
            **SMALL,
        ),
    )
    assert small.get("failed") is not True and small["phase"] == "Running", small.get("msg")


def _cap(dyn, queue: str, gpus: int) -> None:
    dyn.resources.get(api_version=QUEUES[0], kind=QUEUES[1]).patch(
        name=queue,
        body={"spec": {"capability": {GPU: gpus, "cpu": "1000", "memory": "4Ti"}}},
        content_type="application/merge-patch+json",
    )


def _job_exists(dyn, ns: str, name: str) -> bool:
    jobs = dyn.resources.get(api_version=VCJOBS[0], kind=VCJOBS[1])
    return any(j.metadata.name == name for j in jobs.get(namespace=ns).items)


def _team_queue_of_32_with_8_used(dyn, run_module, tenant: str) -> None:
    """The tenant's team queue capped at 32 GPUs, 8 of them held by a Running job: a large
    job of 32 waits for GPUs there (rule job-waits-for)."""
    _cap(dyn, f"tenant-{tenant}-algo", 32)
    used = run_module("vcjob", {**small_args(tenant, "used"), "gpus_per_pod": 8, "wait": True})
    assert used.get("failed") is not True and used["phase"] == "Running", used.get("msg")


def _large_without_sla(run_module, tenant: str, name: str) -> dict:
    """A 32-GPU large job without an sla waiting time (the class table's null): sla never
    admits it past its full queue, and the throttle it engages holds for 300 s."""
    return run_module(
        "vcjob",
        large_args(
            tenant,
            name,
            4,
            throttle_timeout=300,
            job_classes={"large": {"sla_waiting_seconds": None}},
        ),
    )


def test_a_job_that_can_never_run_is_refused_and_one_that_must_wait_is_told(
    tenant, dyn, run_module
):
    """Rule job-never-runs before the write: a missing PVC, a gang above its queue's
    capability; rule job-waits-for: a spot job while spot offers nothing is accepted with
    what it waits for."""
    ns = f"tenant-{tenant}"
    no_pvc = run_module("vcjob", large_args(tenant, "no-data", 4, dataset_pvc="no-such-data"))
    assert no_pvc.get("failed") and no_pvc["changed"] is False
    assert no_pvc["errors"] == [
        f"dataset_pvc: {ns}/no-data mounts PersistentVolumeClaim no-such-data, which does not "
        "exist in its namespace: it can never run until it is created"
    ]
    _cap(dyn, f"{ns}-payg", 16)
    too_big = run_module("vcjob", {**large_args(tenant, "too-big", 4), "queue": f"{ns}-payg"})
    assert too_big.get("failed") and too_big["errors"] == [
        f"replicas: {ns}/too-big asks for 32 GPUs and queue {ns}-payg has a capability of 16: it "
        "can never run there; ask for at most 16 GPUs"
    ]
    assert not _job_exists(dyn, ns, "no-data") and not _job_exists(dyn, ns, "too-big")
    _cap(dyn, f"{ns}-spot", 0)
    cheap = run_module(
        "vcjob",
        {
            **small_args(tenant, "cheap"),
            "queue": f"{ns}-spot",
            "job_class": "spot",
            "spot_price": "0.1",
        },
    )
    assert cheap.get("failed") is not True and cheap["changed"] is True, cheap.get("msg")
    assert any(
        w.startswith(f"job {ns}/cheap is accepted and waits: spot queue {ns}-spot offers 0 GPUs")
        for w in cheap.get("warnings", [])
    ), cheap.get("warnings")


def test_the_throttle_and_the_arbiter_give_vcjobs_verdict_for_a_large_job_without_its_pvc(
    tenant, dyn, run_module
):
    """A large job written past vcjob (kubectl) that mounts a PVC its namespace lacks, in a
    full queue: the throttle does not hold the team for it and the arbiter evicts nothing,
    both for the reason vcjob gives (rule job-never-runs)."""
    ns = f"tenant-{tenant}"
    _cap(dyn, f"{ns}-algo", 32)
    # Critical fillers: nothing may preempt them, whatever the scheduler tries for the job.
    dyn.resources.get(api_version="v1", kind="Namespace").patch(
        name=ns,
        body={"metadata": {"labels": {"platform.io/allow-critical": "true"}}},
        content_type="application/merge-patch+json",
    )
    _filler(run_module, tenant, "busy-a", "critical")
    _filler(run_module, tenant, "busy-b", "critical")
    refused = run_module("vcjob", large_args(tenant, "no-data", 4, dataset_pvc="no-such-data"))
    reason = refused["errors"][0].removeprefix("dataset_pvc: ")
    args = large_args(tenant, "no-data", 4, dataset_pvc="no-such-data")
    for option in ("throttle_grace", "throttle_timeout", "wait_sleep"):
        args.pop(option)
    manifest = build_job({**args, "queue_type": "team"})
    dyn.resources.get(api_version=VCJOBS[0], kind=VCJOBS[1]).create(body=manifest, namespace=ns)
    podgroups = dyn.resources.get(api_version="scheduling.volcano.sh/v1beta1", kind="PodGroup")
    wait_until(lambda: podgroups.get(namespace=ns).items, 30, 0.5, "the large job's PodGroup")
    throttle = run_module("large_job_throttle", {"namespaces": [ns]})
    assert throttle["throttles"] == {} and _throttle_cm(dyn, ns) is None
    (away,) = throttle["not_engaged"]
    assert away["job"] == f"{ns}/no-data" and away["reason"] == reason
    # The arbiter acts for a job once sla has admitted it (the large class waits 5 s).
    verdicts = []

    def decided() -> bool:
        out = run_module("queue_arbiter", {"tenant": tenant, "job": "no-data", "settle_seconds": 0})
        verdicts.append(out)
        return out.get("failed") is not True and out["decision"] != "none"

    wait_until(decided, 60, 2, "the arbiter's verdict on the admitted job")
    arbiter = verdicts[-1]
    assert arbiter["decision"] == "refuse" and arbiter["victims"] == [], arbiter["reason"]
    assert arbiter["reason"] == f"{reason}; nothing is evicted"


def test_deleting_a_large_job_releases_its_throttle_at_once(
    platform_scheduler_conf, tenant, dyn, run_module
):
    """The throttle a waiting large job engaged goes with the job (vcjob state absent), not
    at the next scheduled reconcile."""
    ns = f"tenant-{tenant}"
    _team_queue_of_32_with_8_used(dyn, run_module, tenant)
    full = _large_without_sla(run_module, tenant, "full")
    assert full["throttle_engaged"] is True, full.get("throttle_not_engaged")
    assert any("accepted and waits" in w for w in full.get("warnings", [])), full.get("warnings")
    assert _throttle_cm(dyn, ns) is not None
    gone = run_module("vcjob", {**large_args(tenant, "full", 4), "state": "absent"})
    assert gone["changed"] is True and gone["throttle_released"] == [f"{ns}-algo"], gone
    assert _throttle_cm(dyn, ns) is None
    small = run_module("vcjob", small_args(tenant, "small"))
    assert not small.get("failed"), small.get("msg")
