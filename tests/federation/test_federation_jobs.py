# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Jobs across the federation, on the real Karmada scheduler and controllers and two
members running the real Volcano (``conftest.federation``): ``vcjob`` with
``federation: true`` writes a Volcano Job and its PropagationPolicy into Karmada (rule
federation-placement), with the platform's ResourceInterpreterCustomization in place (rule
federation-job-replicas).

* a ``local-first`` gang fills the IDC member, whole, and the next one, which the IDC
  member has no room for, goes whole to the cloud member;
* a compliance job never leaves the IDC: with the IDC member full and the cloud member
  empty, Karmada holds it unscheduled, with its reason, and no member has it;
* a second run writes nothing; check mode writes nothing in Karmada or either member;
* ``absent`` takes the job out of its member.

The platform's PriorityClasses, scheduler conf and interpreter customization are put in
the federation by ``federation_platform`` (``conftest.federation_platform``, once per
suite run), the tenant by ``federation_tenant``. Each member has one node of 8 GPUs (kwok:
the pods run without containers).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.federation_placement import (
    MEMBER_NOT_READY_TAINT,
)
from ansible_collections.gpucloud.platform.tests.federation.federation_helpers import (
    dynamic,
    federated_job,
    member_gpus_allocated,
    queue_gpus,
    raw_job,
    restore_member,
    stop_member_api_server,
    tenant_args,
)
from ansible_collections.gpucloud.platform.tests.integration.conftest import ansible_environment
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    run_playbook,
    wait_until,
)

pytestmark = pytest.mark.federation

TENANT = "fedjobs"
NS = f"tenant-{TENANT}"
QUEUE = f"tenant-{TENANT}-payg"
GPU = "nvidia.com/gpu"
IDC, CLOUD = "fed-idc", "fed-cloud"
SAVE = ["/bin/sh", "-c", "python save.py"]
JOB_API = "batch.volcano.sh/v1alpha1"
POLICY_API = "policy.karmada.io/v1alpha1"


# 8 subscription GPUs (IDC) and a pay-as-you-go grant of 16, 8 of them in the cloud
TENANT_ARGS = tenant_args(TENANT)


@pytest.fixture(scope="module")
def fed(federation, federation_platform, run_on_federation) -> Iterator[dict[str, Any]]:
    karmada = dynamic(federation["karmada"])
    tenant = run_on_federation("federation_tenant", TENANT_ARGS)
    assert tenant.get("failed") is not True, tenant
    members = {name: dynamic(api) for name, api in federation["members"].items()}
    # the tenant's pay-as-you-go queue in both members, with its part of the grant
    for name, gpus in ((IDC, "8"), (CLOUD, "8")):
        wait_until(
            lambda m=members[name], g=gpus: queue_gpus(m, QUEUE) == g,
            90,
            1,
            f"{QUEUE} with {gpus} GPUs in {name}",
        )
    yield {"karmada": karmada, "members": members, "kubeconfig": federation["kubeconfig"]}
    # the platform's objects stay: they are the whole suite's (conftest.federation_platform)
    gone = run_on_federation("federation_tenant", {"name": TENANT, "state": "absent"})
    assert gone.get("failed") is not True, gone


def _job(name: str, **options: Any) -> dict[str, Any]:
    return federated_job(TENANT, name, **options)


def _pods_in(member, job: str) -> list[dict[str, Any]]:
    pods = member.resources.get(api_version="v1", kind="Pod")
    items = pods.get(namespace=NS, label_selector=f"volcano.sh/job-name={job}").items
    return [p.to_dict() for p in items]


def _running_in(fed, job: str) -> dict[str, int]:
    """How many of the job's pods run in each member."""
    return {
        name: sum(1 for p in _pods_in(m, job) if (p.get("status") or {}).get("phase") == "Running")
        for name, m in fed["members"].items()
    }


def _binding(fed, job: str) -> dict[str, Any] | None:
    bindings = fed["karmada"].resources.get(
        api_version="work.karmada.io/v1alpha2", kind="ResourceBinding"
    )
    try:
        return bindings.get(name=f"{job}-job", namespace=NS).to_dict()
    except Exception:
        return None


