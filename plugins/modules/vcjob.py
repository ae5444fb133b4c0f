#!/usr/bin/python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

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
  - "Before a new job is created it is checked against what exists and what it could ever get (rule job-never-runs,
    the same rule the large-job throttle and M(gpucloud.platform.queue_arbiter) use). A job that mounts a
    PersistentVolumeClaim its namespace does not have, asks for more GPUs than the nodes its queue's node groups
    and its placement allow, or more than the capability of its queue or an ancestor, is refused, naming the reason
    and the option. A job that can run but not now (its spot queue offers fewer GPUs, its queue is at its capability,
    or too few GPUs are free) is created with a warning saying what it waits for (rule job-waits-for)."
  - "A Volcano Job cannot be changed once created: when a job of that name exists and differs, the module fails and
    names the differing fields; when it is the same, nothing changes."
  - "Large-job throttle: while the namespace's ConfigMap C(platform-throttle) lists O(queue), jobs below C(large-job)
    are refused (by the admission policy C(gpucloud-large-job-throttle) and by this module). With
    O(hold_when_throttled=true) the module waits instead, releasing the throttle of its namespace itself when the
    large job runs or its wait times out, and submits as soon as the queue is free."
  - "After creating a C(large-job) that is not Running within O(throttle_grace) seconds, the module engages the
    throttle for its queue (O(engage_throttle)); M(gpucloud.platform.large_job_throttle) releases it."
