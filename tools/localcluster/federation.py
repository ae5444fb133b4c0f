#!/usr/bin/env python3
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A local federation: a Karmada v1.16.0 control plane as processes on 127.0.0.1, with
local clusters (cluster.py) joined to it as its members in Push mode.

    federation.py up [--member LOCATION=CLUSTER[,region=R][,compliance-zone=Z] ...]
                                      start (idempotent), join the members; prints the kubeconfig path
    federation.py down [--wipe]       stop it tier by tier; --wipe removes all its state
    federation.py status              one line per component (and per member Cluster)
    federation.py kubeconfig          the Karmada API server's admin kubeconfig

LOCATION is ``idc`` or ``cloud`` (the Cluster's ``platform.io/node-location`` label),
CLUSTER a running local cluster's name (its state directory, as
``GPUCLOUD_LOCALCLUSTER``); the Cluster in Karmada is named after it. ``up`` remembers
its members: a later ``up`` without ``--member`` joins the same ones again.

The federation's name is ``--name`` or ``$GPUCLOUD_FEDERATION`` (default ``fed``), its
ports are shifted by ``--port-offset`` or ``$GPUCLOUD_FEDERATION_PORT_OFFSET``
(federation_spec.BASE_PORTS), and its state (certificates, etcd data, logs, pids) lives
in ``$XDG_STATE_HOME/gpucloud-federation/<name>`` (default ``~/.local/state``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kubernetes.client  # noqa: E402
import urllib3  # noqa: E402
import yaml  # noqa: E402

import build  # noqa: E402
import build_federation  # noqa: E402
import pki  # noqa: E402
import settings  # noqa: E402
from components import Component  # noqa: E402
from federation_spec import (  # noqa: E402
    FRONT_PROXY,
    IMPERSONATOR_SA,
    KARMADA_CLUSTER,
    OFFSET_ENV,
    ORDER,
    SERVING_CERTS,
    TIERS,
    TOKEN_SECONDS,
    USER_CERTS,
    USERS,
    Member,
    aggregated_apiserver_objects,
    apiserver_url,
    check_members,
    cluster_object,
    cluster_ready,
    components,
    crd_paths,
    join_secrets,
    kubeconfig,
    member_objects,
    member_sa,
    name_from_env,
    namespaces,
    offset_from_env,
    parse_member,
    ports,
    secret_value,
    server_of,
    token_reusable,
    webhook_cert_dir,
    webhook_configuration,
)
from kube_client import REQUEST_TIMEOUT, Kube  # noqa: E402
from objects import apply_crd_files, apply_crds  # noqa: E402
from processes import alive, healthy, read_pids, start, wait_for, write_pids  # noqa: E402
from upstream import module_dir  # noqa: E402

CORE_BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager")
STATE_FILE = "federation.json"  # the port offset and the members `up` joined
CLUSTER_KIND = ("cluster.karmada.io/v1alpha1", "Cluster")


def log(msg: str) -> None:
    print(f"federation: {msg}", flush=True)


def state_dir(name: str) -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "gpucloud-federation" / name


def karmada_module() -> Path:
    return module_dir(build_federation.MODULE, build_federation.KARMADA)


def read_state(state: Path) -> dict:
    try:
        return json.loads((state / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}


def write_state(state: Path, offset: int, members: list[Member]) -> None:
    data = {"port_offset": offset, "members": [m.to_json() for m in members]}
    (state / STATE_FILE).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _write_if_changed(path: Path, data: bytes, mode: int = 0o600) -> None:
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)
        path.chmod(mode)


def ensure_files(state: Path, server: str) -> None:
    """Certificates (one CA of the federation's own), kubeconfigs, the webhook's certificate directory."""
    p = state / "pki"
    pki.ensure_ca(p)
    pki.ensure_service_account_keys(p)
    for name, common_name, names in SERVING_CERTS:
        pki.ensure_cert(p, name, common_name, server_names=names, client=False)
    for user, (common_name, orgs) in USER_CERTS.items():
        pki.ensure_cert(p, user, common_name, orgs)
    pki.ensure_cert(p, FRONT_PROXY, FRONT_PROXY)
    for user in USERS:
        text = yaml.safe_dump(kubeconfig(server, p, user)).encode()
        _write_if_changed(state / f"{user}.kubeconfig", text)
    certs = webhook_cert_dir(state)
    certs.mkdir(parents=True, exist_ok=True)
    for src, dest in (("webhook.crt", "tls.crt"), ("webhook.key", "tls.key")):
        _write_if_changed(certs / dest, (p / src).read_bytes())


def stop_tier(pids: dict[str, int], names: tuple[str, ...], timeout: float = 30) -> None:
    """SIGTERM to every running component of the tier, then wait for all; SIGKILL what
    still runs after ``timeout``."""
    running = {n: pids[n] for n in names if n in pids and alive(pids[n], n)}
    for name, pid in running.items():
        log(f"stopping {name} (pid {pid})")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in running.values()):
        time.sleep(0.2)
    for name, pid in running.items():
        if alive(pid):
            log(f"{name} (pid {pid}) still runs after {timeout:.0f}s: SIGKILL")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    for name in names:
        pids.pop(name, None)


