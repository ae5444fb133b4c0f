# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check mode writes nothing: every module and every playbook, on the local cluster.

Each run is given input that would write (a new tenant, a team to add, a job to
delete, a HyperNode to prune, a reclaim with a shortfall, ...). Before and after,
every object of the kinds the collection writes is read; no object may appear,
vanish or change what it says (its spec, data, rules, labels). A new module or
playbook is covered by adding it to ``MODULES`` or ``PLAYBOOKS``: a test checks
that both lists name everything in ``plugins/modules`` and ``playbooks``.

Every run is also in diff mode (rule diff-shows-change): no diff shows a field the
server owns, a task that changes nothing shows nothing, and site.yml on a cluster it
brought up shows no diff at all, then exactly the one admission policy changed by hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    ROOT,
    apply_object_store_connection,
    remove_tenants,
    state_dir,
)
from ansible_collections.gpucloud.platform.tests.integration.test_playbook_summaries import (
    check_summary,
)

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
TENANT = f"ck{uuid.uuid4().hex[:5]}"
NS = f"tenant-{TENANT}"
NEW_TENANT = f"cn{uuid.uuid4().hex[:5]}"
STALE_HYPERNODE = f"ck-stale-{uuid.uuid4().hex[:5]}"

# (api_version, kind): what the collection writes, and so what check mode must leave alone.
WATCHED = [
    ("v1", "Node"),
    ("v1", "Namespace"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "ServiceAccount"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "PersistentVolume"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("scheduling.volcano.sh/v1beta1", "Queue"),
    ("batch.volcano.sh/v1alpha1", "Job"),
    ("topology.volcano.sh/v1alpha1", "HyperNode"),
    ("coordination.k8s.io/v1", "Lease"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"),
    ("serving.kserve.io/v1beta1", "InferenceService"),
    ("serving.kserve.io/v1alpha1", "InferenceGraph"),
]
# Written by the cluster's own components while the test runs, not by the collection.
IGNORED_NAMESPACES = {"kube-node-lease", "kube-system", "volcano-system"}


def tenant_args(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "subscription": {GPU: 2, "cpu": 8, "memory": "16Gi"},
        "teams": [{"name": "algo", "deserved": {GPU: 2}}],
        "oversell_check": False,
        **extra,
    }


def catalog_entry(name: str, **extra: Any) -> dict[str, Any]:
    """A tenant_catalog entry: the tenant's own options, without the run's (oversell_check)."""
    entry = tenant_args(name, **extra)
    del entry["oversell_check"]
    return entry


# A catalog that creates one tenant and resizes the other.
CATALOG = [
    catalog_entry(NEW_TENANT),
    catalog_entry(TENANT, subscription={GPU: 3, "cpu": 12, "memory": "24Gi"}),
]


def job_args(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "tenant": TENANT,
        "name": name,
        "queue": f"{NS}-algo",
        "kind": "single",
        "image": "busybox",
        "command": ["sleep", "600"],
        "gpus_per_pod": 1,
        "cpu": "1",
        "memory": "1Gi",
        **extra,
    }


def recorded_prometheus() -> str:
    """The local cluster's Prometheus, without failing at collection when it is not up."""
    path = state_dir() / "prometheus-url"
    if path.exists():
        return path.read_text().strip()
    # not up yet (the session's fixture starts it after collection): where it will listen
    return (
        f"http://127.0.0.1:{29090 + int(os.environ.get('GPUCLOUD_LOCALCLUSTER_PORT_OFFSET', '0'))}"
    )


USAGE = {
    "prometheus_url": recorded_prometheus(),
    "start": "2026-01-01T00:00:00Z",
    "end": "2026-01-01T01:00:00Z",
    "prices": {
        "subscription": {"gpu_hour": 2, "overage_gpu_hour": 3},
        "payg": {"gpu_hour": 3},
        "spot": {},
        "cloud": {"gpu_hour": 5},
    },
}

# Two model services of the tenant, the second with a canary (made by ``world``).
MODEL = {"version": "v1", "format": "sklearn", "storage_uri": "s3://models/ck/v1", "gpus": 0}


def model_args(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "tenant": TENANT, "queue": f"{NS}-algo", "model": MODEL, **extra}


CANARY = [{"version": "v2", "storage_uri": "s3://models/ck/v2", "traffic_percent": 20}]


# Every IDC node of the local cluster in one group (the cluster has no cloud node).
NODE_GROUPS = [{"name": "ck-idc", "location": "idc", "selector": {"type": "kwok"}}]

# module -> the check-mode runs that would write
MODULES: dict[str, list[dict[str, Any]]] = {
    "tenant": [
        tenant_args(NEW_TENANT),
        tenant_args(TENANT, subscription={GPU: 3, "cpu": 12, "memory": "24Gi"}),
        {"name": TENANT, "state": "absent", "force": True},
    ],
    "team_queue": [
        {"tenant": TENANT, "name": "extra", "deserved": {GPU: 0}},
        {"tenant": TENANT, "name": "algo", "state": "absent", "force": True},
    ],
    "tenant_info": [{}],
    # the store itself is not written in check mode either: test_object_store.py reads it
    "tenant_object_store": [{"tenant": TENANT}],
    "checkpoint_retention": [{"keep": 1}],
    "dataset": [{"tenant": TENANT, "name": "ck-data", "version": "v1", "size": "1Gi"}],
    "tenant_catalog": [
        {"tenants": CATALOG, "oversell_check": False},
        # Prune every other managed tenant, running work or not: a dry run of each removal.
        {"tenants": [catalog_entry(TENANT)], "prune": True, "force": True, "oversell_check": False},
    ],
    "payg_capacity": [{"tenant": TENANT, "capability": {GPU: 1}, "reclaim": False}],
    "spot_capacity": [{}],
    "spot_reclaim": [{"need": 100000, "allow_partial": True}],
    "spot_info": [{}, {"tenant": TENANT, "reclaim_gpus": 8}],
    "usage_report": [USAGE],
    "vcjob": [job_args("ck-new"), {"tenant": TENANT, "name": "ck-held", "state": "absent"}],
    "large_job_throttle": [{}],
    "gpu_health": [{}],
    "queue_arbiter": [{}],
    "topology": [{"prune": True}],
    "topology_info": [{}],
    # Runs on a GPU host (here this machine): it only looks, in check mode as always.
    "gpu_node_probe": [{"host": "ck-host", "driver_min_version": "550.54.15"}],
    # In check mode topology_render compares its files and writes none (not even the directory).
    "topology_render": [{"dest": f"/tmp/gpucloud-check-render-{uuid.uuid4().hex[:6]}"}],
    "node_groups": [{"groups": NODE_GROUPS}],
    # The tenant has no burst leaf: nothing to remove (making one needs cloud-burst).
    "burst_quota": [{"tenant": TENANT, "state": "absent"}],
    "inference_service": [
        model_args("ck-model", canaries=CANARY),
        {"name": "ck-model2", "tenant": TENANT, "action": "promote"},
        {"name": "ck-model", "tenant": TENANT, "state": "absent"},
    ],
    "inference_service_info": [{}],
    "inference_graph": [
        {
            "name": "ck-ab",
            "tenant": TENANT,
            "routes": [
                {"service": "ck-model", "weight": 50},
                {"service": "ck-model2", "weight": 50},
            ],
        }
    ],
    # kubernetes.core.k8s's writes (the roles' objects): an apply, a patch, a deletion.
    "k8s_objects": [
        {
            "apply": True,
            "server_side_apply": {"field_manager": "gpucloud-platform-test"},
            "definition": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "ck-objects", "namespace": NS},
                    "data": {"a": "1"},
                },
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": NS, "labels": {"ck-objects": "x"}},
                },
            ],
        },
        {
            "state": "patched",
            "merge_type": ["merge"],
            "definition": {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "gpu-node-0", "labels": {"ck-objects": "x"}},
            },
        },
        {
            "state": "absent",
            "definition": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        },
    ],
    "hypernode": [
        {
            "name": f"ck-new-{uuid.uuid4().hex[:5]}",
            "tier": 1,
            "members": [{"type": "Node", "selector": {"exactMatch": {"name": "gpu-node-0"}}}],
        },
        {"name": STALE_HYPERNODE, "state": "absent"},
    ],
}

