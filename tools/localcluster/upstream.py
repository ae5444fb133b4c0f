# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the pinned upstream modules' files are: kwok's stages, Volcano's chart
and KServe's config/ are read from the Go module cache (`go mod download`),
the same sources build.py compiles the binaries from."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

import pins


def module_dir(module: str, version: str) -> Path:
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        check=True,
        capture_output=True,
        text=True,
        cwd="/",
    )
    return Path(json.loads(out.stdout)["Dir"])


def volcano_chart() -> Path:
    return module_dir("volcano.sh/volcano", pins.VOLCANO) / "installer/helm/chart/volcano"


@functools.cache
def kserve_module() -> Path:
    return module_dir("github.com/kserve/kserve", pins.KSERVE)


def default_scheduler_conf() -> str:
    return (volcano_chart() / "config/volcano-scheduler.conf").read_text()
