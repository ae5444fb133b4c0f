# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A job's placement, compliance, prefetch and vGPUs as build_job writes them into the
Volcano Job (jobs/manifest with hybrid/placement and hybrid/vgpu)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import placement as pl
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.kinds import KINDS, roles
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.manifest import build_job
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.request import JobRequest

BASE = {
    "tenant": "alpha",
    "queue": "tenant-alpha-payg",
    "queue_type": "payg",
    "image": "img:v1",
    "name": "j1",
}
COMMAND = {"pytorch_ddp": ["train.py"], "mpi": ["python", "train.py"], "ray": None}
CHECKPOINT = ["python", "checkpoint.py"]
PREFETCH = {"image": "busybox:1", "command": ["sh", "-c", "cp -r /src/. /data/local"]}
VK_TAINT = "virtual-kubelet.io/provider"
ZONE_LABEL = "platform.io/compliance-zone"
COMPLIANCE = {"platform.io/compliance": "restricted"}
PLACEMENT_ANNOTATION = "platform.io/placement"


def job(**kw):
    params = {**BASE, "kind": "single", **kw}
    if "command" not in kw:
        params["command"] = COMMAND.get(params["kind"], ["python", "run.py"])
    if params["kind"] != "single":
        params.setdefault("replicas", 2)
    return build_job(params)


def errors_of(**kw):
    with pytest.raises(PlatformValidationError) as info:
        job(**kw)
    return {e.field: e.message for e in info.value.errors}


def specs(manifest):
    return [t["template"]["spec"] for t in manifest["spec"]["tasks"]]


def main_container(spec):
    return spec["containers"][0]


def placement_part(spec):
    return {k: spec[k] for k in ("affinity", "tolerations") if k in spec}


# --- rule placement-pod-spec in every task template ---------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("placement", pl.PLACEMENTS)
def test_every_task_template_of_every_kind_carries_the_placement(kind, placement):
    extra = {"checkpoint_command": CHECKPOINT} if placement in pl.CLOUD_PLACEMENTS else {}
    manifest = job(kind=kind, placement=placement, **extra)
    want = pl.placement_pod_spec(placement)
    tasks = specs(manifest)
    assert len(tasks) == len({t["name"] for t in manifest["spec"]["tasks"]}) >= 1
    for spec in tasks:
        assert placement_part(spec) == want
    assert manifest["metadata"]["annotations"][PLACEMENT_ANNOTATION] == placement


@pytest.mark.parametrize("kind", KINDS)
def test_a_job_without_a_placement_is_unchanged(kind):
    manifest = job(kind=kind)
    for spec in specs(manifest):
        assert "affinity" not in spec and "tolerations" not in spec
        assert "initContainers" not in spec
    assert PLACEMENT_ANNOTATION not in manifest["metadata"].get("annotations", {})
    assert "platform.io/compliance" not in manifest["metadata"]["labels"]


def test_local_only_tolerates_nothing_and_excludes_the_cloud():
    (spec,) = specs(job(placement="local-only"))
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {"key": "platform.io/node-location", "operator": "NotIn", "values": ["cloud"]}
            ]
        }
    ]
    assert "tolerations" not in spec


@pytest.mark.parametrize("placement", pl.CLOUD_PLACEMENTS)
def test_a_cloud_placement_tolerates_the_cloud_taint(placement):
    (spec,) = specs(job(placement=placement, checkpoint_command=CHECKPOINT))
    assert spec["tolerations"] == [{"key": VK_TAINT, "operator": "Exists", "effect": "NoSchedule"}]


# --- compliance ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_compliance_labels_the_job_and_every_pod(kind):
    manifest = job(kind=kind, compliance=True)
    assert manifest["metadata"]["labels"]["platform.io/compliance"] == "restricted"
    for task in manifest["spec"]["tasks"]:
        labels = task["template"]["metadata"]["labels"]
        assert labels["platform.io/compliance"] == "restricted"
        assert labels["platform.io/tenant"] == "alpha"
    assert manifest["metadata"]["annotations"][PLACEMENT_ANNOTATION] == "local-only"


@pytest.mark.parametrize("kind", KINDS)
def test_a_compliance_job_is_local_only_in_every_template(kind):
    manifest = job(kind=kind, compliance=True, compliance_zone="finance")
    for spec in specs(manifest):
        assert "tolerations" not in spec
        (term,) = spec["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        assert {"key": ZONE_LABEL, "operator": "In", "values": ["finance"]} in term[
            "matchExpressions"
        ]
        assert pl.NOT_CLOUD in term["matchExpressions"]


def test_compliance_and_local_first_is_refused_naming_placement():
    errors = errors_of(compliance=True, placement="local-first", checkpoint_command=CHECKPOINT)
    assert list(errors) == ["placement"]
    assert "compliance-local-only" in errors["placement"]


def test_compliance_and_cloud_ok_is_refused_naming_placement():
    errors = errors_of(compliance=True, placement="cloud-ok")
    assert set(errors) == {"placement", "checkpoint_command"}


def test_a_compliance_zone_without_compliance_is_refused():
    assert list(errors_of(compliance_zone="finance")) == ["compliance_zone"]