# --- up -----------------------------------------------------------------------------------


def _api_serves(kube: Kube, path: str) -> bool:
    try:
        kube.client.request(
            "GET", kube.client.configuration.host + path, _request_timeout=REQUEST_TIMEOUT
        )
        return True
    except (kubernetes.client.ApiException, urllib3.exceptions.HTTPError, OSError):
        return False


class Up:
    def __init__(self, state: Path, port_map: dict[str, int]):
        self.state = state
        self.ports = port_map
        self.kube = Kube(state, server=apiserver_url(port_map))
        self.ca = (state / "pki" / "ca.crt").read_bytes()

    def before(self, name: str) -> None:
        """What the component named needs applied before it starts (on every `up`,
        whether it runs or not: server-side apply is a no-op when nothing changed)."""
        if name == "karmada-aggregated-apiserver":
            for ns in namespaces():
                self.kube.apply(ns)
            apply_crd_files(self.kube, crd_paths(karmada_module()), "Karmada", skip_unchanged=True)
            # The platform's templates in Karmada are Volcano objects (a tenant's queues,
            # a federated Job): the Karmada API server serves their kinds as a member does.
            apply_crds(self.kube)
        elif name == "karmada-webhook":
            # the aggregated API server runs and is healthy: register it
            for doc in aggregated_apiserver_objects(
                self.ports["karmada-aggregated-apiserver"], self.ca
            ):
                self.kube.apply(doc)
            wait_for(
                "cluster.karmada.io to be served by the Karmada API server",
                lambda: _api_serves(self.kube, "/apis/cluster.karmada.io/v1alpha1/clusters"),
                60,
                self.state,
                "karmada-aggregated-apiserver",
            )
        elif name == "kube-controller-manager":
            # the webhook serves: its configurations may point at it now
            text = (karmada_module() / "artifacts/deploy/webhook-configuration.yaml").read_text()
            for doc in webhook_configuration(text, self.ports["karmada-webhook"], self.ca):
                self.kube.apply(doc)


def start_all(
    up: Up, comps: dict[str, Component], pids: dict[str, int], nice: int | None
) -> list[str]:
    started = []
    for name in ORDER:
        comp = comps[name]
        up.before(name)
        pid = pids.get(name)
        if pid and alive(pid, comp.program):
            continue
        log(f"starting {name}")
        pids[name] = start(up.state, comp, nice)
        write_pids(up.state, pids)
        started.append(name)
        wait_for(
            f"{name} to become healthy",
            lambda c=comp: healthy(up.state, c) and alive(pids[c.name]),
            120,
            up.state,
            name,
        )
    return started


def member_kube(fed_state: Path, member: Member) -> tuple[Kube, Path]:
    """The admin of a member local cluster (its admin certificate, its API server)."""
    mstate = settings.state_dir(member.cluster)
    config = mstate / "admin.kubeconfig"
    if not config.exists():
        raise SystemExit(
            f"federation: member {member.cluster}: no local cluster of that name "
            f"({config} missing); start it with GPUCLOUD_LOCALCLUSTER={member.cluster} "
            "GPUCLOUD_LOCALCLUSTER_PORT_OFFSET=<n> cluster.py up"
        )
    server = server_of(config.read_text())
    kube = Kube(mstate, server=server, discovery=fed_state / f"discovery-{member.cluster}.json")
    return kube, mstate


