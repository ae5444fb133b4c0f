#!/usr/bin/env python
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ratio benchmark: recomputing N tenants' spot queue capabilities on the cluster.

Setup (not measured): N tenants' subscription, pay-as-you-go and spot
Queues, created with the kubernetes client exactly as the ``tenant`` module
makes them (the core's queue manifests and ``platform.io/`` labels), spot
capability 0; then a wait until Volcano has opened every one of them. Subscriptions of 1, 2, 4 and 8 GPUs go to every k-th tenant,
k chosen so they add up to about three quarters of the cluster's GPUs; the
other tenants have none (pay-as-you-go only). The capabilities every spot
queue should get are computed once with the core (``plan_spot_capacity``).

Measured, each a separate ansible-playbook run:

- baseline: a ``kubernetes.core.k8s`` loop, one task per spot queue,
  ``state: patched`` with the computed capability and deserved;
- the same loop again, values unchanged;
- one ``kubernetes.core.k8s`` task whose ``definition`` lists every patch;
- ``gpucloud.platform.spot_capacity`` (the queues are first reset to spot
  capability 0), then an unchanged re-run;
- the physical limit of the first run: a bare Python client (``_bare.Bare``)
  sending the same server-side applies with the module's concurrency (8);
  with ``--repeat N`` the module's first run and the bare client take turns N
  times from the same reset state, in ABBA order (module, bare, bare, module, ...),
  and the best of each is kept;
- the floor of the unchanged run: an ``ansible-playbook`` run of a module that
  does nothing, plus the module's two LISTs done by the bare client (raw JSON).

Both end states are compared: every spot queue must carry the same
capability after the module as after the baseline. Then every queue of the
benchmark is deleted.

    .venv/bin/python benchmarks/spot_capacity.py [--tenants 1000] [--skip-loop] [--repeat 2]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / ".venv" / "collections"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bare import Bare
from tenant_catalog import NOOP_PLAYBOOK

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    BILLING_SELECTOR,
    CAPACITY_FIELD_MANAGER,
    LABEL_QUEUE_TYPE,
    LABEL_TENANT,
    MANAGED_SELECTOR,
    QUEUE_API,
    QUEUE_TYPE_SPOT,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.objects import differs
from ansible_collections.gpucloud.platform.plugins.module_utils.common.quantity import (
    GPU,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.capacity_plan import (
    plan_spot_capacity,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.plan import plan_tenant
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.spec import (
    parse_tenant_spec,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    pool_from_nodes,
)

from _api_counter import (
    Measurement,
    PlaybookRunner,
    abba,
    add_common_arguments,
    api_client,
    best,
    default_kubeconfig,
    k8s_loop_playbook,
    print_table,
    queue_manifest,
    wait_queues_open,
    wait_quiet,
)

PREFIX = "bs-"
WORKERS = 8  # the module's concurrency (kube.cluster.DEFAULT_WORKERS)
SIZES = (1, 2, 4, 8)  # subscribed GPUs, cycled
CPU_PER_GPU, MEMORY_PER_GPU_GI = 8, 64
GROUP, VERSION = QUEUE_API.split("/")

MODULE_PLAYBOOK = """\
- name: gpucloud.platform.spot_capacity
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Recompute every spot queue
      gpucloud.platform.spot_capacity:
"""


def subscriptions(count: int, pool_gpus: int) -> dict[str, int]:
    """Tenant name -> subscribed GPUs: every ``stride``-th tenant subscribes."""
    budget = pool_gpus * 3 // 4
    mean = sum(SIZES) / len(SIZES)
    stride = max(1, math.ceil(count * mean / max(budget, 1)))
    out, used = {}, 0
    for i in range(count):
        gpus = 0
        if i % stride == 0:
            gpus = SIZES[(i // stride) % len(SIZES)]
            if used + gpus > budget:
                gpus = 0
        used += gpus
        out[f"{PREFIX}{i:04d}"] = gpus
    return out


def tenant_queues(tenant: str, gpus: int) -> list[dict[str, Any]]:
    """The tenant's three queues as the ``tenant`` module creates them."""
    params = {
        "name": tenant,
        "subscription": {
            GPU: gpus,
            "cpu": str(gpus * CPU_PER_GPU),
            "memory": f"{gpus * MEMORY_PER_GPU_GI}Gi",
        },
        # only the queues are used; the networks just let the plan be made offline
        "pod_cidr": "10.128.0.0/12",
        "service_cidr": "10.96.0.0/12",
    }
    return [queue_manifest(q) for q in plan_tenant(parse_tenant_spec(params), {}).queues]


def ours(obj: dict[str, Any]) -> bool:
    return ((obj["metadata"].get("labels") or {}).get(LABEL_TENANT) or "").startswith(PREFIX)


class Queues:
    """Direct (uncounted) access for setup, reset, comparison and cleanup."""

    def __init__(self, kubeconfig: str):
        from kubernetes import client

        api = api_client(kubeconfig)
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)

    def nodes(self) -> list[dict[str, Any]]:
        return self.core.api_client.sanitize_for_serialization(self.core.list_node())["items"]

    def managed(self) -> list[dict[str, Any]]:
        return self.custom.list_cluster_custom_object(
            GROUP, VERSION, "queues", label_selector=MANAGED_SELECTOR
        )["items"]

    def spot_specs(self) -> dict[str, dict[str, Any]]:
        return {
            q["metadata"]["name"]: {k: q["spec"].get(k) for k in ("capability", "deserved")}
            for q in self.managed()
            if ours(q) and q["metadata"]["labels"].get(LABEL_QUEUE_TYPE) == QUEUE_TYPE_SPOT
        }

    def create(self, manifests: list[dict[str, Any]]) -> None:
        from concurrent.futures import ThreadPoolExecutor

        def one(m):
            self.custom.create_cluster_custom_object(GROUP, VERSION, "queues", m)

        with ThreadPoolExecutor(max_workers=8) as pool:  # setup: not measured
            list(pool.map(one, manifests))

    def reset_spot(self, initial: dict[str, dict[str, Any]]) -> None:
        """Put every spot queue back to its capability and deserved at creation (8 at a
        time: 10,000 queues one by one would take minutes)."""
        from concurrent.futures import ThreadPoolExecutor

        def one(item):
            name, spec = item
            patch: dict[str, Any] = {}
            for key in ("capability", "deserved"):
                want = initial[name].get(key) or {}
                patch[key] = {r: want.get(r) for r in {*(spec.get(key) or {}), *want}}
            self.custom.patch_cluster_custom_object(GROUP, VERSION, "queues", name, {"spec": patch})

        with ThreadPoolExecutor(max_workers=8) as pool:  # setup: not measured
            list(pool.map(one, self.spot_specs().items()))

    def delete_ours(self) -> int:
        found = [q for q in self.managed() if ours(q)]
        for q in found:
            self.custom.delete_cluster_custom_object(
                GROUP, VERSION, "queues", q["metadata"]["name"]
            )
        return len(found)


def same_specs(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> list[str]:
    """Queues whose capability or deserved differ between two snapshots."""
    return sorted(
        n
        for n in {*a, *b}
        if n not in a or n not in b or differs(a[n], b[n]) or differs(b[n], a[n])
    )


def bare_patches(kubeconfig: str, patches: list[dict[str, Any]]) -> Measurement:
    bare = Bare(api_client(kubeconfig), WORKERS)
    wait_quiet()
    start = time.perf_counter()
    bare.in_pool([lambda m=m: bare.apply(m, manager=CAPACITY_FIELD_MANAGER) for m in patches])
    seconds = time.perf_counter() - start
    print(f"bare client, same applies ... {seconds:.1f} s", flush=True)
    return Measurement(
        "bare client, same applies", seconds, bare.requests, {"PATCH": bare.requests}
    )


def bare_reads(kubeconfig: str) -> Measurement:
    bare = Bare(api_client(kubeconfig), 2)
    wait_quiet()
    start = time.perf_counter()
    bare.in_pool([lambda: bare.list("Node"), lambda: bare.list("Queue", BILLING_SELECTOR)])
    seconds = time.perf_counter() - start
    return Measurement("bare client, the two LISTs", seconds, bare.requests, {"GET": bare.requests})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument(
        "--skip-loop",
        action="store_true",
        help="leave out the one-task-per-queue loop (its runs take about a second per queue)",
    )
    parser.add_argument(
        "--skip-k8s",
        action="store_true",
        help="leave out the kubernetes.core.k8s baselines too (at 10,000 tenants each of their "
        "runs sends 20,000 requests one by one); the bare client stays the baseline",
    )
    parser.add_argument("--keep", action="store_true", help="leave the queues in the cluster")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="first runs of the module and of the bare client, taking turns (best kept)",
    )
    add_common_arguments(parser)
    args = parser.parse_args()
    kubeconfig = args.kubeconfig or default_kubeconfig()
    queues = Queues(kubeconfig)

    leftover = queues.delete_ours()
    if leftover:
        print(f"removed {leftover} queues left over from an earlier run")
    pool, _ = pool_from_nodes(queues.nodes())
    subs = subscriptions(args.tenants, int(pool.get(GPU, 0)))
    manifests = [m for t, g in subs.items() for m in tenant_queues(t, g)]
    print(f"creating {len(manifests)} queues for {args.tenants} tenants ...", flush=True)
    queues.create(manifests)
    try:
        wait_queues_open(kubeconfig, (PREFIX,))
        initial = queues.spot_specs()
        plan = plan_spot_capacity(queues.nodes(), queues.managed())
        patches = [m for m in plan.changes if m["metadata"]["name"] in initial]
        items = [{"label": m["metadata"]["name"], "objects": [m]} for m in patches]
        rows = []
        with PlaybookRunner(kubeconfig, keep=args.keep_workdir) as runner:
            loop = runner.write(
                "k8s-loop.yml", k8s_loop_playbook("patched", "\n        merge_type: merge")
            )
            loop_vars = runner.write_vars("k8s-loop.json", {"items": items})
            one = runner.write_vars(
                "k8s-one.json", {"items": [{"label": "all spot queues", "objects": patches}]}
            )
            if not args.skip_loop:
                rows.append(runner.run("k8s loop, first", loop, loop_vars))
                rows.append(runner.run("k8s loop, unchanged", loop, loop_vars))
                queues.reset_spot(initial)
            after_baseline = None
            if not args.skip_k8s:
                rows.append(runner.run("k8s one task (list), first", loop, one))
                rows.append(runner.run("k8s one task (list), unchanged", loop, one))
                after_baseline = queues.spot_specs()
                queues.reset_spot(initial)
            module = runner.write("spot.yml", MODULE_PLAYBOOK)
            # Module and bare client take turns, from the same reset state each time, and
            # the best of each is kept: neither gets the quieter minutes. The unchanged
            # run and its floor (a module doing nothing, the bare LISTs) are timed in
            # every turn too, right after the first run, so they share its conditions.
            noop = runner.write("noop.yml", NOOP_PLAYBOOK)
            turns: dict[str, list[Measurement]] = {}
            after_module = None
            fresh = True  # the queues are as created: the first side needs no reset
            # ABBA: module then bare client in even turns, bare client then module in odd
            # ones, so that neither always runs right after the other's writes settled.
            for turn, side in abba(args.repeat):
                if not fresh:
                    queues.reset_spot(initial)
                fresh = False
                if side == "b":
                    turns.setdefault("bare", []).append(bare_patches(kubeconfig, patches))
                    continue
                for m in (
                    runner.run(f"spot_capacity, first (#{turn + 1})", module),
                    runner.run("spot_capacity, unchanged", module),
                    runner.run("module doing nothing", noop),
                    bare_reads(kubeconfig),
                ):
                    turns.setdefault(m.label.split(" (#")[0], []).append(m)
                if after_module is None:
                    after_module = queues.spot_specs()
            bare = best(turns.pop("bare"), "bare client, same applies")
            rows += [best(runs, label) for label, runs in turns.items()]
            rows.append(bare)
    finally:
        if not args.keep:
            queues.delete_ours()

    mismatch = same_specs(after_baseline, after_module) if after_baseline is not None else None
    with_sub = sum(1 for g in subs.values() if g)
    print(
        f"{args.tenants} tenants ({with_sub} with a subscription of {sum(subs.values())} GPUs), "
        f"pool {int(pool.get(GPU, 0))} GPUs, idle {plan.idle.get(GPU)} GPUs, "
        f"{len(patches)} spot queues to patch"
    )
    if mismatch is not None:
        print(
            "end states: "
            + (
                "identical"
                if not mismatch
                else f"{len(mismatch)} queues differ, e.g. {mismatch[:3]}"
            )
        )
    print_table("", rows, bare if args.skip_k8s else rows[0], args.tenants, "tenant")
    by = {r.label: r for r in rows}
    first, again = by["spot_capacity, first"], by["spot_capacity, unchanged"]
    floor = by["module doing nothing"].seconds + by["bare client, the two LISTs"].seconds
    print(
        f"first run / bare client:                 {first.seconds / bare.seconds:6.2f}  (target <= 1.3)"
    )
    print(f"unchanged run / (no-op module + LISTs):  {again.seconds / floor:6.2f}  (target <= 1.3)")


if __name__ == "__main__":
    main()
