#!/usr/bin/env python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ratio benchmark: onboarding N tenants on the cluster.

Two ansible-playbook runs, each looping once over the tenants:

- baseline: one ``kubernetes.core.k8s`` task per tenant whose ``definition``
  is the list of that tenant's objects (Namespace, Role, RoleBinding,
  NetworkPolicy, subscription, pay-as-you-go and spot Queues), built with
  the collection's own core (``tenant_spec.plan_tenant``), so both runs
  create the same objects;
- ``gpucloud.platform.tenant`` once per tenant.

The two runs use different tenant names (``bk-NNNN`` and ``bm-NNNN``), so
neither finds the other's objects. Prints seconds and API requests per
tenant and the module's ratios to the baseline, then deletes every tenant
of both runs (Queues, then Namespaces) and waits until they are gone.

    .venv/bin/python benchmarks/tenant_onboarding.py [--tenants 200] [--keep]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / ".venv" / "collections"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bare import Bare, cluster_networks

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    LABEL_TENANT,
    MANAGED_SELECTOR,
    QUEUE_API,
    namespace_name,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.plan import plan_tenant
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.spec import (
    parse_tenant_spec,
)

from _api_counter import (
    PlaybookRunner,
    add_common_arguments,
    api_client,
    default_kubeconfig,
    k8s_loop_playbook,
    print_table,
    queue_manifest,
)

BASELINE_PREFIX = "bk-"
MODULE_PREFIX = "bm-"
# Purchases cycled over the tenants, so the queues differ in size.
SUBSCRIPTIONS = [
    {"nvidia.com/gpu": 1, "cpu": "8", "memory": "64Gi"},
    {"nvidia.com/gpu": 2, "cpu": "16", "memory": "128Gi"},
    {"nvidia.com/gpu": 4, "cpu": "32", "memory": "256Gi"},
    {"nvidia.com/gpu": 8, "cpu": "64", "memory": "512Gi"},
]

MODULE_PLAYBOOK = """\
- name: gpucloud.platform.tenant loop
  hosts: localhost
  gather_facts: false
  tasks:
    - name: One tenant
      gpucloud.platform.tenant:
        name: "{{ item.name }}"
        subscription: "{{ item.subscription }}"
        # Hundreds of tenants on a 64-GPU cluster oversell it on purpose; the
        # baseline makes no such check either.
        oversell_check: false
      loop: "{{ tenants }}"
      loop_control:
        label: "{{ item.name }}"
"""


# The local cluster's networks, given so that the module and the baseline write the same
# NetworkPolicy (the module would otherwise read them from the cluster).
NETWORKS = {"pod_cidr": "10.128.0.0/12", "service_cidr": "10.96.0.0/12"}


def tenant_params(prefix: str, count: int) -> list[dict[str, Any]]:
    return [
        {
            "name": f"{prefix}{i:04d}",
            "subscription": SUBSCRIPTIONS[i % len(SUBSCRIPTIONS)],
            **NETWORKS,
        }
        for i in range(count)
    ]


def tenant_objects(params: dict[str, Any], networks: Any) -> list[dict[str, Any]]:
    """Every object the tenant module creates for a new tenant, in its order, with the
    cluster's networks (``_bare.cluster_networks``) as the module discovers them."""
    plan = plan_tenant(parse_tenant_spec(params), {}, discovered=networks)
    return [*plan.objects, *(queue_manifest(q) for q in plan.queues)]


def cleanup(kubeconfig: str, prefixes: tuple[str, ...], timeout: float = 600) -> int:
    """Delete the benchmark's tenants (queues first, namespaces last) and
    wait until they are gone; returns how many tenants were found."""
    from kubernetes import client

    api = api_client(kubeconfig)
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    rbac = client.RbacAuthorizationV1Api(api)
    group, version = QUEUE_API.split("/")

    def ours(obj_labels: dict[str, str] | None) -> bool:
        return (obj_labels or {}).get(LABEL_TENANT, "").startswith(prefixes)

    tenants: set[str] = set()
    for q in custom.list_cluster_custom_object(
        group, version, "queues", label_selector=MANAGED_SELECTOR
    )["items"]:
        labels = q["metadata"].get("labels")
        if ours(labels):
            tenants.add(labels[LABEL_TENANT])
            custom.delete_cluster_custom_object(group, version, "queues", q["metadata"]["name"])
    # The queue reader's ClusterRole and binding are cluster-scoped: the namespace's
    # deletion leaves them, and the next run's LISTs would meet them.
    for listing, delete in (
        (rbac.list_cluster_role_binding, rbac.delete_cluster_role_binding),
        (rbac.list_cluster_role, rbac.delete_cluster_role),
    ):
        for obj in listing(label_selector=MANAGED_SELECTOR).items:
            if ours(obj.metadata.labels):
                tenants.add(obj.metadata.labels[LABEL_TENANT])
                delete(obj.metadata.name)
    for ns in core.list_namespace(label_selector=MANAGED_SELECTOR).items:
        if ours(ns.metadata.labels):
            tenants.add(ns.metadata.labels[LABEL_TENANT])
            if ns.status.phase != "Terminating":
                core.delete_namespace(ns.metadata.name)
    if tenants:
        print(f"deleting {len(tenants)} tenants, waiting for their namespaces ...", flush=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [
            ns.metadata.name
            for ns in core.list_namespace(label_selector=MANAGED_SELECTOR).items
            if ours(ns.metadata.labels)
        ]
        if not left:
            break
        time.sleep(2)
    else:
        print(f"warning: {len(left)} namespaces still terminating after {timeout:.0f}s")
    return len(tenants)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=200)
    parser.add_argument("--keep", action="store_true", help="leave the tenants in the cluster")
    add_common_arguments(parser)
    args = parser.parse_args()
    kubeconfig = args.kubeconfig or default_kubeconfig()

    leftover = cleanup(kubeconfig, (BASELINE_PREFIX, MODULE_PREFIX))
    if leftover:
        print(f"removed {leftover} tenants left over from an earlier run")

    baseline_tenants = tenant_params(BASELINE_PREFIX, args.tenants)
    module_tenants = tenant_params(MODULE_PREFIX, args.tenants)
    networks = cluster_networks(Bare(api_client(kubeconfig), 1))
    items = [{"label": t["name"], "objects": tenant_objects(t, networks)} for t in baseline_tenants]
    per_tenant = len(items[0]["objects"])

    with PlaybookRunner(kubeconfig, keep=args.keep_workdir) as runner:
        try:
            baseline = runner.run(
                "kubernetes.core.k8s loop",
                runner.write("k8s.yml", k8s_loop_playbook()),
                runner.write_vars("k8s-vars.json", {"items": items}),
            )
            module = runner.run(
                "gpucloud.platform.tenant loop",
                runner.write("tenant.yml", MODULE_PLAYBOOK),
                runner.write_vars("tenant-vars.json", {"tenants": module_tenants}),
            )
        finally:
            if not args.keep:
                cleanup(kubeconfig, (BASELINE_PREFIX, MODULE_PREFIX))

    print(
        f"onboarding {args.tenants} tenants, {per_tenant} objects each "
        f"({', '.join(o['kind'] for o in items[0]['objects'])}); "
        f"first tenant's namespace: {namespace_name(module_tenants[0]['name'])}"
    )
    print_table("", [baseline, module], baseline, args.tenants, "tenant")


if __name__ == "__main__":
    main()