def test_check_mode_writes_nothing_anywhere(fed, run_on_federation):
    result = run_on_federation(
        "vcjob",
        _job("dry", placement="local-first", checkpoint_command=SAVE),
        check=True,
        diff=True,
    )
    assert result.get("failed") is not True, result
    assert result["changed"] is True
    assert result["federation"]["policy"] == f"{NS}/dry"
    assert result["federation"]["policy_written"] is True
    # the diff: the Job and its policy, both new; the summary: where Karmada may run it
    assert [(d["before_header"], d["before"]) for d in result["diff"]] == [
        (f"Job/{NS}/dry", {}),
        (f"PropagationPolicy/{NS}/dry", {}),
    ]
    assert result["summary"][-1] == (
        f"federation: PropagationPolicy {NS}/dry would be written; "
        "Karmada runs the whole job in one member: idc, else cloud; "
        "held in its member if that member is lost"
    )
    karmada = fed["karmada"]
    for api, kind in ((JOB_API, "Job"), (POLICY_API, "PropagationPolicy")):
        names = [
            o["metadata"]["name"]
            for o in karmada.resources.get(api_version=api, kind=kind).get(namespace=NS).items
        ]
        assert "dry" not in names, (kind, names)
    for member in fed["members"].values():
        jobs = member.resources.get(api_version=JOB_API, kind="Job").get(namespace=NS).items
        assert jobs == []


def test_local_first_fills_the_idc_whole_then_spills_whole_to_the_cloud(fed, run_on_federation):
    first = run_on_federation(
        "vcjob", _job("first", placement="local-first", checkpoint_command=SAVE)
    )
    assert first.get("failed") is not True, first
    assert first["federation"]["policy_written"] is True
    wait_until(
        lambda: _running_in(fed, "first") == {IDC: 2, CLOUD: 0},
        120,
        1,
        "both pods of first in the IDC",
    )
    # Karmada sees the IDC member full before the next job is placed (member status every 10 s)
    wait_until(
        lambda: member_gpus_allocated(fed["karmada"], IDC) == "8",
        60,
        1,
        "the IDC member's 8 GPUs allocated",
    )

    second = run_on_federation(
        "vcjob", _job("second", placement="local-first", checkpoint_command=SAVE)
    )
    assert second.get("failed") is not True, second
    wait_until(
        lambda: _running_in(fed, "second") == {IDC: 0, CLOUD: 2},
        120,
        1,
        "both pods of second in the cloud",
    )
    assert [c["name"] for c in _binding(fed, "second")["spec"]["clusters"]] == [CLOUD]
    assert [c["name"] for c in _binding(fed, "first")["spec"]["clusters"]] == [IDC]
    # each job in one member only: the other has no copy of it
    for job, away in (("first", CLOUD), ("second", IDC)):
        names = [
            j["metadata"]["name"]
            for j in fed["members"][away]
            .resources.get(api_version=JOB_API, kind="Job")
            .get(namespace=NS)
            .items
        ]
        assert job not in names, (job, away)

    again = run_on_federation(
        "vcjob", _job("first", placement="local-first", checkpoint_command=SAVE)
    )
    assert again.get("failed") is not True, again
    assert again["changed"] is False
    assert again["federation"]["policy_written"] is False
    # it says where Karmada placed it (its binding, one GET)
    assert again["federation"]["member"] == IDC
    assert again["summary"][-1].endswith(f"; placed in {IDC}")


def test_a_compliance_job_never_leaves_the_idc(fed, run_on_federation):
    """The IDC member is full (the first job) and the cloud member has room once the
    second job is gone: the compliance job is still held, and no member has it."""
    gone = run_on_federation(
        "vcjob", {"tenant": TENANT, "name": "second", "state": "absent", "federation": True}
    )
    assert gone.get("failed") is not True, gone
    wait_until(
        lambda: _running_in(fed, "second") == {IDC: 0, CLOUD: 0},
        120,
        1,
        "second gone from the cloud",
    )
    wait_until(
        lambda: member_gpus_allocated(fed["karmada"], CLOUD) in (None, "0"),
        60,
        1,
        "the cloud member's GPUs free",
    )

    held = run_on_federation("vcjob", _job("kept-home", compliance=True))
    assert held.get("failed") is not True, held
    wait_until(
        lambda: (
            (b := _binding(fed, "kept-home")) and (b.get("status") or {}).get("conditions") and b
        ),
        60,
        1,
        "the compliance job's binding judged",
    )
    time.sleep(12)  # a member status round: Karmada would have placed it by now
    binding = _binding(fed, "kept-home")
    assert not binding["spec"].get("clusters"), binding["spec"].get("clusters")
    scheduled = next(c for c in binding["status"]["conditions"] if c["type"] == "Scheduled")
    assert scheduled["status"] == "False" and "no enough resource" in scheduled["message"]
    for name, member in fed["members"].items():
        names = [
            j["metadata"]["name"]
            for j in member.resources.get(api_version=JOB_API, kind="Job").get(namespace=NS).items
        ]
        assert "kept-home" not in names, name


