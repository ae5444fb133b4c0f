# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resource quantities and resource lists (``{"cpu": "8", "nvidia.com/gpu": 4}``).

Parsing is the Kubernetes client's own ``parse_quantity``, so "1Gi", "500m" and
"1e3" mean here exactly what they mean to the API server. Values are kept as
``Decimal`` so sums and comparisons are exact.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import FieldError, PlatformValidationError

# The client module whose parser and formatter are used.
CLIENT_QUANTITY = "kubernetes.utils.quantity"


def _client_quantity() -> ModuleType | None:
    """The client's ``kubernetes/utils/quantity.py``, without importing the client.

    ``import kubernetes.utils.quantity`` runs ``kubernetes/__init__.py``, which imports
    the whole API client (about half a second per process). The quantity file needs
    only the standard library (``decimal``), so it is loaded on its own from where the
    package is installed; ``find_spec`` of a top-level package executes nothing. When
    the client is already imported its module is used; when the file cannot be loaded
    on its own (a client release that changed it) the package import is the fallback.
    None when the client is not installed."""
    loaded = sys.modules.get(CLIENT_QUANTITY)
    if loaded is not None:
        return loaded
    try:
        package = importlib.util.find_spec("kubernetes")
        locations = list(package.submodule_search_locations or ()) if package else []
        for location in locations:
            path = Path(location) / "utils" / "quantity.py"
            spec = importlib.util.spec_from_file_location("_kubernetes_utils_quantity", path)
            if spec is None or spec.loader is None or not path.is_file():
                continue
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    except (ImportError, OSError, ValueError):
        pass
    try:
        return importlib.import_module(CLIENT_QUANTITY)
    except ImportError:  # pragma: no cover - reported by the modules' requirement check
        return None


_client = _client_quantity()
_format_quantity = getattr(_client, "format_quantity", None)
_parse_quantity = getattr(_client, "parse_quantity", None)

GPU = "nvidia.com/gpu"
CPU = "cpu"
MEMORY = "memory"
RDMA = "rdma/hca"
# Resources a queue quota or job may name. Extended resources a site adds go
# through ``extra_resources`` where the caller allows them.
KNOWN_RESOURCES = (CPU, MEMORY, GPU, RDMA, "ephemeral-storage", "pods")
# Resources that can only be counted in whole units.
WHOLE_RESOURCES = (GPU, RDMA, "pods")

Resources = dict[str, Decimal]


def parse_quantity(value: object) -> Decimal:
    """The Kubernetes client's quantity parser; ValueError for anything it refuses."""
    if _parse_quantity is None:
        raise ValueError("the Python 'kubernetes' package is required to parse quantities")
    return _parse_quantity(value)


# Quantities already accepted, per exact input type (str or int): the same "8",
# "64Gi" and "500m" recur in every job of a LIST. Only ordinary values are kept:
# finite, between 10**-ORDINARY_DIGITS and 10**ORDINARY_DIGITS (or 0), so no sum
# or product of a few of them times an int32 count can overflow or be invalid.
_KNOWN: dict[type, dict[Any, Decimal]] = {str: {}, int: {}}
ORDINARY_DIGITS = 100
# Past this many entries the memo starts over (quantities nobody repeats).
MEMO_LIMIT = 4096


def is_positive(value: object) -> bool:
    """Whether ``value`` is a quantity above zero (a size: ``500Gi``); False for anything
    the parser refuses, and for a bool (YAML's ``yes`` is not a size)."""
    if value is None or isinstance(value, bool):
        return False
    try:
        return parse_quantity(str(value)) > 0
    except (TypeError, ValueError, ArithmeticError):
        return False


def remembered(value: object) -> Decimal | None:
    """The quantity ``parse`` accepted for ``value`` before (the very ``Decimal`` it
    returned), when that was an ordinary one; None otherwise."""
    memo = _KNOWN.get(type(value))
    return None if memo is None else memo.get(value)


def parse(value: object, field: str) -> Decimal:
    """Rule quantity: a non-negative Kubernetes quantity.

    ``read_quantity`` reads it; a value read before is answered from a memo."""
    number = remembered(value)
    if number is None:
        number = read_quantity(value, field)
        memo = _KNOWN.get(type(value))
        if (
            memo is not None
            and number.is_finite()
            and -ORDINARY_DIGITS < number.adjusted() < ORDINARY_DIGITS
        ):
            if len(memo) >= MEMO_LIMIT:
                memo.clear()
            memo[value] = number
    return number


def read_quantity(value: object, field: str) -> Decimal:
    """Rule quantity, read every time (the general path of ``parse``)."""
    if _parse_quantity is None:
        raise PlatformValidationError(
            [FieldError(field, "the Python 'kubernetes' package is required to parse quantities")]
        )
    if isinstance(value, bool) or value is None or (isinstance(value, str) and not value.strip()):
        raise PlatformValidationError(
            [FieldError(field, f"{value!r} is not a quantity (for example 8, '500m', '64Gi')")]
        )
    try:
        number = _parse_quantity(value)
    except (ValueError, TypeError):
        raise PlatformValidationError(
            [FieldError(field, f"{value!r} is not a quantity (for example 8, '500m', '64Gi')")]
        ) from None
    if number < 0:
        raise PlatformValidationError(
            [FieldError(field, f"{value!r} is negative; quantities must be 0 or more")]
        )
    return number


