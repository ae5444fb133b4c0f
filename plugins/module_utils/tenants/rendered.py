# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``state: rendered`` of the ``tenant`` module: one tenant's manifests as its first
run writes them, sorted, with no cluster, no kubeconfig and no Kubernetes client (the
rendering of a catalog of one, ``tenants.render``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.errors import raise_if
from .inputs import parse_present, rendered_network_errors
from .network import ClusterNetworks
from .render import render_catalog


def run_rendered(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The module's answer to ``state: rendered``; None for any other state (the
    module connects)."""
    if params.get("state") != "rendered":
        return None
    spec = parse_present(params)
    raise_if(rendered_network_errors(params))
    return {"changed": False, "manifests": render_catalog([spec], ClusterNetworks())}
