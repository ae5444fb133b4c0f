# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vcjob and large_job_throttle against an in-memory cluster."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpucloud.platform.plugins.modules import (
    large_job_throttle as throttle_module,
)
from ansible_collections.gpucloud.platform.plugins.modules import vcjob as vcjob_module

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_cluster import FakeCluster


class JobCluster(FakeCluster):
    """FakeCluster plus create; new Jobs get a uid and the given phase."""

    def __init__(self, objects, phase="Pending"):
        super().__init__(objects)
        self.phase = phase

    def create(self, manifest):
        self.requests += 1
        obj = copy.deepcopy(dict(manifest))
        obj["metadata"]["uid"] = f"uid-{obj['metadata']['name']}"
        obj["status"] = {"state": {"phase": self.phase}}
        self.writes.append(("create", obj["kind"], obj["metadata"]["name"]))
        self.put(obj)
        return copy.deepcopy(obj)


def queue(name, qtype, parent="root", tenant="alpha"):
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": name,
            "labels": {"platform.io/tenant": tenant, "platform.io/queue-type": qtype},
        },
        "spec": {"parent": parent},
    }


def cluster(phase="Pending", extra=()):
    return JobCluster(
        [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "tenant-alpha", "labels": {"platform.io/tenant": "alpha"}},
            },
            queue("tenant-alpha-subscription", "subscription"),
            queue("tenant-alpha-algo", "team", parent="tenant-alpha-subscription"),
            queue("tenant-alpha-payg", "payg"),
            queue("tenant-alpha-spot", "spot"),
            *extra,
        ],
        phase,
    )


def large_pg(phase="Pending", running=0):
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "big-pg",
            "namespace": "tenant-alpha",
            "uid": "pg-big",
            "ownerReferences": [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": "big",
                    "uid": "uid-big",
                }
            ],
        },
        "spec": {
            "minMember": 4,
            "queue": "tenant-alpha-algo",
            "priorityClassName": "large-job",
            "minResources": {"nvidia.com/gpu": "32"},
        },
        "status": {
            "phase": phase,
            "running": running,
            "conditions": [
                {
                    "type": "Unschedulable",
                    "status": "True",
                    "reason": "NotEnoughResources",
                    "message": "0/8 nodes are available",
                }
            ],
        },
    }


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    clock = {"t": 0.0}
    monkeypatch.setattr(
        vcjob_module.time, "sleep", lambda s: clock.__setitem__("t", clock["t"] + s)
    )
    monkeypatch.setattr(vcjob_module.time, "monotonic", lambda: clock["t"])
    return clock


def run(module, fake, monkeypatch, capsys, **args):
    monkeypatch.setattr(module.Cluster, "from_module", classmethod(lambda cls, m: fake))
    args.setdefault("_ansible_diff", True)
    fake.requests = 0
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


SINGLE = {
    "tenant": "alpha",
    "name": "eval",
    "queue": "tenant-alpha-algo",
    "kind": "single",
    "image": "i",
    "command": ["python", "e.py"],
    "gpus_per_pod": 1,
}


def test_creates_then_is_idempotent(monkeypatch, capsys):
    fake = cluster(phase="Running")
    out = run(vcjob_module, fake, monkeypatch, capsys, **SINGLE)
    assert out["changed"] is True and out["queue"] == {"name": "tenant-alpha-algo", "type": "team"}
    assert fake.writes == [("create", "Job", "eval")]
    live = fake.store[("Job", "tenant-alpha", "eval")]
    assert live["metadata"]["labels"]["platform.io/billing-type"] == "subscription"
    assert (
        out["diff"]["before"] == {} and out["diff"]["after"]["spec"]["queue"] == "tenant-alpha-algo"
    )
    again = run(vcjob_module, fake, monkeypatch, capsys, **SINGLE)
    assert again["changed"] is False and len(fake.writes) == 1


