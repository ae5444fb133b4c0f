# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a tenant can and cannot do, tried as a real tenant identity.

Two tenants are made by the ``tenant`` module: ``pa`` and ``pa-b``, whose names
share a prefix, as in the case where a name prefix let one tenant into the
other's queues. Every attempt runs with a client certificate of user ``eve``
in group ``tenant:pa`` (the tenant's default RoleBinding subject), against the
local cluster's real API server, RBAC, Pod Security and the collection's
admission policies. Writes that should be denied go as server dry runs, which
RBAC and admission judge like real writes.

``docs/tenants.md`` has the table "What a tenant can and cannot do"; the last
test checks that its rows are exactly the cases here, with the same verdicts.
"""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.policy.image_registries import (
    POLICY_IMAGE_REGISTRIES,
)
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    CLUSTER,
    ROOT,
    apply_admission,
    other_cluster,
    remove_admission,
    wait_until,
)

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
JOB_API = "batch.volcano.sh/v1alpha1"
QUEUE_API = "scheduling.volcano.sh/v1beta1"
TENANT, OTHER = "pa", "pa-b"
NS, OTHER_NS = f"tenant-{TENANT}", f"tenant-{OTHER}"
TEAM_QUEUE, SPOT_QUEUE = f"{NS}-algo", f"{NS}-spot"
DENIED = (400, 403, 422)
# Rule images-from-allowed-registries, on for this file: the official images only
# (busybox, as every Job here writes it, is docker.io/library/busybox).
ALLOWED_REGISTRIES = ["docker.io/library/"]


def tenant_args(name: str, team: str) -> dict[str, Any]:
    return {
        "name": name,
        "subscription": {GPU: 2, "cpu": 8, "memory": "16Gi"},
        "teams": [{"name": team, "deserved": {GPU: 2}}],
        "oversell_check": False,
    }


@pytest.fixture(scope="module")
def tenants(run_module, api_client, priority_classes):
    if other_cluster():
        pytest.skip("needs the local cluster's CA to issue a tenant identity")
    # every policy, as the scheduling_policy role leaves them, with an image allow-list
    apply_admission(api_client, image_registries=ALLOWED_REGISTRIES)
    for name, team in ((TENANT, "algo"), (OTHER, "x")):
        made = run_module("tenant", tenant_args(name, team))
        assert not made.get("failed"), made.get("msg")
    yield
    for name in (TENANT, OTHER):
        run_module("tenant", {"name": name, "state": "absent", "force": True, "wait": True})
    # the allow-list is this file's: the other files' pods use other images
    remove_admission(api_client, POLICY_IMAGE_REGISTRIES)


@pytest.fixture(scope="module")
def eve_kubeconfig(tenants) -> str:
    """A kubeconfig for user eve in group tenant:pa, signed by the local cluster's CA."""
    proc = subprocess.run(
        [
            sys.executable,
            str(CLUSTER),
            "kubeconfig",
            "--user",
            "eve",
            "--group",
            f"tenant:{TENANT}",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def eve(eve_kubeconfig):
    from kubernetes import config, dynamic

    return dynamic.DynamicClient(config.new_client_from_config(config_file=eve_kubeconfig))


@pytest.fixture(scope="module")
def admin(api_client):
    from kubernetes import dynamic

    return dynamic.DynamicClient(api_client)


# The taint of the nodes for GPU sharing, and a container asking for one vGPU.
VGPU_TOLERATION = {
    "key": "platform.io/gpu-sharing",
    "operator": "Equal",
    "value": "vgpu",
    "effect": "NoSchedule",
}
_VGPU = {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "8192"}
VGPU_RESOURCES = {"limits": dict(_VGPU), "requests": dict(_VGPU)}


def job(
    queue: str = TEAM_QUEUE,
    pc: str | None = "normal-job",
    billing: str | None = "subscription",
    price: str | None = None,
    pod: dict[str, Any] | None = None,
    template_meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A one-pod Volcano Job of tenant pa; ``pod`` adds to its pod spec."""
    meta: dict[str, Any] = {"generateName": "sec-", "namespace": NS, "labels": {}}
    if billing:
        meta["labels"]["platform.io/billing-type"] = billing
    if price:
        meta["annotations"] = {"platform.io/spot-price": price}
    spec = {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "busybox", "resources": {"limits": {GPU: 1}}}],
        **(pod or {}),
    }
    body: dict[str, Any] = {
        "apiVersion": JOB_API,
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "schedulerName": "volcano",
            "queue": queue,
            "minAvailable": 1,
            "tasks": [
                {
                    "name": "main",
                    "replicas": 1,
                    "template": {"metadata": template_meta or {}, "spec": spec},
                }
            ],
        },
    }
    if pc:
        body["spec"]["priorityClassName"] = pc
    return body


def attempt(call: Callable[[], Any]) -> str | None:
    """None when the API server allowed it, else its refusal."""
    from kubernetes.dynamic.exceptions import ApiException

    try:
        call()
    except ApiException as exc:
        if exc.status not in DENIED:
            raise
        body = exc.body.decode() if isinstance(exc.body, bytes) else str(exc.body)
        try:
            return json.loads(body).get("message") or body
        except ValueError:
            return body
    return None


def res(client, api_version: str, kind: str):
    return client.resources.get(api_version=api_version, kind=kind)


def submit(client, body, dry_run: bool = True):
    kw = {"dry_run": "All"} if dry_run else {}
    return lambda: res(client, JOB_API, "Job").create(body=body, namespace=NS, **kw)


def claim(client, size: str) -> Callable[[], Any]:
    """A dry-run claim of tenant pa of ``size``, in no particular class."""
    body = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"generateName": "sec-", "namespace": NS},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}},
    }
    return lambda: res(client, "v1", "PersistentVolumeClaim").create(
        body=body, namespace=NS, dry_run="All"
    )


def create_service(client, spec: dict[str, Any]) -> Callable[[], Any]:
    """A dry-run Service of tenant pa in front of its jobs' pods, with ``spec`` added."""
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"generateName": "sec-", "namespace": NS},
        "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}], **spec},
    }
    return lambda: res(client, "v1", "Service").create(body=body, namespace=NS, dry_run="All")


def configmap(name: str, namespace: str = NS) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }


# -- the attempts ------------------------------------------------------------------------------
# Each returns a zero-argument call made as eve. ``CANNOT`` calls must be refused, with a
# message that contains the fragment; ``CAN`` calls must be allowed.

CANNOT: dict[str, tuple[str, Callable[[Any], Callable[[], Any]]]] = {
    "scheduler-bypass": (
        "scheduled by Volcano",
        lambda eve: submit(eve, job(pod={"schedulerName": "default-scheduler"})),
    ),
    "node-name": (
        "may not pick its node",
        lambda eve: submit(eve, job(pod={"nodeName": "gpu-node-0"})),
    ),
    "foreign-priority": (
        "not a platform PriorityClass",
        lambda eve: submit(eve, job(pod={"priorityClassName": "system-node-critical"})),
    ),
    "template-class-above-job": (
        "not the Job's own",
        lambda eve: submit(eve, job(pod={"priorityClassName": "critical-job"})),
    ),
    "unschedulable-toleration": (
        "node.kubernetes.io/* taint",
        lambda eve: submit(
            eve,
            job(
                pod={
                    "tolerations": [
                        {
                            "key": "node.kubernetes.io/unschedulable",
                            "operator": "Exists",
                            "effect": "NoSchedule",
                        }
                    ]
                }
            ),
        ),
    ),
    "loadbalancer-service": (
        "spec.type: LoadBalancer opens the pods outside the cluster",
        lambda eve: create_service(eve, {"type": "LoadBalancer"}),
    ),
    "nodeport-service": (
        "spec.type: NodePort opens the pods outside the cluster",
        lambda eve: create_service(eve, {"type": "NodePort"}),
    ),
    "external-ips": (
        "spec.externalIPs: 8.8.8.8 would claim addresses",
        lambda eve: create_service(eve, {"externalIPs": ["8.8.8.8"]}),
    ),
    "no-priority": (
        "(none) is not a platform PriorityClass",
        lambda eve: submit(eve, job(pc=None)),
    ),
    "critical-not-allowed": (
        "critical-job is not enabled",
        lambda eve: submit(
            eve,
            job(
                pc="critical-job",
                template_meta={"annotations": {"volcano.sh/preemptable": "false"}},
            ),
        ),
    ),
    "non-preemptable-normal": (
        "may be marked non-preemptable",
        lambda eve: submit(
            eve, job(template_meta={"annotations": {"volcano.sh/preemptable": "false"}})
        ),
    ),
    "privileged": (
        "may not run privileged",
        lambda eve: submit(
            eve,
            job(
                pod={
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "securityContext": {"privileged": True},
                            "resources": {"limits": {GPU: 1}},
                        }
                    ]
                }
            ),
        ),
    ),
    "host-network": (
        "network, PID or IPC namespace",
        lambda eve: submit(eve, job(pod={"hostNetwork": True})),
    ),
    "host-pid": (
        "network, PID or IPC namespace",
        lambda eve: submit(eve, job(pod={"hostPID": True})),
    ),
    "host-path": (
        "(hostPath)",
        lambda eve: submit(
            eve, job(pod={"volumes": [{"name": "root", "hostPath": {"path": "/"}}]})
        ),
    ),
    "wildcard-toleration": (
        "toleration without a key",
        lambda eve: submit(eve, job(pod={"tolerations": [{"operator": "Exists"}]})),
    ),
    "platform-taint-toleration": (
        "of a platform taint",
        lambda eve: submit(
            eve,
            job(
                pod={"tolerations": [{"key": "virtual-kubelet.io/provider", "operator": "Exists"}]}
            ),
        ),
    ),
    "vgpu-taint-toleration": (
        "only a pod that asks for vGPUs may tolerate platform.io/gpu-sharing",
        lambda eve: submit(eve, job(pod={"tolerations": [VGPU_TOLERATION]})),
    ),
    "prefix-team-queue": (
        "is not a queue of tenant pa",
        lambda eve: submit(eve, job(queue=f"{OTHER_NS}-x")),
    ),
    # refused by the tenant policy and by the priority policy (not one of pa's spot queues);
    # the API server reports whichever it ran first
    "prefix-spot-queue": (
        "tenant-pa-b-spot",
        lambda eve: submit(
            eve, job(queue=f"{OTHER_NS}-spot", pc="spot-job", billing="spot", price="0.1")
        ),
    ),
    "parent-queue": (
        "tenant-pa-subscription",
        lambda eve: submit(eve, job(queue=f"{NS}-subscription")),
    ),
    "spot-labelled-subscription": (
        "does not match queue tenant-pa-spot",
        lambda eve: submit(
            eve, job(queue=SPOT_QUEUE, pc="spot-job", billing="subscription", price="0.1")
        ),
    ),
    "spot-template-price": (
        "names a price other than the Job",
        lambda eve: submit(
            eve,
            job(
                queue=SPOT_QUEUE,
                pc="spot-job",
                billing=None,
                price="0.5",
                template_meta={"annotations": {"platform.io/spot-price": "0.000001"}},
            ),
        ),
    ),
    "spot-bad-price": (
        "1e400 is not a spot price",
        lambda eve: submit(
            eve, job(queue=SPOT_QUEUE, pc="spot-job", billing="spot", price="1e400")
        ),
    ),
    "plant-throttle": (
        "platform-throttle is platform state",
        lambda eve: (
            lambda: res(eve, "v1", "ConfigMap").create(
                body=configmap("platform-throttle"), namespace=NS, dry_run="All"
            )
        ),
    ),
    "delete-queue-list": (
        "platform-queues is platform state",
        lambda eve: (
            lambda: res(eve, "v1", "ConfigMap").delete(
                name="platform-queues", namespace=NS, body={"dryRun": ["All"]}
            )
        ),
    ),
    "edit-queue-list": (
        "platform-queues is platform state",
        lambda eve: (
            lambda: res(eve, "v1", "ConfigMap").patch(
                name="platform-queues",
                namespace=NS,
                body={"data": {f"{OTHER_NS}-x": "team"}},
                content_type="application/merge-patch+json",
                dry_run="All",
            )
        ),
    ),
    "other-tenant-secrets": (
        "forbidden",
        lambda eve: lambda: res(eve, "v1", "Secret").get(namespace=OTHER_NS),
    ),
    "other-tenant-jobs": (
        "forbidden",
        lambda eve: lambda: res(eve, JOB_API, "Job").get(namespace=OTHER_NS),
    ),
    "bare-pod": (
        "forbidden",
        lambda eve: (
            lambda: res(eve, "v1", "Pod").create(
                body={
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "bare", "namespace": NS},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                },
                namespace=NS,
                dry_run="All",
            )
        ),
    ),
    "own-namespace-labels": (
        "forbidden",
        lambda eve: (
            lambda: res(eve, "v1", "Namespace").patch(
                name=NS,
                body={"metadata": {"labels": {"platform.io/allow-critical": "true"}}},
                content_type="application/merge-patch+json",
                dry_run="All",
            )
        ),
    ),
    "huge-claim": (
        "maximum storage usage per PersistentVolumeClaim is 4Ti",
        lambda eve: claim(eve, "1Ei"),
    ),
    "edit-own-bounds": (
        "forbidden",
        lambda eve: (
            lambda: res(eve, "v1", "ResourceQuota").patch(
                name="platform-bounds",
                namespace=NS,
                body={"spec": {"hard": {"pods": "100000"}}},
                content_type="application/merge-patch+json",
                dry_run="All",
            )
        ),
    ),
    "edit-own-queue": (
        "forbidden",
        lambda eve: (
            lambda: res(eve, QUEUE_API, "Queue").patch(
                name=TEAM_QUEUE,
                body={"spec": {"capability": {GPU: 64}}},
                content_type="application/merge-patch+json",
                dry_run="All",
            )
        ),
    ),
    "other-tenant-queue": (
        "forbidden",
        lambda eve: lambda: res(eve, QUEUE_API, "Queue").get(name=f"{OTHER_NS}-x"),
    ),
    "list-queues": ("forbidden", lambda eve: lambda: res(eve, QUEUE_API, "Queue").get()),
    "foreign-registry-image": (
        "spec.tasks[main].template.spec.containers[main].image: ghcr.io/x/miner:1 is not from a "
        "registry this platform allows (docker.io/library/)",
        lambda eve: submit(
            eve, job(pod={"containers": [{"name": "main", "image": "ghcr.io/x/miner:1"}]})
        ),
    ),
    "short-name-image": (
        "containers[main].image: x/miner (docker.io/x/miner) is not from a registry",
        lambda eve: submit(eve, job(pod={"containers": [{"name": "main", "image": "x/miner"}]})),
    ),
}

