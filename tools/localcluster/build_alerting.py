#!/usr/bin/env python3
"""Builds the local cluster's Alertmanager and amtool, with a cache of their own.

    python3 tools/localcluster/build_alerting.py [--print-dir] [--budget SECONDS]

The binaries land in ``$XDG_CACHE_HOME/gpucloud-localcluster/bin-alerting/<key>/``,
where ``<key>`` hashes this file (which holds the pin) and the Go version. They are
kept apart from build.py's cache so that adding them, or moving their pin, rebuilds
these two alone, not the control plane.

Alertmanager embeds its web UI (``ui/app/dist``), which its release process builds
with npm and its Go module leaves out. The build copies the module out of Go's module
cache, puts one placeholder page where the UI would be, and builds there with the
module's own go.mod and go.sum: the API, routing and receivers are Alertmanager's own
code, unchanged; only the browser UI is missing (docs/localcluster.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build import Budget, cache_root, go_env, go_version, run_with_progress

MODULE = "github.com/prometheus/alertmanager"
ALERTMANAGER = "v0.35.0"
BINARIES = {"alertmanager": "./cmd/alertmanager", "amtool": "./cmd/amtool"}
_PLACEHOLDER = (
    "<!doctype html><title>Alertmanager</title>"
    "<p>The web UI is not built on the local cluster; the API is at /api/v2/.</p>\n"
)


def cache_key() -> str:
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(go_version().encode())
    return digest.hexdigest()[:16]


def bin_dir() -> Path:
    return cache_root() / "bin-alerting" / cache_key()


def _module_copy(into: Path) -> Path:
    """The module's source from Go's module cache, writable, with the UI placeholder."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{MODULE}@{ALERTMANAGER}"],
        check=True,
        capture_output=True,
        text=True,
        cwd="/",
    )
    src = into / "alertmanager"
    shutil.copytree(Path(json.loads(out.stdout)["Dir"]), src)
    for path in src.rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)
    for ui in ("elm", "mantine"):  # ui/web.go serves app/dist/elm and app/dist/mantine
        page = src / "ui/app/dist" / ui / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(_PLACEHOLDER)
    return src


def build(budget: Budget) -> Path:
    target = bin_dir()
    if all((target / name).exists() for name in BINARIES):
        return target
    print(f"build: Alertmanager {ALERTMANAGER} into {target}", flush=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
    try:
        src = _module_copy(work)
        stamp = f"-s -w -X github.com/prometheus/common/version.Version={ALERTMANAGER.lstrip('v')}"
        staging = work / "bin"
        staging.mkdir()
        for name, package in BINARIES.items():
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
                src,
                go_env(),
            )
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--budget", type=float, help="give up (exit 75) after this many seconds")
    parser.add_argument(
        "--print-dir", action="store_true", help="print the binary directory and exit"
    )
    args = parser.parse_args()
    if args.print_dir:
        print(bin_dir())
        return 0
    if shutil.which("go") is None:
        print("build: the Go toolchain is required (go not found on PATH)", file=sys.stderr)
        return 1
    print(build(Budget(args.budget)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
