# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Helm release's rollout, judged the way ``helm --wait`` judges it, so the chart
roles can wait themselves and say on every poll what is still rolling out.

``kubernetes.core.helm`` is an action plugin that cannot run in the background, so
while it waits (``wait: true``) a play prints nothing for up to its timeout. The roles
install with ``wait: false`` and poll the release's workloads instead:

* Rule release-workloads: the workloads of a release are the Deployments, StatefulSets
  and DaemonSets of its rendered manifest (``helm get manifest``); the other kinds are
  ready once the API server has them, as for ``helm --wait``.
* Rule workload-ready: a workload is ready when its controller has seen its latest
  spec and every replica it wants is updated and ready (available for a Deployment).
* Rule go-duration: a Helm timeout (``10m0s``, ``90s``, ``1h``) in seconds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..common.errors import FieldError, PlatformValidationError

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def go_duration_seconds(text: Any, field: str = "timeout") -> int:
    """Rule go-duration: a Go duration as Helm takes it (``10m0s``), in whole seconds
    (rounded up, at least 1)."""
    raw = str(text).strip() if isinstance(text, str | int) and not isinstance(text, bool) else ""
    if raw.isdigit():
        return max(int(raw), 1)
    parts = _DURATION.findall(raw)
    if not raw or "".join(n + u for n, u in parts) != raw:
        raise PlatformValidationError(
            [FieldError(field, f"{text!r} is not a Go duration such as 10m0s, 90s or 1h")]
        )
    seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    return max(int(-(-seconds // 1)), 1)


def release_workloads(
    documents: Iterable[Any], namespace: str, field: str = "manifest"
) -> list[dict[str, str]]:
    """Rule release-workloads: ``kind``, ``name`` and ``namespace`` of each workload in a
    release's manifest documents (empty documents skipped; a namespaced object without
    a namespace is in the release's)."""
    out: list[dict[str, str]] = []
    for index, doc in enumerate(documents or []):
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise PlatformValidationError(
                [FieldError(f"{field}[{index}]", f"{doc!r} is not a Kubernetes object")]
            )
        if doc.get("kind") not in WORKLOAD_KINDS:
            continue
        meta = doc.get("metadata") or {}
        out.append(
            {
                "kind": str(doc["kind"]),
                "name": str(meta.get("name", "")),
                "namespace": str(meta.get("namespace") or namespace),
            }
        )
    return sorted(out, key=lambda w: (w["kind"], w["namespace"], w["name"]))


def _count(status: Mapping[str, Any], key: str) -> int:
    value = status.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def workload_waiting(obj: Mapping[str, Any]) -> str:
    """Rule workload-ready: empty when the workload is ready, else what it waits for."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    meta = obj.get("metadata") or {}
    if _count(status, "observedGeneration") < _count(meta, "generation"):
        return "its controller has not seen the latest spec yet"
    kind = obj.get("kind")
    if kind == "DaemonSet":
        want = _count(status, "desiredNumberScheduled")
        ready, updated = _count(status, "numberReady"), _count(status, "updatedNumberScheduled")
        noun = "pods"
    else:
        want = spec.get("replicas", 1)
        want = want if isinstance(want, int) and not isinstance(want, bool) else 1
        ready_key = "availableReplicas" if kind == "Deployment" else "readyReplicas"
        ready, updated = _count(status, ready_key), _count(status, "updatedReplicas")
        noun = "replicas"
    if ready >= want and updated >= want:
        return ""
    return f"{min(ready, updated)}/{want} {noun} updated and ready"


def rollout_waiting(
    workloads: Iterable[Mapping[str, str]], live: Iterable[Mapping[str, Any]]
) -> list[str]:
    """Each workload of the release that is not ready yet, as ``Kind/namespace/name -
    why`` (sorted); empty when the release has rolled out."""
    by_key = {
        (
            o.get("kind"),
            (o.get("metadata") or {}).get("namespace"),
            (o.get("metadata") or {}).get("name"),
        ): o
        for o in live or []
    }
    waiting = []
    for w in workloads:
        key = (w["kind"], w["namespace"], w["name"])
        obj = by_key.get(key)
        why = "not created yet" if obj is None else workload_waiting(obj)
        if why:
            waiting.append(f"{w['kind']}/{w['namespace']}/{w['name']} - {why}")
    return sorted(waiting)