def test_a_job_naming_another_tenants_queue_is_refused_at_the_federations_admission(fed):
    """Rule federation-admission: written straight to Karmada (as ``kubectl`` would, past
    vcjob's own check), a Job in this tenant's namespace naming a queue that is not its
    own is refused by Karmada's API server, with the message a member gives; Karmada
    holds no template of it, so no member ever gets it."""
    from kubernetes.client.rest import ApiException

    manifest = raw_job(NS, "elsewhere", "tenant-other-payg")
    jobs = fed["karmada"].resources.get(api_version=JOB_API, kind="Job")
    with pytest.raises(ApiException) as refused:
        jobs.create(body=manifest, namespace=NS)
    assert refused.value.status == 403
    said = json.loads(refused.value.body)["message"]
    assert "gpucloud-queue-tenant" in said, said
    assert f"tenant-other-payg is not a queue of tenant {TENANT}" in said, said
    assert "elsewhere" not in [
        j["metadata"]["name"] for j in jobs.get(namespace=NS).to_dict()["items"]
    ]


def _on(fed, job: str) -> list[str]:
    """The members the job's binding names."""
    binding = _binding(fed, job) or {}
    return [c["name"] for c in (binding.get("spec") or {}).get("clusters") or []]


def _jobs_in(fed, member: str) -> list[str]:
    jobs = fed["members"][member].resources.get(api_version=JOB_API, kind="Job")
    return sorted(j["metadata"]["name"] for j in jobs.get(namespace=NS).items)


def _lost(fed, member: str) -> bool:
    clusters = fed["karmada"].resources.get(
        api_version="cluster.karmada.io/v1alpha1", kind="Cluster"
    )
    taints = (clusters.get(name=member).to_dict().get("spec") or {}).get("taints") or []
    return any(t["key"] == MEMBER_NOT_READY_TAINT and t["effect"] == "NoExecute" for t in taints)


def test_a_lost_cloud_member_moves_cloud_ok_work_once_and_holds_the_rest(fed, run_on_federation):
    """Rules federation-member-failover and federation-failover-once, with the cloud
    member's API server stopped: a ``cloud-ok`` job there is moved to the IDC member, and
    its new copy starts only once Karmada has deleted the old one, when the member
    answers again (never two copies); a ``local-first`` job there is held, in the cloud
    member, through the loss and after it, and so are the tenant's queue and the
    platform's ``cloud-burst`` (every tenant and platform policy tolerates the taint)."""
    for job in ("kept-home", "first"):
        gone = run_on_federation(
            "vcjob", {"tenant": TENANT, "name": job, "state": "absent", "federation": True}
        )
        assert gone.get("failed") is not True, gone
    wait_until(
        lambda: member_gpus_allocated(fed["karmada"], IDC) in (None, "0"),
        90,
        1,
        "the IDC member's GPUs free",
    )
    # the IDC member is filled by a job of its own, so that both jobs below go to the cloud
    filler = run_on_federation("vcjob", _job("filler", placement="local-only"))
    assert filler.get("failed") is not True, filler
    wait_until(lambda: _running_in(fed, "filler")[IDC] == 2, 120, 1, "filler in the IDC")
    wait_until(
        lambda: member_gpus_allocated(fed["karmada"], IDC) == "8",
        60,
        1,
        "the IDC member's GPUs allocated",
    )
    one_pod = {"replicas": 1, "gpus_per_pod": 4, "checkpoint_command": SAVE}
    for name, placement in (("spill", "local-first"), ("roam", "cloud-ok")):
        done = run_on_federation("vcjob", _job(name, placement=placement, **one_pod))
        assert done.get("failed") is not True, done
        wait_until(lambda n=name: _running_in(fed, n)[CLOUD] == 1, 120, 1, f"{name} in the cloud")
    # room in the IDC member for the job that may move
    gone = run_on_federation(
        "vcjob", {"tenant": TENANT, "name": "filler", "state": "absent", "federation": True}
    )
    assert gone.get("failed") is not True, gone
    wait_until(
        lambda: member_gpus_allocated(fed["karmada"], IDC) in (None, "0"),
        90,
        1,
        "the IDC member's GPUs free",
    )

    # the reconcile records where each job is (rule federation-moves-counted)
    placed = run_on_federation("federation_job_moves", {"namespaces": [NS]})
    assert placed.get("failed") is not True, placed
    assert {(r["job"], r["placed_in"]) for r in placed["jobs"]} >= {
        (f"{NS}/roam", CLOUD),
        (f"{NS}/spill", CLOUD),
    }
    assert _record(fed, "roam") == {"platform.io/placed-in": CLOUD}

    stop_member_api_server(CLOUD)
    try:
        wait_until(lambda: _lost(fed, CLOUD), 120, 1, "the cloud member tainted as lost")
        wait_until(lambda: _on(fed, "roam") == [IDC], 60, 1, "roam placed in the IDC")
        # held: the local-first job keeps its member
        assert _on(fed, "spill") == [CLOUD]
        # while the cloud member does not answer, its copy of roam cannot be deleted, and
        # Karmada does not start the new one (purge mode Directly)
        time.sleep(15)
        assert "roam" not in _jobs_in(fed, IDC)
        _moved_once_is_held(fed, run_on_federation)
    finally:
        restore_member(CLOUD)
    wait_until(lambda: not _lost(fed, CLOUD), 120, 1, "the cloud member back")
    wait_until(lambda: _running_in(fed, "roam") == {IDC: 1, CLOUD: 0}, 120, 1, "roam in the IDC")
    assert "roam" not in _jobs_in(fed, CLOUD)
    assert _on(fed, "spill") == [CLOUD] and _running_in(fed, "spill")[CLOUD] == 1
    # the tenant's queue and the platform's cloud-burst were held in the member too: by
    # now Karmada would have deleted them there had it evicted them (as it did roam's copy)
    cloud = fed["members"][CLOUD]
    assert queue_gpus(cloud, QUEUE) == "8"
    queues = cloud.resources.get(api_version="scheduling.volcano.sh/v1beta1", kind="Queue")
    assert queues.get(name="cloud-burst").metadata.name == "cloud-burst"
    # the move is over: the reconcile, as the playbook runs it, has nothing left to write,
    # and vcjob run again for the moved job keeps it held
    rc, tasks = run_playbook(
        ansible_environment(fed["kubeconfig"]),
        "federation_reconcile.yml",
        {"federation_reconcile_namespaces": [NS]},
    )
    assert rc == 0, {n: r.get("msg") for n, r in tasks.items() if r.get("failed")}
    summary = tasks["Say what the run did"]["msg"]
    assert summary == [
        "federated jobs: 2 jobs read, 0 jobs moved since the last run; job policies unchanged"
    ], summary
    again = run_on_federation("vcjob", _job("roam", placement="cloud-ok", **one_pod))
    assert again.get("failed") is not True, again
    assert again["changed"] is False
    assert again["federation"]["member"] == IDC
    assert again["federation"]["moved_from"] == [CLOUD]
    assert again["summary"][-1].endswith(
        f"held in its member if that member is lost; placed in {IDC} (moved from {CLOUD})"
    )
    assert "failover" not in _policy(fed, "roam")["spec"]


