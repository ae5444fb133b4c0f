#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    JOB_API,
    PODGROUP_API,
)

DOCUMENTATION = r"""
module: vcjob
short_description: Submit or delete a Volcano Job by kind and class, within a tenant's leaf queues
description:
  - "Builds a complete Volcano Job from a O(kind) (C(pytorch_ddp), C(ps_worker), C(mpi), C(spark), C(ray), C(single))
    and a O(job_class) (C(critical), C(large), C(normal), C(debug), C(spot)), or completes a O(manifest) the caller
    wrote, and creates it in the tenant's namespace C(tenant-<tenant>)."
  - "The class decides the PriorityClass, the network topology constraint, the queue types it may use, its size
    bounds and the C(platform.io/billing-type) label (see O(job_classes)). Every manifest carries C(schedulerName),
    C(queue), C(priorityClassName), C(minAvailable), named tasks, C(maxRetry), restart policies and the labels
    C(platform.io/job-class), C(platform.io/billing-type), C(platform.io/tenant)."
  - "Before the first request every parameter is checked; a refused parameter is named with the value and the rule.
    Then the tenant's Queues are read (one list, label C(platform.io/tenant)): O(queue) must be one of them, a leaf
    (no queue names it as C(spec.parent)) and of a type the class allows (label C(platform.io/queue-type))."
  - "A Volcano Job cannot be changed once created: when a job of that name exists and differs, the module fails and
    names the differing fields; when it is the same, nothing changes."
  - "Large-job throttle: while the namespace's ConfigMap C(platform-throttle) lists O(queue), jobs below C(large-job)
    are refused (by the admission policy C(gpucloud-large-job-throttle) and by this module). With
    O(hold_when_throttled=true) the module waits instead, releasing the throttle of its namespace itself when the
    large job runs or its wait times out, and submits as soon as the queue is free."
  - "After creating a C(large-job) that is not Running within O(throttle_grace) seconds, the module engages the
    throttle for its queue (O(engage_throttle)); M(gpucloud.platform.large_job_throttle) releases it."
version_added: 0.1.0
author:
  - gpucloud platform team (@gpucloud)
requirements:
  - kubernetes >= 24.2.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
options:
  state:
    description: C(present) creates the job, C(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  tenant:
    description: The tenant; the job lives in namespace C(tenant-<tenant>).
    type: str
    required: true
  name:
    description: The job's name. Required unless O(manifest) names it.
    type: str
  queue:
    description:
      - The leaf queue, for example C(tenant-alpha-algo), C(tenant-alpha-payg) or C(tenant-alpha-spot).
      - Required with O(kind); with O(manifest) it defaults to the manifest's C(spec.queue).
    type: str
  kind:
    description: The kind of job to build. Mutually exclusive with O(manifest).
    type: str
    choices: [pytorch_ddp, ps_worker, mpi, spark, ray, single]
  job_class:
    description:
      - The class of job. Defaults to C(normal) with O(kind); with O(manifest) to the manifest's
        C(platform.io/job-class) label or the class of its C(priorityClassName).
    type: str
    choices: [critical, large, normal, debug, spot]
  manifest:
    description:
      - A Volcano Job (C(batch.volcano.sh/v1alpha1)) to complete and submit instead of building one from O(kind).
      - Missing platform fields are filled in from the class; fields that contradict the class are refused.
    type: dict
  image:
    description: The container image. Required with O(kind).
    type: str
  command:
    description:
      - C(pytorch_ddp) the training script and its arguments, run under C(torchrun) (required).
      - C(mpi) the program C(mpirun) starts on the workers (required).
      - C(ps_worker) the command of every pod, C(spark) the driver's command, C(single) the command.
      - C(ray) takes none (Volcano's ray plugin starts the cluster).
    type: list
    elements: str
  worker_command:
    description: The command of the worker pods (C(ps_worker), C(spark) executors; C(mpi) defaults to C(/usr/sbin/sshd -D)).
    type: list
    elements: str
  replicas:
    description:
      - GPU pods. C(pytorch_ddp) nodes (master and workers); C(ps_worker), C(mpi), C(ray) workers; C(spark)
        executors; C(single) must be 1.
    type: int
    default: 1
  ps_replicas:
    description: Parameter servers of a C(ps_worker) job.
    type: int
    default: 1
  gpus_per_pod:
    description: GPUs of each GPU pod (at most O(max_gpus_per_node)).
    type: int
    default: 0
  cpu:
    description: CPU request of each GPU pod (a quantity).
    type: str
    default: "4"
  memory:
    description: Memory request of each GPU pod (a quantity).
    type: str
    default: 16Gi
  head_cpu:
    description: CPU request of the coordinating pod (ps, mpi master, spark driver, ray head).
    type: str
    default: "4"
  head_memory:
    description: Memory request of the coordinating pod.
    type: str
    default: 16Gi
  rdma:
    description: C(rdma/hca) devices of each GPU pod.
    type: int
    default: 0
  shm_size:
    description: Size of the memory-backed C(/dev/shm) (C(emptyDir) medium C(Memory)) of every pod; none when unset.
    type: str
  dataset_pvc:
    description: A PersistentVolumeClaim mounted read-only at O(dataset_mount_path).
    type: str
  dataset_mount_path:
    description: Where the dataset is mounted.
    type: str
    default: /data
  workspace_pvc:
    description: A PersistentVolumeClaim mounted read-write at O(workspace_mount_path).
    type: str
  workspace_mount_path:
    description: Where the workspace is mounted.
    type: str
    default: /workspace
  env:
    description: Environment variables (name to value) of every container.
    type: dict
    default: {}
  max_retry:
    description: Restarts of the whole job before it fails; defaults to the class's (3).
    type: int
  spot_price:
    description: The bid per GPU-hour, a decimal greater than 0. Required for class C(spot), refused for the others.
    type: str
  termination_grace_seconds:
    description: Seconds a pod has to stop (for a checkpoint); class C(spot) defaults to 300.
    type: int
  checkpoint_command:
    description: A C(preStop) command that writes a checkpoint before the pod stops.
    type: list
    elements: str
  max_gpus_per_node:
    description: GPUs of the largest node; no pod may ask for more.
    type: int
    default: 8
  job_classes:
    description:
      - "Settings merged over the class table, per class and setting, for example
        C({large: {network_topology: {mode: hard, highestTierAllowed: 1}, min_gpus: 16}})."
      - "Settings: C(priority_class), C(network_topology), C(queue_types), C(max_gpus), C(min_gpus), C(multi_node),
        C(billing_type), C(preemptable), C(max_retry), C(termination_grace_seconds)."
    type: dict
    default: {}
  wait:
    description: Wait until the job is Running (C(status.state.phase)); on timeout fail with the PodGroup's conditions.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait with O(wait=true).
    type: int
    default: 300
  hold_when_throttled:
    description: When the queue is throttled for a large job, wait and retry instead of failing.
    type: bool
    default: false
  hold_timeout:
    description: Seconds to hold at most before failing.
    type: int
    default: 600
  engage_throttle:
    description: Engage the throttle for the queue after creating a C(large-job) that does not start within O(throttle_grace).
    type: bool
    default: true
  throttle_grace:
    description: Seconds a new large job may take to start before the throttle is engaged.
    type: int
    default: 15
  throttle_timeout:
    description: Seconds the throttle holds a queue for one large job at most (design 6.4.2, 5 minutes).
    type: int
    default: 300
  poll_interval:
    description: Seconds between polls while waiting or holding.
    type: int
    default: 5
notes:
  - Supports check mode (a server-side dry run of the create or delete; a throttled submission is reported, not
    held) and diff mode.
seealso:
  - module: gpucloud.platform.large_job_throttle
"""

