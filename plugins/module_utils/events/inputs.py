# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The arguments of the event source ``gpucloud.platform.cluster_events``.

Rule event-source-args (``source_args``): kubernetes.core's connection options (each
unset one read from its ``K8S_AUTH_*`` variable, and with none of them the kubeconfig of
``KUBECONFIG``, as every module of the collection connects), ``resync_seconds`` (a
number above 0, default 30), ``coalesce_seconds`` (rule event-coalesce's window, 0 or
more, default 5; 0 passes every event), ``kinds`` (some of Queue, PodGroup, Node, ConfigMap,
default all) and ``gpu_unhealthy_conditions`` (the Node condition types whose status True
says a node's GPUs failed, for rule event-gpu-health-changed: a list of distinct condition
type names, never ``Ready``, default ``[GpuUnhealthy]`` as module ``gpu_health``'s
``unhealthy_conditions``). Any other argument is refused by name, so a misspelt option is not
silently ignored; ``eda_*`` arguments are ansible-rulebook's own and are left alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import GPU_UNHEALTHY_CONDITIONS
from .model import KINDS, READY

# kubernetes.core's connection options a source takes (its k8s_auth_options, less the
# ones that only make sense for one module run).
CONNECTION_OPTIONS = (
    "kubeconfig",
    "context",
    "host",
    "api_key",
    "username",
    "password",
    "validate_certs",
    "ca_cert",
    "client_cert",
    "client_key",
    "proxy",
)
DEFAULT_RESYNC_SECONDS = 30.0
DEFAULT_COALESCE_SECONDS = 5.0
SOURCE_OPTIONS = (
    *CONNECTION_OPTIONS,
    "resync_seconds",
    "coalesce_seconds",
    "kinds",
    "gpu_unhealthy_conditions",
)
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


@dataclass(frozen=True)
class SourceArgs:
    """What the source runs with: the connection options given (None left out), the
    resync period, the kinds it watches, the coalescing window and the Node condition
    types that mean failed GPUs."""

    connection: dict[str, Any] = field(default_factory=dict)
    resync_seconds: float = DEFAULT_RESYNC_SECONDS
    kinds: tuple[str, ...] = KINDS
    coalesce_seconds: float = DEFAULT_COALESCE_SECONDS
    gpu_unhealthy_conditions: tuple[str, ...] = GPU_UNHEALTHY_CONDITIONS


def _boolean(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in (*_TRUE, *_FALSE):
        return value.strip().lower() in _TRUE
    return None


def _connection_errors(name: str, value: object) -> list[FieldError]:
    if name == "validate_certs":
        if _boolean(value) is None:
            return [FieldError(name, f"{value!r} is not a boolean (true or false)")]
        return []
    if name == "kubeconfig" and isinstance(value, Mapping):
        return []  # kubernetes.core takes a kubeconfig's content as a mapping too
    if not isinstance(value, str) or not value:
        return [FieldError(name, f"{value!r} must be a non-empty string")]
    return []


def _seconds(
    name: str, value: object, default: float, zero: bool
) -> tuple[float, list[FieldError]]:
    """A number of seconds above 0 (``zero``: 0 or more), else ``default`` and the error."""
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or number < 0 or (number == 0 and not zero):
        bound = "0 or more" if zero else "above 0"
        return default, [FieldError(name, f"{value!r} must be a number of seconds {bound}")]
    return number, []


def _kinds(value: object) -> tuple[tuple[str, ...], list[FieldError]]:
    words = f"a list of some of {', '.join(KINDS)}"
    if not isinstance(value, list | tuple) or not value:
        return KINDS, [FieldError("kinds", f"{value!r} must be {words}")]
    unknown = [k for k in value if k not in KINDS]
    if unknown:
        return KINDS, [
            FieldError("kinds", f"{unknown!r} are not kinds the source watches; {words}")
        ]
    if len(set(value)) != len(value):
        return KINDS, [FieldError("kinds", f"{list(value)!r} names a kind twice")]
    # The source lists in KINDS order (queues before PodGroups).
    return tuple(k for k in KINDS if k in value), []


def _condition_types(value: object) -> tuple[tuple[str, ...], list[FieldError]]:
    """The GPU-fault condition types: a non-empty list of distinct names, without spaces,
    never Ready (a Ready node is no failed GPU)."""
    name = "gpu_unhealthy_conditions"
    words = "a list of Node condition types, such as [GpuUnhealthy]"
    if not isinstance(value, list | tuple) or not value:
        return GPU_UNHEALTHY_CONDITIONS, [FieldError(name, f"{value!r} must be {words}")]
    bad = [t for t in value if not isinstance(t, str) or not t or t.strip() != t or " " in t]
    if bad:
        return GPU_UNHEALTHY_CONDITIONS, [
            FieldError(name, f"{bad!r} are not condition types; {words}")
        ]
    if READY in value:
        return GPU_UNHEALTHY_CONDITIONS, [
            FieldError(
                name,
                f"{READY} is every healthy node's condition, not a GPU fault; {words}",
            )
        ]
    if len(set(value)) != len(value):
        return GPU_UNHEALTHY_CONDITIONS, [
            FieldError(name, f"{list(value)!r} names a condition type twice")
        ]
    return tuple(value), []


def source_args(args: Mapping[str, Any] | None) -> SourceArgs:
    """Rule event-source-args: the source's arguments checked (PlatformValidationError
    naming each bad one) and read."""
    args = args or {}
    errors: list[FieldError] = []
    connection: dict[str, Any] = {}
    for name in sorted(args):
        if name.startswith("eda_"):
            continue
        if name not in SOURCE_OPTIONS:
            errors.append(
                FieldError(
                    name,
                    f"is not an argument of the source; expected one of {', '.join(SOURCE_OPTIONS)}",
                )
            )
        elif name in CONNECTION_OPTIONS and args[name] is not None:
            errors += _connection_errors(name, args[name])
            value = args[name]
            connection[name] = _boolean(value) if name == "validate_certs" else value
    resync, resync_errors = (
        _seconds("resync_seconds", args["resync_seconds"], DEFAULT_RESYNC_SECONDS, zero=False)
        if args.get("resync_seconds") is not None
        else (DEFAULT_RESYNC_SECONDS, [])
    )
    coalesce, coalesce_errors = (
        _seconds("coalesce_seconds", args["coalesce_seconds"], DEFAULT_COALESCE_SECONDS, zero=True)
        if args.get("coalesce_seconds") is not None
        else (DEFAULT_COALESCE_SECONDS, [])
    )
    kinds, kind_errors = _kinds(args["kinds"]) if args.get("kinds") is not None else (KINDS, [])
    unhealthy, unhealthy_errors = (
        _condition_types(args["gpu_unhealthy_conditions"])
        if args.get("gpu_unhealthy_conditions") is not None
        else (GPU_UNHEALTHY_CONDITIONS, [])
    )
    raise_if(errors + resync_errors + coalesce_errors + kind_errors + unhealthy_errors)
    return SourceArgs(connection, resync, kinds, coalesce, unhealthy)
