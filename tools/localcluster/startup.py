# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The steps of `cluster.py up`, once its arguments are read: certificates, the
components in ORDER with the objects each needs applied before it (BEFORE) and
their configuration files refreshed (KServe's and Fluid's CRDs in the background),
then the serving runtimes and the topology's nodes, until the nodes are Ready and
Volcano's root queue is Open."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import topology
from alerting_files import reload_alertmanager, write_alertmanager_files
from components import ORDER, Component, components
from credentials import ensure_pki
from fluid_files import apply_fluid_crds
from kube_client import Kube
from objects import (
    apply_crds,
    apply_kserve_crds,
    ensure_base_objects,
    ensure_kserve_objects,
    kserve_runtimes,
    nodes_ready,
    render_volcano_admission,
    root_queue_open,
    sync_nodes,
)
from processes import alive, healthy, read_pids, start, stop_pid, wait_for, write_pids
from prometheus_files import reload_prometheus, write_ksm_files, write_prometheus_files
from settings import log
from upstream import default_scheduler_conf, kserve_module

# Where `up` keeps the topology the cluster runs with, in its state directory.
TOPOLOGY_FILE = "topology.yaml"


@dataclass
class Up:
    """What the steps of one `up` share."""

    state: Path
    bins: Path
    kube: Kube
    pids: dict[str, int]
    # One thread: KServe's and Fluid's CRDs are applied while the Volcano components start.
    background: concurrent.futures.ThreadPoolExecutor
    kserve_crds: concurrent.futures.Future[None] | None = None
    fluid_crds: concurrent.futures.Future[None] | None = None
    started: list[str] = field(default_factory=list)


def _before_kwok(up: Up) -> None:
    ensure_base_objects(up.kube)
    up.kserve_crds = up.background.submit(apply_kserve_crds, up.kube)
    # Nothing starts on them (no Fluid controller runs here): waited for before `up` ends.
    up.fluid_crds = up.background.submit(apply_fluid_crds, up.kube)


def _before_vc_webhook_manager(up: Up) -> None:
    apply_crds(up.kube)
    # The webhook server only serves once its configurations exist.
    for doc in render_volcano_admission(up.state, up.bins):
        up.kube.apply(doc)


def _before_kserve_controller(up: Up) -> None:
    assert up.kserve_crds is not None  # submitted before kwok, which comes earlier in ORDER
    up.kserve_crds.result()
    ensure_kserve_objects(up.kube, up.state)


# Objects the next components need, applied on every `up` before the component
# named, whether it runs or not (server-side apply: a no-op when nothing changed).
BEFORE: dict[str, Callable[[Up], None]] = {
    "kwok": _before_kwok,
    "vc-webhook-manager": _before_vc_webhook_manager,
    "kserve-controller": _before_kserve_controller,
}


def refresh_files(up: Up, name: str, pid: int | None, running: bool) -> bool:
    """Write the files the component reads; whether it still runs afterwards."""
    if name == "kube-state-metrics" and write_ksm_files(up.state) and running:
        # It reads the file only when it starts.
        log("kube-state-metrics: custom resource state changed; restarting")
        assert pid is not None  # it runs
        stop_pid(pid)
        return False
    if name == "alertmanager" and write_alertmanager_files(up.state) and running:
        log("alertmanager: routes changed; reloading")
        reload_alertmanager()
    if name == "prometheus" and write_prometheus_files(up.state) and running:
        log("prometheus: configuration or rules changed; reloading")
        reload_prometheus()
    return running


def start_components(up: Up, comps: dict[str, Component]) -> None:
    """Start, in ORDER, every component that does not run, each healthy before the next."""
    for name in ORDER:
        comp = comps[name]
        pid = up.pids.get(name)
        running = bool(pid and alive(pid, comp.program))
        if name in BEFORE:
            BEFORE[name](up)
        if refresh_files(up, name, pid, running):
            continue
        log(f"starting {name}")
        up.pids[name] = start(up.state, comp)
        write_pids(up.state, up.pids)
        up.started.append(name)
        wait_for(
            f"{name} to become healthy",
            lambda c=comp: healthy(up.state, c) and alive(up.pids[c.name]),
            120,
            up.state,
            name,
        )


def settle(up: Up, nodes: list[topology.FakeNode], topo_path: Path) -> None:
    """The serving runtimes and the topology's nodes; wait until the nodes are
    Ready and Volcano's root queue is Open."""
    # Validated by kserve-controller's own webhook, so applied once it serves.
    for doc in kserve_runtimes(kserve_module()):
        up.kube.apply(doc)
    sync_nodes(up.kube, nodes)
    remembered = up.state / TOPOLOGY_FILE
    if topo_path != remembered:
        remembered.write_text(topo_path.read_text())
    wait_for(
        f"{len(nodes)} kwok nodes to be Ready",
        lambda: nodes_ready(up.kube, {n.name for n in nodes}),
        120,
        up.state,
        "kwok",
    )
    wait_for(
        "Volcano's root queue to be Open",
        lambda: root_queue_open(up.kube),
        120,
        up.state,
        "vc-controller-manager",
    )


def bring_up(state: Path, bins: Path, nodes: list[topology.FakeNode], topo_path: Path) -> list[str]:
    """Start what does not run and apply what `up` applies; the components it started."""
    state.mkdir(parents=True, exist_ok=True)
    ensure_pki(state)
    conf = state / "volcano-scheduler.conf"
    if not conf.exists():
        conf.write_text(default_scheduler_conf())
    comps = {c.name: c for c in components(state, bins)}
    up = Up(
        state,
        bins,
        Kube(state),
        read_pids(state),
        concurrent.futures.ThreadPoolExecutor(max_workers=1),
    )
    start_components(up, comps)
    up.background.shutdown()
    if up.fluid_crds is not None:
        up.fluid_crds.result()  # a refused apply stops `up` here, with its message
    settle(up, nodes, topo_path)
    return up.started
