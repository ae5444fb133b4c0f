# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tenant modules against the local cluster, each run as Ansible runs a
task (``ansible localhost -m``, the ``run_module`` fixture)."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    remove_tenants,
    wait_until,
)

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
A, B = "ita", "itb"
TEAMS = [
    {"name": "algo", "deserved": {GPU: 8}, "capability": {GPU: 16}},
    {"name": "eng", "deserved": {GPU: 4}},
    {"name": "data", "deserved": {GPU: 4}, "guarantee": {GPU: 2}},
]


def tenant_args(name, gpus=32, teams=None, **extra):
    args = {
        "name": name,
        "subscription": {GPU: gpus, "cpu": 128, "memory": "512Gi"},
        "subscription_guarantee": {GPU: 2},
    }
    if teams is not None:
        args["teams"] = teams
    args.update(extra)
    return args


def custom(api_client):
    from kubernetes import client

    return client.CustomObjectsApi(api_client)


def queues_of(api_client, tenant):
    items = custom(api_client).list_cluster_custom_object(
        "scheduling.volcano.sh", "v1beta1", "queues", label_selector=f"platform.io/tenant={tenant}"
    )["items"]
    return {q["metadata"]["name"]: q for q in items}


def parent_queues(api_client):
    """The names in platform-system/platform-parent-queues key queues."""
    from kubernetes import client

    cm = client.CoreV1Api(api_client).read_namespaced_config_map(
        "platform-parent-queues", "platform-system"
    )
    return [n.strip() for n in ((cm.data or {}).get("queues") or "").split(",") if n.strip()]


def job_body(name, namespace, queue):
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "platform.io/billing-type": "subscription",
                "platform.io/job-class": "normal",
            },
        },
        "spec": {
            "schedulerName": "volcano",
            "queue": queue,
            "priorityClassName": "normal-job",
            "minAvailable": 1,
            "tasks": [
                {
                    "name": "main",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "busybox",
                                    "command": ["sleep", "3600"],
                                    "resources": {
                                        "requests": {"cpu": "1", GPU: 1},
                                        "limits": {"cpu": "1", GPU: 1},
                                    },
                                }
                            ],
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def tenants(run_module, api_client):
    """No tenant A or B before the tests of this file, and none after them."""
    remove_tenants(run_module, api_client, [A, B])
    yield
    remove_tenants(run_module, api_client, [A, B])


def test_create_tenant_with_three_teams(tenants, run_module, api_client):
    result = run_module("tenant", tenant_args(A, teams=TEAMS))
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] is True
    queues = queues_of(api_client, A)
    expected = {f"tenant-{A}-{s}" for s in ("subscription", "payg", "spot", "algo", "eng", "data")}
    assert set(queues) == expected
    # The webhook accepted every queue, and the queue controller opened them.
    wait_until(
        lambda: all(q["status"].get("state") == "Open" for q in queues_of(api_client, A).values()),
        what="queues Open",
    )
    sub = queues[f"tenant-{A}-subscription"]["spec"]
    assert sub["parent"] == "root"
    assert str(sub["deserved"][GPU]) == str(sub["capability"][GPU]) == "32"
    assert queues[f"tenant-{A}-algo"]["spec"]["parent"] == f"tenant-{A}-subscription"
    assert queues[f"tenant-{A}-data"]["spec"]["guarantee"]["resource"][GPU] in (2, "2")
    assert str(queues[f"tenant-{A}-spot"]["spec"]["capability"][GPU]) == "0"
    second = run_module("tenant", tenant_args(B, gpus=8))
    assert not second.get("failed"), second.get("msg")
    # A's subscription queue has teams, B's has none: only A's is a parent queue.
    parents = parent_queues(api_client)
    assert f"tenant-{A}-subscription" in parents
    assert f"tenant-{B}-subscription" not in parents


def test_second_run_reports_no_change(tenants, run_module):
    result = run_module("tenant", tenant_args(A, teams=TEAMS))
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] is False
    assert result["objects"] == []
    # one list per kind, and no write
    assert result["requests"] > 0 and "api_requests" not in result


def test_check_mode_reports_without_writing(tenants, run_module, api_client):
    result = run_module("tenant", tenant_args(A, gpus=40, teams=TEAMS), check=True, diff=True)
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] is True
    assert {"kind": "Queue", "name": f"tenant-{A}-subscription", "action": "update"} in result[
        "objects"
    ]
    # one diff per object, under its Kind/namespace/name (rule diff-per-object)
    # (rule diff-shows-change: one line when one value of an object changes)
    diffs = {d.get("before_header") or d["prepared"].split(":")[0]: d for d in result["diff"]}
    key = f"Queue/tenant-{A}-subscription"
    if "prepared" in diffs[key]:
        assert "32 → 40" in diffs[key]["prepared"], diffs[key]
    else:
        assert str(diffs[key]["before"]["spec"]["deserved"][GPU]) == "32"
        assert str(diffs[key]["after"]["spec"]["deserved"][GPU]) == "40"
    live = queues_of(api_client, A)[f"tenant-{A}-subscription"]
    assert str(live["spec"]["deserved"][GPU]) == "32"