PLAYBOOKS: dict[str, dict[str, Any] | None] = {
    "site.yml": {},
    "tenant_create.yml": {
        "tenant_name": NEW_TENANT,
        "tenant_gpus": 2,
        "tenant_cpu": "8",
        "tenant_memory": "16Gi",
        "tenant_oversell_check": False,
    },
    "tenant_update.yml": {
        "tenant_name": TENANT,
        "tenant_gpus": 3,
        "tenant_cpu": "12",
        "tenant_memory": "24Gi",
        "tenant_oversell_check": False,
    },
    "tenant_delete.yml": {"tenant_name": TENANT, "tenant_confirm": TENANT, "tenant_force": True},
    "tenant_catalog.yml": {
        "tenant_catalog": CATALOG,
        "tenant_catalog_oversell_check": False,
        "tenant_catalog_progress_file": f"/tmp/gpucloud-check-catalog-{uuid.uuid4().hex[:6]}",
    },
    "team_queue.yml": {"tenant_name": TENANT, "team_name": "extra2", "team_deserved_gpus": 0},
    "job_submit.yml": {
        "tenant_name": TENANT,
        "job_name": "ck-pb",
        "job_queue": f"{NS}-algo",
        "job_kind": "single",
        "job_image": "busybox",
        "job_gpus_per_pod": 1,
        "job_cpu": "1",
        "job_memory": "1Gi",
    },
    "payg_scale.yml": {"tenant": TENANT, "payg_capability": {GPU: 1}},
    "payg_reconcile.yml": {},
    "spot_recompute.yml": {},
    "throttle_reconcile.yml": {},
    "arbiter_reconcile.yml": {},
    "hypernode_sync.yml": {},
    "gpu_health.yml": {},
    "checkpoint_retention.yml": {"checkpoint_retention_keep": 1},
    "node_groups.yml": {"platform_node_groups": NODE_GROUPS},
    "inference_deploy.yml": {
        "tenant": TENANT,
        "inference_name": "ck-model",
        "inference_queue": f"{NS}-algo",
        "inference_version": "v3",
        "inference_format": "sklearn",
        "inference_storage_uri": "s3://models/ck/v3",
        "inference_gpus": 0,
    },
    "inference_canary.yml": {
        "tenant": TENANT,
        "inference_name": "ck-model",
        "inference_version": "v2",
        "inference_storage_uri": "s3://models/ck/v2",
        "inference_traffic_percent": 30,
    },
    "inference_canary_step.yml": {
        "tenant": TENANT,
        "inference_name": "ck-model2",
        "inference_version": "v2",
        "inference_traffic_percent": 60,
    },
    "inference_promote.yml": {"tenant": TENANT, "inference_name": "ck-model2"},
    "inference_rollback.yml": {"tenant": TENANT, "inference_name": "ck-model2"},
    # Reads Prometheus; in check mode it writes no report file (nor its directory).
    "usage_report.yml": {
        "metering_prometheus_url": USAGE["prometheus_url"],
        "metering_prices": USAGE["prices"],
        "usage_report_dir": f"/tmp/gpucloud-check-usage-{uuid.uuid4().hex[:6]}",
    },
    # Configures an AWX server, which the local cluster does not have.
    "awx_configure.yml": None,
    # Its connection is a Karmada API server: checked in tests/federation/test_federation_member.py.
    "federation_bring_up.yml": None,
    # Likewise: checked in tests/federation/test_federation_jobs.py.
    "federation_reconcile.yml": None,
}


