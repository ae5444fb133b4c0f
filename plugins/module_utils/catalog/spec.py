# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tenant catalog: every tenant of the platform declared in one list, checked as a
whole before anything is read or written.

Rules held here:

* Rule catalog-entry (``parse_catalog``): every entry is a tenant as the ``tenant``
  module takes it (its own keys only, ``ENTRY_KEYS``), after ``defaults`` are merged
  under it; each entry's errors are reported under ``tenants[<i>]``.
* Rule catalog-unique-names (``duplicate_name_errors``): a tenant is declared once.
* Rule catalog-queue-names-unique (``queue_collision_errors``): no two tenants of the
  catalog derive the same queue name (tenant ``pa`` with team ``b-x`` and tenant
  ``pa-b`` with team ``x`` are both ``tenant-pa-b-x``).

The oversell guard over every purchase together is ``capacity.oversell`` (rule
catalog-oversell-guard); it needs the pool, so the service runs it after its reads
and still before the first write. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..tenants.network import parse_cidr
from ..tenants.plan import desired_queues
from ..tenants.spec import TenantSpec, parse_tenant_spec

# What one catalog entry may say: the tenant module's per-tenant options. Cluster-wide
# options (pod_cidr, service_cidr, node_selector, force) are the catalog's own.
ENTRY_KEYS = (
    "name",
    "subscription",
    "subscription_guarantee",
    "payg",
    "teams",
    "subjects",
    "egress_cidrs",
    "egress_to_nodes",
    "egress_to_metadata",
    "allow_critical",
    "bounds",
    "vgpu",
)
# What an entry that leaves a key out gets: the ``tenant`` module's own defaults, so a
# tenant means the same in the catalog as alone.
ENTRY_DEFAULTS: dict[str, Any] = {"egress_cidrs": ["0.0.0.0/0"]}
# Cluster-wide options every tenant's plan takes from the catalog run.
SHARED_KEYS = ("pod_cidr", "service_cidr")


@dataclass(frozen=True)
class Catalog:
    """The parsed catalog: the tenants in the order given, each with its entry index."""

    tenants: tuple[TenantSpec, ...]

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tenants]

    def by_name(self) -> dict[str, TenantSpec]:
        return {t.name: t for t in self.tenants}


def entry_key_errors(entry: Mapping[str, Any], path: str) -> list[FieldError]:
    unknown = sorted(set(entry) - set(ENTRY_KEYS))
    if not unknown:
        return []
    return [
        FieldError(
            f"{path}.{key}",
            f"is not a tenant key; a catalog entry takes {', '.join(ENTRY_KEYS)} "
            "(rule catalog-entry)",
        )
        for key in unknown
    ]


def _prefixed(errors: Sequence[FieldError], path: str) -> list[FieldError]:
    return [FieldError(f"{path}.{e.field}" if e.field else path, e.message) for e in errors]


def duplicate_name_errors(names: Sequence[object]) -> list[FieldError]:
    """Rule catalog-unique-names: each tenant name appears once."""
    first: dict[object, int] = {}
    errors = []
    for i, name in enumerate(names):
        if not isinstance(name, str):
            continue
        if name in first:
            errors.append(
                FieldError(
                    f"tenants[{i}].name",
                    f"{name!r} is already declared at tenants[{first[name]}]; a tenant is "
                    "declared once (rule catalog-unique-names)",
                )
            )
        else:
            first[name] = i
    return errors


def queue_collision_errors(tenants: Sequence[tuple[int, TenantSpec]]) -> list[FieldError]:
    """Rule catalog-queue-names-unique: the queues two catalog tenants derive differ."""
    owner: dict[str, tuple[int, str]] = {}
    errors = []
    for i, spec in tenants:
        queues, _removed = desired_queues(spec, {})
        for queue in queues:
            if queue.name in owner and owner[queue.name][1] != spec.name:
                j, other = owner[queue.name]
                errors.append(
                    FieldError(
                        f"tenants[{i}]",
                        f"tenant {spec.name!r} derives queue {queue.name}, which tenant "
                        f"{other!r} (tenants[{j}]) derives too; rename a team or a tenant "
                        "(rule catalog-queue-names-unique)",
                    )
                )
            owner.setdefault(queue.name, (i, spec.name))
    return errors


def parse_catalog(
    tenants: object,
    defaults: Mapping[str, Any] | None = None,
    shared: Mapping[str, Any] | None = None,
) -> Catalog:
    """Every entry checked (rule catalog-entry), then the catalog as a whole; raises
    once with every error, each under ``tenants[<i>]``."""
    if not isinstance(tenants, Sequence) or isinstance(tenants, str | bytes):
        raise PlatformValidationError(
            [FieldError("tenants", f"{tenants!r} must be a list of tenants (rule catalog-entry)")]
        )
    defaults = dict(defaults or {})
    errors = entry_key_errors(defaults, "defaults")
    shared = dict(shared or {})
    for key in SHARED_KEYS:  # checked once here, not once per tenant
        if shared.get(key) is not None:
            bad = parse_cidr(shared[key], key)[1]
            if bad:
                errors += bad
                shared.pop(key)
    if "name" in defaults:
        errors.append(FieldError("defaults.name", "a default cannot name a tenant"))
    parsed: list[tuple[int, TenantSpec]] = []
    names: list[object] = []
    for i, entry in enumerate(tenants):
        path = f"tenants[{i}]"
        if not isinstance(entry, Mapping):
            errors.append(FieldError(path, f"{entry!r} must be a mapping (rule catalog-entry)"))
            names.append(None)
            continue
        names.append(entry.get("name"))
        key_errors = entry_key_errors(entry, path)
        if key_errors:
            errors += key_errors
            continue
        params = {**ENTRY_DEFAULTS, **defaults, **entry, **shared}
        try:
            parsed.append((i, parse_tenant_spec(params)))
        except PlatformValidationError as exc:
            errors += _prefixed(exc.errors, path)
    errors += duplicate_name_errors(names)
    if not errors:
        errors += queue_collision_errors(parsed)
    raise_if(errors)
    return Catalog(tenants=tuple(spec for _i, spec in parsed))