def parse_resources(
    value: object, field: str, extra_resources: Iterable[str] = (), allow_empty: bool = True
) -> Resources:
    """Parse a resource list, collecting every bad entry before raising."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise PlatformValidationError(
            [FieldError(field, f"{value!r} must be a mapping of resource name to quantity")]
        )
    known = set(KNOWN_RESOURCES) | set(extra_resources)
    errors: list[FieldError] = []
    parsed: Resources = {}
    for name, raw in value.items():
        sub = f"{field}.{name}"
        if name not in known:
            errors.append(
                FieldError(
                    sub, f"unknown resource name {name!r}; known: {', '.join(sorted(known))}"
                )
            )
            continue
        try:
            number = parse(raw, sub)
        except PlatformValidationError as exc:
            errors.extend(exc.errors)
            continue
        if name in WHOLE_RESOURCES and number != number.to_integral_value():
            errors.append(
                FieldError(sub, f"{raw!r} is not a whole number; {name} is counted in whole units")
            )
            continue
        parsed[name] = number
    if not parsed and not allow_empty and not errors:
        errors.append(FieldError(field, "must name at least one resource"))
    if errors:
        raise PlatformValidationError(errors)
    return parsed


# The binary units memory is shown in, largest first.
_BINARY = (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10))


def _suffix(value: Decimal, resource: str) -> str:
    """The unit ``fmt`` shows a quantity in: memory in the largest exact binary unit,
    a fraction in millicores, else none. Choosing it is ours; the client's
    ``format_quantity`` only writes a value in a unit it is given."""
    if value != value.to_integral_value():
        milli = value * 1000
        return "m" if milli == milli.to_integral_value() else ""
    whole = int(value)
    if resource in (MEMORY, "ephemeral-storage") and whole:
        return next((suffix for suffix, size in _BINARY if whole % size == 0), "")
    return ""


def fmt(value: Decimal, resource: str = "") -> int | str:
    """Render a quantity the way Kubernetes shows it: whole numbers as ints,
    memory in the largest exact binary unit, fractional CPU in millicores."""
    suffix = _suffix(value, resource)
    if suffix:
        return _format_quantity(value, suffix, quantize=Decimal(1))
    if value == value.to_integral_value():
        whole = int(value)
        return whole if resource in WHOLE_RESOURCES or resource in ("", CPU) else str(whole)
    return str(value)


def render(resources: Mapping[str, Decimal]) -> dict[str, int | str]:
    """A resource list as Kubernetes manifests write it (sorted keys, stable)."""
    return {name: _as_manifest_value(resources[name], name) for name in sorted(resources)}


def _as_manifest_value(value: Decimal, name: str) -> int | str:
    rendered = fmt(value, name)
    # Manifests carry quantities as strings except for plain whole numbers of
    # countable things, which is how Volcano's own examples write GPUs.
    return (
        rendered
        if isinstance(rendered, str)
        else (rendered if name in WHOLE_RESOURCES else str(rendered))
    )


def add(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> Resources:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, Decimal(0)) + v
    return out


def sub(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> Resources:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, Decimal(0)) - v
    return out


def total(items: Iterable[Mapping[str, Decimal]]) -> Resources:
    out: Resources = {}
    for item in items:
        out = add(out, item)
    return out


def exceeding(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> list[str]:
    """Resource names where ``a`` is more than ``b`` (a missing entry in ``b``
    means unlimited, the way Volcano reads an unset capability)."""
    return sorted(k for k, v in a.items() if k in b and v > b[k])


def equal(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> bool:
    keys = set(a) | set(b)
    return all(a.get(k, Decimal(0)) == b.get(k, Decimal(0)) for k in keys)


# --- quantities for people (summaries) ---------------------------------------------

# How a summary shows a resource: (suffix written after the number, size of one unit,
# the unit's name for a heading). CPU in cores, memory and storage in Gi; anything else
# (GPUs, pods, RDMA) counted as it is.
_GI = Decimal(1 << 30)
PEOPLE_UNITS: dict[str, tuple[str, Decimal, str]] = {
    CPU: ("", Decimal(1), "cores"),
    MEMORY: ("Gi", _GI, "Gi"),
    "ephemeral-storage": ("Gi", _GI, "Gi"),
}
_TENTH = Decimal("0.1")


def for_people(value: object, resource: str) -> str:
    """A quantity as a person reads it (rule quantity-for-people): ``204800m`` CPU is
    ``204.8`` (cores), ``1677722Mi`` memory is ``1638.4Gi``, GPUs are whole numbers
    (``8``). At most one decimal place, rounded half up; a value that is not 0 but
    rounds to 0 is ``<0.1``; 0 is ``0`` whatever the unit. A value the client cannot
    read is shown as given."""
    try:
        number = value if isinstance(value, Decimal) else parse_quantity(value)
    except (ValueError, TypeError):
        return str(value)
    suffix, size = PEOPLE_UNITS.get(resource, ("", Decimal(1), ""))[:2]
    shown = number / size
    if shown == 0:
        return "0"
    rounded = shown.quantize(_TENTH, rounding=ROUND_HALF_UP)
    if rounded == 0:
        return f"<0.1{suffix}"
    return f"{rounded:f}".removesuffix(".0") + suffix


def people_unit(resource: str) -> str:
    """The unit ``for_people`` shows ``resource`` in, for a heading: ``cores``, ``Gi``,
    ``GPUs`` for ``nvidia.com/gpu``, else the resource's own name."""
    if resource == GPU:
        return "GPUs"
    return PEOPLE_UNITS[resource][2] if resource in PEOPLE_UNITS else resource