def snapshot(dyn) -> dict[str, str]:
    """Every watched object: kind/namespace/name -> a digest of what it says."""
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    out: dict[str, str] = {}
    # A namespace someone else is deleting (an earlier test's tenant) empties itself
    # while the run goes on: neither it nor what it holds is the run's doing.
    namespaces = dyn.resources.get(api_version="v1", kind="Namespace").get().to_dict()
    items = namespaces.get("items") or []
    leaving = {n["metadata"]["name"] for n in items if n["metadata"].get("deletionTimestamp")}
    for api_version, kind in WATCHED:
        try:
            resource = dyn.resources.get(api_version=api_version, kind=kind)
        except ResourceNotFoundError:
            continue
        for obj in resource.get().to_dict().get("items") or []:
            meta = obj["metadata"]
            if meta.get("namespace") in IGNORED_NAMESPACES | leaving:
                continue
            if kind == "Namespace" and meta["name"] in leaving:
                continue

            said = {
                k: obj.get(k)
                for k in ("spec", "data", "rules", "subjects", "roleRef", "value")
                if k in obj
            }
            said["labels"] = meta.get("labels") or {}
            said["uid"] = meta.get("uid")
            said["deleting"] = bool(meta.get("deletionTimestamp"))
            digest = hashlib.sha256(json.dumps(said, sort_keys=True, default=str).encode())
            out[f"{kind}/{meta.get('namespace') or ''}/{meta['name']}"] = digest.hexdigest()
    return out


