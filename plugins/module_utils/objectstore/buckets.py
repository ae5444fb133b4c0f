# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant's buckets and its identity in the object store.

Rules held here:

* Rule tenant-buckets (``bucket_names``): a tenant has one bucket per purpose,
  ``tenant-<tenant>-<purpose>`` (datasets, checkpoints, models), named after its
  namespace so that a store shared with other users shows whose each bucket is. Every
  tenant name (rule tenant-name) gives S3-valid names: at most 63 characters, lower-case
  letters, digits and '-'.
* Rule tenant-store-identity (``identity_of``): the tenant's account in the store is
  ``tenant-<tenant>``, with the store's least role (``user``: it can neither make buckets
  nor read another account's).
* Rule bucket-of-its-tenant (``foreign_buckets``): the platform hands a bucket to a
  tenant only when it is the tenant's already or the platform's own (made by the store's
  root and not yet handed over, a run cut short); a bucket of that name owned by anyone
  else is refused, never taken from its owner.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..common.errors import FieldError
from ..common.names import namespace_name

PURPOSES = ("datasets", "checkpoints", "models")
# The store's role for a tenant's account: no bucket of its own making, no one else's.
TENANT_ROLE = "user"


def bucket_name(tenant: str, purpose: str) -> str:
    return f"{namespace_name(tenant)}-{purpose}"


def bucket_names(tenant: str, purposes: Sequence[str] = PURPOSES) -> dict[str, str]:
    """Rule tenant-buckets: purpose -> bucket name."""
    return {purpose: bucket_name(tenant, purpose) for purpose in purposes}


def identity_of(tenant: str) -> str:
    """Rule tenant-store-identity: the tenant's access key id in the store."""
    return namespace_name(tenant)


def purpose_errors(purposes: object, field: str = "buckets") -> list[FieldError]:
    """The buckets a caller asks for: a list of known purposes, each once."""
    if isinstance(purposes, (str, bytes)) or not isinstance(purposes, Sequence):
        return [FieldError(field, f"{purposes!r} must be a list of {', '.join(PURPOSES)}")]
    errors = [
        FieldError(f"{field}[{i}]", f"{p!r} is not a bucket purpose ({', '.join(PURPOSES)})")
        for i, p in enumerate(purposes)
        if p not in PURPOSES
    ]
    if len(set(purposes)) != len(purposes):
        errors.append(FieldError(field, f"{list(purposes)!r} names a purpose twice"))
    return errors


def foreign_buckets(
    wanted: Sequence[str], owners: Mapping[str, str], tenant_identity: str, root: str
) -> dict[str, str]:
    """Rule bucket-of-its-tenant: the wanted buckets that exist under another owner
    (bucket -> owner)."""
    return {
        name: owners[name]
        for name in wanted
        if name in owners and owners[name] not in (tenant_identity, root)
    }
