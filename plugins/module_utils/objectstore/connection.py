# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the platform's object store is and how the platform signs in to it.

Rule store-connection (``connection_from``): the ``object_store`` role writes one
Secret, ``platform-object-store`` in ``platform-system``, with the store's S3 endpoint,
its admin endpoint, the region and the platform's own (root) keys. Every object-store
module reads it there, so no playbook passes the keys around and the cluster says which
store its tenants use. A key missing or malformed is named.

Pure: no I/O.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..common.errors import FieldError
from ..common.names import OBJECT_STORE_NAME, PLATFORM_NAMESPACE

CONNECTION_SECRET = OBJECT_STORE_NAME
DEFAULT_REGION = "us-east-1"
REQUIRED_KEYS = ("endpoint", "admin_endpoint", "access_key", "secret_key")


@dataclass(frozen=True)
class StoreConnection:
    endpoint: str
    admin_endpoint: str
    access_key: str
    secret_key: str
    region: str = DEFAULT_REGION
    verify_tls: bool = True

    @property
    def uses_https(self) -> bool:
        return urlsplit(self.endpoint).scheme == "https"

    @property
    def host(self) -> str:
        """host:port, as KServe's storage initializer takes its S3 endpoint."""
        return urlsplit(self.endpoint).netloc


def decoded(secret: Mapping[str, Any] | None) -> dict[str, str]:
    """A Secret's data as text (stringData is folded into data by the API server)."""
    data = (secret or {}).get("data") or {}
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


def _url_errors(key: str, value: str) -> list[FieldError]:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return [
            FieldError(
                f"{PLATFORM_NAMESPACE}/{CONNECTION_SECRET}.{key}",
                f"{value!r} must be an http(s) URL such as https://s3.example.com",
            )
        ]
    return []


def connection_from(
    secret: Mapping[str, Any] | None,
) -> tuple[StoreConnection | None, list[FieldError]]:
    """Rule store-connection: the store from the platform's Secret, or what is wrong
    with it (no Secret: the object_store role has not run)."""
    where = f"{PLATFORM_NAMESPACE}/{CONNECTION_SECRET}"
    if secret is None:
        return None, [
            FieldError(
                where,
                "no such Secret: the platform has no object store yet; run the object_store "
                "role (site.yml with object_store_endpoint set)",
            )
        ]
    data = decoded(secret)
    errors = [
        FieldError(f"{where}.{key}", "is missing") for key in REQUIRED_KEYS if not data.get(key)
    ]
    for key in ("endpoint", "admin_endpoint"):
        if data.get(key):
            errors += _url_errors(key, data[key])
    if errors:
        return None, errors
    return (
        StoreConnection(
            endpoint=data["endpoint"].rstrip("/"),
            admin_endpoint=data["admin_endpoint"].rstrip("/"),
            access_key=data["access_key"],
            secret_key=data["secret_key"],
            region=data.get("region") or DEFAULT_REGION,
            verify_tls=(data.get("verify_tls") or "true").lower() not in ("false", "0", "no"),
        ),
        [],
    )