EXAMPLES = r"""
- name: Four nodes of eight GPUs, PyTorch DDP under torchrun
  gpucloud.platform.vcjob:
    tenant: alpha
    name: resnet-ddp
    queue: tenant-alpha-algo
    kind: pytorch_ddp
    job_class: large
    image: registry.example.com/training:v1
    command: [train.py, --epochs=90]
    replicas: 4
    gpus_per_pod: 8
    cpu: "32"
    memory: 128Gi
    rdma: 1
    shm_size: 64Gi
    dataset_pvc: training-dataset
    wait: true

- name: A spot job that checkpoints before it is stopped
  gpucloud.platform.vcjob:
    tenant: alpha
    name: spot-finetune
    queue: tenant-alpha-spot
    kind: single
    job_class: spot
    spot_price: "0.3"
    image: registry.example.com/training:v1
    command: [python, finetune.py]
    gpus_per_pod: 4
    checkpoint_command: [/bin/sh, -c, python /scripts/checkpoint_save.py]

- name: A small job that waits while a large job takes the queue
  gpucloud.platform.vcjob:
    tenant: alpha
    name: eval-7
    queue: tenant-alpha-algo
    kind: single
    image: registry.example.com/training:v1
    command: [python, eval.py]
    gpus_per_pod: 1
    hold_when_throttled: true

- name: Delete a job
  gpucloud.platform.vcjob:
    tenant: alpha
    name: eval-7
    state: absent
"""

