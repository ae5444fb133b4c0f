# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``state: rendered`` of the ``tenant`` module on its own: one tenant's manifests as its
first run writes them, sorted, with no cluster, no kubeconfig and no Kubernetes client.
The module answers it through its flow (``tenants.tenant_flow``: the plan over the empty
facts, the rendering of a catalog of one, ``tenants.render``); this is that answer without
the module's ``state`` and ``summary``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .tenant_flow import RENDERED, empty_facts, parse, plan, report


def run_rendered(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The answer to ``state: rendered``; None for any other state (the module connects)."""
    if params.get("state") != RENDERED:
        return None
    request = parse(params)
    return {"changed": False, **report(request, plan(request, empty_facts(request)))}