def test_bad_input_fails_before_any_write(tenants, run_module, api_client):
    before = queues_of(api_client, A)
    # the pod network given: an egress CIDR inside it is refused with the input, before any read
    bad = tenant_args(
        A,
        teams=[{"name": "algo", "deserved": {GPU: 40}}],
        egress_cidrs=["10.244.1.0/24"],
        pod_cidr="10.244.0.0/16",
    )
    result = run_module("tenant", bad)
    assert result.get("failed")
    assert any(e.startswith(f"teams[0].deserved.{GPU}") for e in result["errors"])
    assert any(e.startswith("egress_cidrs[0]") for e in result["errors"])
    after = queues_of(api_client, A)
    assert {n: q["metadata"]["resourceVersion"] for n, q in before.items()} == {
        n: q["metadata"]["resourceVersion"] for n, q in after.items()
    }


def test_tenant_group_can_use_its_namespace_only(tenants, kubeconfig):
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    impersonated = config.new_client_from_config(config_file=str(kubeconfig))
    impersonated.set_default_header("Impersonate-User", "alice")
    impersonated.set_default_header("Impersonate-Group", f"tenant:{A}")
    api = client.CustomObjectsApi(impersonated)
    created = api.create_namespaced_custom_object(
        "batch.volcano.sh",
        "v1alpha1",
        f"tenant-{A}",
        "jobs",
        job_body("probe", f"tenant-{A}", f"tenant-{A}-algo"),
    )
    assert created["metadata"]["name"] == "probe"
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_custom_object(
            "batch.volcano.sh",
            "v1alpha1",
            f"tenant-{B}",
            "jobs",
            job_body("probe", f"tenant-{B}", f"tenant-{B}-subscription"),
        )
    assert exc.value.status == 403
    with pytest.raises(ApiException) as exc:
        api.list_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues")
    assert exc.value.status == 403


def test_team_queue_module_adds_and_removes(tenants, run_module, api_client):
    added = run_module("team_queue", {"tenant": A, "name": "extra", "deserved": {GPU: 4}})
    assert not added.get("failed"), added.get("msg")
    assert f"tenant-{A}-extra" in queues_of(api_client, A)
    removed = run_module("team_queue", {"tenant": A, "name": "extra", "state": "absent"})
    assert not removed.get("failed"), removed.get("msg")
    wait_until(lambda: f"tenant-{A}-extra" not in queues_of(api_client, A), what="team queue gone")


def test_tenant_info_reports_queues_and_jobs(tenants, run_module):
    info = run_module("tenant_info", {"name": A})
    assert not info.get("failed"), info.get("msg")
    [entry] = info["tenants"]
    assert entry["active_jobs"] >= 1
    queues = {q["name"]: q for q in entry["queues"]}
    assert queues[f"tenant-{A}-algo"]["active_jobs"] >= 1
    assert queues[f"tenant-{A}-subscription"]["deserved"][GPU] == 32
    assert entry["queues"][-1]["parent"] == f"tenant-{A}-subscription"


def test_delete_refused_while_jobs_run_then_forced(tenants, run_module, api_client):
    from kubernetes import client

    refused = run_module("tenant", {"name": A, "state": "absent"})
    assert refused.get("failed")
    assert "active Volcano Job" in refused["msg"]
    assert f"tenant-{A}-subscription" in queues_of(api_client, A)

    forced = run_module("tenant", {"name": A, "state": "absent", "force": True, "wait": True})
    assert not forced.get("failed"), forced.get("msg")
    assert forced["changed"] is True
    assert queues_of(api_client, A) == {}
    assert f"tenant-{A}-subscription" not in parent_queues(api_client)
    core = client.CoreV1Api(api_client)
    assert core.list_namespace(label_selector=f"platform.io/tenant={A}").items == []


def test_a_shrink_that_unsets_a_team_capability_and_drops_a_team_applies_whole(tenants, run_module):
    """Subscription 40 -> 30 while team c is dropped and team a's capability of 40 becomes
    unset: Volcano's queue webhook refuses a parent below a child's capability, so team a
    is lowered to 30 first (rule effective-capability) and the whole update lands."""
    first = dict(
        name=B,
        subscription={GPU: 40, "cpu": 160, "memory": "640Gi"},
        teams=[
            {"name": "a", "deserved": {GPU: 20}, "capability": {GPU: 40}},
            {"name": "b", "deserved": {GPU: 10}},
            {"name": "c", "deserved": {GPU: 10}},
        ],
        oversell_check=False,
    )
    made = run_module("tenant", first)
    assert not made.get("failed"), made.get("msg")
    second = dict(
        first,
        subscription={GPU: 30, "cpu": 120, "memory": "480Gi"},
        teams=[{"name": "a", "deserved": {GPU: 20}}, {"name": "b", "deserved": {GPU: 10}}],
    )
    updated = run_module("tenant", second)
    assert not updated.get("failed"), updated.get("msg")
    info = run_module("tenant_info", {"name": B})
    queues = {q["name"]: q for q in info["tenants"][0]["queues"]}
    assert f"tenant-{B}-c" not in queues
    assert queues[f"tenant-{B}-subscription"]["capability"][GPU] == 30
    assert GPU not in (queues[f"tenant-{B}-a"]["capability"] or {})  # unset again at the end
    again = run_module("tenant", second)
    assert again["changed"] is False


def test_deleting_a_tenant_that_does_not_exist_says_so(run_module):
    """A typo'd name is no failure (deleting is idempotent), but it does not pass silently."""
    out = run_module("tenant", {"name": "no-such-tenant-x1", "state": "absent"})
    assert not out.get("failed") and out["changed"] is False, out
    assert any("tenant 'no-such-tenant-x1' does not exist" in w for w in out.get("warnings", []))