# What the API server owns in an object's metadata: no diff shows it (rule diff-shows-change).
SERVER_FIELDS = {"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"}
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def noise(value: Any, path: str = "diff") -> list[str]:
    """Where a diff shows a field the server owns: an object's server metadata, kubectl's
    last applied configuration or its status."""
    out: list[str] = []
    if isinstance(value, dict):
        meta = value.get("metadata")
        if isinstance(meta, dict):
            out += [f"{path}.metadata.{k}" for k in sorted(SERVER_FIELDS & set(meta))]
            if LAST_APPLIED in (meta.get("annotations") or {}):
                out.append(f"{path}.metadata.annotations.{LAST_APPLIED}")
            if "status" in value:
                out.append(f"{path}.status")
        for key, sub in value.items():
            out += noise(sub, f"{path}.{key}")
    elif isinstance(value, list):
        for index, sub in enumerate(value):
            out += noise(sub, f"{path}[{index}]")
    return out


def shown(diff: Any) -> list[dict[str, Any]]:
    """The entries of a result's diff that show a change (Ansible prints no other)."""
    entries = diff if isinstance(diff, list) else [diff] if diff else []
    return [
        e
        for e in entries
        if e.get("prepared") or ("before" in e and e.get("before") != e.get("after"))
    ]


def run_check_diff(
    ansible_env: dict[str, str],
    playbook: str,
    extra_vars: dict[str, Any],
    inventory: str,
    *args: str,
) -> tuple[int, dict[str, Any]]:
    """``playbooks/<playbook>`` with ``--check --diff`` (``--check`` left out when ``args``
    has ``--real``): its exit code and the json callback's whole output, every host."""
    real = "--real" in args
    cmd = [
        str(Path(sys.executable).parent / "ansible-playbook"),
        "-i",
        inventory,
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        "-e",
        json.dumps(extra_vars),
        str(ROOT / "playbooks" / playbook),
        *([] if real else ["--check", "--diff"]),
        *(a for a in args if a != "--real"),
    ]
    proc = subprocess.run(
        cmd, cwd=ROOT, env=ansible_env, capture_output=True, text=True, timeout=600, check=False
    )
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        pytest.fail(f"{playbook} gave no JSON result:\n{proc.stdout}\n{proc.stderr}")