version_added: 0.1.0
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpucloud.platform.module
options:
  state:
    description:
      - C(present) creates the job, C(absent) deletes it.
      - C(gathered) reads what a C(present) run judges the job by and returns it as RV(gathered), writing nothing.
      - "C(parsed) answers as C(present) in check mode from O(facts), without connecting: the job checked against
        another cluster's queues, nodes and throttle, reviewed offline. It holds, creates and waits for nothing."
    type: str
    choices: [present, absent, gathered, parsed]
    default: present
  facts:
    description:
      - With O(state=parsed), what O(state=gathered) returned (its RV(gathered)).
    type: dict
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
      - "Rule leaf-queue-of-tenant: Volcano's C(root) or C(default), the tenant's subscription queue with team queues
        under it, another tenant's queue, or a name the tenant's C(platform-queues) list does not hold is refused
        before anything is written; the message says what the queue is and lists the tenant's leaf queues."
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
  dataset:
    description:
      - A published dataset version, C({name, version}), mounted read-only at O(dataset_mount_path) from its claim
        C(dataset-<name>-<version>) (gpucloud.platform.dataset; rule dataset-version). A version not published is
        refused before submission, naming this option. Not with O(dataset_pvc).
    type: dict
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
    description:
      - The bid per GPU-hour, a finite decimal greater than 0 and below 1000000, with at most 6 decimal places
        (C(1e400), C(nan), C(inf) and negative prices are refused). Required for class C(spot), refused for the
        others.
    type: str
  termination_grace_seconds:
    description: Seconds a pod has to stop (for a checkpoint); class C(spot) defaults to 300.
    type: int
  checkpoint_command:
    description: A C(preStop) command that writes a checkpoint before the pod stops.
    type: list
    elements: str
  checkpoint:
    description:
      - "The checkpoint convention (docs/jobs.md, rules checkpoint-options and checkpoint-convention). Every GPU
        container mounts the claim O(checkpoint.claim) at C(/checkpoints) and gets C(CHECKPOINT_DIR=/checkpoints/<job>),
        C(RESUME_FROM=<CHECKPOINT_DIR>/latest) (present only when there is a checkpoint to resume from),
        C(CHECKPOINT_KEEP) and C(CHECKPOINT_URI=s3://tenant-<tenant>-checkpoints/<job>/), the tenant's own bucket."
      - "The first GPU task's pods also run, in O(checkpoint.image), an init container C(checkpoint-resume) that fetches
        the newest checkpoint from the bucket when the claim has none, and a sidecar C(checkpoint-upload) that uploads
        the newest one every O(checkpoint.interval) seconds and at its preStop (after the training container has
        stopped), keeping the newest O(checkpoint.keep) in the claim. Both use the tenant's store keys (Secret
        C(platform-object-store), M(gpucloud.platform.tenant_object_store)). Refused with O(manifest), whose pod
        templates are the caller's to write."
    type: dict
    suboptions:
      claim:
        description: The PersistentVolumeClaim of the tenant's namespace that holds the checkpoints (the job's or its team's).
        type: str
        required: true
      image:
        description: An image with the C(aws) command and a POSIX shell, for the resume and upload containers.
        type: str
        required: true
      keep:
        description: Checkpoints kept in the claim.
        type: int
        default: 2
      interval:
        description: Seconds between two uploads while the job runs (at least 60).
        type: int
        default: 600
  max_gpus_per_node:
    description: GPUs of the largest node; no pod may ask for more.
    type: int
    default: 8
  vgpu:
    description:
      - "Shares of GPUs instead of whole ones (HAMi's volcano-vgpu, docs/gpu-sharing.md) for each GPU pod:
        C(number) vGPUs (each on a different physical GPU, at most O(max_gpus_per_node)), optionally C(memory_mib)
        per vGPU and C(cores) (percent, 1 to 100). They become the resources C(volcano.sh/vgpu-number),
        C(volcano.sh/vgpu-memory) and C(volcano.sh/vgpu-cores)."
      - Refused together with O(gpus_per_pod) (rule vgpu-or-whole-gpu).
    type: dict
  placement:
    description:
      - "Where the pods may run in a hybrid cluster (docs/hybrid-cloud.md). Default: wherever the queue's node groups
        allow."
      - "C(local-only): required node affinity C(platform.io/node-location NotIn [cloud])."
      - "C(local-first): the same as a preferred term (weight 100) and Virtual Kubelet's taint tolerated; in a queue
        bound to IDC and cloud groups (pay-as-you-go by default) it fills the IDC first and spills to cloud nodes."
      - "C(cloud-ok): the taint tolerated, no preference."
      - "C(local-first) and C(cloud-ok) need O(checkpoint_command) (a cloud GPU node is a spot instance) and get a
        300 s O(termination_grace_seconds) unless it is given."
    type: str
    choices: [local-only, local-first, cloud-ok]
  compliance:
    description:
      - "A compliance-restricted job: the Job and its pods carry C(platform.io/compliance: restricted) and run in the
        IDC only (placement C(local-only); any other placement is refused). The admission policy
        C(gpucloud-compliance-placement) refuses such a pod that tolerates the cloud taint or lacks the IDC affinity."
    type: bool
    default: false
  compliance_zone:
    description: With O(compliance), also require the nodes of this compliance zone (C(platform.io/compliance-zone)).
    type: str
  federation:
    description:
      - "The connection is a Karmada federation's API server (docs/federation.md): the Job is written there as a
        resource template with its own PropagationPolicy (same name and namespace), which Karmada uses to run the
        whole job in one member cluster (rule federation-placement)."
      - "The policy is read from the Job the module builds: no placement, C(local-only) and O(compliance) go to IDC
        members only (with O(compliance_zone), that zone's); C(local-first) to an IDC member that can hold the whole
        gang, else a cloud member; C(cloud-ok) to any member. Jobs in a spot queue and C(cloud-ok) jobs may be moved
        to another member once after they fail (rule federation-failover-once)."
      - "The members' nodes, pods, claims and throttles are not read: where the job fits is Karmada's to decide, and
        a member's large-job throttle is that member's. O(wait) is refused."
      - "O(state=absent) also deletes the policy."
    type: bool
    default: false
  prefetch:
    description:
      - "With a cloud placement: an init container C(data-prefetch) (C(image), C(command)) that copies the data onto
        a node-local C(emptyDir) mounted at C(path) (default C(/data/local)) in the main container too."
      - "C(size_limit) (a quantity, C(50Gi)) bounds that C(emptyDir); with C(storage_class) (a node-local class, for
        example local NVMe) the data lives instead on a volume of that class and that size, made with the pod and gone
        with it (a generic ephemeral volume). Rule prefetch-volume."
    type: dict
  service_account:
    description:
      - "The ServiceAccount every pod of the job runs as (C(serviceAccountName) of each task's pod template), one of
        the tenant's namespace. Without it the pods run as the namespace's C(default) ServiceAccount."
      - "A DNS-1123 subdomain; anything else is refused before anything is read, naming the option (rule
        pod-identity)."
      - With O(kind) only; a O(manifest) names it in its own task templates, and the option is refused with one.
    type: str
  image_pull_secrets:
    description:
      - "Secrets of the tenant's namespace every pod of the job pulls its images with (C(imagePullSecrets) of each
        task's pod template, in the order given), for an O(image) in a private registry."
      - "A list of DNS-1123 subdomains, each named once; anything else is refused before anything is read, naming
        the option and the entry (rule pod-identity)."
      - With O(kind) only; a O(manifest) names them in its own task templates, and the option is refused with one.
    type: list
    elements: str
    default: []
  job_classes:
    description:
      - "Settings merged over the class table, per class and setting, for example
        C({large: {network_topology: {mode: hard, highestTierAllowed: 1}, min_gpus: 16}})."
      - "Settings: C(priority_class), C(network_topology), C(queue_types), C(max_gpus), C(min_gpus), C(multi_node),
        C(billing_type), C(preemptable), C(max_retry), C(termination_grace_seconds), C(sla_waiting_seconds),
        C(placement) (the class's default O(placement), for example C({large: {placement: local-only}}))."
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
  wait_sleep:
    description:
      - Seconds between polls while waiting or holding (the name M(kubernetes.core.k8s) uses).
      - The alias C(poll_interval) is deprecated and will be removed in 1.0.0.
    type: int
    default: 5
    aliases: [poll_interval]
attributes:
  diff_mode:
    support: partial
    details:
      - The diff holds the job; the throttle ConfigMap the module engages (or, holding, releases) is not in it.
notes:
  - In check mode every check and read is made and the job that would be created or deleted is reported; nothing is
    created or deleted, and a throttled submission is reported, not held.
seealso:
  - module: gpucloud.platform.large_job_throttle
"""

EXAMPLES = r"""
- name: A job submitted to the federation, IDC first and a cloud member when no IDC member can hold it
  gpucloud.platform.vcjob:
    kubeconfig: /etc/gpucloud/karmada.kubeconfig
    federation: true
    tenant: alpha
    name: train-7b
    queue: tenant-alpha-payg
    kind: pytorch_ddp
    image: registry.example.com/alpha/train:1.4
    command: [python, train.py]
    replicas: 2
    gpus_per_pod: 4
    placement: local-first

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

- name: Pay-as-you-go training that fills the IDC first and spills to cloud GPU nodes
  gpucloud.platform.vcjob:
    tenant: alpha
    name: burst-train
    queue: tenant-alpha-payg
    kind: pytorch_ddp
    image: registry.example.com/train:1.4
    command: [python, train.py]
    replicas: 4
    gpus_per_pod: 8
    placement: local-first
    checkpoint_command: [/bin/sh, -c, python /scripts/checkpoint_save.py]
    prefetch:
      image: registry.example.com/data-loader:2
      command: [aws, s3, sync, "s3://dataset/imagenet/", /data/local/]

- name: A job from a private registry, run as the tenant's own ServiceAccount
  gpucloud.platform.vcjob:
    tenant: alpha
    name: private-train
    queue: tenant-alpha-algo
    kind: single
    image: registry.alpha.example.com/train:3.1
    command: [python, train.py]
    gpus_per_pod: 1
    service_account: trainer
    image_pull_secrets: [alpha-registry]

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

- name: Read what an eval job would be judged by
  gpucloud.platform.vcjob:
    tenant: alpha
    name: eval
    queue: tenant-alpha-algo
    kind: single
    image: registry.example.com/eval:2.0
    state: gathered
  register: eval_facts

- name: The same job checked against those facts, without connecting
  gpucloud.platform.vcjob:
    tenant: alpha
    name: eval
    queue: tenant-alpha-algo
    kind: single
    image: registry.example.com/eval:2.0
    state: parsed
    facts: "{{ eval_facts.gathered }}"
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
  description:
    - The job's C(status.state.phase) when the module finished (C(Pending) for a job just created).
    - C(Absent) once the job is deleted or when there is none; C(Held) in check mode when the submission would be
      held by the large-job throttle.
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
federation:
  description:
    - With O(federation), the job's PropagationPolicy (C(namespace/name)), whether this run wrote it
      (C(policy_written)), and the C(placement) Karmada is given.
    - For a job Karmada already holds, C(member) is the member its ResourceBinding C(<name>-job) places it in (one
      GET; null while it is not placed, and for a new job), and C(moved_from) the members Karmada moved it from, as
      recorded by M(gpucloud.platform.federation_job_moves) (rule federation-moves-counted).
  returned: when O(federation) and O(state=present)
  type: dict
  sample:
    policy: tenant-alpha/train-7b
    policy_written: true
    member: idc-sh1
    moved_from: []
    placement:
      clusterAffinities:
        - affinityName: idc
          labelSelector: {matchExpressions: [{key: platform.io/node-location, operator: In, values: [idc]}]}
        - affinityName: cloud
          labelSelector: {matchExpressions: [{key: platform.io/node-location, operator: In, values: [cloud]}]}
      spreadConstraints: [{spreadByField: cluster, minGroups: 1, maxGroups: 1}]
      replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}
