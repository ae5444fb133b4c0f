# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local cluster's identities: which serving and client certificates it
makes with pki.py (one CA), and a kubeconfig for each client identity."""

from __future__ import annotations

from pathlib import Path

import yaml

import pki
from settings import APISERVER, HOST, KSERVE_NS, KSERVE_WEBHOOK_SERVICE

SERVICE_USERS = (
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "volcano",
    "kube-state-metrics",
    "prometheus",
    "kserve",
)


def kubeconfig_for(state: Path, user: str) -> Path:
    path = state / f"{user}.kubeconfig"
    if not path.exists():
        p = state / "pki"
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {"server": APISERVER, "certificate-authority": str(p / "ca.crt")},
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {
                        "client-certificate": str(p / f"{user}.crt"),
                        "client-key": str(p / f"{user}.key"),
                    },
                }
            ],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
            "current-context": "local",
        }
        path.write_text(yaml.safe_dump(cfg))
        path.chmod(0o600)
    return path


def ensure_pki(state: Path) -> None:
    p = state / "pki"
    pki.ensure_ca(p)
    pki.ensure_service_account_keys(p)
    pki.ensure_cert(
        p,
        "apiserver",
        "kube-apiserver",
        server_names=(
            HOST,
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "10.96.0.1",
        ),
        client=False,
    )
    pki.ensure_cert(
        p,
        "webhook",
        "volcano-admission-service",
        server_names=(HOST, "localhost", "volcano-admission-service.volcano-system.svc"),
        client=False,
    )
    pki.ensure_cert(
        p,
        "kserve-webhook",
        KSERVE_WEBHOOK_SERVICE,
        server_names=(HOST, "localhost", f"{KSERVE_WEBHOOK_SERVICE}.{KSERVE_NS}.svc"),
        client=False,
    )
    pki.ensure_cert(p, "admin", "admin", ("system:masters",))
    # The components run with cluster-admin rights: they are stand-ins for
    # in-cluster deployments whose RBAC is not what these tests examine.
    for user in SERVICE_USERS:
        pki.ensure_cert(
            p,
            user,
            f"system:{user}" if user in ("kube-controller-manager", "kube-scheduler") else user,
            ("system:masters",),
        )
    for user in ("admin", *SERVICE_USERS):
        kubeconfig_for(state, user)
