#!/usr/bin/env python3
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local GPU cluster: real kube-apiserver, etcd, controllers, Volcano
1.15.1 and KServe's controller as processes on 127.0.0.1, with GPU nodes
simulated by kwok.

    cluster.py up [--topology FILE] [--name NAME]   start (idempotent); prints the kubeconfig path
    cluster.py down [--wipe]                         stop what `up` started; --wipe removes all state
    cluster.py status                                one line per component
    cluster.py kubeconfig [--user U --group G ...]   admin kubeconfig, or one for a given identity
    cluster.py logs COMPONENT [-n LINES]             tail a component's log
    cluster.py stop COMPONENT                        stop one component (a fault); `up` starts it again
    cluster.py alert-routes [TENANT ...]             route these tenants' alerts to their own receiver path

State (certificates, etcd data, logs, pids) lives in
``$XDG_STATE_HOME/gpucloud-localcluster/<name>`` (default ``~/.local/state``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The parts of the cluster are this file's siblings, imported by their names:
# the folder goes on sys.path first, so they are found also when this file is
# loaded by its path (importlib) or run from anywhere.
sys.path.insert(0, str(HERE))

import kubernetes.client  # noqa: E402
import urllib3  # noqa: E402

import alert_sink  # noqa: E402
import build  # noqa: E402
import build_alerting  # noqa: E402
import build_objectstore  # noqa: E402
import pins  # noqa: E402
import pki  # noqa: E402
import topology  # noqa: E402
from alerting_files import reload_alertmanager, routed_tenants, write_alertmanager_files  # noqa: E402
from components import (  # noqa: E402
    COMPONENTS,
    ORDER,
    Component,
    ComponentSpec,
    components,
    kwok_stages,
)
from credentials import SERVICE_USERS, ensure_pki, kubeconfig_for  # noqa: E402
from kube_client import REQUEST_TIMEOUT, Kube  # noqa: E402
from objects import (  # noqa: E402
    CRD_DIGEST,
    CRD_KIND,
    YAML_LOADER,
    apply_crd_files,
    apply_crds,
    apply_kserve_crds,
    ensure_base_objects,
    ensure_kserve_objects,
    fake_nodes,
    kserve_config,
    kserve_crd_paths,
    kserve_runtimes,
    kserve_tmpdir,
    nodes_ready,
    render_kserve_webhooks,
    render_volcano_admission,
    root_queue_open,
    sync_nodes,
)
from processes import (  # noqa: E402
    alive,
    health_tls,
    healthy,
    read_pids,
    start,
    stop_pid,
    wait_for,
    write_pids,
)
from prometheus_files import (  # noqa: E402
    KSM_CUSTOM_RESOURCE_STATE,
    RULES,
    prometheus_config,
    reload_prometheus,
    write_ksm_files,
    write_prometheus_files,
)
from settings import (  # noqa: E402
    ALERT_SINK,
    APISERVER,
    ENABLED_ADMISSIONS,
    FIELD_MANAGER,
    HOST,
    KSERVE_CONFIGMAP,
    KSERVE_NS,
    KSERVE_RUNTIMES,
    KSERVE_WEBHOOK_SERVICE,
    POD_CIDR,
    PORT_OFFSET,
    PORTS,
    PROMETHEUS,
    SCHEDULER_CONF_KEY,
    SCHEDULER_CONFIGMAP,
    SCRAPE_INTERVAL_SECONDS,
    SERVICE_CIDR,
    VOLCANO_NS,
    log,
    state_dir,
)
from startup import TOPOLOGY_FILE, bring_up  # noqa: E402
from upstream import default_scheduler_conf, kserve_module, module_dir, volcano_chart  # noqa: E402

# Every name this file held before it was split into the modules above stays
# importable from it: the tests, benchmarks and tools import them from here.
__all__ = [
    "APISERVER",
    "COMPONENTS",
    "CRD_DIGEST",
    "CRD_KIND",
    "ENABLED_ADMISSIONS",
    "FIELD_MANAGER",
    "HERE",
    "HOST",
    "KSERVE_CONFIGMAP",
    "KSERVE_NS",
    "KSERVE_RUNTIMES",
    "KSERVE_WEBHOOK_SERVICE",
    "KSM_CUSTOM_RESOURCE_STATE",
    "ORDER",
    "POD_CIDR",
    "PORTS",
    "PORT_OFFSET",
    "PROMETHEUS",
    "REQUEST_TIMEOUT",
    "RULES",
    "SCHEDULER_CONFIGMAP",
    "SCHEDULER_CONF_KEY",
    "SCRAPE_INTERVAL_SECONDS",
    "SERVICE_CIDR",
    "SERVICE_USERS",
    "VOLCANO_NS",
    "YAML_LOADER",
    "Component",
    "ComponentSpec",
    "Kube",
    "alive",
    "apply_crd_files",
    "apply_crds",
    "apply_kserve_crds",
    "build",
    "cmd_down",
    "cmd_kubeconfig",
    "cmd_logs",
    "cmd_status",
    "cmd_stop",
    "cmd_sync_scheduler_conf",
    "cmd_up",
    "components",
    "default_scheduler_conf",
    "ensure_base_objects",
    "ensure_kserve_objects",
    "ensure_pki",
    "fake_nodes",
    "health_tls",
    "healthy",
    "kserve_config",
    "kserve_crd_paths",
    "kserve_module",
    "kserve_runtimes",
    "kserve_tmpdir",
    "kubeconfig_for",
    "kwok_stages",
    "log",
    "main",
    "module_dir",
    "nodes_ready",
    "pins",
    "pki",
    "prometheus_config",
    "read_pids",
    "reload_prometheus",
    "render_kserve_webhooks",
    "render_volcano_admission",
    "root_queue_open",
    "start",
    "state_dir",
    "stop_pid",
    "sync_nodes",
    "topology",
    "volcano_chart",
    "wait_for",
    "write_ksm_files",
    "write_pids",
    "write_prometheus_files",
]


def _topology_path(state: Path, given: str | None) -> Path:
    """--topology; without it, `up` keeps the topology the cluster last ran with."""
    remembered = state / TOPOLOGY_FILE
    if given:
        return Path(given)
    if remembered.exists():
        return remembered
    return HERE / "topologies" / "default.yaml"


def _binaries() -> Path:
    """The binaries' directory, built first when any is missing."""
    bins = build.bin_dir()
    missing = [b for b in build.ALL_BINARIES if not (bins / b).exists()]
    if missing:
        log(f"binaries missing ({', '.join(missing)}); building them first")
        build.build(build.Budget(None))
    build_alerting.build(build.Budget(None))  # its own cache; a no-op once built
    build_objectstore.build(build.Budget(None))  # so is this
    return bins


# --- commands ----------------------------------------------------------------------------


def cmd_up(args: argparse.Namespace) -> int:
    state = state_dir(args.name)
    topo_path = _topology_path(state, args.topology)
    try:
        nodes = topology.load(topo_path)
    except topology.TopologyError as exc:
        print(f"localcluster: {exc}", file=sys.stderr)
        return 2
    started = bring_up(state, _binaries(), nodes, topo_path)
    log(
        "up: "
        + (f"started {', '.join(started)}" if started else "already running, nothing to start")
    )
    log(
        f"{len(nodes)} nodes, {sum(n.gpus for n in nodes)} nvidia.com/gpu; Prometheus at {PROMETHEUS}"
    )
    print(state / "admin.kubeconfig")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    state = state_dir(args.name)
    pids = read_pids(state)
    for name in reversed(ORDER):
        pid = pids.pop(name, None)
        if pid and alive(pid):
            log(f"stopping {name} (pid {pid})")
            stop_pid(pid)
    if state.exists():
        write_pids(state, pids)
    if args.wipe and state.exists():
        shutil.rmtree(state)
        log(f"removed {state}")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    """Stop one component and leave the rest running: the fault tests stop the API
    server in the middle of a module's run. ``up`` starts what is stopped again."""
    state = state_dir(args.name)
    pids = read_pids(state)
    pid = pids.pop(args.component, None)
    if pid and alive(pid):
        log(f"stopping {args.component} (pid {pid})")
        stop_pid(pid, timeout=args.timeout)
    else:
        log(f"{args.component} is not running")
    write_pids(state, pids)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    state = state_dir(args.name)
    pids = read_pids(state)
    if not pids:
        print("not running")
        return 3
    comps = {c.name: c for c in components(state, build.bin_dir())}
    ok = True
    for name in ORDER:
        pid = pids.get(name)
        up = bool(pid and alive(pid))
        good = up and healthy(state, comps[name])
        ok &= good
        print(
            f"{name:26} {'running' if up else 'stopped':8} pid={pid or '-':<8} {'healthy' if good else 'UNHEALTHY'}"
        )
    return 0 if ok else 1


def cmd_kubeconfig(args: argparse.Namespace) -> int:
    state = state_dir(args.name)
    if not (state / "pki" / "ca.crt").exists():
        print("localcluster: not set up; run `cluster.py up` first", file=sys.stderr)
        return 1
    if not args.user:
        print(state / "admin.kubeconfig")
        return 0
    ident = "user-" + "-".join([args.user, *args.group]).replace(":", "_").replace("/", "_")
    pki.ensure_cert(state / "pki", ident, args.user, tuple(args.group))
    print(kubeconfig_for(state, ident))
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    path = state_dir(args.name) / "logs" / f"{args.component}.log"
    if not path.exists():
        print(
            f"localcluster: no log for {args.component}; components: {', '.join(ORDER)}",
            file=sys.stderr,
        )
        return 1
    lines = path.read_text(errors="replace").splitlines()[-args.lines :]
    print("\n".join(lines))
    return 0


def cmd_sync_scheduler_conf(args: argparse.Namespace) -> int:
    """Keep vc-scheduler's --scheduler-conf file equal to the ConfigMap (Volcano hot-reloads it)."""
    state = state_dir(args.name)
    kube = Kube(state)
    target = state / "volcano-scheduler.conf"
    while True:
        try:
            cm = kube.core.read_namespaced_config_map(
                SCHEDULER_CONFIGMAP, VOLCANO_NS, _request_timeout=REQUEST_TIMEOUT
            )
            text = (cm.data or {}).get(SCHEDULER_CONF_KEY)
            if text and (not target.exists() or target.read_text() != text):
                tmp = target.with_suffix(".tmp")
                tmp.write_text(text)
                tmp.replace(target)
                print(
                    f"{time.strftime('%H:%M:%S')} wrote {target} from {SCHEDULER_CONFIGMAP}",
                    flush=True,
                )
        except kubernetes.client.ApiException as exc:
            if exc.status != 404:  # no ConfigMap yet: nothing to copy
                print(
                    f"{time.strftime('%H:%M:%S')} sync failed: {exc.status} {exc.reason}",
                    flush=True,
                )
        except (OSError, urllib3.exceptions.HTTPError, ValueError) as exc:
            print(f"{time.strftime('%H:%M:%S')} sync failed: {exc}", flush=True)
        time.sleep(1)


def cmd_alert_sink(args: argparse.Namespace) -> int:
    """Serve the webhook receiver every local alert route posts to (alert_sink.py)."""
    alert_sink.serve(state_dir(args.name) / "alert-sink", HOST, PORTS["alert-sink"])
    return 0


def cmd_alert_routes(args: argparse.Namespace) -> int:
    """Route each named tenant's alerts to the receiver's /tenant/<name> (kept across `up`)."""
    state = state_dir(args.name)
    if not (state / "alertmanager.yml").exists():
        print("localcluster: not set up; run `cluster.py up` first", file=sys.stderr)
        return 1
    if write_alertmanager_files(state, args.tenant):
        reload_alertmanager()
    for tenant in routed_tenants(state):
        print(f"{tenant}: {ALERT_SINK}/tenant/{tenant}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--name",
        default=os.environ.get("GPUCLOUD_LOCALCLUSTER", "default"),
        help="cluster name (state directory)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the cluster (idempotent)")
    up.add_argument("--topology", help="topology file (default: topologies/default.yaml)")
    down = sub.add_parser("down", help="stop the processes `up` started")
    down.add_argument(
        "--wipe", action="store_true", help="also remove certificates, etcd data and logs"
    )
    sub.add_parser("status", help="show each component")
    kc = sub.add_parser("kubeconfig", help="print a kubeconfig path")
    kc.add_argument(
        "--user", help="user name for a client certificate (default: the admin kubeconfig)"
    )
    kc.add_argument("--group", action="append", default=[], help="group of that user (repeatable)")
    lg = sub.add_parser("logs", help="tail a component's log")
    lg.add_argument("component", choices=ORDER)
    lg.add_argument("-n", "--lines", type=int, default=50)
    stop = sub.add_parser("stop", help="stop one component; `up` starts it again")
    stop.add_argument("component", choices=ORDER)
    stop.add_argument("--timeout", type=float, default=15, help="seconds of SIGTERM before SIGKILL")
    sync = sub.add_parser("sync-scheduler-conf", help=argparse.SUPPRESS)
    sink = sub.add_parser("alert-sink", help=argparse.SUPPRESS)
    routes = sub.add_parser("alert-routes", help="route tenants' alerts to their own receiver path")
    routes.add_argument("tenant", nargs="*", help="tenants to route (added to those routed)")
    # Accept --name after the subcommand too.
    for p in (up, down, kc, lg, stop, sync, sink, routes):
        p.add_argument("--name", dest="name", default=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    handler = {
        "up": cmd_up,
        "down": cmd_down,
        "status": cmd_status,
        "kubeconfig": cmd_kubeconfig,
        "logs": cmd_logs,
        "stop": cmd_stop,
        "sync-scheduler-conf": cmd_sync_scheduler_conf,
        "alert-sink": cmd_alert_sink,
        "alert-routes": cmd_alert_routes,
    }[args.command]
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