def test_an_unknown_placement_is_refused():
    errors = errors_of(placement="anywhere")
    assert (
        list(errors) == ["placement"] and "local-only, local-first, cloud-ok" in errors["placement"]
    )


@given(
    placement=st.sampled_from([None, *pl.PLACEMENTS]),
    compliance=st.booleans(),
    kind=st.sampled_from(KINDS),
)
def test_a_built_compliance_or_local_only_job_never_tolerates_the_cloud(
    placement, compliance, kind
):
    try:
        manifest = job(
            kind=kind, placement=placement, compliance=compliance, checkpoint_command=CHECKPOINT
        )
    except PlatformValidationError as exc:
        assert compliance and placement in pl.CLOUD_PLACEMENTS
        assert "placement" in {e.field for e in exc.errors}
        return
    for spec in specs(manifest):
        tolerations = spec.get("tolerations") or []
        if compliance or placement == "local-only":
            assert all(t.get("key") != VK_TAINT for t in tolerations)
            assert (
                "requiredDuringSchedulingIgnoredDuringExecution"
                in (spec["affinity"]["nodeAffinity"])
            )
        elif placement in pl.CLOUD_PLACEMENTS:
            assert any(t.get("key") == VK_TAINT for t in tolerations)


# --- rule cloud-patterns ------------------------------------------------------------


@pytest.mark.parametrize("placement", pl.CLOUD_PLACEMENTS)
def test_a_cloud_placement_without_checkpoint_command_is_refused(placement):
    errors = errors_of(placement=placement)
    assert list(errors) == ["checkpoint_command"]
    assert placement in errors["checkpoint_command"]


def test_the_checkpoint_command_is_the_pre_stop_hook():
    (spec,) = specs(job(placement="cloud-ok", checkpoint_command=CHECKPOINT))
    assert main_container(spec)["lifecycle"] == {"preStop": {"exec": {"command": CHECKPOINT}}}


@pytest.mark.parametrize("kind", KINDS)
def test_prefetch_adds_an_init_container_a_volume_and_a_mount(kind):
    manifest = job(
        kind=kind, placement="local-first", checkpoint_command=CHECKPOINT, prefetch=PREFETCH
    )
    mount = {"name": "prefetch", "mountPath": "/data/local"}
    for spec in specs(manifest):
        assert spec["initContainers"] == [
            {
                "name": "data-prefetch",
                "image": "busybox:1",
                "command": PREFETCH["command"],
                "volumeMounts": [mount],
            }
        ]
        assert {"name": "prefetch", "emptyDir": {}} in spec["volumes"]
        assert mount in main_container(spec)["volumeMounts"]


def test_prefetch_keeps_the_other_volumes():
    (spec,) = specs(
        job(
            placement="cloud-ok",
            checkpoint_command=CHECKPOINT,
            prefetch={**PREFETCH, "path": "/scratch"},
            dataset_pvc="data",
            shm_size="8Gi",
        )
    )
    assert [v["name"] for v in spec["volumes"]] == ["dataset", "shared-memory", "prefetch"]
    assert [m["mountPath"] for m in main_container(spec)["volumeMounts"]] == [
        "/data",
        "/dev/shm",
        "/scratch",
    ]


@pytest.mark.parametrize("placement", [None, "local-only"])
def test_prefetch_without_a_cloud_placement_is_refused(placement):
    errors = errors_of(placement=placement, prefetch=PREFETCH)
    assert list(errors) == ["prefetch"]


def test_a_bad_prefetch_is_refused_by_field():
    errors = errors_of(
        placement="cloud-ok", checkpoint_command=CHECKPOINT, prefetch={"image": "busybox"}
    )
    assert list(errors) == ["prefetch.command"]


@pytest.mark.parametrize("placement", pl.CLOUD_PLACEMENTS)
def test_cloud_placements_get_five_minutes_to_stop(placement):
    manifest = job(kind="pytorch_ddp", placement=placement, checkpoint_command=CHECKPOINT)
    assert [s["terminationGracePeriodSeconds"] for s in specs(manifest)] == [300, 300]


def test_a_given_grace_period_wins_over_the_cloud_s():
    (spec,) = specs(
        job(placement="cloud-ok", checkpoint_command=CHECKPOINT, termination_grace_seconds=60)
    )
    assert spec["terminationGracePeriodSeconds"] == 60
    (zero,) = specs(
        job(placement="cloud-ok", checkpoint_command=CHECKPOINT, termination_grace_seconds=0)
    )
    assert zero["terminationGracePeriodSeconds"] == 0


@pytest.mark.parametrize("placement", [None, "local-only"])
def test_a_local_job_keeps_the_default_grace_period(placement):
    (spec,) = specs(job(placement=placement))
    assert "terminationGracePeriodSeconds" not in spec
    assert "initContainers" not in spec


