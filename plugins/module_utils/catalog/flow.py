# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``tenant_catalog`` module's flow (``kube.flow``): parse (``source_io``), gather and
apply (``service``), plan and report (``steps``).

The service, and with it the Kubernetes client, is imported only when the flow gathers
or applies: ``rendered`` and ``parsed`` answer without either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..kube.flow import GATHERED, Flow
from .source_io import parse_request
from .steps import (
    CatalogFacts,
    CatalogPlan,
    CatalogRequest,
    empty_facts,
    facts_in,
    facts_out,
    gathered_entries,
    plan_catalog,
    report_catalog,
)

if TYPE_CHECKING:  # the client is imported at run time only once the module connects
    from ..kube.cluster import Cluster


def gather(request: CatalogRequest, cluster: Cluster) -> CatalogFacts:
    from . import service  # the client, now that the module connects

    return service.gather_catalog(request, cluster)


def apply(
    request: CatalogRequest, planned: CatalogPlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    from . import service

    return service.apply_catalog(request, planned, cluster, check_mode)


class CatalogFlow(Flow[CatalogRequest, CatalogFacts, CatalogPlan]):
    """The contract, with ``state: gathered`` also answering the live tenants as catalog
    entries (``tenants``, rule gathered-entry), as it did before it returned the facts:
    applying them with ``state: present`` to the same cluster writes nothing."""

    def run(
        self,
        params: Mapping[str, Any],
        cluster: Cluster,
        check_mode: bool,
        request: CatalogRequest | None = None,
    ) -> dict:
        if params.get("state") != GATHERED:
            return super().run(params, cluster, check_mode, request)
        facts = self.gather(self.parse(params) if request is None else request, cluster)
        return {"changed": False, "gathered": facts_out(facts), "tenants": gathered_entries(facts)}


CATALOG_FLOW = CatalogFlow(
    parse=parse_request,
    gather=gather,
    plan=plan_catalog,
    apply=apply,
    report=report_catalog,
    empty=empty_facts,
    facts_out=facts_out,
    facts_in=facts_in,
)