def localhost_tasks(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The localhost plays' task results by task name, as ``run_playbook`` gives them."""
    plays = [p for p in data["plays"] if any("localhost" in t["hosts"] for t in p["tasks"])]
    return {
        t["task"]["name"]: t["hosts"].get("localhost", {})
        for play in plays or data["plays"][:1]
        for t in play["tasks"]
    }


def each_result(data: dict[str, Any]):
    """(task name, host, result) of every task of every play, a loop's items one by one."""
    for play in data["plays"]:
        for task in play["tasks"]:
            for host, result in task["hosts"].items():
                for one in result.get("results") or [result]:
                    yield task["task"]["name"], host, one


def diff_problems(data: dict[str, Any]) -> list[str]:
    """Rule diff-shows-change over a playbook run: no server field in any diff, and a
    result that changes nothing shows nothing."""
    out = []
    for task, host, result in each_result(data):
        out += [f"{task} [{host}]: {where}" for where in noise(result.get("diff"))]
        if not result.get("changed") and shown(result.get("diff")):
            out.append(f"{task} [{host}]: unchanged, but shows {shown(result['diff'])}")
    return out


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(
        [f"appeared {k}" for k in after.keys() - before.keys()]
        + [f"vanished {k}" for k in before.keys() - after.keys()]
        + [f"changed {k}" for k in before.keys() & after.keys() if before[k] != after[k]]
    )


@pytest.fixture(scope="module")
def dyn(api_client):
    from kubernetes import dynamic

    return dynamic.DynamicClient(api_client)


@pytest.fixture(scope="module")
def world(run_module, dyn, priority_classes, api_client):
    """A tenant with a held job and a managed HyperNode no node backs: something for every
    check-mode run to want to change."""
    made = run_module("tenant", tenant_args(TENANT))
    assert not made.get("failed"), made.get("msg")
    apply_object_store_connection(dyn.client)  # the store the object-store modules plan for
    held = run_module("vcjob", job_args("ck-held"))
    assert not held.get("failed"), held.get("msg")
    stale = run_module(
        "hypernode",
        {
            "name": STALE_HYPERNODE,
            "tier": 1,
            "members": [{"type": "Node", "selector": {"exactMatch": {"name": "no-such-node"}}}],
        },
    )
    assert not stale.get("failed"), stale.get("msg")
    dyn.resources.get(api_version="v1", kind="Namespace").server_side_apply(
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "platform-serving"}},
        field_manager="gpucloud-platform-test",
    )
    for name, extra in (("ck-model", {}), ("ck-model2", {"canaries": CANARY})):
        made = run_module(
            "inference_service", model_args(name, wait=True, wait_timeout=120, **extra)
        )
        assert not made.get("failed"), made.get("msg")
    yield
    for name in ("ck-model", "ck-model2"):
        run_module("inference_service", {"name": name, "tenant": TENANT, "state": "absent"})
    run_module("vcjob", {"tenant": TENANT, "name": "ck-held", "state": "absent"})
    run_module("hypernode", {"name": STALE_HYPERNODE, "state": "absent"})
    remove_tenants(run_module, api_client, [TENANT])


# Modules whose connection is not one cluster's: their check mode is shown where their
# API server runs (a module here, run against the local cluster, would only be refused).
CHECKED_ELSEWHERE = {
    # a Karmada API server: nothing written in Karmada or either member
    "federation_job_moves": "tests/federation/test_federation_jobs.py",
    "federation_member": "tests/federation/test_federation_member.py",
    "federation_platform": "tests/federation/test_federation_platform.py",
    "federation_tenant": "tests/federation/test_federation_tenant.py",
}


def test_every_module_and_playbook_is_covered():
    modules = {p.stem for p in (Path(ROOT) / "plugins" / "modules").glob("*.py")}
    playbooks = {p.name for p in (Path(ROOT) / "playbooks").glob("*.yml")}
    assert set(MODULES) | set(CHECKED_ELSEWHERE) == modules
    assert not set(MODULES) & set(CHECKED_ELSEWHERE)
    for where in CHECKED_ELSEWHERE.values():
        assert "check=True" in (Path(ROOT) / where).read_text(encoding="utf-8"), where
    assert set(PLAYBOOKS) == playbooks


@pytest.mark.parametrize(
    ("module", "index"), [(m, i) for m, runs in sorted(MODULES.items()) for i in range(len(runs))]
)
def test_a_module_in_check_mode_writes_nothing(module, index, world, dyn, run_module, request):
    if module == "node_groups":
        # node_groups refuses a scheduler without the nodegroup plugin: the platform's has it.
        request.getfixturevalue("platform_scheduler_conf")
    before = snapshot(dyn)
    result = run_module(module, MODULES[module][index], check=True, diff=True)
    after = snapshot(dyn)
    assert changes(before, after) == [], result
    assert "cannot reach" not in str(result.get("msg", "")), result
    assert noise(result.get("diff")) == [], result
    if not result.get("changed"):
        assert shown(result.get("diff")) == [], result
    if module == "k8s_objects":
        # one entry per object; one line where one value changes
        assert not result.get("failed") and result["changed"], result
        expected = [
            [f"ConfigMap/{NS}/ck-objects", f"Namespace/{NS}: label ck-objects: absent → x\n"],
            ["Node/gpu-node-0: label ck-objects: absent → x\n"],
            [f"Namespace/{NS}"],
        ][index]
        assert [e.get("prepared") or e["before_header"] for e in result["diff"]] == expected, result
    if module == "topology_render":
        assert result["files"] and not Path(MODULES[module][index]["dest"]).exists(), result
    if module == "node_groups":
        # Check mode plans the writes (labels on every node, root's affinity) and makes none.
        assert not result.get("failed") and result["changed"] and result["writes"], result
    if module == "gpu_node_probe":
        assert not result.get("failed") and result["changed"] is False, result
        assert result["report"]["host"] == "ck-host", result
    if module == "usage_report":
        assert not result.get("failed") and result["ledger"]["period"]["start"] == USAGE["start"], (
            result
        )


