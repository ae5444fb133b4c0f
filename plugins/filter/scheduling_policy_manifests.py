# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduling_policy_manifests: the scheduling policy's Kubernetes objects, and the scheduler conf text."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpucloud.platform.plugins.module_utils.policy.admission import (
    ADMISSION_OFF_BY_DEFAULT,
    ADMISSION_SWITCHES,
    DEFAULT_PLATFORM_GROUPS,
    admission_manifests,
    parameterised_policies,
    parent_queues_configmap,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.image_registries import (
    registry_prefix_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.priority_classes import (
    priority_class_manifests,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
    DEFAULT_ACTIONS,
    DEFAULT_TIERS,
    render_scheduler_conf,
    scheduler_configmap,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_reader import (
    suggestion,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_rules import (
    scheduler_conf_errors,
)

PARTS = ("priority_classes", "scheduler_configmap", "admission_policies", "parent_queues_configmap")


def _actions(actions):
    """The actions as a list: a string is split at commas, as Volcano splits its
    actions line, never into characters."""
    if actions is None:
        return DEFAULT_ACTIONS
    if isinstance(actions, str):
        return [a.strip() for a in actions.split(",") if a.strip()]
    if isinstance(actions, Mapping):
        raise AnsibleFilterError(f"actions: {actions!r} is a mapping, not a list of actions")
    return list(actions)


def _list(value, option):
    """A list option given as a list; a string or mapping is refused, naming the option."""
    if isinstance(value, (str, Mapping)):
        raise AnsibleFilterError(f"{option}: {value!r} is not a list")
    return list(value)


def scheduler_conf_text(tiers=None, actions=None, configurations=None):
    """The YAML text of volcano-scheduler.conf from structured variables. Its shape is
    checked first (every rule of scheduler_conf_errors but the platform's own policy,
    which the scheduling_policy role checks), so a bad entry is named, not a Python error."""
    names = _actions(actions)
    bad = [
        f"actions[{i}]: {a!r} must be an action name"
        for i, a in enumerate(names)
        if not isinstance(a, str)
    ]
    if bad:
        raise AnsibleFilterError("scheduler_conf_text: " + "; ".join(bad))
    conf = {
        "actions": ", ".join(names),
        "tiers": _list(tiers, "tiers") if tiers is not None else list(DEFAULT_TIERS),
        "configurations": _list(configurations, "configurations") if configurations else None,
    }
    errors = scheduler_conf_errors(
        {k: v for k, v in conf.items() if v is not None}, platform_policy=False
    )
    if errors:
        raise AnsibleFilterError("scheduler_conf_text: " + "; ".join(str(e) for e in errors))
    return render_scheduler_conf(
        actions=names, tiers=conf["tiers"], configurations=conf["configurations"]
    )


def _switch(admission, name):
    """One admission switch: a boolean, or what Ansible reads as one ("false", "no", 0)."""
    try:
        return boolean(admission.get(name, name not in ADMISSION_OFF_BY_DEFAULT), strict=True)
    except TypeError:
        raise AnsibleFilterError(
            f"admission.{name}: {admission[name]!r} is not a boolean"
        ) from None


def _check_manifest_inputs(conf_text, parts, admission, image_registries):
    """Every part named, every admission switch known, the conf a text: each problem
    named with its field and value, all at once, before anything is built."""
    errors = []
    if isinstance(parts, (str, Mapping)) or not hasattr(parts, "__iter__"):
        errors.append(f"parts: {parts!r} must be a list of {', '.join(PARTS)}")
        parts = ()
    for i, part in enumerate(parts):
        if part not in PARTS:
            errors.append(
                f"parts[{i}]: {part!r} is not a part ({', '.join(PARTS)}){suggestion(str(part), PARTS)}"
            )
    if admission is not None and not isinstance(admission, Mapping):
        errors.append(f"admission: {admission!r} must be a mapping of switches")
        admission = None
    for key in admission or {}:
        if key not in ADMISSION_SWITCHES:
            errors.append(
                f"admission.{key}: is not an admission switch ({', '.join(ADMISSION_SWITCHES)})"
                f"{suggestion(str(key), ADMISSION_SWITCHES)}"
            )
    errors += [str(e) for e in registry_prefix_errors(image_registries or [])]
    if "scheduler_configmap" in parts and not (isinstance(conf_text, str) and conf_text.strip()):
        errors.append(
            f"conf_text: {conf_text!r} must be the YAML text of volcano-scheduler.conf "
            "(the filter scheduler_conf_text makes it)"
        )
    if errors:
        raise AnsibleFilterError("scheduling_policy_manifests: " + "; ".join(errors))


def scheduling_policy_manifests(
    conf_text, parts=PARTS, admission=None, platform_groups=None, image_registries=None
):
    """The manifests to apply: PriorityClasses, the scheduler ConfigMap holding conf_text,
    the admission policies with their bindings (the image policy only with
    image_registries given), and the parent-queues parameter ConfigMap."""
    _check_manifest_inputs(conf_text, parts, admission, image_registries)
    admission = dict(admission or {})
    out = []
    if "priority_classes" in parts:
        out += priority_class_manifests()
    if "scheduler_configmap" in parts:
        out.append(scheduler_configmap(conf_text))
    if "admission_policies" in parts:
        toggles = {name: _switch(admission, name) for name in ADMISSION_SWITCHES}
        groups = (
            _list(platform_groups, "platform_groups")
            if platform_groups
            else list(DEFAULT_PLATFORM_GROUPS)
        )
        out += admission_manifests(
            platform_groups=groups, image_registries=list(image_registries or []), **toggles
        )
    if "parent_queues_configmap" in parts:
        out.append(parent_queues_configmap())
    return out


def parameterised_admission_policies(_unused=None):
    """The switches of the admission policies whose bindings read a ConfigMap parameter
    (rule last-parameterised-binding)."""
    return parameterised_policies()


class FilterModule:
    def filters(self):
        return {
            "scheduling_policy_manifests": scheduling_policy_manifests,
            "scheduler_conf_text": scheduler_conf_text,
            "parameterised_admission_policies": parameterised_admission_policies,
        }
