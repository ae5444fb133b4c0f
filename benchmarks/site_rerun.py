#!/usr/bin/env python3
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ratio benchmark: ``site.yml``'s unchanged run, this checkout against a baseline.

The baseline is another revision of this repository (``--baseline``, default the
last revision before the unchanged run was made cheaper), checked out into a
temporary git worktree with its own collection link. Against the same cluster,
in this order: the baseline converges ``site.yml`` on ``inventories/local``
(untimed), then runs it again, unchanged (timed); then this checkout does the
same. Each timed run counts its tasks, module processes and API requests.

Prints the table and the ratio the target is stated in (this checkout's
unchanged run at most half of the baseline's); asserts nothing.

    .venv/bin/python benchmarks/site_rerun.py [--baseline REV] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _api_counter import (
    REQUEST_LOG_ENV,
    SITECUSTOMIZE,
    Measurement,
    add_common_arguments,
    default_kubeconfig,
    print_table,
)

ROOT = Path(__file__).resolve().parent.parent
# The last revision whose site.yml read the fleet per task and per host.
DEFAULT_BASELINE = "c8d00cc"
RECAP = re.compile(r"ok=(\d+)\s+changed=(\d+)")


def worktree(revision: str, parent: Path) -> Path:
    """``revision`` checked out under ``parent``, with the collection link
    ``scripts/setup`` makes (``.venv/collections/ansible_collections/gpucloud/platform``)."""
    tree = parent / "baseline"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), revision],
        check=True,
    )
    link = tree / ".venv" / "collections" / "ansible_collections" / "gpucloud" / "platform"
    link.parent.mkdir(parents=True)
    link.symlink_to(tree)
    return tree


def site(tree: Path, kubeconfig: str, log: Path | None, label: str) -> tuple[Measurement, str]:
    """One ``ansible-playbook site.yml`` of ``tree`` on its local inventory, timed."""
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_CONFIG": str(tree / "ansible.cfg"),
            "K8S_AUTH_KUBECONFIG": kubeconfig,
            "ANSIBLE_NOCOLOR": "1",
        }
    )
    if log is not None:
        site_dir = log.parent / "site"
        site_dir.mkdir(exist_ok=True)
        (site_dir / "sitecustomize.py").write_text(SITECUSTOMIZE)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site_dir), env.get("PYTHONPATH")) if p)
        env[REQUEST_LOG_ENV] = str(log)
        log.write_text("")
    playbook = Path(sys.executable).parent / "ansible-playbook"
    print(f"{label} ... ", end="", flush=True)
    start = time.perf_counter()
    proc = subprocess.run(
        [str(playbook), "-i", "inventories/local", "site.yml"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    print(f"{seconds:.1f} s", flush=True)
    if proc.returncode != 0:
        raise SystemExit(f"{label} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    lines = log.read_text().splitlines() if log is not None else []
    by_method: dict[str, int] = {}
    for line in lines:
        method = line.split(" ", 1)[0]
        by_method[method] = by_method.get(method, 0) + 1
    recap = RECAP.findall(proc.stdout)
    tasks = sum(int(ok) for ok, _changed in recap)
    changed = sum(int(c) for _ok, c in recap)
    return Measurement(
        label, seconds, len(lines), by_method
    ), f"{tasks} task results, changed={changed}"


def rerun(tree: Path, kubeconfig: str, work: Path, label: str, repeat: int) -> Measurement:
    site(tree, kubeconfig, None, f"  ({label}: converge)")
    runs = [
        site(tree, kubeconfig, work / f"{label}-{n}.log", f"{label}, unchanged run #{n + 1}")
        for n in range(repeat)
    ]
    best, note = min(runs, key=lambda run: run[0].seconds)
    print(f"  {label}: {note}")
    return Measurement(f"{label}, unchanged", best.seconds, best.requests, best.by_method)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision to compare with")
    parser.add_argument("--repeat", type=int, default=2, help="unchanged runs of each (best kept)")
    add_common_arguments(parser)
    args = parser.parse_args()
    kubeconfig = args.kubeconfig or default_kubeconfig()
    with tempfile.TemporaryDirectory(prefix="site-rerun-") as tmp:
        work = Path(tmp)
        tree = worktree(args.baseline, work)
        try:
            base = rerun(tree, kubeconfig, work, f"baseline {args.baseline}", args.repeat)
            this = rerun(ROOT, kubeconfig, work, "this checkout", args.repeat)
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False
            )
    print()
    print_table(
        f"site.yml on inventories/local, unchanged, best of {args.repeat}",
        [base, this],
        base,
        1,
        "run",
    )
    print(
        f"\nthis checkout / baseline: {this.seconds / base.seconds:.2f} (the target is at most 0.5)"
    )


if __name__ == "__main__":
    main()
