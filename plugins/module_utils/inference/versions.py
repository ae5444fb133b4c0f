# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A model service's versions over time, and the rollout actions that move them.

The history lives on the InferenceService itself (annotation
``platform.io/model-versions``, a JSON list, oldest first): every version that
was stable, in the order it became so. The last entry is the current version
and the one before it the previous one, which ``rollback`` returns to. Like
``kubectl rollout undo``, a second rollback returns to the version the first
one left.

Actions (``plan``):

* ``deploy``: the declared stable version and canaries, as given;
* ``canary``: add canaries to what runs, or change those of the same version (the
  stable version stays as it is);
* ``step``: new traffic shares for live canaries, nothing else;
* ``promote``: a canary becomes the stable version (its Deployment keeps running);
* ``rollback``: with canaries, drop them (or the one named); without, the stable
  version returns to the previous one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..common.errors import FieldError, PlatformValidationError
from ..common.names import PREFIX
from .spec import Canary, ModelVersion, ServiceSpec

ANNOTATION_VERSIONS = PREFIX + "model-versions"
HISTORY_MAX = 10
ACTIONS = ("deploy", "canary", "step", "promote", "rollback")


def history_entry(model: ModelVersion) -> dict[str, Any]:
    return {
        "version": model.version,
        "storage_uri": model.storage_uri,
        "format": model.format,
        "runtime": model.runtime,
    }


def read_history(annotations: Mapping[str, str] | None) -> list[dict[str, Any]]:
    """The history annotation, or [] when missing or unreadable (someone edited it)."""
    raw = (annotations or {}).get(ANNOTATION_VERSIONS)
    try:
        value = json.loads(raw) if raw else []
    except ValueError:
        return []
    if not isinstance(value, list):
        return []
    return [e for e in value if isinstance(e, dict) and isinstance(e.get("version"), str)]


def with_stable(history: list[dict[str, Any]], model: ModelVersion) -> list[dict[str, Any]]:
    """The history once ``model`` is stable: appended unless it already is the last."""
    entry = history_entry(model)
    if history and history[-1].get("version") == model.version:
        return history
    return [*history, entry][-HISTORY_MAX:]


def known_versions(history: list[dict[str, Any]], live: ServiceSpec | None) -> dict[str, str]:
    """version -> storageUri of every version the service had (rule inference-version-immutable)."""
    known = {e["version"]: e.get("storage_uri", "") for e in history}
    if live is not None:
        for model in live.all_versions():
            known.setdefault(model.version, model.storage_uri)
    return known


def previous(history: list[dict[str, Any]]) -> dict[str, Any] | None:
    return history[-2] if len(history) >= 2 else None


def _refuse(path: str, message: str) -> PlatformValidationError:
    return PlatformValidationError([FieldError(path, message)])


def plan(
    action: str,
    requested: ServiceSpec | None,
    live: ServiceSpec | None,
    history: list[dict[str, Any]],
    traffic: Mapping[str, Any] | None = None,
    version: str | None = None,
    canaries: tuple[Canary, ...] = (),
) -> tuple[ServiceSpec, list[dict[str, Any]]]:
    """The service as it should be after ``action``, and its history then."""
    if action == "deploy":
        if requested is None:
            raise _refuse("model", "is required with action: deploy")
        return requested, with_stable(history, requested.stable)
    if live is None:
        raise _refuse("action", f"{action}: the service does not exist yet; deploy it first")
    if action == "canary":
        return _with_canaries(live, canaries), history
    if action == "step":
        return _step(live, traffic), history
    if action == "promote":
        return _promote(live, history, version)
    if action == "rollback":
        return _rollback(live, history, version)
    raise _refuse("action", f"{action!r} is not one of {', '.join(ACTIONS)}")


def _canary_names(live: ServiceSpec) -> str:
    return ", ".join(c.model.version for c in live.canaries) or "none"


def _with_canaries(live: ServiceSpec, canaries: tuple[Canary, ...]) -> ServiceSpec:
    if not canaries:
        raise _refuse(
            "canaries",
            "is required with action: canary, e.g. [{version: v2, storage_uri: ..., traffic_percent: 10}]",
        )
    given = {c.model.version: c for c in canaries}
    kept = tuple(given.pop(c.model.version, c) for c in live.canaries)
    added = tuple(c for c in canaries if c.model.version in given)
    return live.with_versions(live.stable, kept + added)


def _step(live: ServiceSpec, traffic: Mapping[str, Any] | None) -> ServiceSpec:
    if not traffic:
        raise _refuse("traffic", "is required with action: step, e.g. {v2: 40}")
    names = {c.model.version for c in live.canaries}
    unknown = sorted(set(traffic) - names)
    if unknown:
        raise _refuse(
            f"traffic.{unknown[0]}",
            f"{unknown[0]} is not a canary of {live.name}; its canaries: {_canary_names(live)}",
        )
    canaries = tuple(
        replace(c, traffic_percent=traffic.get(c.model.version, c.traffic_percent))
        for c in live.canaries
    )
    return live.with_versions(live.stable, canaries)


def _pick(live: ServiceSpec, version: str | None, action: str) -> Canary:
    if version is None:
        if len(live.canaries) != 1:
            raise _refuse(
                "version",
                f"{action} needs the canary's version when there are {len(live.canaries)} "
                f"(canaries: {_canary_names(live)})",
            )
        return live.canaries[0]
    for canary in live.canaries:
        if canary.model.version == version:
            return canary
    raise _refuse(
        "version", f"{version} is not a canary of {live.name}; its canaries: {_canary_names(live)}"
    )


def _promote(
    live: ServiceSpec, history: list[dict[str, Any]], version: str | None
) -> tuple[ServiceSpec, list[dict[str, Any]]]:
    chosen = _pick(live, version, "promote")
    rest = tuple(c for c in live.canaries if c is not chosen)
    return live.with_versions(chosen.model, rest), with_stable(history, chosen.model)


def _rollback(
    live: ServiceSpec, history: list[dict[str, Any]], version: str | None
) -> tuple[ServiceSpec, list[dict[str, Any]]]:
    if live.canaries:
        dropped = _pick(live, version, "rollback") if version else None
        rest = tuple(c for c in live.canaries if dropped is not None and c is not dropped)
        return live.with_versions(live.stable, rest), history
    back = previous(history)
    if back is None:
        raise _refuse(
            "action",
            f"rollback: {live.name} has no canary and no previous version (history: "
            f"{', '.join(e['version'] for e in history) or 'empty'})",
        )
    model = replace(
        live.stable,
        version=back["version"],
        storage_uri=back.get("storage_uri") or live.stable.storage_uri,
        format=back.get("format") or live.stable.format,
        runtime=back.get("runtime"),
    )
    return live.with_versions(model, ()), with_stable(history, model)
