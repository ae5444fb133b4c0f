# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the API-level benchmarks share: timing ansible-playbook runs against
the local cluster and counting every API request they make.

Ansible runs each module in a subprocess, so the requests are counted from
inside those processes: a ``sitecustomize.py`` written to a temporary
directory on ``PYTHONPATH`` wraps
``kubernetes.client.rest.RESTClientObject.request`` (the one call every
request of the kubernetes client goes through, ``kubernetes.core.k8s`` and
this collection's modules alike) and appends one line per request, method
and path, to the file named by ``GPUCLOUD_BENCH_REQUEST_LOG``. The wrapper
is installed only when ``kubernetes.client.rest`` is imported, so processes
that never talk to the API pay nothing.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
COLLECTIONS = ROOT / ".venv" / "collections"
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))

REQUEST_LOG_ENV = "GPUCLOUD_BENCH_REQUEST_LOG"

SITECUSTOMIZE = '''\
"""Counts kubernetes client requests into the file named by $%(env)s."""
import os
import sys

_LOG = os.environ.get("%(env)s")
_TARGET = "kubernetes.client.rest"


def _count(module):
    cls = module.RESTClientObject
    original = cls.request
    if getattr(original, "_bench_counted", False):
        return

    def request(self, method, url, *args, **kwargs):
        path = url.split("://", 1)[-1]
        path = path[path.find("/"):] if "/" in path else "/"
        fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, ("%%s %%s\\n" %% (method, path.split("?", 1)[0])).encode())
        finally:
            os.close(fd)
        return original(self, method, url, *args, **kwargs)

    request._bench_counted = True
    cls.request = request


class _Finder:
    def find_spec(self, name, path=None, target=None):
        if name != _TARGET:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        sys.meta_path.remove(self)
        loader = spec.loader
        exec_module = loader.exec_module

        def counted_exec(module):
            exec_module(module)
            _count(module)

        loader.exec_module = counted_exec
        return spec


if _LOG:
    sys.meta_path.insert(0, _Finder())
''' % {"env": REQUEST_LOG_ENV}


@dataclass
class Measurement:
    """One timed, counted run."""

    label: str
    seconds: float
    requests: int
    by_method: dict[str, int] = field(default_factory=dict)

    def methods(self) -> str:
        return " ".join(f"{m}:{n}" for m, n in sorted(self.by_method.items()))


def wait_queues_open(kubeconfig: str, prefixes: tuple[str, ...], timeout: float = 1800) -> None:
    """Wait until Volcano's queue controller has opened every managed queue of tenants
    named with ``prefixes`` (untimed). It writes each new queue's status at its own request
    rate, a minute for a few thousand queues: a run timed before that shares the API
    server with those writes, one timed after does not, so every timed run starts
    after it. A real fleet's queues were opened long ago."""
    from kubernetes import client

    from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
        LABEL_TENANT,
        MANAGED_SELECTOR,
        QUEUE_API,
    )

    custom = client.CustomObjectsApi(api_client(kubeconfig))
    group, version = QUEUE_API.split("/")
    start = time.monotonic()
    while True:
        queues = [
            q
            for q in custom.list_cluster_custom_object(
                group, version, "queues", label_selector=MANAGED_SELECTOR
            )["items"]
            if (q["metadata"].get("labels") or {}).get(LABEL_TENANT, "").startswith(prefixes)
        ]
        waiting = sum(1 for q in queues if (q.get("status") or {}).get("state") != "Open")
        took = time.monotonic() - start
        if not waiting:
            print(f"  (every queue Open, {took:.0f} s)", flush=True)
            measure_background()
            return
        if took > timeout:
            print(f"  ({waiting} queues still not Open after {timeout:.0f} s; going on)")
            return
        print(f"  ({waiting} of {len(queues)} queues not Open yet)", flush=True)
        time.sleep(10)


def _cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of every CPU together, from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _busy(window: float) -> float:
    """The fraction of the machine's CPU time spent busy over the next ``window`` seconds."""
    busy0, total0 = _cpu_times()
    time.sleep(window)
    busy1, total1 = _cpu_times()
    return (busy1 - busy0) / max(1, total1 - total0)