def test_existing_job_that_differs_is_refused(monkeypatch, capsys):
    fake = cluster()
    run(vcjob_module, fake, monkeypatch, capsys, **SINGLE)
    out = run(vcjob_module, fake, monkeypatch, capsys, **{**SINGLE, "gpus_per_pod": 2})
    assert out["failed"] and "exists and differs in spec.tasks" in out["msg"]
    assert len(fake.writes) == 1


def test_bad_input_fails_before_any_request(monkeypatch, capsys):
    fake = cluster()
    out = run(
        vcjob_module, fake, monkeypatch, capsys, **{**SINGLE, "replicas": 0, "gpus_per_pod": 9}
    )
    assert out["failed"] and out["requests"] == 0 and fake.requests == 0
    assert "replicas: 0 must be >= 1" in out["msg"] and "gpus_per_pod: 9" in out["msg"]


def test_queue_must_be_a_leaf_of_the_tenant_and_fit_the_class(monkeypatch, capsys):
    fake = cluster()
    parent = run(
        vcjob_module, fake, monkeypatch, capsys, **{**SINGLE, "queue": "tenant-alpha-subscription"}
    )
    assert parent["failed"] and "has team sub-queues (tenant-alpha-algo)" in parent["msg"]
    missing = run(
        vcjob_module, fake, monkeypatch, capsys, **{**SINGLE, "queue": "tenant-alpha-other"}
    )
    assert missing["failed"] and "not a queue of this tenant" in missing["msg"]
    spot = run(vcjob_module, fake, monkeypatch, capsys, **{**SINGLE, "queue": "tenant-alpha-spot"})
    assert (
        spot["failed"]
        and "class normal runs only in subscription or team or payg queues" in spot["msg"]
    )
    debug = run(
        vcjob_module,
        fake,
        monkeypatch,
        capsys,
        **{**SINGLE, "queue": "tenant-alpha-payg", "job_class": "debug"},
    )
    assert debug["failed"] and "is a payg queue" in debug["msg"]
    assert not fake.real_writes


def throttle_cm(queues="tenant-alpha-algo"):
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "platform-throttle",
            "namespace": "tenant-alpha",
            "labels": {"platform.io/managed-by": "gpucloud-platform"},
        },
        "data": {
            "queues": queues,
            "until": "2999-01-01T00:00:00Z",
            "reason": "large job tenant-alpha/big (32 GPUs) is waiting",
            "entries.json": json.dumps(
                [
                    {
                        "uid": "uid-big",
                        "queue": "tenant-alpha-algo",
                        "job": "big",
                        "gpus": 32,
                        "engaged_at": "2998-12-31T23:55:00Z",
                        "until": "2999-01-01T00:00:00Z",
                        "state": "engaged",
                    }
                ]
            ),
        },
    }


def test_throttled_queue_refuses_without_hold(monkeypatch, capsys):
    fake = cluster(extra=[throttle_cm(), large_pg()])
    out = run(vcjob_module, fake, monkeypatch, capsys, **SINGLE)
    assert (
        out["failed"] and "accepts no jobs below large-job until 2999-01-01T00:00:00Z" in out["msg"]
    )
    other = run(vcjob_module, fake, monkeypatch, capsys, **{**SINGLE, "queue": "tenant-alpha-payg"})
    assert other["changed"] is True


def test_hold_waits_until_the_large_job_runs(monkeypatch, capsys, no_sleep):
    fake = cluster(phase="Running", extra=[throttle_cm(), large_pg()])
    calls = {"n": 0}
    original = fake.list

    def list_and_start(api_version, kind, **kw):
        if kind == "PodGroup":
            calls["n"] += 1
            if calls["n"] == 3:
                fake.put(large_pg("Running", 4))
        return original(api_version, kind, **kw)

    fake.list = list_and_start
    out = run(
        vcjob_module, fake, monkeypatch, capsys, **SINGLE, hold_when_throttled=True, poll_interval=5
    )
    assert out["changed"] is True and out["held_seconds"] == 10
    assert ("ConfigMap", "tenant-alpha", "platform-throttle") not in fake.store
    assert ("delete", "ConfigMap", "platform-throttle") in fake.writes
    assert fake.writes[-1] == ("create", "Job", "eval")