CAN: dict[str, Callable[[Any], Callable[[], Any]]] = {
    "own-team-job": lambda eve: submit(eve, job()),
    "own-spot-job": lambda eve: submit(
        eve, job(queue=SPOT_QUEUE, pc="spot-job", billing="spot", price="0.25")
    ),
    "own-payg-job": lambda eve: submit(eve, job(queue=f"{NS}-payg", billing="payg")),
    "spot-unlabelled": lambda eve: submit(
        eve, job(queue=SPOT_QUEUE, pc="spot-job", billing=None, price="0.1")
    ),
    "own-plain-job": lambda eve: submit(eve, job(queue=f"{NS}-payg", billing=None)),
    "own-vgpu-job": lambda eve: submit(
        eve,
        job(
            pod={
                "tolerations": [VGPU_TOLERATION],
                "containers": [{"name": "main", "image": "busybox", "resources": VGPU_RESOURCES}],
            }
        ),
    ),
    "own-clusterip-service": lambda eve: create_service(eve, {}),
    "read-own-queue": lambda eve: lambda: res(eve, QUEUE_API, "Queue").get(name=TEAM_QUEUE),
    "read-own-events": lambda eve: lambda: res(eve, "v1", "Event").get(namespace=NS),
    "read-own-pods": lambda eve: lambda: res(eve, "v1", "Pod").get(namespace=NS),
    "own-configmap": lambda eve: (
        lambda: res(eve, "v1", "ConfigMap").create(
            body=configmap("my-settings"), namespace=NS, dry_run="All"
        )
    ),
    "own-claim": lambda eve: claim(eve, "100Gi"),
    "allowed-registry-image": lambda eve: submit(
        eve,
        job(pod={"containers": [{"name": "main", "image": "docker.io/library/python:3.12"}]}),
    ),
}