_background = {"busy": 0.0}


def measure_background(window: float = 15.0) -> float:
    """How busy the machine is while nothing is being timed or written (untimed): Volcano's
    scheduler and controllers over 30,000 queues keep more than a core busy. ``wait_quiet``
    waits for this level, not for an idle machine that will not come."""
    if Path("/proc/stat").exists():
        _background["busy"] = _busy(window)
        print(f"  (machine {_background['busy']:.0%} busy at rest)", flush=True)
    return _background["busy"]


def wait_quiet(max_busy: float = 0.5, window: float = 5.0, timeout: float = 120.0) -> None:
    """Wait until the machine is back at rest (untimed): at most ``max_busy`` busy over
    ``window`` seconds, or no busier than ``measure_background`` found it plus a margin.
    After a run that wrote thousands of objects, Volcano and the API server go on working
    for a minute; a run timed then shares two cores with them and the next one does not.
    Gives up after ``timeout`` and says so."""
    if not Path("/proc/stat").exists():
        return
    limit = max(max_busy, _background["busy"] + 0.1)
    start = time.monotonic()
    while True:
        busy = _busy(window)
        waited = time.monotonic() - start
        if busy <= limit:
            if waited > window * 1.5:
                print(f"  (machine at rest after {waited:.0f} s)", flush=True)
            return
        if waited > timeout:
            print(f"  (machine still {busy:.0%} busy after {waited:.0f} s; going on)", flush=True)
            return


def best(runs: list[Measurement], label: str) -> Measurement:
    """The fastest of repeated runs, under one label."""
    fastest = min(runs, key=lambda m: m.seconds)
    return Measurement(label, fastest.seconds, fastest.requests, fastest.by_method)


def mean(runs: list[Measurement], label: str) -> Measurement:
    """The mean of repeated runs, under one label: for runs that each change what the
    next one meets (a fleet that grows by every run), taken in ABBA order so that the
    change weighs the same on both sides. A single run is not a mean: it is returned as
    it is, under its own label."""
    if len(runs) == 1:
        return runs[0]
    methods = sorted({method for m in runs for method in m.by_method})
    return Measurement(
        label,
        sum(m.seconds for m in runs) / len(runs),
        round(sum(m.requests for m in runs) / len(runs)),
        {k: round(sum(m.by_method.get(k, 0) for m in runs) / len(runs)) for k in methods},
    )


def abba(turns: int) -> list[tuple[int, str]]:
    """The order of ``turns`` pairs of runs ``a`` and ``b``: a b, b a, a b, ... (ABBA).
    Over two turns a fleet that grows linearly with every run costs both sides the
    same; one turn leaves the second run of the pair carrying the growth."""
    order: list[tuple[int, str]] = []
    for turn in range(turns):
        pair = ("a", "b") if turn % 2 == 0 else ("b", "a")
        order += [(turn, side) for side in pair]
    return order


def default_kubeconfig() -> str:
    """$K8S_AUTH_KUBECONFIG, else $KUBECONFIG, else the local cluster's admin
    kubeconfig (the cluster named by $GPUCLOUD_LOCALCLUSTER)."""
    for var in ("K8S_AUTH_KUBECONFIG", "KUBECONFIG"):
        if os.environ.get(var):
            return os.environ[var]
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "localcluster" / "cluster.py"), "kubeconfig"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip().splitlines()[-1]


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        default=None,
        help="admin kubeconfig (default: $K8S_AUTH_KUBECONFIG, $KUBECONFIG, or the local cluster's)",
    )
    parser.add_argument(
        "--keep-workdir",
        action="store_true",
        help="keep the playbooks, variables, request logs and ansible output",
    )


def api_client(kubeconfig: str):
    """A kubernetes ApiClient for setup and cleanup (these requests are not counted)."""
    from kubernetes import config

    return config.new_client_from_config(config_file=kubeconfig)


