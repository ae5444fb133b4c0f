# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules checkpoint-options and checkpoint-convention: a job with ``checkpoint`` gets the
claim at /checkpoints and the variables in every GPU container, the resume and upload
containers in the first GPU task's pods only, and the tenant's own bucket whatever the
caller writes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.checkpoints import (
    RESUME_CONTAINER,
    UPLOAD_CONTAINER,
    checkpoint_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.kinds import KINDS
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.manifest import build_job

BASE = {"tenant": "alpha", "queue": "tenant-alpha-algo", "queue_type": "team", "image": "img:v1"}
COMMAND = {"pytorch_ddp": ["train.py"], "mpi": ["python", "train.py"], "ray": None}
CKPT = {"claim": "algo-checkpoints", "image": "tools/aws-cli:2"}


def job(kind="single", **kw):
    params = {
        **BASE,
        "name": "llm",
        "kind": kind,
        "command": COMMAND.get(kind, ["run"]),
        "gpus_per_pod": 1,
        "replicas": 2 if kind != "single" else 1,
        **kw,
    }
    return build_job(params)


def env_of(container):
    return {e["name"]: e["value"] for e in container.get("env", [])}


def refused(**kw):
    with pytest.raises(PlatformValidationError) as info:
        job(**kw)
    return {e.field: e.message for e in info.value.errors}


@pytest.mark.parametrize("kind", KINDS)
def test_every_gpu_container_gets_the_claim_and_the_variables(kind):
    manifest = job(kind, checkpoint=CKPT)
    gpu_tasks = 0
    for task in manifest["spec"]["tasks"]:
        spec = task["template"]["spec"]
        container = spec["containers"][0]
        env = env_of(container)
        if "CHECKPOINT_DIR" not in env:
            assert not any(m["name"] == "checkpoints" for m in container.get("volumeMounts", []))
            continue
        gpu_tasks += 1
        assert env["CHECKPOINT_DIR"] == "/checkpoints/llm"
        assert env["RESUME_FROM"] == "/checkpoints/llm/latest"
        assert env["CHECKPOINT_KEEP"] == "2"
        assert env["CHECKPOINT_URI"] == "s3://tenant-alpha-checkpoints/llm/"
        assert {"name": "checkpoints", "mountPath": "/checkpoints"} in container["volumeMounts"]
        assert {
            "name": "checkpoints",
            "persistentVolumeClaim": {"claimName": "algo-checkpoints"},
        } in spec["volumes"]
    assert gpu_tasks >= 1


@pytest.mark.parametrize("kind", KINDS)
def test_only_the_first_gpu_task_resumes_and_uploads(kind):
    manifest = job(kind, checkpoint=CKPT)
    with_containers = []
    for task in manifest["spec"]["tasks"]:
        names = [c["name"] for c in task["template"]["spec"].get("initContainers", [])]
        if UPLOAD_CONTAINER in names:
            # The resume runs first; the upload is a sidecar that outlives the trainer.
            assert names.index(RESUME_CONTAINER) < names.index(UPLOAD_CONTAINER)
            with_containers.append(task["name"])
    assert len(with_containers) == 1


def test_the_upload_sidecar_runs_as_a_sidecar_with_the_tenants_keys_and_a_prestop():
    spec = job(checkpoint={**CKPT, "keep": 3, "interval": 120})["spec"]["tasks"][0]["template"]
    upload = next(c for c in spec["spec"]["initContainers"] if c["name"] == UPLOAD_CONTAINER)
    assert upload["restartPolicy"] == "Always"
    assert upload["image"] == "tools/aws-cli:2"
    assert upload["envFrom"] == [{"secretRef": {"name": "platform-object-store"}}]
    env = env_of(upload)
    assert env["CHECKPOINT_BUCKET"] == "tenant-alpha-checkpoints"
    assert env["CHECKPOINT_INTERVAL"] == "120"
    assert env["CHECKPOINT_KEEP"] == "3"
    assert upload["lifecycle"]["preStop"]["exec"]["command"][:2] == ["sh", "-c"]


def test_the_callers_env_cannot_move_the_checkpoints_to_another_bucket():
    manifest = job(
        checkpoint=CKPT, env={"CHECKPOINT_URI": "s3://tenant-beta-checkpoints/x/", "LR": "3e-4"}
    )
    env = env_of(manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0])
    assert env["CHECKPOINT_URI"] == "s3://tenant-alpha-checkpoints/llm/"
    assert env["LR"] == "3e-4"


def test_without_checkpoint_nothing_is_added():
    spec = job()["spec"]["tasks"][0]["template"]["spec"]
    assert "initContainers" not in spec
    assert "CHECKPOINT_DIR" not in env_of(spec["containers"][0])


@pytest.mark.parametrize(
    ("checkpoint", "field"),
    [
        ({"image": "i"}, "checkpoint.claim"),
        ({"claim": "c"}, "checkpoint.image"),
        ({**CKPT, "keep": 0}, "checkpoint.keep"),
        ({**CKPT, "interval": 5}, "checkpoint.interval"),
        ({**CKPT, "bucket": "tenant-beta-checkpoints"}, "checkpoint.bucket"),
        ("algo-checkpoints", "checkpoint"),
    ],
)
def test_a_bad_checkpoint_is_refused_naming_the_option(checkpoint, field):
    assert field in refused(checkpoint=checkpoint)


def test_the_claim_cannot_also_be_the_workspace():
    errors = refused(checkpoint=CKPT, workspace_pvc="algo-checkpoints")
    assert "already the job's dataset or workspace" in errors["checkpoint.claim"]


@given(keep=st.integers(min_value=1, max_value=50), interval=st.integers(60, 86400))
def test_any_keep_and_interval_at_their_least_or_more_are_accepted(keep, interval):
    assert checkpoint_errors({**CKPT, "keep": keep, "interval": interval}) == []


def test_with_a_manifest_checkpoint_is_refused_not_dropped():
    from ansible_collections.gpucloud.platform.plugins.module_utils.jobs import submit
    from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.jobs.job_objects import (
        SINGLE,
        vcjob_params,
    )

    manifest = {"metadata": {"name": "m"}, "spec": {"tasks": []}}
    given = vcjob_params(**{**SINGLE, "kind": None, "manifest": manifest, "checkpoint": CKPT})
    errors = submit.option_errors(given)
    assert [e.field for e in errors] == ["checkpoint"]
    assert "built from kind" in errors[0].message
