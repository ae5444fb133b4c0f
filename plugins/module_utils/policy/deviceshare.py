# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the ``deviceshare`` plugin's arguments for Volcano 1.15.1.

The plugin reads its arguments in ``enablePredicate``
(pkg/scheduler/plugins/deviceshare/deviceshare.go) each time a session
opens, into package globals (``gpushare.GpuSharingEnable``,
``gpushare.GpuNumberEnable``, ``vgpu.VGPUEnable``, ``vgpu.SchedulePolicy``).
Two combinations end the vc-scheduler process (``klog.Fatal``), so a
configuration Volcano accepts when it parses stops the scheduler at the next
session; the others are silently without effect. Types (booleans, an unquoted
integer ScheduleWeight) are rule known-arguments' and the 0..100 bound of the
weight is rule weight-bounds' (scheduler_conf_rules); these rules do not repeat them.

Each rule is one function named ``Rule <name>`` in its docstring; every error
names the tier index, the plugin and the argument. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.errors import FieldError
from .scheduler_conf_reader import plugin_field, plugins_of, suggestion

PLUGIN = "deviceshare"
SOURCE = "pkg/scheduler/plugins/deviceshare/deviceshare.go"

GPU_SHARING = "deviceshare.GPUSharingEnable"
GPU_NUMBER = "deviceshare.GPUNumberEnable"
VGPU = "deviceshare.VGPUEnable"
ASCEND_MINDCLUSTER_VNPU = "deviceshare.AscendMindClusterVNPUEnable"
ASCEND_HAMI_VNPU = "deviceshare.AscendHAMiVNPUEnable"
NODE_LOCK = "deviceshare.NodeLockEnable"
SCHEDULE_POLICY = "deviceshare.SchedulePolicy"
SCHEDULE_WEIGHT = "deviceshare.ScheduleWeight"
EXCLUSIVE_RULES = "deviceshare.GPUExclusiveRules"

# pkg/scheduler/api/devices/nvidia/vgpu/type.go binpackPolicy, spreadPolicy; any other
# value takes the default branch of utils.go sortedDeviceIndicesByPolicy and GPUScore
# (last GPU first, score 0).
SCHEDULE_POLICIES = ("binpack", "spread")
# Modes that make deviceshare register a device whose Allocate the predicates plugin calls.
SHARING_MODES = (GPU_SHARING, GPU_NUMBER, VGPU, ASCEND_MINDCLUSTER_VNPU, ASCEND_HAMI_VNPU)
# Devices whose node score reads SchedulePolicy (vgpu, and the two Ascend vNPU devices).
SCORING_MODES = (VGPU, ASCEND_MINDCLUSTER_VNPU, ASCEND_HAMI_VNPU)