# --- vGPUs --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_vgpu_resources_are_in_limits_and_requests_of_gpu_pods(kind):
    vgpu = {"number": 2, "memory_mib": 8192, "cores": 30}
    manifest = job(kind=kind, vgpu=vgpu)
    shares = {
        "volcano.sh/vgpu-number": 2,
        "volcano.sh/vgpu-memory": 8192,
        "volcano.sh/vgpu-cores": 30,
    }
    gpu_tasks = {
        r.task for r in roles(JobRequest(**{**BASE, "kind": kind, "replicas": 2})) if r.gpus
    }
    for task in manifest["spec"]["tasks"]:
        resources = main_container(task["template"]["spec"])["resources"]
        if task["name"] in gpu_tasks:
            for key, value in shares.items():
                assert resources["limits"][key] == value == resources["requests"][key]
            assert "nvidia.com/gpu" not in resources["limits"]
        else:
            assert not set(shares) & set(resources.get("limits", {}))
            assert not set(shares) & set(resources["requests"])


def test_vgpu_number_alone():
    (spec,) = specs(job(vgpu={"number": 1}))
    assert main_container(spec)["resources"]["limits"] == {"volcano.sh/vgpu-number": 1}


def test_vgpu_with_gpus_per_pod_is_refused():
    errors = errors_of(vgpu={"number": 1}, gpus_per_pod=2)
    assert list(errors) == ["vgpu"] and "vgpu-or-whole-gpu" in errors["vgpu"]


def test_a_bad_vgpu_request_is_refused_by_field():
    errors = errors_of(vgpu={"number": 0, "cores": 101})
    assert set(errors) == {"vgpu.number", "vgpu.cores"}


def test_more_vgpus_than_the_largest_node_s_gpus_is_refused():
    errors = errors_of(vgpu={"number": 5}, max_gpus_per_node=4)
    assert list(errors) == ["vgpu.number"]


def test_placement_and_vgpu_and_compliance_together():
    manifest = job(compliance=True, vgpu={"number": 1})
    (spec,) = specs(manifest)
    assert main_container(spec)["resources"]["requests"]["volcano.sh/vgpu-number"] == 1
    assert manifest["metadata"]["labels"]["platform.io/compliance"] == "restricted"
    assert "tolerations" not in spec


def test_the_request_fields_default_to_nothing():
    req = JobRequest.from_mapping({**BASE, "kind": "single", "placement": None, "vgpu": None})
    assert req.placement is None and req.vgpu is None and req.prefetch is None
    assert req.compliance is False and req.compliance_zone is None


def test_a_class_placement_is_the_default_and_a_job_placement_wins():
    """The class table's placement (job_classes: {large: {placement: ...}}) applies to a job
    without one of its own; a bad one is refused naming the setting."""
    from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.classes import (
        job_class_table,
    )

    table = job_class_table({"normal": {"placement": "local-only"}})
    params = {
        "name": "j",
        "tenant": "alpha",
        "queue": "tenant-alpha-payg",
        "queue_type": "payg",
        "kind": "single",
        "image": "i",
        "gpus_per_pod": 1,
    }
    job = build_job(params, table)
    spec = job["spec"]["tasks"][0]["template"]["spec"]
    assert "tolerations" not in spec
    required = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["nodeSelectorTerms"][0]["matchExpressions"][0]["operator"] == "NotIn"
    assert job["metadata"]["annotations"]["platform.io/placement"] == "local-only"
    own = build_job({**params, "placement": "cloud-ok", "checkpoint_command": ["c"]}, table)
    assert own["metadata"]["annotations"]["platform.io/placement"] == "cloud-ok"
    with pytest.raises(PlatformValidationError, match=r"job_classes.normal.placement: 'moon'"):
        job_class_table({"normal": {"placement": "moon"}})


def test_a_prefetch_size_limit_bounds_its_empty_dir():
    (spec,) = specs(
        job(
            placement="cloud-ok",
            checkpoint_command=CHECKPOINT,
            prefetch={**PREFETCH, "size_limit": "50Gi"},
        )
    )
    assert {"name": "prefetch", "emptyDir": {"sizeLimit": "50Gi"}} in spec["volumes"]


def test_a_prefetch_on_a_node_local_class_is_an_ephemeral_volume_of_that_size():
    (spec,) = specs(
        job(
            placement="cloud-ok",
            checkpoint_command=CHECKPOINT,
            prefetch={**PREFETCH, "size_limit": "200Gi", "storage_class": "local-nvme"},
        )
    )
    (volume,) = [v for v in spec["volumes"] if v["name"] == "prefetch"]
    claim = volume["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == "local-nvme"
    assert claim["resources"] == {"requests": {"storage": "200Gi"}}


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"size_limit": "lots"}, "prefetch.size_limit"),
        ({"size_limit": "0"}, "prefetch.size_limit"),
        ({"storage_class": "local-nvme"}, "prefetch.storage_class"),
        ({"storage_class": "Local_NVMe", "size_limit": "1Gi"}, "prefetch.storage_class"),
    ],
)
def test_a_bad_prefetch_volume_is_refused_naming_the_key(extra, field):
    errors = errors_of(
        placement="cloud-ok", checkpoint_command=CHECKPOINT, prefetch={**PREFETCH, **extra}
    )
    assert field in errors