throttle_engaged:
  description: Whether the module engaged the throttle for the job's queue (a large job that did not start).
  returned: when O(state=present)
  type: bool
throttle_not_engaged:
  description:
    - Why the throttle was not engaged for a large job that did not start, when preemption cannot get it its GPUs (rule
      throttle-can-help; see M(gpucloud.platform.large_job_throttle)).
  returned: when the throttle was not engaged for that reason
  type: str
throttle_released:
  description:
    - The queues whose large-job throttle was released because the deleted job had engaged it; the throttle is released
      with the job, not at the next scheduled reconcile.
  returned: when O(state=absent) deleted a job
  type: list
  elements: str
  sample: [tenant-alpha-algo]
diff:
  description:
    - The job before and after.
    - With O(federation), a list of two such entries, the Job's and its PropagationPolicy's, each headed
      C(Kind/namespace/name) (C(before_header), C(after_header)).
  returned: when diff mode is on
  type: raw
done:
  description:
    - When the run fails part-way, the writes it had made (C(changed) is true when there are any); running again
      finishes the change.
  returned: when the run fails part-way
  type: list
  elements: str
summary:
  description:
    - The job, what the run did with it (in check mode, would do), its phase and its queue.
    - In a few lines a person reads (rule run-summary); a playbook's last task prints them.
  returned: on success
  type: list
  elements: str