def _admitted_eventually(call: Callable[[], Any]) -> str | None:
    """The API server reads the policies' parameters through informers: a tenant made a
    moment ago may be judged against a queue list not yet seen. Wait for a verdict that
    is not about a missing parameter."""
    verdict: dict[str, str | None] = {}

    def settled():
        verdict["message"] = attempt(call)
        return "no params found" not in (verdict["message"] or "")

    wait_until(settled, 60, 1, "the admission policies to read the tenant's queue list")
    return verdict["message"]


@pytest.mark.parametrize("case", sorted(CANNOT))
def test_a_tenant_cannot(case, eve):
    fragment, make = CANNOT[case]
    message = _admitted_eventually(make(eve))
    assert message is not None, f"{case}: the API server allowed it"
    assert fragment in message, message


@pytest.mark.parametrize("case", sorted(CAN))
def test_a_tenant_can(case, eve):
    message = _admitted_eventually(CAN[case](eve))
    assert message is None, f"{case}: {message}"


def test_the_throttle_state_cannot_be_deleted_by_the_tenant(admin, eve):
    """An active throttle (written by the platform) stays: the tenant cannot lift it."""
    cm = configmap("platform-throttle") | {
        "data": {"queues": TEAM_QUEUE, "until": "2999-01-01T00:00:00Z"}
    }
    cm["metadata"]["labels"] = {
        "platform.io/managed-by": "gpucloud-platform",
        "platform.io/tenant": TENANT,
    }
    res(admin, "v1", "ConfigMap").create(body=cm, namespace=NS)
    try:
        message = attempt(
            lambda: res(eve, "v1", "ConfigMap").delete(name="platform-throttle", namespace=NS)
        )
        assert message is not None and "platform-throttle is platform state" in message
        assert res(admin, "v1", "ConfigMap").get(name="platform-throttle", namespace=NS)
    finally:
        res(admin, "v1", "ConfigMap").delete(name="platform-throttle", namespace=NS)