def test_hold_gives_up_after_hold_timeout(monkeypatch, capsys):
    fake = cluster(extra=[throttle_cm(), large_pg()])
    out = run(
        vcjob_module, fake, monkeypatch, capsys, **SINGLE, hold_when_throttled=True, hold_timeout=30
    )
    assert out["failed"] and "still throttled after 30 s" in out["msg"]
    assert ("create", "Job", "eval") not in fake.writes


def test_large_job_that_does_not_start_engages_the_throttle(monkeypatch, capsys):
    fake = cluster(phase="Pending")
    out = run(
        vcjob_module,
        fake,
        monkeypatch,
        capsys,
        tenant="alpha",
        name="big",
        queue="tenant-alpha-algo",
        kind="pytorch_ddp",
        job_class="large",
        image="i",
        command=["train.py"],
        replicas=4,
        gpus_per_pod=8,
    )
    assert out["changed"] and out["throttle_engaged"] is True
    cm = fake.store[("ConfigMap", "tenant-alpha", "platform-throttle")]
    assert cm["data"]["queues"] == "tenant-alpha-algo"
    assert json.loads(cm["data"]["entries.json"])[0]["uid"] == "uid-big"


def test_wait_timeout_reports_the_podgroup_conditions(monkeypatch, capsys):
    fake = cluster(
        phase="Pending",
        extra=[
            dict(
                large_pg(),
                metadata={
                    **large_pg()["metadata"],
                    "ownerReferences": [
                        {
                            "apiVersion": "batch.volcano.sh/v1alpha1",
                            "kind": "Job",
                            "name": "eval",
                            "uid": "uid-eval",
                        }
                    ],
                },
            )
        ],
    )
    out = run(vcjob_module, fake, monkeypatch, capsys, **SINGLE, wait=True, wait_timeout=20)
    assert out["failed"] and "is Pending, not Running, after 20 s" in out["msg"]
    assert "Unschedulable=True: NotEnoughResources 0/8 nodes are available" in out["msg"]
    assert out["podgroup"]["name"] == "big-pg"


def test_absent_deletes_once(monkeypatch, capsys):
    fake = cluster(phase="Running")
    run(vcjob_module, fake, monkeypatch, capsys, **SINGLE)
    gone = run(vcjob_module, fake, monkeypatch, capsys, tenant="alpha", name="eval", state="absent")
    assert gone["changed"] is True and ("delete", "Job", "eval") in fake.writes
    again = run(
        vcjob_module, fake, monkeypatch, capsys, tenant="alpha", name="eval", state="absent"
    )
    assert again["changed"] is False


def test_reconcile_engages_releases_and_is_idempotent(monkeypatch, capsys):
    fake = cluster(extra=[large_pg()])
    first = run(throttle_module, fake, monkeypatch, capsys)
    assert first["changed"] and first["engaged"] == ["tenant-alpha/big"]
    assert first["throttles"]["tenant-alpha"]["queues"] == ["tenant-alpha-algo"]
    assert first["requests"] == 4  # namespaces, podgroups, configmaps, one apply
    assert first["diff"] == {
        "before": {"tenant-alpha": []},
        "after": {"tenant-alpha": ["tenant-alpha-algo"]},
    }
    second = run(throttle_module, fake, monkeypatch, capsys)
    assert second["changed"] is False and second["requests"] == 3
    fake.put(large_pg("Running", 4))
    third = run(throttle_module, fake, monkeypatch, capsys)
    assert third["released"] == ["tenant-alpha/big"] and third["throttles"] == {}
    assert ("ConfigMap", "tenant-alpha", "platform-throttle") not in fake.store


def test_reconcile_leaves_an_unmanaged_configmap_alone(monkeypatch, capsys):
    cm = throttle_cm()
    cm["metadata"]["labels"] = {}
    fake = cluster(extra=[large_pg(), cm])
    out = run(throttle_module, fake, monkeypatch, capsys)
    assert out["skipped"] == ["tenant-alpha"] and out["changed"] is False and not fake.real_writes