class PlaybookRunner:
    """Runs generated playbooks against localhost with the collection's
    ansible.cfg and the venv's Python, counting API requests per run."""

    def __init__(self, kubeconfig: str, keep: bool = False):
        self.kubeconfig = kubeconfig
        self.keep = keep
        self.workdir = Path(tempfile.mkdtemp(prefix="gpucloud-bench-"))
        site = self.workdir / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
        self.site = site
        self.inventory = self.workdir / "inventory.ini"
        self.inventory.write_text(
            f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n"
        )
        self._runs = 0

    def __enter__(self) -> PlaybookRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.keep:
            print(f"work directory kept: {self.workdir}")
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def write(self, name: str, text: str) -> Path:
        path = self.workdir / name
        path.write_text(text)
        return path

    def write_vars(self, name: str, data: Mapping[str, Any]) -> Path:
        return self.write(name, json.dumps(data))

    def run(self, label: str, playbook: Path, vars_file: Path | None = None) -> Measurement:
        """Run one playbook; fail with the tail of its output when it fails."""
        self._runs += 1
        log = self.workdir / f"requests-{self._runs:02d}.log"
        out = self.workdir / f"ansible-{self._runs:02d}.out"
        env = dict(os.environ)
        env.update(
            {
                REQUEST_LOG_ENV: str(log),
                "PYTHONPATH": os.pathsep.join(
                    p for p in (str(self.site), env.get("PYTHONPATH", "")) if p
                ),
                "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
                "K8S_AUTH_KUBECONFIG": self.kubeconfig,
                "ANSIBLE_NOCOLOR": "1",
            }
        )
        cmd = [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(self.inventory),
            str(playbook),
        ]
        if vars_file is not None:
            cmd += ["-e", f"@{vars_file}"]
        wait_quiet()
        print(f"{label} ...", end=" ", flush=True)
        start = time.perf_counter()
        with out.open("w") as fh:
            proc = subprocess.run(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT)
        seconds = time.perf_counter() - start
        print(f"{seconds:.1f} s", flush=True)
        if proc.returncode != 0:
            tail = out.read_text().splitlines()[-40:]
            raise SystemExit(
                f"{label}: ansible-playbook failed (exit {proc.returncode}); "
                f"last lines of {out}:\n" + "\n".join(tail)
            )
        lines = log.read_text().splitlines() if log.exists() else []
        by_method = collections.Counter(line.split(" ", 1)[0] for line in lines)
        return Measurement(label, seconds, len(lines), dict(by_method))


def print_table(
    title: str,
    rows: Sequence[Measurement],
    baseline: Measurement,
    per: int,
    unit: str,
) -> None:
    """One row per run: totals, per-``unit`` figures and ratios to ``baseline``."""
    per_s, per_r = f"s/{unit}", f"req/{unit}"
    ws, wr = max(10, len(per_s) + 2), max(11, len(per_r) + 2)
    if title:
        print(title)
    head = (
        f"{'run':<34}{'seconds':>9}{'requests':>10}"
        f"{per_s:>{ws}}{per_r:>{wr}}{'time x':>8}{'req x':>8}  methods"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.label:<34}{r.seconds:>9.1f}{r.requests:>10}"
            f"{r.seconds / per:>{ws}.3f}{r.requests / per:>{wr}.1f}"
            f"{r.seconds / baseline.seconds:>8.2f}"
            f"{(r.requests / baseline.requests if baseline.requests else 0):>8.2f}"
            f"  {r.methods()}"
        )
    print(f"(ratios are against '{baseline.label}', measured in the same run)")


def queue_manifest(queue: Any) -> dict[str, Any]:
    """A Queue with everything the platform writes on it: the tenant module's
    manifest plus the capacity fields it writes under the capacity field manager."""
    manifest = queue.to_manifest()
    if queue.capacity_fields:
        manifest["spec"].update(queue.capacity_manifest()["spec"])
    return manifest


def chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def k8s_loop_playbook(state: str = "present", extra: str = "") -> str:
    """One ``kubernetes.core.k8s`` task run once per item of ``items``; each
    item is a list of object definitions."""
    return f"""\
- name: kubernetes.core.k8s loop
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Objects of one item
      kubernetes.core.k8s:
        state: {state}
        definition: "{{{{ item.objects }}}}"{extra}
      loop: "{{{{ items }}}}"
      loop_control:
        label: "{{{{ item.label }}}}"
"""
