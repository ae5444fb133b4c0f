#!/usr/bin/env python3
"""Builds the local federation's Karmada components, with a cache of their own.

    python3 tools/localcluster/build_federation.py [--print-dir] [--budget SECONDS]

The binaries land in ``$XDG_CACHE_HOME/gpucloud-localcluster/bin-federation/<key>/``,
where ``<key>`` hashes this file (which holds the pin) and the Go version: adding it, or
moving its pin, rebuilds these binaries alone, not the control plane.

Four of Karmada's main packages are built, each as ``karmada-<name>``: the
controller-manager, the scheduler, the webhook and the aggregated API server (which
serves ``cluster.karmada.io``). Karmada's API server is a plain kube-apiserver with the
aggregation layer on, and its etcd and kube-controller-manager are the local cluster's
own (build.py). Karmada's go.mod has no ``replace`` or ``exclude`` directives, so
``go install module/cmd/...@version`` builds all four at once with the module's own
go.mod and go.sum, unchanged; each is stamped with the release
(``-X .../pkg/version.gitVersion``).

The CRDs and the webhook configuration are not copied: ``federation.py up`` reads them
from the same module in Go's module cache (``go mod download``).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_extra
from build import Budget, cache_root, go_env, run_with_progress

MODULE = "github.com/karmada-io/karmada"
KARMADA = "v1.16.0"
# The binary's name -> its main package in the module (go install names it after the
# package's last element; it is renamed to the binary's name).
BINARIES = {
    "karmada-controller-manager": "cmd/controller-manager",
    "karmada-scheduler": "cmd/scheduler",
    "karmada-webhook": "cmd/webhook",
    "karmada-aggregated-apiserver": "cmd/aggregated-apiserver",
}
VERSION_PKG = f"{MODULE}/pkg/version"


def cache_key() -> str:
    return build_extra.cache_key(__file__)


def bin_dir() -> Path:
    return cache_root() / "bin-federation" / cache_key()


def ldflags() -> str:
    return " ".join(
        [
            "-s",
            "-w",
            f"-X {VERSION_PKG}.gitVersion={KARMADA}",
            f"-X {VERSION_PKG}.gitTreeState=clean",
            f"-X {VERSION_PKG}.buildDate=1970-01-01T00:00:00Z",
        ]
    )


def install_command() -> list[str]:
    """One ``go install`` of every package: they share their compiled dependencies."""
    packages = [f"{MODULE}/{pkg}@{KARMADA}" for pkg in BINARIES.values()]
    return ["go", "install", "-v", "-trimpath", "-ldflags", ldflags(), *packages]


def build(budget: Budget) -> Path:
    target = bin_dir()
    if all((target / name).exists() for name in BINARIES):
        return target
    started = time.monotonic()
    print(f"build: Karmada {KARMADA} into {target} (many minutes on 2 cores)", flush=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
    try:
        staging = work / "bin"
        staging.mkdir()
        # GOFLAGS without -mod=readonly: `go install pkg@version` refuses it outside a module.
        env = dict(go_env(), GOBIN=str(staging), GOFLAGS="-buildvcs=false")
        run_with_progress(install_command(), "Karmada", budget, work, env)
        for name, pkg in BINARIES.items():
            (staging / pkg.rsplit("/", 1)[-1]).rename(staging / name)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"build: Karmada binaries ready in {time.monotonic() - started:.0f}s", flush=True)
    return target


def main() -> int:
    return build_extra.main(__doc__ or "", bin_dir, build)


if __name__ == "__main__":
    sys.exit(main())
