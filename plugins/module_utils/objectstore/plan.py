# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``tenant_object_store`` module's request, facts and plan.

Present: the tenant's account in the store, its buckets (made by the platform and handed
to the account), then its Secret and ServiceAccount. Absent: the account, the Secret and
the ServiceAccount go; the buckets and what they hold are kept (data is never deleted
by taking a tenant's access away). Everything is decided here, before the first write:
the connection, the tenant's namespace and the buckets' owners (rule
bucket-of-its-tenant).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..common.names import namespace_name, tenant_name_errors
from .buckets import PURPOSES, bucket_names, foreign_buckets, identity_of, purpose_errors
from .connection import CONNECTION_SECRET, StoreConnection
from .credentials import (
    CREDENTIALS_NAME,
    KEY_NEW,
    credentials_secret,
    differs,
    key_source,
    store_account,
)

STATES = ("present", "absent")


@dataclass(frozen=True)
class StoreRequest:
    tenant: str
    state: str = "present"
    purposes: tuple[str, ...] = PURPOSES

    @property
    def identity(self) -> str:
        return identity_of(self.tenant)

    @property
    def buckets(self) -> dict[str, str]:
        return bucket_names(self.tenant, self.purposes)


def parse_store(params: Mapping[str, Any]) -> StoreRequest:
    """The options as a request; every bad option named at once."""
    errors = tenant_name_errors(params.get("tenant"), "tenant")
    state = params.get("state") or "present"
    if state not in STATES:
        errors.append(FieldError("state", f"{state!r} is not one of {', '.join(STATES)}"))
    purposes = params.get("buckets")
    if purposes is None:
        purposes = list(PURPOSES)
    errors += purpose_errors(purposes)
    raise_if(errors)
    return StoreRequest(tenant=str(params["tenant"]), state=state, purposes=tuple(purposes))


@dataclass(frozen=True)
class StoreFacts:
    """What a run reads: the connection (or what is wrong with it), the tenant's
    namespace, its account's key in the store (None: no account), the owners of the
    buckets it wants, its Secret and ServiceAccount, and a fresh key (used only when
    neither the store nor the Secret has one)."""

    connection: StoreConnection | None
    connection_errors: tuple[FieldError, ...] = ()
    namespace: Mapping[str, Any] | None = None
    store_key: str | None = None
    owners: Mapping[str, str] = field(default_factory=dict)
    secret: Mapping[str, Any] | None = None
    account: Mapping[str, Any] | None = None
    fresh_key: str = ""


@dataclass(frozen=True)
class StorePlan:
    """The writes, in order: ``create_account``, ``create_buckets``, ``hand_over`` (the
    store's), then ``manifests`` (the cluster's); removing, ``remove_account`` and
    ``remove_objects``."""

    request: StoreRequest
    connection: StoreConnection | None = field(default=None, repr=False)
    key_source: str = ""
    key: str = field(default="", repr=False)
    create_account: bool = False
    create_buckets: tuple[str, ...] = ()
    hand_over: tuple[str, ...] = ()
    manifests: tuple[dict[str, Any], ...] = field(default=(), repr=False)
    remove_account: bool = False
    remove_objects: tuple[str, ...] = ()
    owners_before: Mapping[str, str] = field(default_factory=dict)

    @property
    def writes(self) -> list[str]:
        """What the plan writes, in order, as the result names it."""
        out = [f"account {self.request.identity}"] if self.create_account else []
        out += [f"bucket {b}" for b in self.create_buckets]
        out += [f"owner of {b}" for b in self.hand_over]
        out += [f"{m['kind']}/{m['metadata']['name']}" for m in self.manifests]
        if self.remove_account:
            out.append(f"account {self.request.identity} removed")
        out += [f"{kind}/{CREDENTIALS_NAME} removed" for kind in self.remove_objects]
        return out


def _refusals(request: StoreRequest, facts: StoreFacts) -> list[FieldError]:
    if facts.connection is None:
        return list(facts.connection_errors) or [
            FieldError(CONNECTION_SECRET, "the platform's object store is not configured")
        ]
    if request.state == "absent":
        return []
    errors: list[FieldError] = []
    if facts.namespace is None:
        errors.append(
            FieldError(
                "tenant",
                f"{request.tenant!r} has no namespace {namespace_name(request.tenant)}; make the "
                "tenant first (gpucloud.platform.tenant)",
            )
        )
    taken = foreign_buckets(
        list(request.buckets.values()), facts.owners, request.identity, facts.connection.access_key
    )
    errors += [
        FieldError(
            "buckets",
            f"bucket {name} exists and belongs to {owner!r}, not to tenant {request.tenant}; the "
            "platform never takes a bucket from its owner: free the name in the store first",
        )
        for name, owner in sorted(taken.items())
    ]
    return errors


def plan_store(request: StoreRequest, facts: StoreFacts) -> StorePlan:
    """Every decision and refusal of a run (rules bucket-of-its-tenant, store-key-source,
    store-credentials)."""
    errors = _refusals(request, facts)
    if errors:
        raise PlatformValidationError(errors)
    store = facts.connection
    if store is None:  # narrowed by _refusals; cannot happen
        raise AssertionError("store is not None")
    if request.state == "absent":
        return StorePlan(
            request=request,
            connection=store,
            remove_account=facts.store_key is not None,
            remove_objects=tuple(
                kind
                for kind, have in (("ServiceAccount", facts.account), ("Secret", facts.secret))
                if have is not None
            ),
            owners_before=dict(facts.owners),
        )
    key, source = key_source(facts.store_key, facts.secret, request.identity, facts.fresh_key)
    wanted = list(request.buckets.values())
    secret = credentials_secret(request.tenant, request.identity, key, store, request.buckets)
    account = store_account(request.tenant)
    return StorePlan(
        request=request,
        connection=store,
        key_source=source,
        key=key,
        create_account=facts.store_key is None,
        create_buckets=tuple(b for b in wanted if b not in facts.owners),
        hand_over=tuple(b for b in wanted if facts.owners.get(b) != request.identity),
        manifests=tuple(
            m for m, have in ((secret, facts.secret), (account, facts.account)) if differs(m, have)
        ),
        owners_before=dict(facts.owners),
    )


def report_store(
    request: StoreRequest, planned: StorePlan, done: list[str] | None = None
) -> dict[str, Any]:
    """The result: the buckets, the names of the Secret and account, what was (or would be)
    written, and a diff of the buckets' owners (never the key)."""
    writes = planned.writes if done is None else done
    after_owners = (
        dict(planned.owners_before)
        if request.state == "absent"
        else {b: request.identity for b in request.buckets.values()}
    )
    present = request.state == "present"
    return {
        "changed": bool(writes),
        "tenant": request.tenant,
        "account": request.identity,
        "buckets": dict(request.buckets),
        "secret": CREDENTIALS_NAME if present else None,
        "service_account": CREDENTIALS_NAME if present else None,
        "new_key": present and planned.key_source == KEY_NEW,
        "writes": writes,
        "diff": {
            "before": {"buckets": dict(sorted(planned.owners_before.items()))},
            "after": {"buckets": dict(sorted(after_owners.items()))},
        },
    }
