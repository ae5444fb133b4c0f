# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a module's catalog comes from: the ``tenants`` option, or the YAML file ``src``
on the managed host. The one place the catalog reads a file; it never reads the
cluster, and imports no Kubernetes client (``state: rendered`` goes through it)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

try:
    # libyaml's safe loader where it is installed: a fleet's catalog file is large.
    from ansible.module_utils.common.yaml import yaml_load
    from yaml import YAMLError
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml_load = None
    YAMLError = ValueError

from ..common.errors import FieldError, PlatformValidationError, raise_if
from .inputs import option_errors, parse_options
from .plan import PRUNE_MAX_DEFAULT
from .spec import Catalog
from .steps import CatalogRequest

# The options the sale, its reclaim and the oversell guard read (``catalog.sale``,
# ``catalog.sale_io``): every option but the catalog and the run's own.
NOT_SALE_OPTIONS = ("tenants", "src", "defaults", "facts", "prune_confirm")


def resolved(path: str, cwd: str | None = None) -> Path:
    """Rule catalog-path: ``path`` as an absolute path, ``~`` expanded, a relative path
    taken from ``cwd`` (default: the process's working directory). Nothing is read; the
    path need not exist. ``playbooks/tenant_catalog.yml`` resolves its variables this way
    against the directory it was started from (the project checkout in AWX) before the
    module sees them."""
    expanded = os.path.expanduser(path)
    return Path(os.path.normpath(os.path.join(cwd or os.getcwd(), expanded)))


def load_catalog_file(path: str) -> Any:
    """The ``src`` file: a YAML list of tenants, or a mapping with ``tenants``. An error
    names the absolute path that was read (rule catalog-path)."""
    if yaml_load is None:
        raise PlatformValidationError(
            [FieldError("src", "reading a catalog file needs the Python package PyYAML")]
        )
    where = resolved(path)
    try:
        data = yaml_load(where.read_text(encoding="utf-8"))
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise PlatformValidationError(
            [FieldError("src", f"cannot read the catalog file {where}: {why}")]
        ) from None
    except YAMLError as exc:
        raise PlatformValidationError(
            [FieldError("src", f"{where} is not YAML: {exc}".splitlines()[0])]
        ) from None
    if isinstance(data, Mapping) and "tenants" in data:
        return data["tenants"]
    return data


def catalog_from(params: Mapping[str, Any]) -> Catalog | None:
    """The catalog, every option checked; None for ``state: gathered``, which reads no
    catalog unless it gathers for a prune. The options are checked before the ``src``
    file is read."""
    if params.get("state") == "gathered" and not params.get("prune"):
        return parse_options(params, None)
    if params.get("src"):
        raise_if(option_errors(params))
    tenants_given = load_catalog_file(params["src"]) if params.get("src") else params.get("tenants")
    return parse_options(params, tenants_given)


def parse_request(params: Mapping[str, Any]) -> CatalogRequest:
    """The flow's ``parse``: every option checked and the catalog read (``tenants``, or the
    file ``src``), before the module connects."""
    catalog = catalog_from(params)
    return CatalogRequest(
        state=params.get("state") or "present",
        catalog=catalog,
        options={k: v for k, v in params.items() if k not in NOT_SALE_OPTIONS},
        prune=bool(params.get("prune")),
        max_prune=params.get("max_prune", PRUNE_MAX_DEFAULT),
        prune_confirm=tuple(params.get("prune_confirm") or ()),
        force=bool(params.get("force")),
        on_refusal=params.get("on_refusal", "fail"),
        workers=params.get("workers", 8),
        progress_file=params.get("progress_file"),
    )
