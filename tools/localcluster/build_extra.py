#!/usr/bin/env python3
"""What a build beside build.py needs (build_objectstore.py): a cache key from the pin
file and the Go version, and the command line. Such a build keeps its binaries in a cache
directory of its own, so that adding one, or moving its pin, rebuilds it alone, not the
control plane.

build_alerting.py still has its own copy of both: its cache key hashes that file, so
moving the copy here would rebuild Alertmanager once on every machine for no change.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build import Budget, go_version


def cache_key(pin_file: str | Path) -> str:
    """The file that holds the pin, and the Go version, hashed."""
    digest = hashlib.sha256(Path(pin_file).read_bytes())
    digest.update(go_version().encode())
    return digest.hexdigest()[:16]


def main(description: str, bin_dir: Callable[[], Path], build: Callable[[Budget], Path]) -> int:
    """``[--print-dir] [--budget SECONDS]``: print the binaries' directory, or build into it."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
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