# strconv.ParseBool, which framework.Arguments.GetBool applies to a string.
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def volcano_bool(value: object) -> bool | None:
    """What framework.Arguments.GetBool makes of ``value``: a YAML boolean, or a string
    strconv.ParseBool accepts; None when GetBool ignores it (the global keeps its value)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
    return None


def _shown(value: object) -> str:
    """A value as it reads in the YAML configuration."""
    return ("true" if value else "false") if isinstance(value, bool) else repr(value)


def _on(arguments: Mapping[str, Any], key: str) -> bool:
    return volcano_bool(arguments.get(key)) is True


def _weight(arguments: Mapping[str, Any]) -> int | None:
    """ScheduleWeight as GetInt reads it: 0 when absent, None when it is not an integer
    (rule known-arguments reports that; GetInt then keeps 0)."""
    value = arguments.get(SCHEDULE_WEIGHT, 0)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def sharing_mode_errors(field: str, arguments: Mapping[str, Any]) -> list[FieldError]:
    """Rule deviceshare-one-sharing-mode: at most one of GPUSharingEnable, GPUNumberEnable
    and VGPUEnable is true. deviceshare.go ``enablePredicate`` (lines 116-121 in 1.15.1)
    calls ``klog.Fatal("can not define true in both gpu sharing and gpu number")`` for the
    first two and ``klog.Fatal("gpu-share and vgpu can't be used together")`` for either
    with VGPUEnable: vc-scheduler exits at the next session and restarts into the same
    configuration. GPUSharingEnable and GPUNumberEnable are Volcano's old GPU sharing
    (``volcano.sh/gpu-memory``, ``volcano.sh/gpu-number``, deprecated since 1.9)."""
    errors = []
    if _on(arguments, GPU_SHARING) and _on(arguments, GPU_NUMBER):
        errors.append(
            FieldError(
                f"{field}.{GPU_NUMBER}",
                f"true together with {GPU_SHARING}: true; Volcano stops vc-scheduler "
                f'(klog.Fatal "can not define true in both gpu sharing and gpu number", '
                f"{SOURCE}:117, enablePredicate); enable one (rule deviceshare-one-sharing-mode)",
            )
        )
    if _on(arguments, VGPU):
        for old in (GPU_SHARING, GPU_NUMBER):
            if _on(arguments, old):
                errors.append(
                    FieldError(
                        f"{field}.{VGPU}",
                        f"true together with {old}: {_shown(arguments.get(old))}; Volcano stops "
                        f'vc-scheduler (klog.Fatal "gpu-share and vgpu can\'t be used together", '
                        f"{SOURCE}:120, enablePredicate); HAMi vGPU replaces the old GPU sharing "
                        f"(deprecated since Volcano 1.9): set {old}: false "
                        "(rule deviceshare-one-sharing-mode)",
                    )
                )
    return errors


def schedule_policy_errors(field: str, arguments: Mapping[str, Any]) -> list[FieldError]:
    """Rule deviceshare-schedule-policy: SchedulePolicy is ``binpack`` (fill the most
    used GPU first) or ``spread`` (an idle GPU first). Any other string falls into the
    default branch of vgpu/utils.go ``sortedDeviceIndicesByPolicy`` and ``GPUScore``:
    the last GPU first and a node score of 0, without a word in the log. (A value that is
    not a string is rule known-arguments'.)"""
    value = arguments.get(SCHEDULE_POLICY)
    if SCHEDULE_POLICY not in arguments or not isinstance(value, str):
        return []
    if value in SCHEDULE_POLICIES:
        return []
    return [
        FieldError(
            f"{field}.{SCHEDULE_POLICY}",
            f"{value!r} is not a policy of Volcano's vGPU device{suggestion(value, SCHEDULE_POLICIES)} "
            f"(known: {', '.join(SCHEDULE_POLICIES)}); any other value silently means no policy "
            "(pkg/scheduler/api/devices/nvidia/vgpu/utils.go) (rule deviceshare-schedule-policy)",
        )
    ]


def policy_weight_errors(
    field: str, arguments: Mapping[str, Any], plugin: Mapping[str, Any]
) -> list[FieldError]:
    """Rule deviceshare-policy-weight: SchedulePolicy and ScheduleWeight go together.
    deviceshare.go scores nodes only when ``dp.scheduleWeight > 0``, so a policy without
    a positive weight orders the GPUs inside a node but never prefers a node; with
    VGPUEnable and no policy ``GPUScore`` is always 0, so a weight alone scores nothing;
    ``enableNodeOrder: false`` on the plugin drops the score whatever the weight
    (framework/session_plugins.go, ``isEnabled(plugin.EnabledNodeOrder)``)."""
    errors = []
    weight = _weight(arguments)
    policy = arguments.get(SCHEDULE_POLICY)
    has_policy = isinstance(policy, str) and policy in SCHEDULE_POLICIES
    if has_policy and weight is not None and weight <= 0:
        errors.append(
            FieldError(
                f"{field}.{SCHEDULE_POLICY}",
                f"{policy!r} without a positive {SCHEDULE_WEIGHT} (it is {weight}): the policy "
                f"picks GPUs inside a node but no node is scored ({SOURCE}: scheduleWeight > 0); "
                f"set {SCHEDULE_WEIGHT}, e.g. 10 (rule deviceshare-policy-weight)",
            )
        )
    scores_by_policy_only = _on(arguments, VGPU) and not any(
        _on(arguments, mode) for mode in (ASCEND_MINDCLUSTER_VNPU, ASCEND_HAMI_VNPU)
    )
    if (
        weight is not None
        and weight > 0
        and scores_by_policy_only
        and SCHEDULE_POLICY not in arguments
    ):
        errors.append(
            FieldError(
                f"{field}.{SCHEDULE_WEIGHT}",
                f"{weight} without {SCHEDULE_POLICY}: the vGPU score is 0 for every node "
                "without a policy (vgpu/utils.go GPUScore), so the weight changes nothing; set "
                f"{SCHEDULE_POLICY}: binpack or spread (rule deviceshare-policy-weight)",
            )
        )
    if weight is not None and weight > 0 and plugin.get("enableNodeOrder") is False:
        errors.append(
            FieldError(
                f"{field.removesuffix('.arguments')}.enableNodeOrder",
                f"false drops deviceshare's node score, so {SCHEDULE_WEIGHT}: {weight} is never "
                "applied; remove enableNodeOrder: false (rule deviceshare-policy-weight)",
            )
        )
    return errors


def exclusive_rules_errors(field: str, arguments: Mapping[str, Any]) -> list[FieldError]:
    """Rule deviceshare-exclusive-rules: GPUExclusiveRules is a list of non-empty
    mappings from a pod label to a string value, and needs VGPUEnable. gpuexclusive.go
    ``parseExclusiveRules`` silently drops anything else (a non-list, an entry that is not
    a mapping, a value that is not a string), and ``wrapGPUDevicesForExclusivity`` wraps
    only vGPU (hami-core) devices, so without VGPUEnable the rules do nothing."""
    if EXCLUSIVE_RULES not in arguments:
        return []
    rules = arguments[EXCLUSIVE_RULES]
    key = f"{field}.{EXCLUSIVE_RULES}"
    errors = []
    if not isinstance(rules, list):
        errors.append(
            FieldError(
                key,
                f"{rules!r} must be a list of label mappings, e.g. [{{team: a}}]; Volcano ignores "
                "anything else (rule deviceshare-exclusive-rules)",
            )
        )
    else:
        for i, rule in enumerate(rules):
            bad = (
                not isinstance(rule, Mapping)
                or not rule
                or any(not isinstance(k, str) or not isinstance(v, str) for k, v in rule.items())
            )
            if bad:
                errors.append(
                    FieldError(
                        f"{key}[{i}]",
                        f"{rule!r} must be a non-empty mapping from a pod label to a string "
                        "value (quote numbers and booleans); Volcano drops the rest "
                        "(rule deviceshare-exclusive-rules)",
                    )
                )
    if not _on(arguments, VGPU):
        errors.append(
            FieldError(
                key,
                f"is set but {VGPU} is not true; GPU exclusivity applies only to vGPU devices "
                "(gpuexclusive.go wrapGPUDevicesForExclusivity) (rule deviceshare-exclusive-rules)",
            )
        )
    return errors


def predicates_errors(
    conf: Mapping[str, Any], field: str, arguments: Mapping[str, Any], plugin: Mapping[str, Any]
) -> list[FieldError]:
    """Rule deviceshare-needs-predicates: with a sharing mode on, the ``predicates``
    plugin is configured and deviceshare keeps its predicate. deviceshare only filters
    nodes; the device is allocated (the pod annotations ``volcano.sh/vgpu-ids-new`` and
    ``volcano.sh/devices-to-allocate`` the device plugin reads) by the predicates plugin's
    AllocateFunc (pkg/scheduler/plugins/predicates/predicates.go, ``devices.Allocate``);
    ``enablePredicate: false`` drops deviceshare's filter, so pods land on nodes whose
    GPUs are full and their allocation fails."""
    modes = [mode for mode in SHARING_MODES if _on(arguments, mode)]
    if not modes:
        return []
    errors = []
    if not any(q.get("name") == "predicates" for _t, _p, q in plugins_of(conf)):
        errors.append(
            FieldError(
                "tiers",
                f"has no 'predicates' plugin while {field} enables {', '.join(modes)}; the "
                "predicates plugin allocates the devices (predicates.go AllocateFunc), without it "
                "no pod gets its GPU slice; add {name: predicates} (rule deviceshare-needs-predicates)",
            )
        )
    if plugin.get("enablePredicate") is False:
        errors.append(
            FieldError(
                f"{field}.enablePredicate",
                f"false switches off deviceshare's device filter while {', '.join(modes)} is on; "
                "pods would be placed on nodes without a free GPU slice; remove it "
                "(rule deviceshare-needs-predicates)",
            )
        )
    return errors


def deviceshare_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule deviceshare-arguments: every deviceshare plugin's arguments pass the rules
    above (one sharing mode, a known policy with a weight, well-formed exclusivity rules,
    the predicates plugin present). Empty when no deviceshare plugin has arguments."""
    errors: list[FieldError] = []
    for t, p, plugin in plugins_of(conf):
        if plugin.get("name") != PLUGIN:
            continue
        arguments = plugin.get("arguments")
        if not isinstance(arguments, Mapping):
            continue  # rule known-arguments reports a non-mapping
        field = plugin_field(t, p, PLUGIN) + ".arguments"
        errors += sharing_mode_errors(field, arguments)
        errors += schedule_policy_errors(field, arguments)
        errors += policy_weight_errors(field, arguments, plugin)
        errors += exclusive_rules_errors(field, arguments)
        errors += predicates_errors(conf, plugin_field(t, p, PLUGIN), arguments, plugin)
    return errors
