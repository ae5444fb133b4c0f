# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tenants' object store on the local cluster's real S3 server (versitygw, started by
tools/localcluster) and the real API server: ``tenant_object_store``,
``checkpoint_retention`` and the checkpoint scripts a job's pods run (the ``aws`` command
of the test environment, as the pods' image has it).

The tenants are bare namespaces labelled as the tenant module labels them: the modules
need a tenant's namespace and nothing else of it. Each test's tenants have names of
their own; the store keeps buckets (the platform never deletes a tenant's data), so the
names are fresh per run.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.checkpoints import (
    RESUME_SCRIPT,
    UPLOAD_CONTAINER,
    UPLOAD_SCRIPT,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.manifest import build_job
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    apply_object_store_connection,
)

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:5]
A, B, C = f"osa{RUN}", f"osb{RUN}", f"osc{RUN}"


@pytest.fixture(scope="module")
def store(api_client) -> dict[str, str]:
    return apply_object_store_connection(api_client)


@pytest.fixture(scope="module")
def tenants(api_client, store):
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    for tenant in (A, B, C):
        core.create_namespace(
            {
                "metadata": {
                    "name": f"tenant-{tenant}",
                    "labels": {
                        "platform.io/tenant": tenant,
                        "platform.io/managed-by": "gpucloud-platform",
                    },
                }
            }
        )
    yield
    for tenant in (A, B, C):
        core.delete_namespace(f"tenant-{tenant}")


def s3(store: dict[str, str], access: str, secret: str) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=store["endpoint"],
        aws_access_key_id=access,
        aws_secret_access_key=secret,
        region_name=store["region"],
    )


def root(store: dict[str, str]) -> Any:
    return s3(store, store["access_key"], store["secret_key"])


def credentials(api_client, tenant: str) -> dict[str, str]:
    from kubernetes import client

    secret = client.CoreV1Api(api_client).read_namespaced_secret(
        "platform-object-store", f"tenant-{tenant}"
    )
    return {k: base64.b64decode(v).decode() for k, v in secret.data.items()}


def refused(call) -> str:
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError) as caught:
        call()
    return caught.value.response["Error"]["Code"]


def test_a_tenant_reads_and_writes_its_own_buckets_and_no_one_elses(
    run_module, api_client, store, tenants
):
    """Rules tenant-buckets, tenant-store-identity and store-credentials: each tenant's
    credentials, as its Secret holds them, work on its buckets, and the store refuses
    them on the other tenant's; a second run writes nothing."""
    for tenant in (A, B):
        made = run_module("tenant_object_store", {"tenant": tenant})
        assert not made.get("failed") and made["changed"], made
        assert made["writes"][0] == f"account tenant-{tenant}" and made["new_key"], made
    again = run_module("tenant_object_store", {"tenant": A}, diff=True)
    assert not again.get("failed") and not again["changed"] and again["writes"] == [], again
    assert again["summary"][-1] == "nothing to change", again

    mine = credentials(api_client, A)
    assert mine["AWS_ACCESS_KEY_ID"] == f"tenant-{A}"
    assert mine["AWS_ENDPOINT_URL"] == store["endpoint"]
    assert mine["BUCKET_CHECKPOINTS"] == f"tenant-{A}-checkpoints"
    client_a = s3(store, mine["AWS_ACCESS_KEY_ID"], mine["AWS_SECRET_ACCESS_KEY"])
    client_a.put_object(Bucket=f"tenant-{A}-datasets", Key="imagenet/part-0", Body=b"pixels")
    read = client_a.get_object(Bucket=f"tenant-{A}-datasets", Key="imagenet/part-0")
    assert read["Body"].read() == b"pixels"
    theirs = f"tenant-{B}-datasets"
    assert refused(lambda: client_a.put_object(Bucket=theirs, Key="x", Body=b"x")) == "AccessDenied"
    assert refused(lambda: client_a.list_objects_v2(Bucket=theirs)) == "AccessDenied"
    assert refused(lambda: client_a.create_bucket(Bucket=f"tenant-{A}-extra")) == "AccessDenied"
    assert [b["Name"] for b in client_a.list_buckets()["Buckets"]] == sorted(
        f"tenant-{A}-{p}" for p in ("checkpoints", "datasets", "models")
    )

    # KServe's storage initializer finds the Secret through the account, with its endpoint.
    from kubernetes import client

    account = client.CoreV1Api(api_client).read_namespaced_service_account(
        "platform-object-store", f"tenant-{A}"
    )
    assert [s.name for s in account.secrets] == ["platform-object-store"]
    assert account.automount_service_account_token is False
    secret = client.CoreV1Api(api_client).read_namespaced_secret(
        "platform-object-store", f"tenant-{A}"
    )
    endpoint = store["endpoint"].split("://", 1)[1]
    assert secret.metadata.annotations["serving.kserve.io/s3-endpoint"] == endpoint
    assert secret.metadata.annotations["serving.kserve.io/s3-usehttps"] == "0"


