# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a module's catalog comes from: the ``tenants`` option, or the YAML file ``src``
on the managed host. The one place the catalog reads a file; it never reads the
cluster, and imports no Kubernetes client (``state: rendered`` goes through it)."""

from __future__ import annotations

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

from ..common.errors import FieldError, PlatformValidationError
from .inputs import parse_options
from .spec import Catalog


def load_catalog_file(path: str) -> Any:
    """The ``src`` file: a YAML list of tenants, or a mapping with ``tenants``."""
    if yaml_load is None:
        raise PlatformValidationError(
            [FieldError("src", "reading a catalog file needs the Python package PyYAML")]
        )
    try:
        data = yaml_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise PlatformValidationError([FieldError("src", f"cannot read {path}: {exc}")]) from None
    except YAMLError as exc:
        raise PlatformValidationError(
            [FieldError("src", f"{path} is not YAML: {exc}".splitlines()[0])]
        ) from None
    if isinstance(data, Mapping) and "tenants" in data:
        return data["tenants"]
    return data


def catalog_from(params: Mapping[str, Any]) -> Catalog | None:
    tenants_given = load_catalog_file(params["src"]) if params.get("src") else params.get("tenants")
    return parse_options(params, tenants_given)
