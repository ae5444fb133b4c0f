# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules on how the plugins of ``volcano-scheduler.conf``'s tiers work
together in Volcano 1.15.1 (queue shares, victims, admission order), and the
platform's own policy. Pure: no I/O.

Each rule is one function named ``Rule <name>`` in its docstring; every error
names the tier index, the plugin and the key. ``scheduler_conf_rules`` runs
them with the rules on keys, names and types.

How victims are chosen (pkg/scheduler/framework/session_plugins.go,
``Preemptable``, ``Reclaimable``, ``UnifiedEvictable``): tiers are walked in
order; inside a tier the victim sets of the plugins are intersected; the first
tier that ends with a non-empty set decides and later tiers are never asked.
A plugin that returns an empty set ends its tier without a decision, and the
next tier is asked. With priority, gang and conformance in the first tier
(they permit candidates), that tier decides, and a capacity plugin in a later
tier never filters victims (upstream issue 5896).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.errors import FieldError
from . import volcano_catalog as vc
from .scheduler_conf_reader import action_names, plugin_field, plugins_of


def capacity_proportion_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule capacity-not-proportion: capacity and proportion both manage queue shares; use one."""
    found = {plugin.get("name"): (t, p) for t, p, plugin in plugins_of(conf)}
    if "capacity" in found and "proportion" in found:
        t, p = found["proportion"]
        ct, _unused = found["capacity"]
        return [
            FieldError(
                plugin_field(t, p, "proportion") + ".name",
                f"plugin 'proportion' in tier {t} cannot be used together with plugin 'capacity' in tier {ct}: "
                "both compute queue shares and reclaim victims; remove proportion (the platform's queues use "
                "capacity's guarantee/deserved/capability with hierarchy)",
            )
        ]
    return []


# Plugins that read their own enableHierarchy (framework.Session.HierarchyEnabled):
# capacity shares queues along the tree; nodegroup hands a queue without an
# affinity the affinity of its nearest ancestor.
HIERARCHY_ALLOWED = ("capacity", "nodegroup")


def hierarchy_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule hierarchy-only-capacity: enableHierarchy belongs on capacity (queue shares)
    and nodegroup (inherited node-group affinity), and nowhere else."""
    errors = []
    for t, p, plugin in plugins_of(conf):
        name = plugin.get("name")
        if "enableHierarchy" in plugin and name not in HIERARCHY_ALLOWED:
            what = (
                "drf's enableHierarchy turns on hierarchical DRF, a second queue-sharing model that conflicts "
                "with capacity's hierarchy"
                if name == "drf"
                else f"{name} does not read enableHierarchy"
            )
            errors.append(
                FieldError(
                    f"{plugin_field(t, p, name)}.enableHierarchy",
                    f"plugin {name!r} in tier {t}: {what}; set enableHierarchy only on "
                    f"{' and '.join(HIERARCHY_ALLOWED)}",
                )
            )
    return errors


def node_group_plugin_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule node-groups-need-nodegroup: queues bound to node groups (``hybrid/queues``) need
    Volcano's nodegroup plugin with enableHierarchy: true, so that every queue without an
    affinity of its own inherits root's (IDC only). Without it a cloud node is open to
    every queue whose pods tolerate its taint."""
    found = _tier_of(conf, "nodegroup")
    if found is None:
        return [
            FieldError(
                "tiers",
                "has no nodegroup plugin; queues bound to node groups need "
                "{name: nodegroup, enableHierarchy: true} in a tier",
            )
        ]
    t, p, plugin = found
    if plugin.get("enableHierarchy") is not True:
        return [
            FieldError(
                f"{plugin_field(t, p, 'nodegroup')}.enableHierarchy",
                f"{plugin.get('enableHierarchy')!r}: must be true, or queues without an affinity "
                "of their own do not inherit root's IDC-only affinity",
            )
        ]
    return []


def deciding_tier(conf: Mapping[str, Any]) -> int | None:
    """The first tier holding a plugin that permits victims (priority, gang, conformance):
    that tier decides victims and later tiers' victim filters are not consulted."""
    for t, _p, plugin in plugins_of(conf):
        if plugin.get("name") in vc.VICTIM_DECIDING_PLUGINS:
            return t
    return None


