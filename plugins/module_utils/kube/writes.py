# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module k8s_objects' flow, its pure steps (``kube/flow``): the roles' writes, made as
kubernetes.core.k8s makes them.

* parse: the options as kubernetes.core.k8s's parameters (``K8S_DEFAULTS`` for the ones the
  module does not take);
* gather: ``kube/writes_io`` reads nothing from the cluster: the objects are the option
  ``definition`` as kubernetes.core reads it, and kubernetes.core reads each live object
  itself, right before it writes it (what it writes depends on it);
* plan: the writes, one per object, in the order of ``definition``;
* apply (``kube/writes_io``): each write through kubernetes.core; what it answers is said
  here: one diff entry per object (rule diff-shows-change) and the result.

No ``rendered``, ``gathered`` or ``parsed``: what an apply, a patch or a dry run makes of
the live object is the API server's decision (server-side apply, defaults, admission), not
a plan a run could make without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..common.diffs import changes, object_diff

# kubernetes.core.k8s's parameters this module leaves at their defaults.
K8S_DEFAULTS: dict[str, Any] = dict(
    src=None,
    template=None,
    kind=None,
    api_version=None,
    name=None,
    namespace=None,
    generate_name=None,
    label_selectors=None,
    hidden_fields=None,
    delete_options=None,
    delete_all=False,
    wait_condition=None,
    validate=None,
    append_hash=False,
)

# What kubernetes.core.k8s compares with the live object (a create or a deletion it
# reports as a change without a diff).
COMPARED = ("apply", "update", "replace", "patch")


@dataclass(frozen=True)
class WritesRequest:
    """kubernetes.core.k8s's parameters for the run (``k8s_params``) and whether a failed
    object stops it."""

    k8s_params: Mapping[str, Any]
    continue_on_error: bool


@dataclass(frozen=True)
class Write:
    """One object to write: its place in ``definition``, its name and the object."""

    index: int
    name: str
    definition: dict[str, Any]


def k8s_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The options as kubernetes.core.k8s's parameters."""
    return {**params, **K8S_DEFAULTS, "resource_definition": params["definition"]}


def parse_writes(params: Mapping[str, Any]) -> WritesRequest:
    """The module's options as a request (the argument spec has checked them)."""
    return WritesRequest(
        k8s_params=k8s_params(params), continue_on_error=bool(params["continue_on_error"])
    )


def header(definition: Mapping[str, Any], index: int) -> str:
    """``Kind/namespace/name`` (``Kind/name`` when cluster-scoped)."""
    meta = definition.get("metadata") or {}
    parts = [definition.get("kind"), meta.get("namespace"), meta.get("name")]
    return "/".join(str(p) for p in parts if p) or f"object {index}"


def plan_writes(_request: WritesRequest, definitions: list[dict[str, Any]]) -> tuple[Write, ...]:
    """One write per object, in the order of ``definition``."""
    return tuple(
        Write(index=index, name=header(definition, index), definition=definition)
        for index, definition in enumerate(definitions)
    )


def report_writes(_request: WritesRequest, planned: tuple[Write, ...]) -> dict[str, Any]:
    """What the plan says without the API server: the objects it writes, in order (their
    headers, as the diff names them). What each write changes is the server's to say, so
    the flow offers no offline state that would answer with this alone."""
    return {"writes": [w.name for w in planned]}


def entry_of(
    definition: Mapping[str, Any], index: int, result: dict[str, Any]
) -> dict[str, Any] | None:
    """The object's diff entry (rule diff-shows-change), or None when nothing it says
    changes; sets the result's ``changed`` to match for what kubernetes.core compared."""
    secret = definition.get("kind") == "Secret"
    method = result.get("method")
    name = header(definition, index)
    if method in COMPARED:
        raw = result.get("diff") or {}
        entry = object_diff(name, raw.get("before") or {}, raw.get("after") or {}, secret=secret)
        result["changed"] = changes(entry)
    elif result.get("changed") and method == "create":
        entry = object_diff(name, None, result.get("result") or definition, secret=secret)
    elif result.get("changed") and method == "delete":
        gone = result.get("result") or {}
        entry = object_diff(name, gone if gone.get("kind") else definition, None, secret=secret)
    else:
        return None
    return entry if changes(entry) else None


def error_of(
    write: Write, result: Mapping[str, Any] | None, reason: Any, message: str
) -> dict[str, Any]:
    """A failed write as kubernetes.core.k8s says it, the message naming the object."""
    error = dict(result or {})
    if reason is not None:
        error["reason"] = reason
    error["msg"] = f"{write.name}: {message}"
    return error


def failed_entry(error: Mapping[str, Any]) -> dict[str, Any]:
    """A failed object's entry in ``results`` when the run goes on."""
    return {"changed": False, "result": {}, "error": dict(error)}


def result_of(results: list[dict[str, Any]], entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The module's result: one object's result as is, several under ``result.results``;
    ``diff`` the objects' entries (dropped unless diff mode is on)."""
    if len(results) == 1:
        out = dict(results[0])
    else:
        out = {"changed": any(r["changed"] for r in results), "result": {"results": results}}
    out["diff"] = entries
    return out