RETURN = r"""
job:
  description: The job as created (or as it would be, in check mode), or the live job when nothing changed.
  returned: always
  type: dict
queue:
  description: The queue and its type.
  returned: when O(state=present)
  type: dict
  sample: {name: tenant-alpha-algo, type: team}
phase:
  description: The job's C(status.state.phase) when the module finished.
  returned: always
  type: str
podgroup:
  description: The job's PodGroup (name, phase, conditions) when the module waited and the job did not run.
  returned: when the wait timed out
  type: dict
held_seconds:
  description: Seconds the submission was held by the large-job throttle.
  returned: when O(state=present)
  type: int
throttle_engaged:
  description: Whether the module engaged the throttle for the job's queue (a large job that did not start).
  returned: when O(state=present)
  type: bool
requests:
  description: API requests the run made.
  returned: always
  type: int
diff:
  description: The job before and after.
  returned: when diff mode is on
  type: dict
"""

import time
from datetime import UTC, datetime

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    FieldError,
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    JOB_FAILED_PHASES,
    JOB_STARTED_PHASES,
    LABEL_QUEUE_TYPE,
    LABEL_TENANT,
    QUEUE_API,
    namespace_name,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.objects import (
    differs,
    strip_server_fields,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.builders import (
    JobRequest,
    build_job,
    complete_manifest,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.classes import (
    job_class_table,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.demand import job_demand
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.service import (
    engage_job,
    reconcile_namespace,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.throttle import (
    CONFIGMAP,
    KEY_REASON,
    KEY_UNTIL,
    LARGE_PRIORITY_CLASS,
    LargeJob,
    blocks,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import (
    ApiException,
    Cluster,
    api_error_message,
    argument_spec,
    platform_module,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.admission import (
    POLICY_LARGE_JOB_THROTTLE,
)

BUILD_KEYS = (
    "image",
    "command",
    "worker_command",
    "replicas",
    "ps_replicas",
    "gpus_per_pod",
    "cpu",
    "memory",
    "head_cpu",
    "head_memory",
    "rdma",
    "shm_size",
    "dataset_pvc",
    "dataset_mount_path",
    "workspace_pvc",
    "workspace_mount_path",
    "env",
    "max_retry",
    "spot_price",
    "termination_grace_seconds",
    "checkpoint_command",
    "max_gpus_per_node",
)


def now_utc() -> datetime:
    return datetime.now(UTC)


def desired_job(p: dict, table: dict, queue_type: str | None) -> dict:
    """The manifest to submit; raises PlatformValidationError naming every bad parameter."""
    if p["manifest"] is not None:
        manifest = dict(p["manifest"])
        meta = dict(manifest.get("metadata") or {})
        if p["name"]:
            meta["name"] = p["name"]
        manifest["metadata"] = meta
        if p["queue"]:
            manifest["spec"] = {**(manifest.get("spec") or {}), "queue": p["queue"]}
        return complete_manifest(
            manifest,
            p["tenant"],
            queue_type=queue_type,
            job_class=p["job_class"],
            spot_price=p["spot_price"],
            table=table,
            max_gpus_per_node=p["max_gpus_per_node"],
        )
    params = {k: p[k] for k in BUILD_KEYS}
    params.update(
        name=p["name"],
        tenant=p["tenant"],
        queue=p["queue"],
        kind=p["kind"],
        job_class=p["job_class"] or "normal",
        queue_type=queue_type,
    )
    return build_job(JobRequest.from_mapping(params), table)


def input_errors(p: dict) -> list[FieldError]:
    errors = []
    if p["state"] == "present" and not p["kind"] and p["manifest"] is None:
        errors.append(FieldError("kind", "give kind (with its parameters) or manifest"))
    if (
        p["state"] == "absent"
        and not p["name"]
        and not (p["manifest"] or {}).get("metadata", {}).get("name")
    ):
        errors.append(FieldError("name", "is required to delete a job"))
    for key in ("wait_timeout", "hold_timeout", "throttle_grace", "throttle_timeout"):
        if p[key] < 0:
            errors.append(FieldError(key, f"{p[key]} must be 0 or more seconds"))
    if p["poll_interval"] < 1:
        errors.append(
            FieldError("poll_interval", f"{p['poll_interval']} must be at least 1 second")
        )
    return errors


def queue_errors(queue: str, queues: list[dict]) -> tuple[str | None, list[FieldError]]:
    """Rule leaf-queue-of-tenant: the queue is one of the tenant's and no queue has it as parent."""
    by_name = {q["metadata"]["name"]: q for q in queues}
    if queue not in by_name:
        names = ", ".join(sorted(by_name)) or "(none)"
        return None, [
            FieldError("queue", f"{queue!r} is not a queue of this tenant; its queues are {names}")
        ]
    children = sorted(
        q["metadata"]["name"] for q in queues if (q.get("spec") or {}).get("parent") == queue
    )
    errors = []
    if children:
        errors.append(
            FieldError(
                "queue",
                f"{queue!r} has team sub-queues ({', '.join(children)}) and takes no jobs; submit to one of them",
            )
        )
    qtype = ((by_name[queue].get("metadata") or {}).get("labels") or {}).get(LABEL_QUEUE_TYPE)
    return qtype, errors


def changed_fields(desired, live, path: str = "") -> list[str]:
    """Dotted paths where ``live`` lacks or contradicts ``desired``."""
    if isinstance(desired, dict) and isinstance(live, dict):
        out = []
        for k, v in desired.items():
            out += changed_fields(v, live.get(k), f"{path}.{k}" if path else k)
        return out
    return [path or "(root)"] if differs(desired, live) else []


def throttle_denial(exc: Exception) -> bool:
    return POLICY_LARGE_JOB_THROTTLE in api_error_message(exc)


def fail(module, cluster, msg, **extra):
    module.fail_json(msg=msg, requests=cluster.requests if cluster else 0, **extra)


def podgroup_of(cluster: Cluster, namespace: str, uid: str) -> dict | None:
    for pg in cluster.list(PODGROUP_API, "PodGroup", namespace=namespace):
        for ref in (pg.get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("uid") == uid:
                return pg
    return None


def podgroup_summary(pg: dict | None) -> dict:
    if not pg:
        return {}
    status = pg.get("status") or {}
    return {
        "name": pg["metadata"]["name"],
        "phase": status.get("phase"),
        "conditions": [
            {k: c.get(k) for k in ("type", "status", "reason", "message") if c.get(k) is not None}
            for c in status.get("conditions") or []
        ],
    }


def job_phase(job: dict | None) -> str:
    return (((job or {}).get("status") or {}).get("state") or {}).get("phase") or "Pending"


def wait_phase(cluster, namespace, name, timeout, interval) -> tuple[str, dict | None]:
    deadline = time.monotonic() + timeout
    while True:
        live = cluster.get(JOB_API, "Job", name, namespace)
        phase = job_phase(live)
        if (
            phase in JOB_STARTED_PHASES
            or phase in JOB_FAILED_PHASES
            or time.monotonic() >= deadline
        ):
            return phase, live
        time.sleep(interval)


def absent(module, cluster, p, namespace):
    name = p["name"] or p["manifest"]["metadata"]["name"]
    live = cluster.get(JOB_API, "Job", name, namespace)
    result = {
        "changed": False,
        "job": strip_server_fields(live) or {},
        "phase": job_phase(live) if live else "Absent",
    }
    if live:
        try:
            cluster.delete(JOB_API, "Job", name, namespace, propagation="Background")
        except ApiException as exc:
            fail(
                module, cluster, f"deleting job {namespace}/{name} failed: {api_error_message(exc)}"
            )
        result.update(changed=True, phase="Absent")
    if module._diff:
        result["diff"] = {"before": strip_server_fields(live) or {}, "after": {}}
    result["requests"] = cluster.requests
    module.exit_json(**result)


def hold(module, cluster, p, namespace, queue, priority_class, result):
    """Wait while the throttle blocks the queue, releasing it when its large job runs or times out."""
    start = time.monotonic()
    while True:
        _unused, cm = reconcile_namespace(
            cluster, namespace, p["tenant"], now_utc(), p["throttle_timeout"]
        )
        if not blocks(cm, queue, priority_class):
            result["held_seconds"] = int(time.monotonic() - start)
            return
        if time.monotonic() - start >= p["hold_timeout"]:
            data = (cm or {}).get("data") or {}
            fail(
                module,
                cluster,
                f"queue {queue} was still throttled after {p['hold_timeout']} s (until {data.get(KEY_UNTIL)}: "
                f"{data.get(KEY_REASON)}); try again later or submit to another queue",
                **result,
            )
        time.sleep(p["poll_interval"])


def main() -> None:
    module = platform_module(
        argument_spec=argument_spec(
            state=dict(type="str", choices=["present", "absent"], default="present"),
            tenant=dict(type="str", required=True),
            name=dict(type="str"),
            queue=dict(type="str"),
            kind=dict(
                type="str", choices=["pytorch_ddp", "ps_worker", "mpi", "spark", "ray", "single"]
            ),
            job_class=dict(type="str", choices=["critical", "large", "normal", "debug", "spot"]),
            manifest=dict(type="dict"),
            image=dict(type="str"),
            command=dict(type="list", elements="str"),
            worker_command=dict(type="list", elements="str"),
            replicas=dict(type="int", default=1),
            ps_replicas=dict(type="int", default=1),
            gpus_per_pod=dict(type="int", default=0),
            cpu=dict(type="str", default="4"),
            memory=dict(type="str", default="16Gi"),
            head_cpu=dict(type="str", default="4"),
            head_memory=dict(type="str", default="16Gi"),
            rdma=dict(type="int", default=0),
            shm_size=dict(type="str"),
            dataset_pvc=dict(type="str"),
            dataset_mount_path=dict(type="str", default="/data"),
            workspace_pvc=dict(type="str"),
            workspace_mount_path=dict(type="str", default="/workspace"),
            env=dict(type="dict", default={}),
            max_retry=dict(type="int"),
            spot_price=dict(type="str"),
            termination_grace_seconds=dict(type="int"),
            checkpoint_command=dict(type="list", elements="str"),
            max_gpus_per_node=dict(type="int", default=8),
            job_classes=dict(type="dict", default={}),
            wait=dict(type="bool", default=False),
            wait_timeout=dict(type="int", default=300),
            hold_when_throttled=dict(type="bool", default=False),
            hold_timeout=dict(type="int", default=600),
            engage_throttle=dict(type="bool", default=True),
            throttle_grace=dict(type="int", default=15),
            throttle_timeout=dict(type="int", default=300),
            poll_interval=dict(type="int", default=5),
        ),
        mutually_exclusive=[("kind", "manifest")],
        supports_check_mode=True,
    )
    p = dict(module.params)
    namespace = namespace_name(p["tenant"])
    errors = input_errors(p)
    try:
        table = job_class_table(p["job_classes"])
        if p["state"] == "present" and not errors:
            desired = desired_job(p, table, None)
    except PlatformValidationError as exc:
        errors += exc.errors
    if errors:
        err = PlatformValidationError(errors)
        module.fail_json(msg=str(err), errors=err.messages, requests=0)

    cluster = Cluster.from_module(module)
    try:
        if p["state"] == "absent":
            absent(module, cluster, p, namespace)
        else:
            present(module, cluster, p, table, desired, namespace)
    except ApiException as exc:
        fail(module, cluster, f"vcjob failed: {api_error_message(exc)}")


def present(module, cluster, p, table, desired, namespace):
    name = desired["metadata"]["name"]
    queue = desired["spec"]["queue"]
    queues = cluster.list(QUEUE_API, "Queue", label_selector=f"{LABEL_TENANT}={p['tenant']}")
    queue_type, errors = queue_errors(queue, queues)
    if not errors:
        try:
            desired = desired_job(p, table, queue_type)
        except PlatformValidationError as exc:
            errors += exc.errors
    if errors:
        err = PlatformValidationError(errors)
        fail(module, cluster, str(err), errors=err.messages)
    priority_class = desired["spec"]["priorityClassName"]
    result = {
        "changed": False,
        "queue": {"name": queue, "type": queue_type},
        "held_seconds": 0,
        "throttle_engaged": False,
    }
    live = cluster.get(JOB_API, "Job", name, namespace)
    if live is not None:
        diffs = changed_fields(desired, live)
        if diffs:
            fail(
                module,
                cluster,
                f"job {namespace}/{name} exists and differs in {', '.join(diffs[:10])}; a Volcano Job cannot be "
                "changed: delete it (state: absent) or submit under another name",
                job=strip_server_fields(live),
                phase=job_phase(live),
                **result,
            )
        created = live
    else:
        cm = cluster.get("v1", "ConfigMap", CONFIGMAP, namespace)
        if blocks(cm, queue, priority_class):
            data = (cm or {}).get("data") or {}
            held_msg = (
                f"spec.queue: {queue} accepts no jobs below large-job until {data.get(KEY_UNTIL)} because "
                f"{data.get(KEY_REASON)}"
            )
            if not p["hold_when_throttled"]:
                fail(
                    module,
                    cluster,
                    held_msg + "; resubmit later, set hold_when_throttled, or use another queue",
                    **result,
                )
            if module.check_mode:
                module.warn(held_msg + "; the job would be held until then")
                result.update(changed=True, job=desired, phase="Held")
                module.exit_json(requests=cluster.requests, **result)
            hold(module, cluster, p, namespace, queue, priority_class, result)
        while True:
            try:
                created = cluster.create(desired)
                break
            except ApiException as exc:
                if not (p["hold_when_throttled"] and throttle_denial(exc)) or module.check_mode:
                    fail(
                        module,
                        cluster,
                        f"creating job {namespace}/{name} failed: {api_error_message(exc)}",
                        **result,
                    )
                held_before = result["held_seconds"]
                hold(module, cluster, p, namespace, queue, priority_class, result)
                result["held_seconds"] += held_before
        result["changed"] = True
    result["job"] = strip_server_fields(created) or desired
    phase = job_phase(created)
    if (
        result["changed"]
        and not module.check_mode
        and priority_class == LARGE_PRIORITY_CLASS
        and p["engage_throttle"]
    ):
        phase, latest = wait_phase(
            cluster, namespace, name, p["throttle_grace"], min(p["poll_interval"], 2)
        )
        if phase not in JOB_STARTED_PHASES:
            gpus = job_demand(desired).gpus
            uid = (created.get("metadata") or {}).get("uid") or name
            change = engage_job(
                cluster,
                p["tenant"],
                LargeJob(uid, namespace, queue, name, "", gpus, True),
                now_utc(),
                p["throttle_timeout"],
            )
            result["throttle_engaged"] = bool(change.engaged)
    if p["wait"] and not module.check_mode:
        phase, latest = wait_phase(cluster, namespace, name, p["wait_timeout"], p["poll_interval"])
        if phase not in JOB_STARTED_PHASES:
            uid = ((latest or created).get("metadata") or {}).get("uid")
            pg = podgroup_summary(podgroup_of(cluster, namespace, uid))
            detail = "; ".join(
                f"{c.get('type')}={c.get('status')}: {c.get('reason', '')} {c.get('message', '')}".strip()
                for c in pg.get("conditions", [])
            )
            fail(
                module,
                cluster,
                f"job {namespace}/{name} is {phase}, not Running, after {p['wait_timeout']} s"
                + (
                    f"; PodGroup {pg['name']} is {pg['phase']}: {detail}"
                    if pg
                    else "; it has no PodGroup yet"
                ),
                podgroup=pg,
                phase=phase,
                **result,
            )
    result["phase"] = phase
    if module._diff:
        result["diff"] = {"before": strip_server_fields(live) or {}, "after": desired}
    module.exit_json(requests=cluster.requests, **result)


if __name__ == "__main__":
    main()