def capacity_tier_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule capacity-in-deciding-tier: capacity's reclaim filter counts only in the tier that
    decides victims (upstream issue 5896), and its reclaimable filter must stay enabled."""
    decider = deciding_tier(conf)
    errors = []
    for t, p, plugin in plugins_of(conf):
        if plugin.get("name") != "capacity":
            continue
        field = plugin_field(t, p, "capacity")
        if decider is not None and t != decider:
            where = "after" if t > decider else "before"
            deciders = sorted(
                {
                    q.get("name")
                    for tt, _unused, q in plugins_of(conf)
                    if tt == decider and q.get("name") in vc.VICTIM_DECIDING_PLUGINS
                }
            )
            consequence = (
                "that tier decides victims, so capacity's reclaim filter (deserved and guarantee protection) is "
                "never consulted and reclaim can take jobs a queue is entitled to (upstream issue 5896)"
                if t > decider
                else "capacity's tier then decides victims alone, without gang and conformance protecting pods"
            )
            errors.append(
                FieldError(
                    field + ".name",
                    f"plugin 'capacity' in tier {t} is placed {where} tier {decider}, which holds "
                    f"{', '.join(deciders)}; {consequence}; move capacity into tier {decider}",
                )
            )
        if plugin.get("enableReclaimable") is False:
            errors.append(
                FieldError(
                    field + ".enableReclaimable",
                    f"plugin 'capacity' in tier {t}: enableReclaimable: false switches off the filter that keeps "
                    "reclaim within what queues borrowed; remove it",
                )
            )
    return errors


def victim_fallthrough_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule no-victim-fallthrough: when gang finds no task above a job's minAvailable its tier
    ends without a decision and the next tier is asked; a later plugin with a victim filter then
    decides alone, without priority or conformance (drf would preempt by share, ignoring priority)."""
    decider = deciding_tier(conf)
    if decider is None:
        return []
    errors = []
    for t, p, plugin in plugins_of(conf):
        name = plugin.get("name")
        if t <= decider or name in vc.VICTIM_DECIDING_PLUGINS:
            continue
        field = plugin_field(t, p, name)
        if name in vc.PREEMPTABLE_PLUGINS and plugin.get("enablePreemptable") is not False:
            errors.append(
                FieldError(
                    f"{field}.enablePreemptable",
                    f"plugin {name!r} in tier {t} keeps its preemptable filter on after the deciding tier {decider}; "
                    "for whole gang jobs it would choose preemption victims alone, ignoring priority and conformance; "
                    "set enablePreemptable: false",
                )
            )
        reclaims = name in vc.RECLAIMABLE_PLUGINS and (
            name != "drf" or plugin.get("enableHierarchy") is True
        )
        if reclaims and name != "capacity" and plugin.get("enableReclaimable") is not False:
            errors.append(
                FieldError(
                    f"{field}.enableReclaimable",
                    f"plugin {name!r} in tier {t} keeps its reclaimable filter on after the deciding tier {decider}; "
                    "it would choose reclaim victims alone; set enableReclaimable: false",
                )
            )
    return errors


def _tier_of(conf: Mapping[str, Any], name: str) -> tuple[int, int, Mapping[str, Any]] | None:
    return next(((t, p, q) for t, p, q in plugins_of(conf) if q.get("name") == name), None)


def sla_enqueue_only_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule sla-enqueue-only: an sla plugin in a tier before gang's has enableJobPipelined:
    false, and one in a tier before priority's has enableJobOrder: false. Tiers are asked in
    order and a permit ends the vote: sla's pipelined permit would make preempt and reclaim
    commit their evictions although the job still cannot run (gang is never asked), and
    its job order would put every job with a waiting time ahead of higher priorities."""
    found = _tier_of(conf, "sla")
    if found is None:
        return []
    t, p, plugin = found
    errors = []
    for option, other, why in (
        (
            "enableJobPipelined",
            "gang",
            "preempt and reclaim would commit evictions for a job gang has not found room for",
        ),
        (
            "enableJobOrder",
            "priority",
            "jobs with a waiting time would be scheduled before jobs of higher priority",
        ),
    ):
        later = _tier_of(conf, other)
        if later is not None and later[0] > t and plugin.get(option) is not False:
            errors.append(
                FieldError(
                    f"{plugin_field(t, p, 'sla')}.{option}",
                    f"plugin 'sla' in tier {t} comes before {other!r} (tier {later[0]}) and keeps "
                    f"{option} on: {why}; set {option}: false",
                )
            )
    return errors


def sla_before_capacity_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule sla-before-capacity: the platform's policy has sla in a tier before capacity's,
    without a global sla-waiting-time. Capacity refuses to enqueue a job whose queue is at
    capability, and preempt and reclaim act only for enqueued jobs; sla's permit in an
    earlier tier admits a job whose waiting time (``volcano.sh/sla-waiting-time``, set per
    class, jobs/sla) has passed, so a large job preempts and a team takes back what a
    sibling borrowed in a fully used subscription. A global waiting time would admit
    every job, debug and spot jobs too."""
    sla = _tier_of(conf, "sla")
    capacity = _tier_of(conf, "capacity")
    if capacity is None:
        return []  # platform-policy reports the missing capacity
    if sla is None or sla[0] >= capacity[0]:
        where = "has no 'sla' plugin" if sla is None else f"has 'sla' in tier {sla[0]}"
        return [
            FieldError(
                "tiers" if sla is None else f"{plugin_field(sla[0], sla[1], 'sla')}.name",
                f"{where}, not in a tier before capacity's (tier {capacity[0]}): in a fully used "
                "subscription capacity never admits a large job or a team's job, so neither "
                "preempt nor reclaim ever acts for it; put {name: sla, enableJobOrder: false, "
                "enableJobPipelined: false} alone in a first tier",
            )
        ]
    t, p, plugin = sla
    arguments = plugin.get("arguments")
    if isinstance(arguments, Mapping) and "sla-waiting-time" in arguments:
        return [
            FieldError(
                f"{plugin_field(t, p, 'sla')}.arguments.sla-waiting-time",
                "a global waiting time admits every job past its queue's capability, debug and "
                "spot jobs too; remove it (the platform sets volcano.sh/sla-waiting-time per job "
                "class)",
            )
        ]
    return []


