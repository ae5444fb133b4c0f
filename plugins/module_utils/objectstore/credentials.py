# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant's object-store credentials in its namespace.

Rules held here:

* Rule store-key-source (``key_source``): the tenant's secret key is the store's, when
  the store has the tenant's account (the store is what checks it); else the one its
  Secret still holds (the account is made again with it, so pods that hold the Secret
  keep working); else a new one.
* Rule store-credentials (``credentials_secret``, ``store_account``): one Secret,
  ``platform-object-store`` in the tenant's namespace, holds the keys, the endpoint and
  the bucket names under the names S3 clients read (``AWS_ACCESS_KEY_ID``,
  ``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``, ``AWS_DEFAULT_REGION``), with
  KServe's S3 annotations; the ServiceAccount of the same name lists it, so an
  InferenceService that runs as it gets its model from the tenant's bucket (KServe's
  storage initializer reads the Secret through the account). The account carries no API
  token: it is for the store only.

Pure: no I/O.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from ..common.names import OBJECT_STORE_NAME, namespace_name, tenant_labels
from .connection import StoreConnection, decoded

CREDENTIALS_NAME = OBJECT_STORE_NAME
ACCESS_KEY = "AWS_ACCESS_KEY_ID"
SECRET_KEY = "AWS_SECRET_ACCESS_KEY"
# KServe's storage initializer reads these annotations on an S3 Secret of the account.
KSERVE_S3 = "serving.kserve.io/"
KEY_FROM_STORE, KEY_FROM_SECRET, KEY_NEW = "store", "secret", "new"


def key_source(
    store_key: str | None, secret: Mapping[str, Any] | None, identity: str, fresh: str
) -> tuple[str, str]:
    """Rule store-key-source: (the key, where it comes from)."""
    if store_key:
        return store_key, KEY_FROM_STORE
    held = decoded(secret)
    if held.get(ACCESS_KEY) == identity and held.get(SECRET_KEY):
        return held[SECRET_KEY], KEY_FROM_SECRET
    return fresh, KEY_NEW


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def credentials_secret(
    tenant: str, identity: str, key: str, store: StoreConnection, buckets: Mapping[str, str]
) -> dict[str, Any]:
    """Rule store-credentials: the tenant's Secret."""
    data = {
        ACCESS_KEY: identity,
        SECRET_KEY: key,
        "AWS_ENDPOINT_URL": store.endpoint,
        "AWS_DEFAULT_REGION": store.region,
        **{f"BUCKET_{purpose.upper()}": name for purpose, name in sorted(buckets.items())},
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": CREDENTIALS_NAME,
            "namespace": namespace_name(tenant),
            "labels": tenant_labels(tenant),
            "annotations": {
                KSERVE_S3 + "s3-endpoint": store.host,
                KSERVE_S3 + "s3-usehttps": "1" if store.uses_https else "0",
                KSERVE_S3 + "s3-region": store.region,
                KSERVE_S3 + "s3-verifyssl": "1" if store.verify_tls else "0",
            },
        },
        "data": {k: _b64(v) for k, v in data.items()},
    }


def store_account(tenant: str) -> dict[str, Any]:
    """The ServiceAccount that lists the Secret (rule store-credentials)."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": CREDENTIALS_NAME,
            "namespace": namespace_name(tenant),
            "labels": tenant_labels(tenant),
        },
        "secrets": [{"name": CREDENTIALS_NAME}],
        "automountServiceAccountToken": False,
    }


def differs(want: Mapping[str, Any], have: Mapping[str, Any] | None) -> bool:
    """Whether writing ``want`` changes ``have``: its labels, annotations and the fields it
    sets (the Secret's keys the platform writes, the account's secrets and token
    setting); what someone else added beside them is theirs and changes nothing."""
    if have is None:
        return True
    meta, have_meta = want["metadata"], have.get("metadata") or {}
    for part in ("labels", "annotations"):
        mine = meta.get(part) or {}
        theirs = have_meta.get(part) or {}
        if any(theirs.get(k) != v for k, v in mine.items()):
            return True
    for key in (k for k in want if k not in ("apiVersion", "kind", "metadata")):
        mine, theirs = want[key], have.get(key)
        if isinstance(mine, Mapping):  # a Secret's data: the keys the platform writes
            theirs = theirs if isinstance(theirs, Mapping) else {}
            if any(theirs.get(k) != v for k, v in mine.items()):
                return True
        elif theirs != mine:
            return True
    return False
