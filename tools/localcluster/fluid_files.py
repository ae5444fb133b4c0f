# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fluid's CRDs in the local cluster, from its Go module (`go mod download` of
github.com/fluid-cloudnative/fluid at FLUID): the `data.fluid.io` kinds its chart
installs (charts/fluid/fluid/crds), Dataset and AlluxioRuntime among them. No Fluid
controller runs here (kwok runs no containers): the API server stores and validates the
objects the `dataset` module makes, against Fluid's own schemas, and nothing acts on them.

The pin lives here, not in pins.py, which keys the control plane's binary cache: Fluid
builds no binary."""

from __future__ import annotations

import functools
from pathlib import Path

from kube_client import Kube
from objects import apply_crd_files
from upstream import module_dir

MODULE = "github.com/fluid-cloudnative/fluid"
# The newest version the module proxy serves.
FLUID = "v1.0.8"
CRD_DIR = "charts/fluid/fluid/crds"


@functools.cache
def fluid_module() -> Path:
    return module_dir(MODULE, FLUID)


def fluid_crd_paths(module: Path) -> list[Path]:
    """Every CRD of Fluid's chart: the datasets, the data operations (load, backup,
    migrate, process) and each runtime's kind, as `helm install fluid` puts them."""
    return sorted((module / CRD_DIR).glob("data.fluid.io_*.yaml"))


def apply_fluid_crds(kube: Kube) -> None:
    """Fluid's CRDs, Established; a CRD whose stored copy carries its file's digest is
    not parsed or applied again. `up` runs this in the background beside the Volcano
    components' start."""
    apply_crd_files(kube, fluid_crd_paths(fluid_module()), "Fluid", skip_unchanged=True)
