# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Storage sold per class, as GPUs are: never beyond what the class holds.

Rule held here:

* Rule storage-class-oversell (``storage_oversell_errors``): the tenants' bounds of one
  storage class (``bounds.storage_classes``, each a ResourceQuota key of the tenant's
  ``platform-bounds``) never add up to more than the class's capacity, as the storage
  role records it (ConfigMap ``platform-storage-capacity`` in ``platform-system``). Only a
  bound that grows is judged, so a class already oversold (its capacity lowered) still
  takes bounds that stay or shrink; a class with no recorded capacity is not judged.
* Rule catalog-storage-oversell (``catalog_storage_oversell_errors``): the same over a
  whole tenant catalog, every tenant's bounds together: the catalog's tenants as it
  gives them, the tenants outside it as they hold them (unless pruned). Only a class
  whose total grows is judged.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from ..common import quantity
from ..common.errors import FieldError
from ..common.names import LABEL_TENANT
from ..common.names import STORAGE_CLASS_QUOTA_SUFFIX as CLASS_SUFFIX


def _size(value: Any) -> Decimal | None:
    try:
        parsed = quantity.parse_quantity(value)
    except (TypeError, ValueError, ArithmeticError):
        return None
    return parsed


def class_capacity(configmap: Mapping[str, Any] | None) -> dict[str, Decimal]:
    """Class -> capacity from the storage role's ConfigMap; an entry that is not a size
    is left out (the role checks its variables before it writes)."""
    out = {}
    for name, value in ((configmap or {}).get("data") or {}).items():
        size = _size(value)
        if size is not None:
            out[str(name)] = size
    return out


def class_bounds_of(quota: Mapping[str, Any] | None) -> dict[str, Decimal]:
    """Class -> bound of one tenant's ResourceQuota."""
    hard = ((quota or {}).get("spec") or {}).get("hard") or {}
    out = {}
    for key, value in hard.items():
        size = _size(value) if key.endswith(CLASS_SUFFIX) else None
        if size is not None:
            out[key[: -len(CLASS_SUFFIX)]] = size
    return out


def class_commitments(quotas: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Decimal]]:
    """Tenant -> (class -> bound), from the tenants' ``platform-bounds`` ResourceQuotas."""
    out: dict[str, dict[str, Decimal]] = {}
    for quota in quotas:
        tenant = ((quota.get("metadata") or {}).get("labels") or {}).get(LABEL_TENANT)
        if tenant:
            out[str(tenant)] = class_bounds_of(quota)
    return out


def storage_grows(current: Mapping[str, Decimal], wanted: Mapping[str, str]) -> bool:
    """Whether any class bound grows over the tenant's live ones (a new class grows)."""
    return any(
        (_size(size) or Decimal(0)) > current.get(name, Decimal(0)) for name, size in wanted.items()
    )


def storage_oversell_errors(
    tenant: str,
    capacity: Mapping[str, Decimal],
    commitments: Mapping[str, Mapping[str, Decimal]],
    wanted: Mapping[str, str],
    field: str = "bounds.storage_classes",
) -> list[FieldError]:
    """Rule storage-class-oversell: one error per class whose bound grows beyond what its
    capacity leaves after every other tenant's bound, with the numbers."""
    errors = []
    mine = commitments.get(tenant) or {}
    for name, size in sorted(wanted.items()):
        want = _size(size)
        if name not in capacity or want is None or want <= mine.get(name, Decimal(0)):
            continue
        others = sum(
            (bounds.get(name, Decimal(0)) for t, bounds in commitments.items() if t != tenant),
            Decimal(0),
        )
        left = capacity[name] - others
        if want > left:
            errors.append(
                FieldError(
                    f"{field}.{name}",
                    f"{size} does not fit in storage class {name}: {_text(capacity[name])} in all - "
                    f"{_text(others)} sold to other tenants = {_text(max(left, Decimal(0)))} left; ask "
                    "for less, or raise the class's capacity in storage_classes",
                )
            )
    return errors


def catalog_storage_oversell_errors(
    capacity: Mapping[str, Decimal],
    live: Mapping[str, Mapping[str, Decimal]],
    desired: Mapping[str, Mapping[str, str]],
    pruned: Iterable[str] = (),
) -> list[FieldError]:
    """Rule catalog-storage-oversell: one error per class whose total bound grows beyond
    its capacity, with the numbers and the catalog's tenants that grow."""
    gone = set(pruned)
    errors = []
    for name in sorted(capacity):
        before = sum((b.get(name, Decimal(0)) for b in live.values()), Decimal(0))
        catalog = {t: _size(b.get(name, "0")) or Decimal(0) for t, b in desired.items()}
        outside = sum(
            (
                b.get(name, Decimal(0))
                for t, b in live.items()
                if t not in desired and t not in gone
            ),
            Decimal(0),
        )
        after = sum(catalog.values(), Decimal(0)) + outside
        if after <= capacity[name] or after <= before:
            continue
        growing = sorted(t for t, size in catalog.items() if size > live.get(t, {}).get(name, 0))
        shown = ", ".join(growing[:10]) + (" ..." if len(growing) > 10 else "")
        errors.append(
            FieldError(
                f"tenants.bounds.storage_classes.{name}",
                f"the catalog sells {_text(after)} of storage class {name} "
                f"({_text(after - outside)} to the catalog's tenants + {_text(outside)} kept by "
                f"tenants outside it) but the class holds {_text(capacity[name])}; "
                f"{_text(after - capacity[name])} too many; growing: {shown} "
                "(rule catalog-storage-oversell)",
            )
        )
    return errors


def _text(size: Decimal) -> str:
    """A size as people read it: whole Ti, Gi or Mi where it is one, else bytes."""
    for unit, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
        if size >= factor and size % factor == 0:
            return f"{int(size / factor)}{unit}"
    return f"{int(size)}"
