# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A catalog run sells like a purchase, once for the whole run: before its first write
the spot reclaim ``tenant_create.yml`` makes for a purchase (``spot.service.RECLAIM_FLOW``,
the code behind ``spot_reclaim``, as a sale: rule unsold-reclaim-need; it decides again
under the ``spot-reclaim`` Lease, as ``payg_capacity``'s growth does), after its last
write the spot recompute (``spot.service.RECOMPUTE_FLOW``, the code behind
``spot_capacity``). What the run sells, and whether it reclaims and recomputes, is rule
catalog-sale (``capacity.purchase``, worked out in the plan by
``catalog.steps.sale_planned``); the refusal without ``reclaim`` and the summary
are ``catalog.sale``. This file only gathers and applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..capacity.purchase import CatalogSale
from ..common.errors import PlatformValidationError, Refused
from ..kube import cluster as kube
from ..kube.lease_io import default_holder
from ..spot import reclaim_io
from ..spot import service as spot
from ..spot.reclaim import NEED_FROM_UNSOLD, RECLAIM_OPTIONS, ReclaimError, reclaim_request
from .sale import sale_reclaim_errors


def reclaim_params(params: Mapping[str, Any], sale: CatalogSale) -> dict[str, Any]:
    """``spot_reclaim``'s options for the sale, as ``tenant_create.yml`` gives them: the
    GPUs the run adds, counted from the unsold ones."""
    options = {k: params.get(k, spec.get("default")) for k, spec in RECLAIM_OPTIONS.items()}
    options.update(
        need=sale.added,
        need_from=NEED_FROM_UNSOLD,
        demand_reason=sale.reason(params.get("demand_reason")),
        allow_partial=False,
        node_selector=params.get("node_selector") or {},
    )
    return options


def reclaim_for_sale(
    params: Mapping[str, Any], cluster: kube.Cluster, check_mode: bool, sale: CatalogSale
) -> dict[str, Any] | None:
    """Before the first write: the sale's reclaim (in check mode its victims only), or
    None when the run sells nothing more. With ``reclaim: false`` a sale that needs spot
    jobs reclaimed is refused instead (rule catalog-sale-reclaim)."""
    if not sale.reclaims:
        return None
    options = reclaim_params(params, sale)
    if not params.get("reclaim", True):
        request = reclaim_request(
            options,
            sale.added,
            options["demand_reason"],
            default_holder(),
            need_from=NEED_FROM_UNSOLD,
        )
        try:
            planned, _victims = reclaim_io.plan(cluster, request)  # reads only
        except ReclaimError as exc:
            planned = exc.result
        errors = sale_reclaim_errors(sale, False, planned)
        if errors:
            err = PlatformValidationError(errors)
            raise Refused(
                f"{err} (nothing of the catalog was written)",
                errors=err.messages,
                sale=sale.as_dict(),
            )
        return None
    try:
        return spot.run_reclaim(options, cluster, check_mode)
    except ReclaimError as exc:
        raise Refused(
            f"{exc} (nothing of the catalog was written)", sale=sale.as_dict(), reclaim=exc.result
        ) from None


def recompute_after_sale(
    params: Mapping[str, Any], cluster: kube.Cluster, check_mode: bool, sale: CatalogSale
) -> dict[str, Any] | None:
    """After the last write: every spot queue's capability from the idle pool, once, when
    a purchase changed; None otherwise, and in check mode (nothing written yet to
    recompute from: ``catalog.sale.spot_after`` tells what it would come to)."""
    if check_mode or not sale.recomputes:
        return None
    options = {
        "node_selector": params.get("node_selector") or {},
        "allow_empty_pool": False,
        "offer": params.get("spot_offer") or "unsold",
        "apportion": params.get("spot_apportion") or "share",
    }
    return spot.RECOMPUTE_FLOW.run(options, cluster, check_mode)