@pytest.mark.parametrize("playbook", sorted(p for p, v in PLAYBOOKS.items() if v is not None))
def test_a_playbook_in_check_mode_writes_nothing(playbook, world, dyn, ansible_env, request):
    if playbook == "node_groups.yml":
        # node_groups refuses a scheduler without the nodegroup plugin: the platform's has it.
        request.getfixturevalue("platform_scheduler_conf")
    before = snapshot(dyn)
    inventory = "inventories/local" if playbook == "site.yml" else "localhost,"
    rc, data = run_check_diff(ansible_env, playbook, PLAYBOOKS[playbook], inventory)
    after = snapshot(dyn)
    tasks = localhost_tasks(data)
    failed = {f"{n} [{h}]": r.get("msg") for n, h, r in each_result(data) if r.get("failed")}
    assert changes(before, after) == [], failed
    assert rc == 0, failed  # a check-mode run also tells the truth about what would happen
    assert diff_problems(data) == []
    if playbook == "usage_report.yml":
        assert not Path(PLAYBOOKS[playbook]["usage_report_dir"]).exists()
    check_summary(playbook, tasks)  # rule run-summary: what it would do, in words


def test_site_check_diff_shows_nothing_on_its_cluster_then_a_policy_changed_by_hand(
    ansible_env, api_client
):
    """site.yml's scheduling policy (PriorityClasses, the admission policies and their
    parameter; the scheduler configuration is the local cluster's own) applied, then
    ``--check --diff``: no task changes, no diff. One admission policy changed by hand:
    the check shows that change, in one line, and nothing else; it is put back after."""
    from kubernetes import dynamic

    from ansible_collections.gpucloud.platform.plugins.module_utils.policy.admission import (
        POLICY_PLATFORM_STATE,
    )

    site = ("site.yml", {"scheduling_policy_scheduler_conf": False}, "inventories/local")
    tags = ("--tags", "scheduling_policy")
    rc, data = run_check_diff(ansible_env, *site, *tags, "--real")
    assert rc == 0, [(t, r.get("msg")) for t, _h, r in each_result(data) if r.get("failed")]

    rc, data = run_check_diff(ansible_env, *site, *tags)
    assert rc == 0
    assert [(t, h) for t, h, r in each_result(data) if r.get("changed")] == []
    assert [
        (t, shown(r.get("diff"))) for t, _h, r in each_result(data) if shown(r.get("diff"))
    ] == []
    assert diff_problems(data) == []

    policies = dynamic.DynamicClient(api_client).resources.get(
        api_version="admissionregistration.k8s.io/v1", kind="ValidatingAdmissionPolicy"
    )
    original = policies.get(name=POLICY_PLATFORM_STATE).spec.failurePolicy
    by_hand = "Ignore" if original == "Fail" else "Fail"

    def failure_policy(value: str) -> None:
        policies.patch(
            name=POLICY_PLATFORM_STATE,
            body={"spec": {"failurePolicy": value}},
            content_type="application/merge-patch+json",
        )

    failure_policy(by_hand)
    try:
        rc, data = run_check_diff(ansible_env, *site, *tags)
    finally:
        failure_policy(original)
    assert rc == 0
    # the json callback names a role's task "<role> : <task>"
    changed = {
        t.split(" : ")[-1]: r.get("diff") for t, _h, r in each_result(data) if r.get("changed")
    }
    assert changed == {
        "Apply the admission policies and their bindings": [
            {
                "prepared": f"ValidatingAdmissionPolicy/{POLICY_PLATFORM_STATE}: "
                f"spec.failurePolicy: {by_hand} → {original}\n"
            }
        ]
    }
    assert diff_problems(data) == []
    assert policies.get(name=POLICY_PLATFORM_STATE).spec.failurePolicy == original
