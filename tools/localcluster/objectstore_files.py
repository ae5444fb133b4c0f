# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The S3 server's files in a cluster's state directory: its data and account
directories, its root credentials (made once per cluster, random, readable by the
owner only) and where it listens, written beside the kubeconfig so that the local
inventory and the tests find this cluster's store (ports shift per cluster)."""

from __future__ import annotations

import secrets
from pathlib import Path

from settings import OBJECT_STORE, OBJECT_STORE_ADMIN

ROOT_ACCESS_KEY = "gpucloud-local-root"
# state/<file>: the root's access key and secret key, one per line
ROOT_FILE = "object-store-root"
URL_FILE = "object-store-url"
ADMIN_URL_FILE = "object-store-admin-url"


def data_dir(state: Path) -> Path:
    return state / "object-store" / "data"


def iam_dir(state: Path) -> Path:
    return state / "object-store" / "iam"


def ensure_object_store_files(state: Path) -> tuple[str, str]:
    """The directories, the URL files and the root credentials (access, secret); the
    credentials are kept from the cluster's first `up` on."""
    for path in (data_dir(state), iam_dir(state)):
        path.mkdir(parents=True, exist_ok=True)
    for name, url in ((URL_FILE, OBJECT_STORE), (ADMIN_URL_FILE, OBJECT_STORE_ADMIN)):
        target = state / name
        if not target.exists() or target.read_text() != url + "\n":
            target.write_text(url + "\n")
    root = state / ROOT_FILE
    if not root.exists():
        root.touch(mode=0o600)
        root.write_text(f"{ROOT_ACCESS_KEY}\n{secrets.token_urlsafe(30)}\n")
    access, secret = root.read_text().split()[:2]
    return access, secret