def test_a_team_name_that_makes_another_tenants_queue_is_refused(run_module):
    """pa's team b-x would be queue tenant-pa-b-x, which is pa-b's team x."""
    args = tenant_args(TENANT, "algo")
    args["teams"].append({"name": "b-x", "deserved": {GPU: 0}})
    refused = run_module("tenant", args)
    assert refused.get("failed"), refused
    assert "teams[1]" in refused["msg"] and "belongs to tenant 'pa-b'" in refused["msg"]


def test_pod_security_baseline_is_enforced_in_tenant_namespaces(admin):
    """Even for the platform's own identity: a host port breaks baseline (no admission policy
    of the collection looks at host ports, so this is Pod Security alone)."""
    ns = res(admin, "v1", "Namespace").get(name=NS)
    assert ns.metadata.labels["pod-security.kubernetes.io/enforce"] == "baseline"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "port", "namespace": NS},
        "spec": {
            "schedulerName": "volcano",
            "priorityClassName": "normal-job",
            "containers": [
                {"name": "c", "image": "busybox", "ports": [{"containerPort": 80, "hostPort": 80}]}
            ],
        },
    }
    message = attempt(lambda: res(admin, "v1", "Pod").create(body=pod, namespace=NS, dry_run="All"))
    assert message is not None and 'violates PodSecurity "baseline' in message, message


