# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``tenant_catalog`` module's options, checked before it connects: every problem
at once, each naming its field. Pure: the catalog file, when given, is read by the
service and checked here the same way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..spot.reclaim import reclaim_option_errors
from ..workload.pool import selector_errors
from .plan import prune_empty_errors
from .spec import Catalog, parse_catalog

STATES = ("present", "rendered", "gathered", "parsed")
# The states that plan against a cluster's facts, and may prune.
PRUNING_STATES = ("present", "parsed", "gathered")
ON_REFUSAL = ("fail", "skip")
MAX_WORKERS = 64


def option_errors(params: Mapping[str, Any]) -> list[FieldError]:
    """Rule catalog-options: the run-wide options."""
    errors = list(selector_errors(params.get("node_selector"), "node_selector"))
    errors += reclaim_option_errors(params)  # rule reclaim-input: the sale's reclaim
    workers = params.get("workers", 8)
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        errors.append(
            FieldError(
                "workers",
                f"{workers!r} must be a whole number from 1 to {MAX_WORKERS}: the writes sent "
                "at once (rule catalog-options)",
            )
        )
    if params.get("tenants") is not None and params.get("src"):
        errors.append(
            FieldError(
                "src", "give the catalog as tenants or as src, not both (rule catalog-options)"
            )
        )
    state = params.get("state", "present")
    max_prune = params.get("max_prune", 5)
    if isinstance(max_prune, bool) or not isinstance(max_prune, int) or max_prune < 0:
        errors.append(
            FieldError(
                "max_prune",
                f"{max_prune!r} must be a whole number, 0 or more: the most tenants one run may "
                "prune (rule catalog-options)",
            )
        )
    if params.get("prune") and state not in PRUNING_STATES:
        errors.append(
            FieldError(
                "prune",
                f"applies to state: present, parsed or gathered, not {state} (rule catalog-options)",
            )
        )
    if state == "rendered":
        for key in ("pod_cidr", "service_cidr"):
            if not params.get(key):
                errors.append(
                    FieldError(
                        key,
                        "is required with state: rendered: without a cluster to read, the "
                        "NetworkPolicy's cut-outs need the cluster's networks given "
                        "(rule catalog-options)",
                    )
                )
    return errors


def parse_options(params: Mapping[str, Any], tenants: object) -> Catalog | None:
    """The catalog (None for ``state: gathered``, which takes none unless it gathers for a
    prune), after every option is checked; raises once with every error."""
    errors = option_errors(params)
    state = params.get("state", "present")
    if state == "gathered" and not params.get("prune"):
        raise_if(errors)
        return None
    if tenants is None:
        errors.append(
            FieldError("tenants", f"is required with state: {state} (or src: a catalog file)")
        )
        raise_if(errors)
    shared = {k: params.get(k) for k in ("pod_cidr", "service_cidr") if params.get(k)}
    try:
        catalog = parse_catalog(tenants, params.get("defaults"), shared)
    except PlatformValidationError as exc:
        raise PlatformValidationError([*errors, *exc.errors]) from None
    if state in PRUNING_STATES:
        errors += prune_empty_errors(bool(params.get("prune")), catalog.names)
    raise_if(errors)
    return catalog
