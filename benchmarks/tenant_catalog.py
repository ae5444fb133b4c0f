#!/usr/bin/env python3
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ratio benchmark: onboarding N tenants with one ``tenant_catalog`` run.

Measured in one run, each with its own tenant names so none finds another's objects:

- the per-tenant loop: ``gpucloud.platform.tenant`` once per tenant, over
  ``--loop-tenants`` tenants (its per-tenant cost is extrapolated to N);
- the physical limit: a bare Python client (``_bare.Bare``: raw server-side applies,
  no Ansible) sending the same writes for N tenants with the same concurrency, each
  tenant's in order (the objects, then each queue with its capacity applied first under
  the capacity field manager, as the module writes them);
- ``gpucloud.platform.tenant_catalog`` creating N tenants (``--workers`` at a time);
- with ``--first-turns 2`` (the default) the bare client and the catalog onboard N
  tenants twice each, in ABBA order (bare, catalog, catalog, bare), and the ratio is
  taken between their means;
- before each onboarding every earlier run's tenants are removed (untimed, waiting
  for the namespace controller), so each one starts from a cluster without tenants, as
  the target is stated; ``--no-from-empty`` skips that and lets the fleet grow by N with
  every run (Volcano's scheduler and controllers, Prometheus and the API server all
  work per queue), which the ABBA order then spreads evenly over both sides;
- right after the last catalog onboarding, the same catalog again, unchanged;
- what an unchanged run cannot go below: an ``ansible-playbook`` run of a module
  that does nothing, given the same catalog (``library/noop_catalog.py`` next to the
  playbook: Ansible templates, checks and ships the same arguments, the module returns
  at once), plus the catalog's reads done by the bare client (the same LISTs, raw JSON).

Prints the table and the ratios the fleet-scale targets are stated in; asserts nothing.

    .venv/bin/python benchmarks/tenant_catalog.py [--tenants 1000] [--loop-tenants 100] [--workers 8]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / ".venv" / "collections"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bare import Bare, cluster_networks