def test_a_tenant_submits_through_vcjob_with_its_own_identity(run_module, eve_kubeconfig):
    out = run_module(
        "vcjob",
        {
            "kubeconfig": eve_kubeconfig,
            "tenant": TENANT,
            "name": "eve-eval",
            "queue": TEAM_QUEUE,
            "kind": "single",
            "image": "busybox",
            "command": ["sleep", "1"],
            "gpus_per_pod": 1,
            "cpu": "1",
            "memory": "1Gi",
        },
    )
    assert not out.get("failed"), out.get("msg")
    assert out["changed"] is True and out["queue"] == {"name": TEAM_QUEUE, "type": "team"}
    gone = run_module(
        "vcjob",
        {"kubeconfig": eve_kubeconfig, "tenant": TENANT, "name": "eve-eval", "state": "absent"},
    )
    assert not gone.get("failed"), gone.get("msg")


def test_the_network_policy_keeps_out_the_cluster_networks_the_cluster_tells(admin):
    """The tenant module read the pod, service and node networks from the cluster; the rendered
    policy cuts exactly those (and the metadata address) out of the allowed egress."""
    nodes = res(admin, "v1", "Node").get().items
    pod_nets = [ipaddress.ip_network(c) for n in nodes for c in (n.spec.podCIDRs or [])]
    assert pod_nets, "the local cluster's nodes carry spec.podCIDRs"
    service_nets = [
        ipaddress.ip_network(c)
        for s in res(admin, "networking.k8s.io/v1", "ServiceCIDR").get().items
        for c in s.spec.cidrs
    ]
    node_ips = {
        ipaddress.ip_network(f"{a.address}/32")
        for n in nodes
        for a in n.status.addresses
        if a.type in ("InternalIP", "ExternalIP")
    }
    policy = res(admin, "networking.k8s.io/v1", "NetworkPolicy").get(
        name="deny-cross-tenant", namespace=NS
    )
    blocks = [
        t["ipBlock"]
        for rule in policy.to_dict()["spec"]["egress"]
        for t in rule.get("to", [])
        if "ipBlock" in t
    ]
    assert [b["cidr"] for b in blocks] == ["0.0.0.0/0"]
    excepts = [ipaddress.ip_network(e) for e in blocks[0]["except"]]

    def covered(net):
        return any(net.subnet_of(e) for e in excepts)

    assert all(covered(n) for n in pod_nets + service_nets + sorted(node_ips))
    assert covered(ipaddress.ip_network("169.254.169.254/32"))
    # nothing else is cut out: every except overlaps something the cluster told
    told = pod_nets + service_nets + sorted(node_ips) + [ipaddress.ip_network("169.254.169.254/32")]
    assert all(any(e.overlaps(t) for t in told) for e in excepts)