def member_running(kube: Kube) -> bool:
    return _api_serves(kube, "/readyz")


def _token(kube: Kube, sa: str, secret: dict | None) -> tuple[str, bool]:
    """The stored token when it is still good for the member's ServiceAccount, else a
    new one (TokenRequest); and whether it is new."""
    account = kube.get("v1", "ServiceAccount", sa, KARMADA_CLUSTER)
    assert account is not None  # applied just before
    stored = secret_value(secret, "token")
    if stored and token_reusable(stored.decode(), account["metadata"]["uid"], time.time()):
        return stored.decode(), False
    request = kube.core.create_namespaced_service_account_token(
        sa,
        KARMADA_CLUSTER,
        {"spec": {"expirationSeconds": TOKEN_SECONDS}},
        _request_timeout=REQUEST_TIMEOUT,
    )
    return request.status.token, True


def join(up: Up, member: Member) -> bool:
    """Join one member (idempotent); whether anything was issued anew."""
    kube, mstate = member_kube(up.state, member)
    for obj in member_objects(member):
        kube.apply(obj)
    ca = (mstate / "pki" / "ca.crt").read_bytes()
    fed = up.kube
    secret = fed.get("v1", "Secret", member.cluster, KARMADA_CLUSTER)
    imp_secret = fed.get("v1", "Secret", f"{member.cluster}-impersonator", KARMADA_CLUSTER)
    token, new = _token(kube, member_sa(member.cluster), secret)
    imp_token, imp_new = _token(kube, IMPERSONATOR_SA, imp_secret)
    changed = new or imp_new or secret_value(secret, "caBundle") != ca
    for doc in join_secrets(member.cluster, token, imp_token, ca):
        fed.apply(doc)
    endpoint = server_of((mstate / "admin.kubeconfig").read_text())
    want = cluster_object(member, endpoint)
    have = fed.get(*CLUSTER_KIND, member.cluster)
    changed |= have is None or any(
        (have.get("spec") or {}).get(k) != v for k, v in want["spec"].items()
    )
    changed |= have is not None and any(
        (have["metadata"].get("labels") or {}).get(k) != v
        for k, v in want["metadata"]["labels"].items()
    )
    fed.apply(want)
    return changed


def cmd_up(args: argparse.Namespace) -> int:
    started_at = time.monotonic()
    state = state_dir(args.name)
    recorded = read_state(state)
    try:
        members = [parse_member(m) for m in args.member] or [
            Member(**m) for m in recorded.get("members", [])
        ]
        check_members(members)
    except ValueError as exc:
        print(f"federation: {exc}", file=sys.stderr)
        return 2
    offset = args.port_offset
    if offset is None:
        offset = offset_from_env() if OFFSET_ENV in os.environ else recorded.get("port_offset", 0)
    pids = read_pids(state)
    if recorded and recorded.get("port_offset") != offset and any(alive(p) for p in pids.values()):
        print(
            f"federation: {args.name} runs at port offset {recorded.get('port_offset')}, "
            f"not {offset}; run `down` first",
            file=sys.stderr,
        )
        return 2
    # every member must run before anything starts
    for member in members:
        kube, _ = member_kube(state, member)
        if not member_running(kube):
            print(
                f"federation: member {member.cluster}: its local cluster's API server does not "
                f"answer; start it with GPUCLOUD_LOCALCLUSTER={member.cluster} cluster.py up",
                file=sys.stderr,
            )
            return 1
    core = build.bin_dir()
    if any(not (core / b).exists() for b in CORE_BINARIES):
        log("the local cluster's binaries are missing; building them first")
        build.build(build.Budget(None))
    karmada_bins = build_federation.build(build.Budget(None))

    port_map = ports(offset)
    state.mkdir(parents=True, exist_ok=True)
    ensure_files(state, apiserver_url(port_map))
    write_state(state, offset, members)
    comps = {c.name: c for c in components(state, core, karmada_bins, port_map)}
    up = Up(state, port_map)
    started = start_all(up, comps, pids, args.nice)
    log(
        "control plane: "
        + (f"started {', '.join(started)}" if started else "already running, nothing to start")
    )
    for member in members:
        changed = join(up, member)
        log(
            f"member {member.cluster} ({member.location}): "
            + ("joined" if changed else "already joined, nothing changed")
        )
    for member in members:
        wait_for(
            f"Cluster {member.cluster} to be Ready",
            lambda m=member: cluster_ready(up.kube.get(*CLUSTER_KIND, m.cluster)),
            120,
            state,
            "karmada-controller-manager",
        )
    log(
        f"up in {time.monotonic() - started_at:.1f}s: Karmada API server at {apiserver_url(port_map)}, "
        f"{len(members)} member(s) Ready"
    )
    print(state / "admin.kubeconfig")
    return 0


