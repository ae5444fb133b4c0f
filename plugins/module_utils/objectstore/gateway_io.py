# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place the collection talks to the object store.

S3 calls go through boto3's client; the store's admin API (accounts, bucket owners) is
versitygw's, which takes requests signed like S3's, which botocore signs and sends. Ceph
RGW's and MinIO's admin APIs are other APIs, not spoken here (docs/object-store.md). Every call is counted, and every
failure becomes a ``StoreError`` that says which store and what it answered.
"""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

from .connection import StoreConnection

try:
    import boto3
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.config import Config
    from botocore.credentials import Credentials
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.httpsession import URLLib3Session

    HAS_BOTO3 = True
except ImportError:  # pragma: no cover - the module reports the missing library
    HAS_BOTO3 = False

    class BotoCoreError(Exception):  # type: ignore[no-redef]
        """Stands in for botocore's, so that the except clauses still read."""

    class ClientError(Exception):  # type: ignore[no-redef]
        """Stands in for botocore's."""


class StoreError(Exception):
    """The store refused a call or did not answer."""


class Gateway:
    """The platform's session with one store, as its root account."""

    def __init__(self, store: StoreConnection) -> None:
        if not HAS_BOTO3:
            raise StoreError(
                "the object store modules need boto3 on the controller (pip install boto3)"
            )
        self.store = store
        self.requests = 0
        self._credentials = Credentials(store.access_key, store.secret_key)
        self._http = URLLib3Session(verify=store.verify_tls)
        self._s3 = boto3.client(
            "s3",
            endpoint_url=store.endpoint,
            aws_access_key_id=store.access_key,
            aws_secret_access_key=store.secret_key,
            region_name=store.region,
            verify=store.verify_tls,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}),
        )

    # -- the admin API ---------------------------------------------------------------

    def _admin(self, path: str, query: dict[str, str] | None = None, body: bytes = b"") -> bytes:
        url = f"{self.store.admin_endpoint}/{path}" + (f"?{urlencode(query)}" if query else "")
        request = AWSRequest(
            method="PATCH",
            url=url,
            data=body,
            headers={"X-Amz-Content-Sha256": hashlib.sha256(body).hexdigest()},
        )
        SigV4Auth(self._credentials, "s3", self.store.region).add_auth(request)
        self.requests += 1
        try:
            response = self._http.send(request.prepare())
        except BotoCoreError as exc:
            raise StoreError(
                f"the object store's admin API at {self.store.admin_endpoint}: {exc}"
            ) from exc
        if response.status_code >= 400:
            raise StoreError(
                f"the object store's admin API refused {path} ({response.status_code}): "
                f"{_admin_message(response.content)}"
            )
        return response.content

    def account_key(self, access: str) -> str | None:
        """The secret key of the store's account ``access``; None: no such account."""
        root = ET.fromstring(self._admin("list-users") or b"<x/>")
        for account in root.iter("Accounts"):
            if account.findtext("Access") == access:
                return account.findtext("Secret") or ""
        return None

    def create_account(self, access: str, key: str, role: str) -> None:
        account = ET.Element("Account")
        for tag, text in (("Access", access), ("Secret", key), ("Role", role)):
            ET.SubElement(account, tag).text = text
        self._admin("create-user", body=ET.tostring(account))

    def delete_account(self, access: str) -> None:
        self._admin("delete-user", {"access": access})

    def bucket_owners(self) -> dict[str, str]:
        """Every bucket of the store and its owner's access key (one admin call)."""
        root = ET.fromstring(self._admin("list-buckets") or b"<x/>")
        return {b.findtext("Name") or "": b.findtext("Owner") or "" for b in root.iter("Buckets")}

    def hand_over(self, bucket: str, owner: str) -> None:
        self._admin("change-bucket-owner", {"bucket": bucket, "owner": owner})

    # -- S3 ----------------------------------------------------------------------------

    def _s3_call(self, what: str, call: Any, **kwargs: Any) -> Any:
        self.requests += 1
        try:
            return call(**kwargs)
        except ClientError as exc:
            error = exc.response.get("Error") or {}
            raise StoreError(
                f"the object store at {self.store.endpoint} refused {what}: "
                f"{error.get('Code')} {error.get('Message') or ''}".rstrip()
            ) from exc
        except BotoCoreError as exc:
            raise StoreError(f"the object store at {self.store.endpoint}: {exc}") from exc

    def create_bucket(self, bucket: str) -> None:
        self._s3_call(f"making bucket {bucket}", self._s3.create_bucket, Bucket=bucket)

    def objects(self, bucket: str, prefix: str = "") -> Iterator[dict[str, Any]]:
        """Every object under ``prefix`` (Key, Size, LastModified), a page at a time."""
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
            if token:
                kwargs["ContinuationToken"] = token
            page = self._s3_call(f"listing {bucket}", self._s3.list_objects_v2, **kwargs)
            yield from page.get("Contents") or ()
            if not page.get("IsTruncated"):
                return
            token = page.get("NextContinuationToken")

    def delete_objects(self, bucket: str, keys: list[str]) -> None:
        """Delete ``keys``, a thousand per call (S3's limit); any key refused is an error."""
        for start in range(0, len(keys), 1000):
            chunk = keys[start : start + 1000]
            answer = self._s3_call(
                f"deleting from {bucket}",
                self._s3.delete_objects,
                Bucket=bucket,
                Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True},
            )
            failed = answer.get("Errors") or []
            if failed:
                raise StoreError(
                    f"the object store kept {len(failed)} object(s) of {bucket}: "
                    + ", ".join(f"{e.get('Key')} ({e.get('Code')})" for e in failed[:5])
                )


def _admin_message(body: bytes) -> str:
    """The message of an admin API error (S3's XML error shape), else the body."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return body.decode(errors="replace").strip() or "(no message)"
    return (
        " ".join(t for t in (root.findtext("Code"), root.findtext("Message")) if t)
        or "(no message)"
    )