def test_the_docs_table_lists_exactly_these_cases():
    """docs/tenants.md, "What a tenant can and cannot do": one row per case, same verdict."""
    text = (Path(ROOT) / "docs" / "tenants.md").read_text()
    section = text.split("## What a tenant can and cannot do", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z0-9-]+)` \| (can|cannot) \|", section, flags=re.M)
    table = dict(rows)
    expected = {**{c: "cannot" for c in CANNOT}, **{c: "can" for c in CAN}}
    assert table == expected


def test_a_job_of_more_pods_than_the_tenant_may_run_gets_only_its_bound(run_module, admin, eve):
    """Rule tenant-bounds: Volcano does not hold a queue to a ``pods`` capability (the red
    team's 900 BestEffort pods all ran), so the tenant's ResourceQuota does: with a bound of
    3 pods, a 6-pod Job of eve's gets 3, and the API server refuses the rest."""
    bounded = run_module("tenant", {**tenant_args(TENANT, "algo"), "bounds": {"pods": 3}})
    assert not bounded.get("failed"), bounded.get("msg")
    body = job(pod={"containers": [{"name": "main", "image": "busybox"}]})
    body["spec"]["tasks"][0]["replicas"] = 6
    made = res(eve, JOB_API, "Job").create(body=body, namespace=NS)
    try:
        pods = res(admin, "v1", "Pod")

        def owned() -> list[Any]:
            selector = f"volcano.sh/job-name={made.metadata.name}"
            return list(pods.get(namespace=NS, label_selector=selector).items)

        wait_until(lambda: len(owned()) >= 3, 60, 1, "the job's first 3 pods")
        time.sleep(5)  # the controller keeps trying; the quota keeps refusing
        assert len(owned()) == 3
        quota = res(admin, "v1", "ResourceQuota").get(name="platform-bounds", namespace=NS)
        assert quota.status.used["pods"] == "3" and quota.spec.hard["pods"] == "3"
    finally:
        res(admin, JOB_API, "Job").delete(name=made.metadata.name, namespace=NS)
        restored = run_module("tenant", tenant_args(TENANT, "algo"))
        assert not restored.get("failed"), restored.get("msg")


def test_a_bound_pods_metadata_still_changes_and_its_spec_is_still_judged(admin, eve):
    """Pod placement judges what a write places, not a bound pod's own nodeName: a label or
    finalizer update of a running pod (the garbage collector releasing a dependent) goes
    through, where it once blocked a namespace's deletion for good; a toleration added
    to a running pod is still judged."""
    made = res(eve, JOB_API, "Job").create(body=job(), namespace=NS)
    try:
        pods = res(admin, "v1", "Pod")
        selector = f"volcano.sh/job-name={made.metadata.name}"

        def running() -> list[Any]:
            items = pods.get(namespace=NS, label_selector=selector).items
            return [p for p in items if p.status.phase == "Running"]

        wait_until(lambda: bool(running()), 60, 1, "the job's pod Running")
        pod = running()[0]
        assert pod.spec.nodeName
        patched = pods.patch(
            name=pod.metadata.name,
            namespace=NS,
            body={"metadata": {"labels": {"checked": "yes"}, "finalizers": ["example.com/hold"]}},
            content_type="application/merge-patch+json",
        )
        assert patched.metadata.labels["checked"] == "yes"
        released = pods.patch(
            name=pod.metadata.name,
            namespace=NS,
            body={"metadata": {"finalizers": None}},
            content_type="application/merge-patch+json",
        )
        assert not released.metadata.finalizers
        refused = attempt(
            lambda: pods.patch(
                name=pod.metadata.name,
                namespace=NS,
                body={"spec": {"tolerations": [{"operator": "Exists"}]}},
                content_type="application/strategic-merge-patch+json",
            )
        )
        assert refused is not None and "tolerations" in refused, refused
    finally:
        res(admin, JOB_API, "Job").delete(name=made.metadata.name, namespace=NS)


def test_storage_is_bounded_per_class_and_never_sold_beyond_the_class(run_module, admin, eve):
    """Rules storage-class-bounds and storage-class-oversell: with 10Ti of checkpoints
    recorded (as the storage role records a class's capacity) and 4Ti of it bound to
    pa-b, 7Ti for pa is refused with the numbers before any write; 100Gi is taken, and the
    API server then refuses pa's checkpoints claim of 200Gi while one of 50Gi passes."""
    capacity = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "platform-storage-capacity", "namespace": "platform-system"},
        "data": {"checkpoints": "10Ti"},
    }
    res(admin, "v1", "ConfigMap").server_side_apply(
        body=capacity, namespace="platform-system", field_manager="gpucloud-platform"
    )
    guarded = {"oversell_check": True}
    try:
        other = run_module(
            "tenant",
            {
                **tenant_args(OTHER, "x"),
                **guarded,
                "bounds": {"storage_classes": {"checkpoints": "4Ti"}},
            },
        )
        assert not other.get("failed"), other.get("msg")
        refused = run_module(
            "tenant",
            {
                **tenant_args(TENANT, "algo"),
                **guarded,
                "bounds": {"storage_classes": {"checkpoints": "7Ti"}},
            },
        )
        assert refused.get("failed"), refused
        assert (
            "bounds.storage_classes.checkpoints: 7Ti does not fit in storage class checkpoints: 10Ti in all - "
            "4Ti sold to other tenants = 6Ti left"
        ) in refused["msg"]
        quota = res(admin, "v1", "ResourceQuota").get(name="platform-bounds", namespace=NS)
        assert "checkpoints.storageclass.storage.k8s.io/requests.storage" not in (
            quota.spec.hard or {}
        )
        taken = run_module(
            "tenant",
            {
                **tenant_args(TENANT, "algo"),
                **guarded,
                "bounds": {"storage_classes": {"checkpoints": "100Gi"}},
            },
        )
        assert not taken.get("failed"), taken.get("msg")

        def checkpoints_claim(size: str) -> Callable[[], Any]:
            body = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"generateName": "sec-", "namespace": NS},
                "spec": {
                    "storageClassName": "checkpoints",
                    "accessModes": ["ReadWriteMany"],
                    "resources": {"requests": {"storage": size}},
                },
            }
            return lambda: res(eve, "v1", "PersistentVolumeClaim").create(
                body=body, namespace=NS, dry_run="All"
            )

        over = attempt(checkpoints_claim("200Gi"))
        assert over is not None and "exceeded quota: platform-bounds" in over, over
        assert "checkpoints.storageclass.storage.k8s.io/requests.storage" in over, over
        assert attempt(checkpoints_claim("50Gi")) is None
    finally:
        for name, team in ((TENANT, "algo"), (OTHER, "x")):
            restored = run_module("tenant", tenant_args(name, team))
            assert not restored.get("failed"), restored.get("msg")
        res(admin, "v1", "ConfigMap").delete(
            name="platform-storage-capacity", namespace="platform-system"
        )
