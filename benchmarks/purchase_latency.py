#!/usr/bin/env python3
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ratio benchmark: how a purchase's latency grows with the fleet.

One purchase is ``playbooks/tenant_create.yml`` for one new tenant with a small
subscription: the purchase check, the spot reclaim of what it sells, the tenant
and the spot recompute, each of which reads the fleet. It is timed with
``--small`` tenants in the cluster (the baseline) and again with ``--large``,
in the same run. The other tenants are made beforehand by the bare client
(``_bare.Bare``, the very objects ``tenant_catalog`` would write; subscribing
nothing, so the pool is not sold out), and deleted at the end.

Prints the table and the ratio the fleet-scale target is stated in; asserts nothing.

    .venv/bin/python benchmarks/purchase_latency.py [--small 100] [--large 3000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / ".venv" / "collections"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bare import Bare, cluster_networks
from tenant_catalog import EMPTY, tenant_writes
from tenant_onboarding import NETWORKS, cleanup

from _api_counter import (
    ROOT,
    Measurement,
    PlaybookRunner,
    add_common_arguments,
    api_client,
    best,
    default_kubeconfig,
    print_table,
)

FILL, BUYER = "pf-", "pb-"
WORKERS = 8
PURCHASE = {"tenant_gpus": 2, "tenant_cpu": "8", "tenant_memory": "16Gi"}

DELETE_PLAYBOOK = """\
- name: remove the buyer
  hosts: localhost
  gather_facts: false
  tasks:
    - gpucloud.platform.tenant:
        name: "{{ buyer }}"
        state: absent
        wait: true
"""

# The fleet as a scheduled reconcile leaves it: a new tenant's spot queue is written at
# creation with 0 GPUs only, and the first recompute after that sets its cpu and memory
# floor (rule spot-capability-floor). Untimed, so the timed purchases recompute a
# settled fleet (only the buyer's share moves), as they would in production.
SETTLE_PLAYBOOK = """\
- name: settle the fleet
  hosts: localhost
  gather_facts: false
  tasks:
    - gpucloud.platform.spot_capacity: {}
"""


def fill(kubeconfig: str, first: int, last: int) -> None:
    """Tenants ``first`` to ``last - 1`` of the filler, written by the bare client."""
    bare = Bare(api_client(kubeconfig), WORKERS)
    networks = cluster_networks(bare)
    writes = [
        tenant_writes({"name": f"{FILL}{i:05d}", "subscription": dict(EMPTY), **NETWORKS}, networks)
        for i in range(first, last)
    ]

    def one(tenant):
        for manifest, manager in tenant:
            bare.apply(manifest, manager=manager)

    start = time.perf_counter()
    bare.in_pool([lambda t=t: one(t) for t in writes])
    print(
        f"fleet: {last} tenants ({last - first} written in {time.perf_counter() - start:.0f} s)",
        flush=True,
    )


def purchase(runner: PlaybookRunner, label: str, buyer: str) -> Measurement:
    """One timed tenant_create.yml, then the buyer removed again (not timed)."""
    playbook = ROOT / "playbooks" / "tenant_create.yml"
    extra = runner.write_vars(f"{buyer}.json", {"tenant_name": buyer, **PURCHASE})
    measured = runner.run(label, playbook, extra)
    remove = runner.write("delete.yml", DELETE_PLAYBOOK)
    runner.run(f"  (removing {buyer})", remove, runner.write_vars("b.json", {"buyer": buyer}))
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=3000)
    parser.add_argument(
        "--repeat", type=int, default=2, help="purchases per fleet size (best kept)"
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="leave the tenants in the cluster (removing thousands of namespaces takes minutes)",
    )
    add_common_arguments(parser)
    args = parser.parse_args()
    kubeconfig = args.kubeconfig or default_kubeconfig()
    cleanup(kubeconfig, (FILL, BUYER), timeout=1800)
    try:
        with PlaybookRunner(kubeconfig, keep=args.keep_workdir) as runner:
            rows = []
            done = 0
            for size in (args.small, args.large):
                fill(kubeconfig, done, size)
                done = size
                runner.run(
                    f"  (spot recompute, {size} tenants)",
                    runner.write("settle.yml", SETTLE_PLAYBOOK),
                )
                runs = [
                    purchase(runner, f"purchase, {size} tenants (#{n + 1})", f"{BUYER}{size}-{n}")
                    for n in range(args.repeat)
                ]
                rows.append(best(runs, f"purchase, {size} tenants"))
    finally:
        if not args.keep:
            cleanup(kubeconfig, (FILL, BUYER), timeout=1800)
    small, large = rows
    print()
    print_table(
        f"tenant_create.yml for one tenant, best of {args.repeat}", rows, small, 1, "purchase"
    )
    print(
        f"\nlarge fleet / small fleet: {large.seconds / small.seconds:.2f} "
        f"({args.large} vs {args.small} tenants; the target is at most 1.5)"
    )


if __name__ == "__main__":
    main()
