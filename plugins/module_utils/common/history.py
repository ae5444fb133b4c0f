# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A bounded run history in a ConfigMap (pure: no I/O), newest first.

The spot reclaim (``spot-reclaim-history``, rule reclaim-history) and the queue arbiter
(``queue-arbiter-history``, rule arbiter-history) each keep one in ``platform-system``,
key ``history.json``, a JSON list of at most ``history_size`` entries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .names import LABEL_MANAGED_BY, MANAGED_BY, PLATFORM_NAMESPACE

HISTORY_KEY = "history.json"


def push_history(entries: list[Any], entry: Mapping[str, Any], size: int) -> list[Any]:
    """Rule reclaim-history (and rule arbiter-history): newest first, at most ``size``
    entries."""
    return ([dict(entry), *entries])[: max(size, 0)]


def read_history(configmap: Mapping[str, Any] | None) -> list[Any]:
    """The entries of a history ConfigMap; [] when it is missing or does not hold a list."""
    raw = ((configmap or {}).get("data") or {}).get(HISTORY_KEY)
    if not raw:
        return []
    try:
        loaded = json.loads(raw)
    except ValueError:
        return []
    return loaded if isinstance(loaded, list) else []


def history_manifest(
    name: str, entries: list[Any], namespace: str = PLATFORM_NAMESPACE
) -> dict[str, Any]:
    """The history ConfigMap ``name`` holding ``entries``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {LABEL_MANAGED_BY: MANAGED_BY},
        },
        "data": {HISTORY_KEY: json.dumps(entries, indent=1, sort_keys=True)},
    }