def _policy(fed, job: str) -> dict[str, Any]:
    policies = fed["karmada"].resources.get(api_version=POLICY_API, kind="PropagationPolicy")
    return policies.get(name=job, namespace=NS).to_dict()


def _record(fed, job: str) -> dict[str, str]:
    """The job's moves as its policy records them (rule federation-moves-counted)."""
    notes = _policy(fed, job)["metadata"].get("annotations") or {}
    return {k: v for k, v in notes.items() if k.startswith("platform.io/")}


def _moved_once_is_held(fed, run_on_federation) -> None:
    """Module federation_job_moves while the cloud member is lost and roam's move is under
    way: check mode writes nothing and says so; the run records the move and takes roam's
    failover off (rule federation-failover-once), and leaves the held job as it was."""
    binding = _binding(fed, "roam") or {}
    tasks = (binding.get("spec") or {}).get("gracefulEvictionTasks") or []
    assert [t["fromCluster"] for t in tasks] == [CLOUD], binding.get("spec")
    checked = run_on_federation("federation_job_moves", {"namespaces": [NS]}, check=True)
    assert checked.get("failed") is not True, checked
    assert checked["summary"][1] == f"{NS}/roam: moved from {CLOUD} to {IDC} (1 move)"
    assert "failover" in _policy(fed, "roam")["spec"]
    done = run_on_federation("federation_job_moves", {"namespaces": [NS]}, diff=True)
    assert done.get("failed") is not True, done
    assert done["jobs"] == [
        {"job": f"{NS}/roam", "placed_in": IDC, "moved_from": [CLOUD], "moves": 1, "held": True}
    ]
    assert _record(fed, "roam") == {
        "platform.io/placed-in": IDC,
        "platform.io/moved-from": CLOUD,
    }
    spec = _policy(fed, "roam")["spec"]
    assert "failover" not in spec
    assert [t["key"] for t in spec["placement"]["clusterTolerations"]] == [MEMBER_NOT_READY_TAINT]
    assert _record(fed, "spill") == {"platform.io/placed-in": CLOUD}