def ancestor_reclaim_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule tenant-ancestor-reclaim: capacity's ancestorReclaimLevel is at least 1. With 0
    (Volcano's default) reclaim judges only the victim's own queue: a team above its deserved
    on GPUs borrowed from a sibling is a victim for any queue below its deserved, another
    tenant's too, although the team's subscription is at its deserved. With 1 a victim in
    another subscription must also take its parent above deserved, which a subscription
    (deserved = capability) never is; siblings under one parent are judged as before."""
    found = _tier_of(conf, "capacity")
    if found is None:
        return []
    t, p, plugin = found
    arguments = plugin.get("arguments") if isinstance(plugin.get("arguments"), Mapping) else {}
    level = arguments.get("ancestorReclaimLevel", 0)
    if isinstance(level, bool) or not isinstance(level, int):
        return []  # rule known-arguments reports the type
    if level >= 1:
        return []
    return [
        FieldError(
            f"{plugin_field(t, p, 'capacity')}.arguments.ancestorReclaimLevel",
            f"is {level}: reclaim would judge only a victim's own queue, so another tenant's queue "
            "could reclaim the GPUs a team borrowed from its sibling inside a subscription at its "
            "deserved; set ancestorReclaimLevel: 1",
        )
    ]


def platform_policy_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule platform-policy: the platform's queues need capacity with enableHierarchy: true,
    gang and conformance, and whole-job eviction (gangpreempt/gangreclaim) where eviction is on."""
    errors = []
    by_name = {plugin.get("name"): (t, p, plugin) for t, p, plugin in plugins_of(conf)}
    if "capacity" not in by_name:
        errors.append(
            FieldError(
                "tiers",
                "has no 'capacity' plugin; the platform's queues need capacity with enableHierarchy: true",
            )
        )
    else:
        t, p, plugin = by_name["capacity"]
        if plugin.get("enableHierarchy") is not True:
            errors.append(
                FieldError(
                    f"{plugin_field(t, p, 'capacity')}.enableHierarchy",
                    f"plugin 'capacity' in tier {t} needs enableHierarchy: true for subscription team sub-queues",
                )
            )
    for needed in ("gang", "conformance", "priority"):
        if needed not in by_name:
            errors.append(
                FieldError(
                    "tiers",
                    f"has no {needed!r} plugin; the platform's policy needs it in the first tier",
                )
            )
    errors += sla_before_capacity_errors(conf)
    errors += ancestor_reclaim_errors(conf)
    actions = action_names(conf)
    for needed in ("enqueue", "allocate"):
        if needed not in actions:
            errors.append(
                FieldError(
                    "actions", f"{conf.get('actions')!r} lacks {needed!r}, which the platform needs"
                )
            )
    if "gang" in by_name:
        for legacy, gang_action in (("preempt", "gangpreempt"), ("reclaim", "gangreclaim")):
            if legacy in actions and gang_action not in actions:
                errors.append(
                    FieldError(
                        f"actions[{actions.index(legacy)}]",
                        f"{legacy!r} without {gang_action!r}: with gang in the deciding tier, {legacy} takes only tasks "
                        f"above a job's minAvailable there, so a whole gang job is evicted only when a later tier decides "
                        f"alone (see no-victim-fallthrough); add {gang_action!r} after {legacy!r} for whole-job eviction",
                    )
                )
    return errors
