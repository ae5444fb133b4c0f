# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``federation_platform``'s admission options: which of the platform's admission
policies Karmada holds, with which platform groups and image registries, as the
scheduling_policy role's ``scheduling_policy_admission``, ``_platform_groups`` and
``_image_registries`` say them for one cluster; and which policies a run removes. Pure.

A site that turns a policy off in its members turns it off here too, so what Karmada
admits is what its members admit (rule federation-admission).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean

from ..common.errors import FieldError
from ..common.names import is_managed
from ..policy.admission import (
    ADMISSION_OFF_BY_DEFAULT,
    ADMISSION_SWITCHES,
    DEFAULT_PLATFORM_GROUPS,
)
from ..policy.image_registries import registry_prefix_errors

# A federation has cloud members by design: its pod placement is always a cloud-burst
# site's (federation_admission), so that switch is not the caller's.
FEDERATION_SWITCHES = tuple(s for s in ADMISSION_SWITCHES if s not in ADMISSION_OFF_BY_DEFAULT)
ADMISSION_KINDS = ("ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy")


@dataclass(frozen=True)
class AdmissionSettings:
    """The switches (every one of ``FEDERATION_SWITCHES``), the groups the platform-state
    policy exempts, the registries tenant pods may pull from (none: no such policy), and
    whether the caller accepts removing the last parameterised binding."""

    switches: Mapping[str, bool] = field(
        default_factory=lambda: dict.fromkeys(FEDERATION_SWITCHES, True)
    )
    platform_groups: tuple[str, ...] = DEFAULT_PLATFORM_GROUPS
    image_registries: tuple[str, ...] = ()
    remove_last_parameterised_policy: bool = False


def _switch_errors(admission: object) -> tuple[dict[str, bool], list[FieldError]]:
    if admission is None:
        return dict.fromkeys(FEDERATION_SWITCHES, True), []
    if not isinstance(admission, Mapping):
        return {}, [FieldError("admission", f"{admission!r} must be a mapping of switches")]
    errors = []
    switches = dict.fromkeys(FEDERATION_SWITCHES, True)
    for key, value in admission.items():
        if key not in FEDERATION_SWITCHES:
            errors.append(
                FieldError(
                    f"admission.{key}",
                    f"is not an admission switch of a federation ({', '.join(FEDERATION_SWITCHES)})",
                )
            )
            continue
        try:
            switches[key] = boolean(value, strict=True)
        except TypeError:
            errors.append(FieldError(f"admission.{key}", f"{value!r} is not a boolean"))
    return switches, errors


def parse_admission(params: Mapping[str, Any]) -> tuple[AdmissionSettings, list[FieldError]]:
    """The admission options, and what is wrong with them, each error naming its option."""
    switches, errors = _switch_errors(params.get("admission"))
    groups = params.get("platform_groups")
    if groups is None:
        groups = list(DEFAULT_PLATFORM_GROUPS)
    if isinstance(groups, (str, Mapping)) or not isinstance(groups, Sequence) or not groups:
        errors.append(FieldError("platform_groups", f"{groups!r} must be a list of group names"))
        groups = []
    errors += [
        FieldError(f"platform_groups[{i}]", f"{g!r} is not a group name")
        for i, g in enumerate(groups)
        if not isinstance(g, str) or not g.strip()
    ]
    registries = params.get("image_registries") or []
    errors += registry_prefix_errors(registries)
    settings = AdmissionSettings(
        switches=switches,
        platform_groups=tuple(groups),
        image_registries=tuple(registries) if isinstance(registries, list) else (),
        remove_last_parameterised_policy=bool(params.get("remove_last_parameterised_policy")),
    )
    return settings, errors


def unwanted_admission(
    objects: Mapping[str, Mapping[str, Mapping[str, Any]]], wanted: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The platform's admission policies and bindings Karmada holds that the run does not
    want (switched off, or no registries given): bindings first, then their policies, so
    a policy is never left bound for a moment without its parameterised checks."""
    keep = {(o["kind"], o["metadata"]["name"]) for o in wanted}
    return [
        obj
        for kind in ADMISSION_KINDS
        for name, obj in sorted((objects.get(kind) or {}).items())
        if (kind, name) not in keep and is_managed((obj.get("metadata") or {}).get("labels"))
    ]


def last_parameterised_errors(
    live_bindings: Mapping[str, Mapping[str, Any]],
    wanted: Sequence[Mapping[str, Any]],
    settings: AdmissionSettings,
) -> list[FieldError]:
    """Rule last-parameterised-binding, in Karmada's API server as in a member's: removing
    every binding that reads a ConfigMap parameter freezes the server's parameter informer
    on Kubernetes 1.35 (kubernetes/kubernetes#133827) until it restarts; refused unless the
    caller says ``remove_last_parameterised_policy``."""
    live = sorted(n for n, b in live_bindings.items() if "paramRef" in (b.get("spec") or {}))
    kept = [
        o
        for o in wanted
        if o["kind"] == "ValidatingAdmissionPolicyBinding" and "paramRef" in o["spec"]
    ]
    if not live or kept or settings.remove_last_parameterised_policy:
        return []
    return [
        FieldError(
            "admission",
            f"switches off every parameterised policy, which would remove {' and '.join(live)}, "
            "the last admission policy binding(s) with a ConfigMap parameter in Karmada's API "
            "server; Kubernetes 1.35 then stops its ConfigMap parameter informer until the API "
            "server restarts (kubernetes/kubernetes#133827). Nothing was written. Set "
            "remove_last_parameterised_policy to remove it anyway and restart Karmada's API "
            "server afterwards",
        )
    ]