gathered:
  description:
    - With O(state=gathered), what the run judges the job by, for O(facts) of O(state=parsed).
    - "C(configmaps): the tenant's queue list and the namespace's throttle; C(jobs): the live Job of that name
      (none or one); for a new job C(queues), C(persistentvolumeclaims), C(nodes) and C(pods) (null: not read);
      C(propagationpolicies): with O(federation), the job's policy (none or one); C(resourcebindings): with
      O(federation), its ResourceBinding once Karmada holds the job (none or one)."
  returned: when O(state=gathered)
  type: dict
state:
  description: The offline state answered, C(parsed).
  returned: when O(state=parsed)
  type: str
requests:
  description: How many API requests the run made.
  returned: always
  type: int
"""

from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import service
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.summary import job_summary
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.runner import run_flow

OPTIONS = dict(
    state=dict(type="str", choices=["present", "absent", "gathered", "parsed"], default="present"),
    facts=dict(type="dict"),
    tenant=dict(type="str", required=True),
    name=dict(type="str"),
    queue=dict(type="str"),
    kind=dict(type="str", choices=["pytorch_ddp", "ps_worker", "mpi", "spark", "ray", "single"]),
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
    dataset=dict(type="dict"),
    dataset_mount_path=dict(type="str", default="/data"),
    workspace_pvc=dict(type="str"),
    workspace_mount_path=dict(type="str", default="/workspace"),
    env=dict(type="dict", default={}),
    max_retry=dict(type="int"),
    spot_price=dict(type="str"),
    termination_grace_seconds=dict(type="int"),
    checkpoint_command=dict(type="list", elements="str"),
    checkpoint=dict(
        type="dict",
        options=dict(
            claim=dict(type="str", required=True),
            image=dict(type="str", required=True),
            keep=dict(type="int", default=2),
            interval=dict(type="int", default=600),
        ),
    ),
    max_gpus_per_node=dict(type="int", default=8),
    vgpu=dict(type="dict"),
    placement=dict(type="str", choices=["local-only", "local-first", "cloud-ok"]),
    compliance=dict(type="bool", default=False),
    compliance_zone=dict(type="str"),
    federation=dict(type="bool", default=False),
    prefetch=dict(type="dict"),
    service_account=dict(type="str"),
    # Names of Secrets, not their contents: nothing to hide in the logs.
    image_pull_secrets=dict(type="list", elements="str", default=[], no_log=False),
    job_classes=dict(type="dict", default={}),
    wait=dict(type="bool", default=False),
    wait_timeout=dict(type="int", default=300),
    hold_when_throttled=dict(type="bool", default=False),
    hold_timeout=dict(type="int", default=600),
    engage_throttle=dict(type="bool", default=True),
    throttle_grace=dict(type="int", default=15),
    throttle_timeout=dict(type="int", default=300),
    wait_sleep=dict(
        type="int",
        default=5,
        aliases=["poll_interval"],
        deprecated_aliases=[
            dict(name="poll_interval", version="1.0.0", collection_name="gpucloud.platform")
        ],
    ),
)


def main() -> None:
    run_flow(
        OPTIONS,
        service.JOB_FLOW,
        mutually_exclusive=[("kind", "manifest")],
        summary=job_summary,
    )


if __name__ == "__main__":
    main()