def test_check_mode_writes_neither_the_store_nor_the_cluster(
    run_module, api_client, store, tenants
):
    from kubernetes import client

    before = {b["Name"] for b in root(store).list_buckets()["Buckets"]}
    planned = run_module("tenant_object_store", {"tenant": C}, check=True)
    assert not planned.get("failed") and planned["changed"], planned
    assert planned["writes"][:2] == [f"account tenant-{C}", f"bucket tenant-{C}-datasets"]
    assert "the store is not written in check mode" in planned["summary"][-1]
    assert {b["Name"] for b in root(store).list_buckets()["Buckets"]} == before
    secrets = client.CoreV1Api(api_client).list_namespaced_secret(f"tenant-{C}").items
    assert [s.metadata.name for s in secrets] == []


def test_a_bucket_of_another_owner_is_refused_before_any_write(
    run_module, api_client, store, tenants
):
    """Rule bucket-of-its-tenant: tenant C's models bucket name, taken by someone else in
    the store, is not taken from them, and nothing of C's is made."""
    from kubernetes import client

    root(store).create_bucket(Bucket=f"tenant-{C}-models")  # the root's: handed over
    root(store).create_bucket(Bucket=f"tenant-{C}-datasets")
    other = run_module("tenant_object_store", {"tenant": A})  # A exists; hand C's to A
    assert not other.get("failed"), other
    from ansible_collections.gpucloud.platform.plugins.module_utils.objectstore.connection import (
        StoreConnection,
    )
    from ansible_collections.gpucloud.platform.plugins.module_utils.objectstore.gateway_io import (
        Gateway,
    )

    gateway = Gateway(
        StoreConnection(
            endpoint=store["endpoint"],
            admin_endpoint=store["admin_endpoint"],
            access_key=store["access_key"],
            secret_key=store["secret_key"],
        )
    )
    gateway.hand_over(f"tenant-{C}-datasets", f"tenant-{A}")
    result = run_module("tenant_object_store", {"tenant": C})
    assert result.get("failed"), result
    assert f"bucket tenant-{C}-datasets exists and belongs to 'tenant-{A}'" in result["msg"]
    assert gateway.account_key(f"tenant-{C}") is None
    assert gateway.bucket_owners()[f"tenant-{C}-datasets"] == f"tenant-{A}"
    secrets = client.CoreV1Api(api_client).list_namespaced_secret(f"tenant-{C}").items
    assert secrets == []


def checkpoint_env(creds: dict[str, str], tenant: str, claim_dir: Path) -> dict[str, str]:
    """What the upload sidecar of a job ``llm`` of the tenant gets (rule
    checkpoint-convention, read off the manifest ``build_job`` makes), its store keys, and
    the claim at ``claim_dir`` instead of /checkpoints."""
    manifest = build_job(
        {
            "name": "llm",
            "tenant": tenant,
            "queue": f"tenant-{tenant}-algo",
            "kind": "single",
            "image": "trainer:1",
            "command": ["train"],
            "checkpoint": {"claim": "ckpt", "image": "aws-cli:2"},
        }
    )
    pod = manifest["spec"]["tasks"][0]["template"]["spec"]
    upload = next(c for c in pod["initContainers"] if c["name"] == UPLOAD_CONTAINER)
    env = {e["name"]: e["value"].replace("/checkpoints", str(claim_dir)) for e in upload["env"]}
    aws = Path(sys.executable).parent  # the aws command of the test environment
    return {**creds, **env, "PATH": f"{aws}:{os.environ['PATH']}", "HOME": str(claim_dir)}


