#!/usr/bin/env python3
"""Builds the local cluster's binaries from Go modules, with a cache.

    python3 tools/localcluster/build.py [--budget SECONDS] [--print-dir] [--only NAME]

The binaries land in ``$XDG_CACHE_HOME/gpucloud-localcluster/bin/<key>/`` (by
default under ``~/.cache``), where ``<key>`` hashes go.mod, go.sum, compat/,
pins.py, this file and the Go version: a fresh clone on the same machine
reuses them, and any change to a pin builds anew. Three generated modules are
built: gomod/ (the control plane and Volcano), gomod-metrics/ and gomod-kserve/.
A cold build prints one progress line per package batch; ``--budget`` stops it
(exit 75) when it would take longer, keeping everything compiled so far in
Go's own build cache.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pins

HERE = Path(__file__).resolve().parent
GOMOD = HERE / "gomod"
GOMOD_METRICS = HERE / "gomod-metrics"
GOMOD_KSERVE = HERE / "gomod-kserve"
COMPAT = HERE / "compat"
EXIT_BUDGET = 75


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpucloud-localcluster"


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    env["GOFLAGS"] = "-buildvcs=false -mod=readonly"
    env.setdefault("CGO_ENABLED", "0")
    return env


def go_version() -> str:
    return subprocess.run(
        ["go", "env", "GOVERSION"], check=True, capture_output=True, text=True
    ).stdout.strip()


def cache_key() -> str:
    digest = hashlib.sha256()
    for path in [
        GOMOD / "go.mod",
        GOMOD / "go.sum",
        GOMOD / "cmd/etcd/main.go",
        GOMOD_METRICS / "go.mod",
        GOMOD_METRICS / "go.sum",
        GOMOD_KSERVE / "go.mod",
        GOMOD_KSERVE / "go.sum",
        HERE / "pins.py",
        Path(__file__),
    ]:
        digest.update(path.read_bytes())
    for path in sorted(COMPAT.glob("*")):
        digest.update(path.name.encode() + path.read_bytes())
    digest.update(go_version().encode())
    return digest.hexdigest()[:16]


def bin_dir() -> Path:
    return cache_root() / "bin" / cache_key()


def ldflags() -> str:
    major, minor = pins.KUBERNETES.lstrip("v").split(".")[:2]
    stamp = {
        "gitVersion": pins.KUBERNETES,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
    }
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.{k}={v}" for k, v in stamp.items()]
    flags.append(f"-X volcano.sh/volcano/pkg/version.Version={pins.VOLCANO}")
    return " ".join(flags)


def assemble_volcano_apis() -> Path:
    """volcano.sh/apis = the newest release the registry serves + compat/.

    Volcano 1.15.1 builds against its in-repo apis staging directory, which the
    published volcano module leaves out; the one identifier 1.15 adds and
    Volcano uses is supplied by compat/ (see docs/localcluster.md).
    """
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"volcano.sh/apis@{pins.VOLCANO_APIS_BASE}"],
        check=True,
        capture_output=True,
        text=True,
        cwd="/",
    )
    src = Path(json.loads(out.stdout)["Dir"])
    dest = GOMOD / "_volcano_apis"
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest)
    for path in dest.rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)
    for extra in COMPAT.glob("*.go"):
        shutil.copy(extra, dest / "pkg/apis/scheduling/v1beta1" / extra.name)
    return dest


ALL_BINARIES = [
    *pins.MODULE_BINARIES,
    *pins.INSTALLED_BINARIES,
    *pins.METRICS_BINARIES,
    *pins.KSERVE_BINARIES,
]


def build_kserve(staging: Path, budget: Budget, env: dict[str, str]) -> None:
    """KServe's controller, from gomod-kserve/ (KServe's own client-library pins).

    KServe stamps no version into its binaries, and the Kubernetes stamp of
    ldflags() would misreport the client-go it is built on, so neither is set.
    """
    for name, package in pins.KSERVE_BINARIES.items():
        run_with_progress(
            [
                "go",
                "build",
                "-v",
                "-trimpath",
                "-ldflags",
                "-s -w",
                "-o",
                str(staging / name),
                package,
            ],
            name,
            budget,
            GOMOD_KSERVE,
            env,
        )


def build_metrics(
    staging: Path, budget: Budget, env: dict[str, str], names: list[str] | None = None
) -> None:
    """Prometheus, promtool and kube-state-metrics, each stamped with its release."""
    for name, (package, version) in pins.METRICS_BINARIES.items():
        if names is not None and name not in names:
            continue
        stamp = f"-s -w -X github.com/prometheus/common/version.Version={version}"
        run_with_progress(
            [
                "go",
                "build",
                "-v",
                "-trimpath",
                "-ldflags",
                stamp,
                "-o",
                str(staging / name),
                package,
            ],
            name,
            budget,
            GOMOD_METRICS,
            env,
        )


class Budget:
    def __init__(self, seconds: float | None):
        self.deadline = time.monotonic() + seconds if seconds is not None else None

    def left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()


def run_with_progress(
    cmd: list[str], label: str, budget: Budget, cwd: Path, env: dict[str, str]
) -> None:
    """Run a go command with -v, printing a progress line every 25 packages."""
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    count = 0
    tail: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        left = budget.left()
        if left is not None and left <= 0:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
            print(
                f"build: {label}: out of budget after {count} packages; compiled packages stay in Go's cache"
            )
            sys.exit(EXIT_BUDGET)
        line = line.rstrip()
        if line.startswith(("go: downloading", "go: finding")):
            continue
        tail = ([*tail, line])[-40:]
        count += 1
        if count % 25 == 0:
            print(
                f"build: {label}: {count} packages compiled, {time.monotonic() - start:.0f}s",
                flush=True,
            )
    if proc.wait() != 0:
        print("\n".join(tail), file=sys.stderr)
        raise SystemExit(f"build: {label} failed (exit {proc.returncode})")
    print(f"build: {label}: done in {time.monotonic() - start:.0f}s ({count} packages)", flush=True)


def build(budget: Budget) -> Path:
    target = bin_dir()
    if all((target / name).exists() for name in ALL_BINARIES):
        print(f"build: cached binaries in {target}")
        return target
    started = time.monotonic()
    print(f"build: cold build into {target} (many minutes on 2 cores)", flush=True)
    assemble_volcano_apis()
    env = go_env()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
    try:
        packages = list(pins.MODULE_BINARIES.values())
        run_with_progress(
            [
                "go",
                "build",
                "-v",
                "-trimpath",
                "-ldflags",
                ldflags(),
                "-o",
                str(staging) + "/",
                *packages,
            ],
            "control plane and Volcano",
            budget,
            GOMOD,
            env,
        )
        for name, package in pins.MODULE_BINARIES.items():
            built = staging / package.rstrip("/").rsplit("/", 1)[-1]
            built.rename(staging / (name + ".tmp"))
        for name in pins.MODULE_BINARIES:
            (staging / (name + ".tmp")).rename(staging / name)
        install_env = dict(env, GOBIN=str(staging), GOFLAGS="-buildvcs=false")
        for name, ref in pins.INSTALLED_BINARIES.items():
            run_with_progress(
                ["go", "install", "-v", "-trimpath", "-ldflags=-s -w", ref],
                name,
                budget,
                Path("/"),
                install_env,
            )
        build_metrics(staging, budget, env)
        build_kserve(staging, budget, env)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    print(f"build: all binaries ready in {time.monotonic() - started:.0f}s")
    return target


def build_only(name: str, budget: Budget) -> Path:
    """One metrics binary alone (the unit stage needs promtool, not the cluster)."""
    if name not in pins.METRICS_BINARIES:
        raise SystemExit(f"build: --only {name}: one of {', '.join(pins.METRICS_BINARIES)}")
    target = bin_dir()
    if (target / name).exists():
        print(f"build: cached {name} in {target}")
        return target / name
    target.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
    try:
        build_metrics(staging, budget, go_env(), [name])
        (staging / name).rename(target / name)
    finally:
        shutil.rmtree(staging)
    return target / name


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--budget", type=float, help="give up (exit 75) after this many seconds")
    parser.add_argument(
        "--print-dir",
        action="store_true",
        help="print the binary directory for this checkout and exit",
    )
    parser.add_argument(
        "--only",
        metavar="NAME",
        help=f"build only this one ({', '.join(pins.METRICS_BINARIES)}) and print its path",
    )
    args = parser.parse_args()
    if args.print_dir:
        print(bin_dir())
        return 0
    if shutil.which("go") is None:
        print("build: the Go toolchain is required (go not found on PATH)", file=sys.stderr)
        return 1
    if args.only:
        print(build_only(args.only, Budget(args.budget)))
        return 0
    build(Budget(args.budget))
    return 0


if __name__ == "__main__":
    sys.exit(main())
