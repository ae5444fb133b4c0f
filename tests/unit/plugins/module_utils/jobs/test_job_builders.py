# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Job builders: every kind gives a complete manifest; the class table is applied; bad input is
refused naming the parameter."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.classes import (
    DEFAULT_CLASSES,
    job_class_table,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.completion import (
    complete_manifest,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.kinds import KINDS
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.manifest import build_job
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.demand import job_demand

BASE = {"tenant": "alpha", "queue": "tenant-alpha-algo", "queue_type": "team", "image": "img:v1"}
COMMAND = {"pytorch_ddp": ["train.py"], "mpi": ["python", "train.py"], "ray": None}
TASKS = {
    "pytorch_ddp": ["master", "worker"],
    "ps_worker": ["ps", "worker"],
    "mpi": ["master", "worker"],
    "spark": ["driver", "executor"],
    "ray": ["head", "worker"],
    "single": ["task"],
}
PLUGINS = {
    "pytorch_ddp": {"pytorch", "svc", "env"},
    "ps_worker": {"tensorflow", "svc", "env"},
    "mpi": {"mpi", "ssh", "svc", "env"},
    "spark": {"svc", "env"},
    "ray": {"ray", "svc"},
    "single": None,
}


def job(**kw):
    params = {**BASE, "name": "j1", "kind": "single", **kw}
    if "command" not in kw:
        params["command"] = COMMAND.get(params["kind"], ["python", "run.py"])
    return build_job(params)


def errors_of(**kw):
    with pytest.raises(PlatformValidationError) as info:
        job(**kw)
    return {e.field: e.message for e in info.value.errors}


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_is_a_complete_manifest(kind):
    replicas = 1 if kind == "single" else 3
    m = job(kind=kind, replicas=replicas, gpus_per_pod=8)
    spec = m["spec"]
    assert m["apiVersion"] == "batch.volcano.sh/v1alpha1" and m["kind"] == "Job"
    assert m["metadata"]["namespace"] == "tenant-alpha"
    assert m["metadata"]["labels"] == {
        "platform.io/tenant": "alpha",
        "platform.io/managed-by": "gpucloud-platform",
        "platform.io/job-class": "normal",
        "platform.io/billing-type": "subscription",
    }
    assert spec["schedulerName"] == "volcano" and spec["queue"] == "tenant-alpha-algo"
    assert spec["priorityClassName"] == "normal-job" and spec["maxRetry"] == 3
    assert spec["networkTopology"] == {"mode": "soft"}
    assert {"event": "PodEvicted", "action": "RestartJob"} in spec["policies"]
    assert {"event": "PodFailed", "action": "RestartJob"} in spec["policies"]
    assert [t["name"] for t in spec["tasks"]] == TASKS[kind]
    assert spec["minAvailable"] == sum(t["replicas"] for t in spec["tasks"])
    assert (set(spec["plugins"]) if "plugins" in spec else None) == PLUGINS[kind]
    gpu_pods = sum(
        t["replicas"]
        for t in spec["tasks"]
        if t["template"]["spec"]["containers"][0]["resources"]
        .get("limits", {})
        .get("nvidia.com/gpu")
        == 8
    )
    assert gpu_pods == replicas
    for t in spec["tasks"]:
        assert t["template"]["metadata"]["labels"]["platform.io/job-class"] == "normal"
        assert t["template"]["spec"]["containers"][0]["image"] == "img:v1"


def test_pytorch_ddp_runs_torchrun_with_the_plugin_variables():
    m = job(kind="pytorch_ddp", replicas=4, gpus_per_pod=8, command=["train.py", "--lr=0.1"])
    master, worker = m["spec"]["tasks"]
    assert (master["replicas"], worker["replicas"]) == (1, 3)
    cmd = worker["template"]["spec"]["containers"][0]["command"]
    assert (
        cmd[0] == "torchrun"
        and "--nproc_per_node=8" in cmd
        and cmd[-2:] == ["train.py", "--lr=0.1"]
    )
    assert "--master_addr=$(MASTER_ADDR)" in cmd and "--node_rank=$(RANK)" in cmd
    assert m["spec"]["plugins"]["pytorch"] == ["--master=master", "--worker=worker", "--port=23456"]


def test_single_node_ddp_has_no_empty_worker_task():
    m = job(kind="pytorch_ddp", replicas=1, gpus_per_pod=8)
    assert [t["name"] for t in m["spec"]["tasks"]] == ["master"] and m["spec"]["minAvailable"] == 1


def test_mpi_master_uses_the_svc_hostfile_and_completes_the_job():
    m = job(kind="mpi", replicas=2, gpus_per_pod=4)
    master, worker = m["spec"]["tasks"]
    cmd = master["template"]["spec"]["containers"][0]["command"]
    assert "/etc/volcano/worker.host" in cmd and cmd[cmd.index("-np") + 1] == "8"
    assert master["policies"] == [{"event": "TaskCompleted", "action": "CompleteJob"}]
    assert (
        "nvidia.com/gpu" not in master["template"]["spec"]["containers"][0]["resources"]["requests"]
    )
    assert worker["template"]["spec"]["containers"][0]["command"] == ["/usr/sbin/sshd", "-D"]


def test_ray_containers_are_named_for_the_plugin_and_take_no_command():
    m = job(kind="ray", replicas=2, gpus_per_pod=1)
    head, worker = m["spec"]["tasks"]
    assert head["template"]["spec"]["containers"][0]["name"] == "head"
    assert worker["template"]["spec"]["containers"][0]["name"] == "worker"
    assert "--headContainer=head" in m["spec"]["plugins"]["ray"]
    assert "command" not in head["template"]["spec"]["containers"][0]
    assert errors_of(kind="ray", command=["python", "x.py"])["command"].startswith(
        "kind ray takes no command"
    )


def test_volumes_shm_dataset_workspace_and_rdma():
    m = job(
        gpus_per_pod=2,
        rdma=1,
        shm_size="64Gi",
        dataset_pvc="ds",
        workspace_pvc="ws",
        env={"A": "1"},
    )
    pod = m["spec"]["tasks"][0]["template"]["spec"]
    c = pod["containers"][0]
    vols = {v["name"]: v for v in pod["volumes"]}
    assert vols["shared-memory"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "64Gi"}
    assert vols["dataset"]["persistentVolumeClaim"] == {"claimName": "ds", "readOnly": True}
    mounts = {v["name"]: v for v in c["volumeMounts"]}
    assert mounts["shared-memory"]["mountPath"] == "/dev/shm"
    assert mounts["dataset"] == {"name": "dataset", "mountPath": "/data", "readOnly": True}
    assert mounts["workspace"]["mountPath"] == "/workspace"
    assert c["resources"]["limits"] == {"nvidia.com/gpu": 2, "rdma/hca": 1}
    assert c["env"] == [{"name": "A", "value": "1"}]


def test_class_table_is_applied():
    large = job(kind="pytorch_ddp", replicas=4, gpus_per_pod=8, job_class="large")
    assert large["spec"]["priorityClassName"] == "large-job"
    assert large["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    debug = job(job_class="debug", gpus_per_pod=1)
    assert (
        debug["spec"]["priorityClassName"] == "debug-job" and "networkTopology" not in debug["spec"]
    )
    critical = job(job_class="critical", gpus_per_pod=1)
    ann = critical["spec"]["tasks"][0]["template"]["metadata"]["annotations"]
    assert ann == {"volcano.sh/preemptable": "false"}
    payg = job(queue="tenant-alpha-payg", queue_type="payg", gpus_per_pod=1)
    assert payg["metadata"]["labels"]["platform.io/billing-type"] == "payg"


def test_spot_job_gets_price_grace_period_and_checkpoint():
    m = job(
        queue="tenant-alpha-spot",
        queue_type="spot",
        job_class="spot",
        spot_price="0.30",
        gpus_per_pod=4,
        checkpoint_command=["/bin/sh", "-c", "python /scripts/checkpoint_save.py"],
    )
    assert m["metadata"]["labels"]["platform.io/billing-type"] == "spot"
    assert m["metadata"]["annotations"] == {"platform.io/spot-price": "0.3"}
    assert m["spec"]["priorityClassName"] == "spot-job"
    # rule billing-labels: metering reads the bid and the billing type from the pods
    template = m["spec"]["tasks"][0]["template"]["metadata"]
    assert template["annotations"] == {"platform.io/spot-price": "0.3"}
    assert template["labels"]["platform.io/billing-type"] == "spot"
    pod = m["spec"]["tasks"][0]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 300
    assert (
        pod["containers"][0]["lifecycle"]["preStop"]["exec"]["command"][-1]
        == "python /scripts/checkpoint_save.py"
    )


def test_overrides_merge_over_the_defaults():
    table = job_class_table(
        {"large": {"network_topology": {"mode": "hard", "highestTierAllowed": 1}, "min_gpus": 8}}
    )
    m = build_job(
        {
            **BASE,
            "name": "x",
            "kind": "single",
            "command": ["a"],
            "gpus_per_pod": 8,
            "job_class": "large",
        },
        table,
    )
    assert m["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}
    assert (
        table["large"].priority_class == "large-job"
        and table["normal"] == DEFAULT_CLASSES["normal"]
    )


def test_bad_overrides_name_the_setting():
    with pytest.raises(PlatformValidationError) as info:
        job_class_table(
            {"huge": {}, "large": {"network_topology": {"mode": "strict"}, "max_gpus": -1}}
        )
    fields = {e.field for e in info.value.errors}
    assert {
        "job_classes.huge",
        "job_classes.large.network_topology.mode",
        "job_classes.large.max_gpus",
    } <= fields


@pytest.mark.parametrize(
    ("kw", "field", "words"),
    [
        ({"kind": "tensorflow"}, "kind", "not a kind of job"),
        ({"replicas": 0}, "replicas", "must be >= 1"),
        ({"kind": "pytorch_ddp", "replicas": 0}, "replicas", "must be >= 1"),
        ({"gpus_per_pod": 16}, "gpus_per_pod", "largest node has 8 GPUs"),
        ({"gpus_per_pod": 12, "max_gpus_per_node": 10}, "gpus_per_pod", "largest node has 10 GPUs"),
        (
            {"job_class": "spot", "queue": "tenant-alpha-spot", "queue_type": "spot"},
            "spot_price",
            "needs its price",
        ),
        (
            {
                "job_class": "spot",
                "queue": "tenant-alpha-spot",
                "queue_type": "spot",
                "spot_price": "cheap",
            },
            "spot_price",
            "not a number",
        ),
        (
            {
                "job_class": "spot",
                "queue": "tenant-alpha-spot",
                "queue_type": "spot",
                "spot_price": "0",
            },
            "spot_price",
            "greater than 0",
        ),
        ({"spot_price": "0.3"}, "spot_price", "not billed as spot"),
        (
            {"kind": "pytorch_ddp", "job_class": "debug", "replicas": 4, "gpus_per_pod": 8},
            "replicas",
            "single node",
        ),
        ({"job_class": "debug", "gpus_per_pod": 8, "kind": "ps_worker"}, "replicas", "single node"),
        ({"job_class": "large", "gpus_per_pod": 8}, "gpus_per_pod", "32 GPUs or more"),
        ({"job_class": "spot"}, "queue", "runs only in spot queues"),
        (
            {"queue": "tenant-beta-algo"},
            "queue",
            "another tenant's queue name; expected a leaf queue of tenant alpha",
        ),
        ({"image": ""}, "image", "is required"),
        ({"kind": "pytorch_ddp", "command": None}, "command", "required for kind pytorch_ddp"),
        ({"kind": "single", "replicas": 2}, "replicas", "a single job is one pod"),
        ({"cpu": "lots"}, "cpu", "not a quantity"),
        ({"shm_size": "0"}, "shm_size", "more than 0"),
        ({"dataset_pvc": "Bad_Name"}, "dataset_pvc", "not a PersistentVolumeClaim name"),
        ({"name": "x" * 60}, "name", "at most"),
        ({"env": {"1BAD": "x"}}, "env.1BAD", "not a valid environment variable name"),
        ({"job_class": "vip"}, "job_class", "not a job class"),
    ],
)
def test_bad_input_names_the_parameter(kw, field, words):
    errs = errors_of(**kw)
    assert field in errs, errs
    assert words in errs[field]


def test_all_errors_are_reported_at_once():
    errs = errors_of(kind="nope", image="", gpus_per_pod=99, job_class="vip")
    assert {"kind", "image", "gpus_per_pod", "job_class"} <= set(errs)


def test_unknown_parameter_is_refused():
    with pytest.raises(PlatformValidationError, match="gpu: unknown parameter"):
        build_job({**BASE, "name": "x", "kind": "single", "gpu": 1})


@given(
    kind=st.sampled_from(KINDS),
    replicas=st.integers(1, 12),
    gpus=st.integers(0, 8),
    ps=st.integers(1, 3),
)
def test_min_available_counts_every_pod_and_gpus_match(kind, replicas, gpus, ps):
    if kind == "single":
        replicas = 1
    m = job(kind=kind, replicas=replicas, gpus_per_pod=gpus, ps_replicas=ps)
    demand = job_demand(m)
    pods, total_gpus = demand.pods, demand.gpus
    assert m["spec"]["minAvailable"] == pods
    assert total_gpus == replicas * gpus
    assert all(t["replicas"] > 0 for t in m["spec"]["tasks"])


def test_complete_manifest_fills_platform_fields():
    user = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "mine"},
        "spec": {
            "queue": "tenant-alpha-spot",
            "tasks": [
                {
                    "name": "t",
                    "replicas": 2,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "i",
                                    "resources": {"limits": {"nvidia.com/gpu": 4}},
                                }
                            ]
                        }
                    },
                }
            ],
        },
    }
    out = complete_manifest(user, "alpha", queue_type="spot", job_class="spot", spot_price="0.5")
    assert out["metadata"]["namespace"] == "tenant-alpha"
    assert out["metadata"]["annotations"]["platform.io/spot-price"] == "0.5"
    assert out["spec"]["priorityClassName"] == "spot-job" and out["spec"]["minAvailable"] == 2
    assert out["spec"]["schedulerName"] == "volcano" and out["spec"]["maxRetry"] == 3
    assert out["spec"]["tasks"][0]["template"]["spec"]["terminationGracePeriodSeconds"] == 300
    for task in out["spec"]["tasks"]:
        assert task["template"]["metadata"]["annotations"]["platform.io/spot-price"] == "0.5"
    assert user["metadata"] == {"name": "mine"}  # the caller's manifest is not changed


def test_complete_manifest_refuses_contradictions():
    user = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "mine", "namespace": "tenant-beta"},
        "spec": {
            "queue": "tenant-alpha-algo",
            "priorityClassName": "critical-job",
            "tasks": [
                {
                    "name": "t",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "i",
                                    "resources": {"limits": {"nvidia.com/gpu": 16}},
                                }
                            ]
                        }
                    },
                }
            ],
        },
    }
    with pytest.raises(PlatformValidationError) as info:
        complete_manifest(user, "alpha", queue_type="team", job_class="normal")
    fields = {e.field for e in info.value.errors}
    assert {"manifest.metadata.namespace", "manifest.spec.tasks[0]"} <= fields
    user["metadata"].pop("namespace")
    user["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["limits"][
        "nvidia.com/gpu"
    ] = 1
    with pytest.raises(PlatformValidationError, match=r"manifest\.spec\.priorityClassName"):
        complete_manifest(user, "alpha", queue_type="team", job_class="normal")
