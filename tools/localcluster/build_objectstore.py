#!/usr/bin/env python3
"""Builds the local cluster's S3 server, versitygw, with a cache of its own.

    python3 tools/localcluster/build_objectstore.py [--print-dir] [--budget SECONDS]

The binary lands in ``$XDG_CACHE_HOME/gpucloud-localcluster/bin-objectstore/<key>/``,
where ``<key>`` hashes this file (which holds the pin) and the Go version: adding it, or
moving its pin, rebuilds this one binary, not the control plane.

versitygw is an S3 gateway over a POSIX directory, with its own accounts (an IAM
directory), bucket ownership and an admin API: the tenants' buckets and identities
(docs/object-store.md) run against the real server. ``go install module@version``
builds it with the module's own go.mod and go.sum, unchanged.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build import Budget, cache_root, go_env, go_version, run_with_progress

MODULE = "github.com/versity/versitygw"
VERSITYGW = "v1.8.0"
BINARY = "versitygw"
PACKAGE = f"{MODULE}/cmd/versitygw@{VERSITYGW}"


def cache_key() -> str:
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(go_version().encode())
    return digest.hexdigest()[:16]


def bin_dir() -> Path:
    return cache_root() / "bin-objectstore" / cache_key()


def build(budget: Budget) -> Path:
    target = bin_dir()
    if (target / BINARY).exists():
        return target
    print(f"build: versitygw {VERSITYGW} into {target}", flush=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
    try:
        staging = work / "bin"
        staging.mkdir()
        env = dict(go_env(), GOBIN=str(staging))
        run_with_progress(
            ["go", "install", "-v", "-trimpath", "-ldflags", "-s -w", PACKAGE],
            BINARY,
            budget,
            work,
            env,
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
