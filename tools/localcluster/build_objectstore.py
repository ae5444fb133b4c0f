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

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_extra
from build import Budget, cache_root, go_env, run_with_progress

MODULE = "github.com/versity/versitygw"
VERSITYGW = "v1.8.0"
BINARY = "versitygw"
PACKAGE = f"{MODULE}/cmd/versitygw@{VERSITYGW}"


def cache_key() -> str:
    return build_extra.cache_key(__file__)


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
    return build_extra.main(__doc__ or "", bin_dir, build)


if __name__ == "__main__":
    sys.exit(main())