# --- down, status -------------------------------------------------------------------------


def cmd_down(args: argparse.Namespace) -> int:
    state = state_dir(args.name)
    pids = read_pids(state)
    for tier in TIERS:
        stop_tier(pids, tier)
    if state.exists():
        write_pids(state, pids)
    if args.wipe and state.exists():
        shutil.rmtree(state)
        log(f"removed {state}")
    return 0


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def cmd_status(args: argparse.Namespace) -> int:
    state = state_dir(args.name)
    pids = read_pids(state)
    if not pids:
        print("not running")
        return 3
    recorded = read_state(state)
    port_map = ports(recorded.get("port_offset", 0))
    comps = {
        c.name: c for c in components(state, build.bin_dir(), build_federation.bin_dir(), port_map)
    }
    ok = True
    for name in ORDER:
        pid = pids.get(name)
        up = bool(pid and alive(pid, comps[name].program))
        good = up and healthy(state, comps[name])
        ok &= good
        rss = f"rss={_rss_mb(pid):.0f}MB" if up and pid else ""
        print(
            f"{name:30} {'running' if up else 'stopped':8} pid={pid or '-':<8} "
            f"{'healthy' if good else 'UNHEALTHY':10} {rss}"
        )
    if ok:
        kube = Kube(state, server=apiserver_url(port_map))
        for member in recorded.get("members", []):
            ready = cluster_ready(kube.get(*CLUSTER_KIND, member["cluster"]))
            ok &= ready
            print(
                f"Cluster {member['cluster']:22} {member['location']:8} {'Ready' if ready else 'NOT READY'}"
            )
    return 0 if ok else 1


def cmd_kubeconfig(args: argparse.Namespace) -> int:
    path = state_dir(args.name) / "admin.kubeconfig"
    if not path.exists():
        print("federation: not set up; run `federation.py up` first", file=sys.stderr)
        return 1
    print(path)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--name", default=name_from_env(), help="federation name (state directory)")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the federation and join its members (idempotent)")
    up.add_argument(
        "--member",
        action="append",
        default=[],
        metavar="LOCATION=CLUSTER[,region=R][,compliance-zone=Z]",
        help="a running local cluster to join (repeatable); default: the members of the last `up`",
    )
    up.add_argument(
        "--port-offset", type=int, help="added to every port (default: as last `up`, or 0)"
    )
    up.add_argument(
        "--nice",
        type=int,
        default=int(os.environ.get("GPUCLOUD_FEDERATION_NICE", "0")) or None,
        help="run each component at this nice value (its session's autogroup too)",
    )
    down = sub.add_parser("down", help="stop the processes `up` started, tier by tier")
    down.add_argument(
        "--wipe", action="store_true", help="also remove certificates, etcd data and logs"
    )
    status = sub.add_parser("status", help="show each component and member")
    kc = sub.add_parser("kubeconfig", help="print the admin kubeconfig's path")
    for p in (up, down, status, kc):
        p.add_argument("--name", dest="name", default=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    handler = {"up": cmd_up, "down": cmd_down, "status": cmd_status, "kubeconfig": cmd_kubeconfig}
    return handler[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