from tenant_onboarding import MODULE_PLAYBOOK, NETWORKS, cleanup

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    CAPACITY_FIELD_MANAGER,
    FIELD_MANAGER,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.network import (
    ClusterNetworks,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.plan import plan_tenant
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.spec import (
    parse_tenant_spec,
)

from _api_counter import (
    Measurement,
    PlaybookRunner,
    abba,
    add_common_arguments,
    api_client,
    best,
    default_kubeconfig,
    mean,
    print_table,
    wait_queues_open,
    wait_quiet,
)

LOOP = "cl-"
# The namespace controller removes about 200 tenants a minute on two cores.
CLEANUP_TIMEOUT = 1800
MAX_TURNS = 4
# One name prefix per onboarding, so no run finds another's objects.
BARE = tuple(f"cb{turn}-" for turn in range(MAX_TURNS))
CATALOG = tuple(f"cc{turn}-" for turn in range(MAX_TURNS))
EMPTY = {"nvidia.com/gpu": 0, "cpu": 0, "memory": 0}  # sells nothing: no pool needed

CATALOG_PLAYBOOK = """\
- name: gpucloud.platform.tenant_catalog
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Every tenant at once
      gpucloud.platform.tenant_catalog:
        tenants: "{{ tenants }}"
        pod_cidr: "{{ pod_cidr }}"
        service_cidr: "{{ service_cidr }}"
        workers: "{{ workers }}"
"""

NOOP_PLAYBOOK = """\
- name: a module that does nothing
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Render an empty catalog (no request)
      gpucloud.platform.tenant_catalog:
        state: rendered
        tenants: []
        pod_cidr: 10.128.0.0/12
        service_cidr: 10.96.0.0/12
"""

# A module that does nothing with the catalog's arguments: Ansible's own cost of a
# 1,000-entry catalog (templating, argument checks, the module's transfer and start).
NOOP_CATALOG_MODULE = """\
#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule

OPTIONS = {
    "tenants": {"type": "list", "elements": "dict"},
    "pod_cidr": {"type": "str"},
    "service_cidr": {"type": "str"},
    "workers": {"type": "int"},
}

if __name__ == "__main__":
    AnsibleModule(argument_spec=OPTIONS, supports_check_mode=True).exit_json(changed=False)
"""

NOOP_CATALOG_PLAYBOOK = CATALOG_PLAYBOOK.replace(
    "gpucloud.platform.tenant_catalog:", "noop_catalog:"
)

# The catalog's reads: one LIST per kind and the parent-queues GET.
LABELLED = (
    "Namespace",
    "Role",
    "RoleBinding",
    "NetworkPolicy",
    "ConfigMap",
    "ClusterRole",
    "ClusterRoleBinding",
)
UNLABELLED = ("Queue", "PodGroup", "Node", "ServiceCIDR")
PARENT_LIST = {
    "kind": "ConfigMap",
    "metadata": {"name": "platform-parent-queues", "namespace": "platform-system"},
}


def entries(prefix: str, count: int) -> list[dict]:
    return [{"name": f"{prefix}{i:04d}", "subscription": dict(EMPTY)} for i in range(count)]


def tenant_writes(params: dict, networks: ClusterNetworks) -> list[tuple[dict, str]]:
    """The writes the module makes for a new tenant, in its order: the objects, then each
    queue, its capacity first under the capacity field manager where it has one (the
    platform's ownership of those fields: a later ``tenant`` run must not remove them)."""
    plan = plan_tenant(parse_tenant_spec(params), {}, discovered=networks)
    writes = [(m, FIELD_MANAGER) for m in plan.objects]
    for queue in plan.queues:
        if queue.capacity_fields and queue.write_capacity:
            writes.append((queue.capacity_manifest(), CAPACITY_FIELD_MANAGER))
        writes.append((queue.to_manifest(), FIELD_MANAGER))
    return writes


def bare_onboarding(
    kubeconfig: str, tenants: list[dict], workers: int, label: str = "bare client, same objects"
) -> Measurement:
    bare = Bare(api_client(kubeconfig), workers)
    networks = cluster_networks(bare)
    objects = [tenant_writes({**t, **NETWORKS}, networks) for t in tenants]
    bare.requests = 0  # the discovery is the setup's, not the onboarding's

    def one(writes):
        for manifest, manager in writes:
            bare.apply(manifest, manager=manager)

    wait_quiet()
    print(f"{label} ...", end=" ", flush=True)
    start = time.perf_counter()
    bare.in_pool([lambda m=m: one(m) for m in objects])
    seconds = time.perf_counter() - start
    print(f"{seconds:.1f} s", flush=True)
    return Measurement(label, seconds, bare.requests, {"PATCH": bare.requests})


def bare_reads(kubeconfig: str, workers: int) -> Measurement:
    bare = Bare(api_client(kubeconfig), workers)
    calls = [lambda k=k: bare.list(k, "platform.io/tenant") for k in LABELLED]
    calls += [lambda k=k: bare.list(k) for k in UNLABELLED]
    calls.append(lambda: bare.get_or_none(PARENT_LIST))
    wait_quiet()
    start = time.perf_counter()
    bare.in_pool(calls)
    seconds = time.perf_counter() - start
    return Measurement(
        "bare client, the catalog's reads", seconds, bare.requests, {"GET": bare.requests}
    )


def emptied(kubeconfig: str, prefixes: tuple[str, ...]) -> None:
    """Remove every benchmark tenant and wait until its namespace is gone, untimed."""
    start = time.perf_counter()
    removed = cleanup(kubeconfig, prefixes, timeout=CLEANUP_TIMEOUT)
    if removed:
        print(f"  (no tenants left, {removed} removed in {time.perf_counter() - start:.0f} s)")


def unchanged_runs(
    runner: PlaybookRunner, kubeconfig: str, playbook: Path, catalog_vars: Path, n: int, args
) -> tuple[Measurement, Measurement, Measurement]:
    """The catalog once more, unchanged, and its floor: a module doing nothing with the
    same catalog, and the catalog's reads by the bare client. They take turns
    ``--repeat`` times, best of each kept: each is a few seconds, which one busy moment
    of the API server would otherwise decide."""
    (runner.workdir / "library").mkdir(exist_ok=True)
    runner.write("library/noop_catalog.py", NOOP_CATALOG_MODULE)
    noop_playbook = runner.write("noop.yml", NOOP_CATALOG_PLAYBOOK)
    agains, noops, readings = [], [], []
    for _ in range(args.repeat):
        agains.append(runner.run(f"tenant_catalog, {n} unchanged", playbook, catalog_vars))
        noops.append(runner.run("module doing nothing, same catalog", noop_playbook, catalog_vars))
        readings.append(bare_reads(kubeconfig, args.workers))
    return (
        best(agains, f"tenant_catalog, {n} unchanged"),
        best(noops, "module doing nothing, same catalog"),
        best(readings, "bare client, the catalog's reads"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--loop-tenants", type=int, default=100)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument(
        "--first-turns",
        type=int,
        default=2,
        help=f"onboardings by the bare client and the catalog, in ABBA order (at most {MAX_TURNS})",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="unchanged runs and their floor, taking turns (best kept)",
    )
    parser.add_argument(
        "--from-empty",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="remove every earlier run's tenants before each onboarding, so each starts "
        "from a cluster without tenants, as the target is stated (default); "
        "--no-from-empty lets the fleet grow from run to run (faster)",
    )
    parser.add_argument("--keep", action="store_true", help="leave the tenants in the cluster")
    add_common_arguments(parser)
    args = parser.parse_args()
    if not 1 <= args.first_turns <= MAX_TURNS:
        parser.error(f"--first-turns must be between 1 and {MAX_TURNS}")
    kubeconfig = args.kubeconfig or default_kubeconfig()
    prefixes = (LOOP, *BARE, *CATALOG)
    leftover = cleanup(kubeconfig, prefixes, timeout=CLEANUP_TIMEOUT)
    if leftover:
        print(f"removed {leftover} tenants left over from an earlier run")
    n = args.tenants
    order = abba(args.first_turns)
    last_catalog = max(i for i, (_turn, side) in enumerate(order) if side == "b")
    with PlaybookRunner(kubeconfig, keep=args.keep_workdir) as runner:
        try:
            loop = runner.run(
                f"tenant module loop ({args.loop_tenants})",
                runner.write("loop.yml", MODULE_PLAYBOOK),
                runner.write_vars("loop.json", {"tenants": entries(LOOP, args.loop_tenants)}),
            )
            playbook = runner.write("catalog.yml", CATALOG_PLAYBOOK)
            bares, firsts = [], []
            for i, (turn, side) in enumerate(order):
                if args.from_empty:
                    emptied(kubeconfig, prefixes)
                if side == "a":
                    label = f"bare client, same objects #{turn + 1}"
                    bares.append(
                        bare_onboarding(kubeconfig, entries(BARE[turn], n), args.workers, label)
                    )
                    wait_queues_open(kubeconfig, (BARE[turn],))
                    continue
                catalog_vars = runner.write_vars(
                    f"catalog{turn}.json",
                    {"tenants": entries(CATALOG[turn], n), "workers": args.workers, **NETWORKS},
                )
                firsts.append(
                    runner.run(f"tenant_catalog, {n} new #{turn + 1}", playbook, catalog_vars)
                )
                wait_queues_open(kubeconfig, (CATALOG[turn],))
                if i == last_catalog:
                    # The unchanged runs read back this catalog's tenants, before the next
                    # onboarding removes them.
                    again, noop, reads = unchanged_runs(
                        runner, kubeconfig, playbook, catalog_vars, n, args
                    )
            bare = mean(bares, "bare client, same objects (mean)")
            first = mean(firsts, f"tenant_catalog, {n} new (mean)")
        finally:
            if not args.keep:
                cleanup(kubeconfig, prefixes, timeout=CLEANUP_TIMEOUT)
    loop_at_n = loop.seconds / args.loop_tenants * n
    floor = noop.seconds + reads.seconds
    print(f"\nonboarding {n} tenants, {args.workers} at a time")
    onboardings = [*bares, *firsts, bare, first] if len(bares) > 1 else [bare, first]
    print_table("", [loop, *onboardings, again, noop, reads], bare, n, "tenant")
    print(f"\nloop extrapolated to {n} tenants: {loop_at_n:.1f} s")
    print(
        f"catalog speed-up over the loop:          {loop_at_n / first.seconds:6.1f} x   (target >= 20)"
    )
    print(
        f"catalog first run / bare client:         {first.seconds / bare.seconds:6.2f}     (target <= 1.5)"
    )
    print(
        f"unchanged run / (no-op module + reads):  {again.seconds / floor:6.2f}     (target <= 1.3)"
    )
    print(
        f"unchanged run requests:                  {again.requests:6d}     (the reads: {reads.requests})"
    )


if __name__ == "__main__":
    main()