def run_script(script: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["sh", "-c", script], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_checkpoints_upload_resume_and_keep_the_newest_two(
    run_module, api_client, store, tenants, tmp_path
):
    """Rules checkpoint-convention and checkpoint-retention against the real store: the
    scripts a job's pods run, with the tenant's own keys. Five checkpoints written and
    uploaded (files and directories): the claim keeps the newest two; the retention run
    leaves the newest two in the bucket (check mode deletes nothing, another tenant's
    bucket is left alone); a pod on an empty claim resumes from the newest."""
    for tenant in (A, B):
        assert not run_module("tenant_object_store", {"tenant": tenant}).get("failed")
    creds = credentials(api_client, A)
    client_a = s3(store, creds["AWS_ACCESS_KEY_ID"], creds["AWS_SECRET_ACCESS_KEY"])
    bucket = creds["BUCKET_CHECKPOINTS"]
    env = checkpoint_env(creds, A, tmp_path)
    work = Path(env["CHECKPOINT_DIR"])
    assert env["CHECKPOINT_URI"] == f"s3://tenant-{A}-checkpoints/llm/"

    assert "resumed" not in run_script(RESUME_SCRIPT, env)  # nothing to resume from yet
    assert not Path(env["RESUME_FROM"]).exists()
    for step in range(1, 6):
        if step % 2:
            (work / f"step-{step}.pt").write_bytes(b"w" * step)
        else:
            (work / f"step-{step}").mkdir()
            (work / f"step-{step}" / "model.pt").write_bytes(b"m" * step)
            (work / f"step-{step}" / "optim.pt").write_bytes(b"o" * step)
        os.utime(work / (f"step-{step}.pt" if step % 2 else f"step-{step}"), (step, step))
        assert "uploaded" in run_script(UPLOAD_SCRIPT, env)
    assert sorted(p.name for p in work.iterdir() if not p.name.startswith(".")) == [
        "latest",
        "step-4",
        "step-5.pt",
    ]
    assert os.readlink(env["RESUME_FROM"]) == "step-5.pt"
    assert "uploaded" not in run_script(UPLOAD_SCRIPT, env)  # the newest is there already
    client_b = s3(
        store,
        *(credentials(api_client, B)[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")),
    )
    client_b.put_object(Bucket=f"tenant-{B}-checkpoints", Key="j/s1", Body=b"x")

    def keys(c: Any, name: str) -> list[str]:
        return sorted(o["Key"] for o in c.list_objects_v2(Bucket=name).get("Contents", []))

    assert len(keys(client_a, bucket)) == 7  # 3 files and 2 directories of 2
    planned = run_module("checkpoint_retention", {"tenant": A}, check=True)
    assert not planned.get("failed") and planned["changed"], planned
    assert len(keys(client_a, bucket)) == 7
    swept = run_module("checkpoint_retention", {"tenant": A})
    assert not swept.get("failed") and swept["changed"], swept
    assert keys(client_a, bucket) == ["llm/step-4/model.pt", "llm/step-4/optim.pt", "llm/step-5.pt"]
    assert keys(client_b, f"tenant-{B}-checkpoints") == ["j/s1"]  # not this run's tenant
    again = run_module("checkpoint_retention", {"tenant": A})
    assert not again.get("failed") and not again["changed"], again

    # A new claim (a pod restarted on a cloud node): the newest comes back from the bucket.
    shutil.rmtree(work)
    assert f"resumed from s3://{bucket}/llm/step-5.pt" in run_script(RESUME_SCRIPT, env)
    assert Path(env["RESUME_FROM"]).read_bytes() == b"w" * 5
    # Its newest is a directory: that comes back whole.
    client_a.delete_object(Bucket=bucket, Key="llm/step-5.pt")
    shutil.rmtree(work)
    run_script(RESUME_SCRIPT, env)
    assert sorted(p.name for p in Path(env["RESUME_FROM"]).iterdir()) == ["model.pt", "optim.pt"]


def test_removing_a_tenants_access_keeps_its_data(run_module, api_client, store, tenants):
    """State absent: the account and the credentials go, the store refuses the old key,
    and the buckets and their objects stay."""
    from kubernetes import client

    assert not run_module("tenant_object_store", {"tenant": B}).get("failed")
    creds = credentials(api_client, B)
    client_b = s3(store, creds["AWS_ACCESS_KEY_ID"], creds["AWS_SECRET_ACCESS_KEY"])
    client_b.put_object(Bucket=creds["BUCKET_MODELS"], Key="m/v1", Body=b"weights")
    gone = run_module("tenant_object_store", {"tenant": B, "state": "absent"})
    assert not gone.get("failed") and gone["changed"], gone
    assert "its buckets and their objects are kept" in gone["summary"][0]
    assert refused(lambda: client_b.list_objects_v2(Bucket=creds["BUCKET_MODELS"])) in (
        "InvalidAccessKeyId",
        "AccessDenied",
    )
    kept = root(store).list_objects_v2(Bucket=creds["BUCKET_MODELS"])["Contents"]
    assert [o["Key"] for o in kept] == ["m/v1"]
    names = [
        s.metadata.name
        for s in client.CoreV1Api(api_client).list_namespaced_secret(f"tenant-{B}").items
    ]
    assert "platform-object-store" not in names
