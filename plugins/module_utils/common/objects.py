# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes objects as plain data: what a diff compares, and how a list is indexed.

Pure: the planners and the services decide "changed" with the same ``differs``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from .quantity import parse_quantity

# Fields the API server owns: a diff or a "changed" verdict never looks at them.
_SERVER_FIELDS = (
    "managedFields",
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


# Annotations the API server, kubectl or a controller writes on an object, never the
# collection: a diff leaves them out (exact keys, then prefixes).
_SERVER_ANNOTATIONS = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        "endpoints.kubernetes.io/last-change-trigger-time",
        "volumes.kubernetes.io/controller-managed-attach-detach",
    }
)
_SERVER_ANNOTATION_PREFIXES = (
    "deployment.kubernetes.io/",
    "deprecated.daemonset.template.generation",
    "node.alpha.kubernetes.io/",
    "control-plane.alpha.kubernetes.io/",
    "pv.kubernetes.io/",
    "volume.kubernetes.io/",
    "volume.beta.kubernetes.io/",
    "kwok.x-k8s.io/",
)


def server_annotation(key: str) -> bool:
    """An annotation the server or a controller owns (``deployment.kubernetes.io/revision``)."""
    return key in _SERVER_ANNOTATIONS or key.startswith(_SERVER_ANNOTATION_PREFIXES)


def strip_server_fields(obj: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A copy of ``obj`` without status, server-owned metadata (``managedFields``,
    ``resourceVersion``, ``uid``, ``creationTimestamp``, ``generation``, ``selfLink``,
    a deletion's timestamps) and the annotations the server or a controller writes,
    for diffs. An empty ``metadata`` left behind is dropped too."""
    if obj is None:
        return None
    out = copy.deepcopy(dict(obj))
    out.pop("status", None)
    meta = out.get("metadata")
    if not isinstance(meta, dict):
        return out
    for key in _SERVER_FIELDS:
        meta.pop(key, None)
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        for key in [k for k in annotations if server_annotation(k)]:
            del annotations[key]
        if not annotations:
            meta.pop("annotations", None)
    if not meta:
        out.pop("metadata")
    return out


def differs(desired: Any, live: Any) -> bool:
    """True when ``live`` lacks or contradicts anything ``desired`` says.

    Fields present only in ``live`` (defaults the API server or a controller
    filled in) do not count: server-side apply leaves them alone too. Numbers
    are compared as quantities where both sides are quantity-like strings.
    """
    # ``dict`` first: it is checked at C speed, the Mapping ABC by a Python call, and a
    # fleet compares tens of thousands of fields.
    if isinstance(desired, (dict, Mapping)):
        if not isinstance(live, (dict, Mapping)):
            return True
        # Every field equal as it is (a C-level comparison of the items, the common case
        # of an unchanged object); otherwise field by field, quantities as quantities.
        if isinstance(desired, dict) and isinstance(live, dict) and desired.items() <= live.items():
            return False
        return any(differs(v, live.get(k)) for k, v in desired.items())
    if isinstance(desired, list):
        if not isinstance(live, list) or len(desired) != len(live):
            return True
        if desired == live:
            return False
        return any(differs(d, x) for d, x in zip(desired, live, strict=True))
    return not _same_scalar(desired, live)


def _same_scalar(a: Any, b: Any) -> bool:
    if a == b:
        return True
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return False
    try:
        return parse_quantity(a) == parse_quantity(b)
    except (ValueError, TypeError):
        return str(a) == str(b)


def index_by_name(objects: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: dict(o) for o in objects}
