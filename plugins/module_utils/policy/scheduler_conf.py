# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks and builds ``volcano-scheduler.conf`` for Volcano 1.15.1.

Volcano silently ignores misspelled option keys and unknown plugin
arguments, and keeps its previous configuration when a new one does not
parse, so every configuration the platform writes is checked here first.
Each rule is one function named ``Rule <name>`` in its docstring; every error
names the tier index, the plugin and the key.

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

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

from ..common.errors import FieldError
from . import volcano_catalog as vc

TOP_LEVEL_KEYS = ("actions", "tiers", "configurations", "metrics")


def _plugin_field(tier: int, index: int, name: object) -> str:
    return f"tiers[{tier}].plugins[{index}]({name})"


def suggestion(value: str, choices: Sequence[str]) -> str:
    """A "did you mean" hint for a near miss of one of ``choices`` (case or a typo); empty
    when none is near."""
    lowered = {c.lower(): c for c in choices}
    if value.lower() in lowered:
        return f"; did you mean {lowered[value.lower()]!r}?"
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


def parse_conf(conf: str | Mapping[str, Any] | None) -> tuple[dict[str, Any], list[FieldError]]:
    """Rule conf-parses: the configuration is a YAML mapping (as Volcano's yaml.v2 reads it)."""
    if isinstance(conf, Mapping):
        return dict(conf), []
    if conf is None:
        return {}, [
            FieldError(
                "volcano-scheduler.conf", "is empty; a configuration needs actions and tiers"
            )
        ]
    if not isinstance(conf, str):
        return {}, [
            FieldError(
                "volcano-scheduler.conf",
                f"{conf!r} is neither a YAML string nor a mapping (rule conf-parses)",
            )
        ]
    if yaml is None:  # pragma: no cover
        return {}, [
            FieldError("volcano-scheduler.conf", "PyYAML is needed to read the configuration")
        ]
    try:
        data = yaml.safe_load(conf)
    except yaml.YAMLError as exc:
        return {}, [
            FieldError(
                "volcano-scheduler.conf",
                f"is not valid YAML ({exc}); Volcano would keep its previous configuration",
            )
        ]
    if not isinstance(data, Mapping):
        return {}, [
            FieldError(
                "volcano-scheduler.conf", f"{data!r} is not a mapping with actions and tiers"
            )
        ]
    return dict(data), []


def top_level_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule known-top-level-keys: only actions, tiers, configurations and metrics are read."""
    return [
        FieldError(
            str(key),
            f"is not a scheduler configuration key; Volcano reads only {', '.join(TOP_LEVEL_KEYS)}",
        )
        for key in conf
        if key not in TOP_LEVEL_KEYS
    ]


def action_names(conf: Mapping[str, Any]) -> list[str]:
    actions = conf.get("actions")
    if not isinstance(actions, str):
        return []
    return [a.strip() for a in actions.split(",")]


def action_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule known-actions: every comma-separated action is one Volcano 1.15.1 registers."""
    actions = conf.get("actions")
    if not isinstance(actions, str) or not actions.strip():
        return [
            FieldError(
                "actions",
                f"{actions!r} must be a comma-separated string of actions, e.g. 'enqueue, allocate, backfill'",
            )
        ]
    errors = []
    seen: set[str] = set()
    for i, name in enumerate(action_names(conf)):
        if name not in vc.ACTIONS:
            errors.append(
                FieldError(
                    f"actions[{i}]",
                    f"{name!r} is not an action of Volcano {vc.VOLCANO_VERSION}{suggestion(name, vc.ACTIONS)} "
                    f"(known: {', '.join(vc.ACTIONS)}); Volcano rejects the whole configuration",
                )
            )
        elif name in seen:
            errors.append(
                FieldError(f"actions[{i}]", f"{name!r} is listed twice; list each action once")
            )
        seen.add(name)
    return errors


def plugins_of(conf: Mapping[str, Any]) -> list[tuple[int, int, Mapping[str, Any]]]:
    """(tier index, plugin index, plugin) for every well-formed plugin entry."""
    out = []
    tiers = conf.get("tiers")
    if not isinstance(tiers, list):
        return out
    for t, tier in enumerate(tiers):
        plugins = tier.get("plugins") if isinstance(tier, Mapping) else None
        if not isinstance(plugins, list):
            continue
        for p, plugin in enumerate(plugins):
            if isinstance(plugin, Mapping):
                out.append((t, p, plugin))
    return out


def tier_shape_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule tiers-shape: tiers is a list of {plugins: [{name: ...}, ...]}."""
    tiers = conf.get("tiers")
    if not isinstance(tiers, list) or not tiers:
        return [
            FieldError(
                "tiers", f"{tiers!r} must be a non-empty list of tiers, each with a list of plugins"
            )
        ]
    errors = []
    for t, tier in enumerate(tiers):
        if not isinstance(tier, Mapping) or not isinstance(tier.get("plugins"), list):
            errors.append(
                FieldError(f"tiers[{t}]", f"{tier!r} must be a mapping with a 'plugins' list")
            )
            continue
        for key in tier:
            if key != "plugins":
                errors.append(
                    FieldError(
                        f"tiers[{t}].{key}", "is not read by Volcano; a tier has only 'plugins'"
                    )
                )
        for p, plugin in enumerate(tier["plugins"]):
            if not isinstance(plugin, Mapping) or not isinstance(plugin.get("name"), str):
                errors.append(
                    FieldError(
                        f"tiers[{t}].plugins[{p}]", f"{plugin!r} must be a mapping with a 'name'"
                    )
                )
    return errors


def plugin_name_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule known-plugins: each plugin is one Volcano 1.15.1 registers, and appears once."""
    errors = []
    seen: dict[str, int] = {}
    for t, p, plugin in plugins_of(conf):
        name = plugin.get("name")
        if not isinstance(name, str):
            continue
        if name not in vc.PLUGINS:
            errors.append(
                FieldError(
                    _plugin_field(t, p, name) + ".name",
                    f"plugin {name!r} in tier {t} is not a plugin of Volcano {vc.VOLCANO_VERSION}"
                    f"{suggestion(name, vc.PLUGINS)}; Volcano skips it and logs an error",
                )
            )
        elif name in seen:
            errors.append(
                FieldError(
                    _plugin_field(t, p, name) + ".name",
                    f"plugin {name!r} in tier {t} is already configured in tier {seen[name]}; configure each plugin once",
                )
            )
        else:
            seen[name] = t
    return errors


def option_key_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule known-option-keys: the enable keys are spelled exactly as Volcano's
    conf.PluginOption yaml tags (enablePreemptable, but enabledVictim) and are booleans."""
    errors = []
    for t, p, plugin in plugins_of(conf):
        name = plugin.get("name")
        for key, value in plugin.items():
            if key in ("name", "arguments"):
                continue
            field = f"{_plugin_field(t, p, name)}.{key}"
            if key not in vc.PLUGIN_OPTION_KEYS:
                errors.append(
                    FieldError(
                        field,
                        f"plugin {name!r} in tier {t}: option key {key!r} is not read by Volcano "
                        f"{vc.VOLCANO_VERSION}{suggestion(str(key), vc.PLUGIN_OPTION_KEYS)}; it would be ignored silently "
                        "(plugin arguments go under 'arguments')",
                    )
                )
            elif not isinstance(value, bool):
                errors.append(
                    FieldError(
                        field,
                        f"plugin {name!r} in tier {t}: option {key} is {value!r}; it must be true or false "
                        "(anything else makes Volcano reject the whole configuration)",
                    )
                )
    return errors


def _kind_ok(kind: str, value: object) -> bool:
    if kind == vc.INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == vc.FLOAT:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == vc.BOOL:
        return isinstance(value, bool) or (
            isinstance(value, str)
            and value
            in ("1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False")
        )
    if kind == vc.STRING:
        return isinstance(value, str)
    return True


_KIND_WORDS = {
    vc.INT: "a YAML integer (unquoted); Volcano's GetInt ignores a quoted or fractional value",
    vc.FLOAT: "a number",
    vc.BOOL: "true or false",
    vc.STRING: "a string",
}


def _listed_resources(arguments: Mapping[str, Any], list_key: str) -> list[str]:
    listed = arguments.get(list_key)
    if not isinstance(listed, str):
        return []
    return [r.strip() for r in listed.split(",") if r.strip()]


def argument_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule known-arguments: a known plugin's arguments are the ones its source reads,
    of the type it reads them as (weights are unquoted integers)."""
    errors = []
    for t, p, plugin in plugins_of(conf):
        name = plugin.get("name")
        if name not in vc.PLUGIN_ARGUMENTS:
            continue
        base = _plugin_field(t, p, name) + ".arguments"
        arguments = plugin.get("arguments")
        if arguments is None:
            continue
        if not isinstance(arguments, Mapping):
            errors.append(
                FieldError(
                    base, f"plugin {name!r} in tier {t}: arguments {arguments!r} must be a mapping"
                )
            )
            continue
        known = vc.PLUGIN_ARGUMENTS[name]
        prefixes = vc.ARGUMENT_PREFIXES.get(name, {})
        for key, value in arguments.items():
            key = str(key)
            field = f"{base}.{key}"
            kind = known.get(key)
            if kind is None:
                prefix = next((pre for pre in prefixes if key.startswith(pre)), None)
                if prefix is None:
                    accepted = (
                        ", ".join(sorted(known) + [pre + "<name>" for pre in prefixes]) or "none"
                    )
                    errors.append(
                        FieldError(
                            field,
                            f"plugin {name!r} in tier {t}: argument {key!r} is not read by Volcano "
                            f"{vc.VOLCANO_VERSION}{suggestion(key, list(known))}; it would be ignored silently "
                            f"(arguments this plugin reads: {accepted})",
                        )
                    )
                    continue
                kind, list_key = prefixes[prefix]
                resource = key[len(prefix) :]
                if list_key is not None:
                    if resource in ("cpu", "memory"):
                        weight_key = list_key.rsplit(".", 1)[0] + "." + resource
                        errors.append(
                            FieldError(
                                field,
                                f"plugin {name!r} in tier {t}: argument {key!r} is overwritten by {weight_key!r} "
                                f"(Volcano sets the {resource} weight from {weight_key}); use {weight_key} instead",
                            )
                        )
                        continue
                    if resource not in _listed_resources(arguments, list_key):
                        errors.append(
                            FieldError(
                                field,
                                f"plugin {name!r} in tier {t}: argument {key!r} is ignored because {resource!r} is not "
                                f"listed in {list_key} ({arguments.get(list_key)!r}); add it to {list_key}",
                            )
                        )
                        continue
            if not _kind_ok(kind, value):
                errors.append(
                    FieldError(
                        field,
                        f"plugin {name!r} in tier {t}: argument {key} is {value!r}; it must be {_KIND_WORDS[kind]}",
                    )
                )
    return errors


def configuration_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule known-action-arguments: the configurations section names known actions and their arguments."""
    configurations = conf.get("configurations")
    if configurations is None:
        return []
    if not isinstance(configurations, list):
        return [
            FieldError(
                "configurations", f"{configurations!r} must be a list of {{name, arguments}}"
            )
        ]
    errors = []
    for i, entry in enumerate(configurations):
        if not isinstance(entry, Mapping):
            errors.append(
                FieldError(
                    f"configurations[{i}]", f"{entry!r} must be a mapping with name and arguments"
                )
            )
            continue
        name = entry.get("name")
        if name not in vc.ACTION_ARGUMENTS:
            errors.append(
                FieldError(
                    f"configurations[{i}].name",
                    f"{name!r} is not an action of Volcano {vc.VOLCANO_VERSION}{suggestion(str(name), vc.ACTIONS)}",
                )
            )
            continue
        arguments = entry.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            errors.append(
                FieldError(
                    f"configurations[{i}]({name}).arguments", f"{arguments!r} must be a mapping"
                )
            )
            continue
        for key in arguments:
            if key not in vc.ACTION_ARGUMENTS[name]:
                accepted = ", ".join(sorted(vc.ACTION_ARGUMENTS[name])) or "none"
                errors.append(
                    FieldError(
                        f"configurations[{i}]({name}).arguments.{key}",
                        f"action {name!r}: argument {key!r} is not read by Volcano {vc.VOLCANO_VERSION}; "
                        f"it would be ignored silently (arguments this action reads: {accepted})",
                    )
                )
    return errors


def capacity_proportion_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule capacity-not-proportion: capacity and proportion both manage queue shares; use one."""
    found = {plugin.get("name"): (t, p) for t, p, plugin in plugins_of(conf)}
    if "capacity" in found and "proportion" in found:
        t, p = found["proportion"]
        ct, _unused = found["capacity"]
        return [
            FieldError(
                _plugin_field(t, p, "proportion") + ".name",
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
                    f"{_plugin_field(t, p, name)}.enableHierarchy",
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
                f"{_plugin_field(t, p, 'nodegroup')}.enableHierarchy",
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
        field = _plugin_field(t, p, "capacity")
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
        field = _plugin_field(t, p, name)
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
                    f"{_plugin_field(t, p, 'sla')}.{option}",
                    f"plugin 'sla' in tier {t} comes before {other!r} (tier {later[0]}) and keeps "
                    f"{option} on: {why}; set {option}: false",
                )
            )
    return errors


def numeric_weight_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule numeric-weights: every weight is an unquoted integer (kept in argument_errors,
    which checks each argument's type; this name exists so the rule can be found)."""
    return [
        e
        for e in argument_errors(conf)
        if "must be a YAML integer" in e.message or "must be a number" in e.message
    ]


def is_weight(plugin: str, key: str) -> bool:
    """The argument is one of the plugin's weights (volcano_catalog.WEIGHT_ARGUMENTS)."""
    return key in vc.WEIGHT_ARGUMENTS.get(plugin, ()) or any(
        key.startswith(prefix) for prefix in vc.WEIGHT_PREFIXES.get(plugin, ())
    )


def weight_bound_errors(conf: Mapping[str, Any]) -> list[FieldError]:
    """Rule weight-bounds: every weight argument (binpack, nodeorder, network-topology-aware,
    numa-aware, task-topology, usage, deviceshare, resource-strategy-fit) is an integer from
    WEIGHT_MIN (0, which turns the score off) to WEIGHT_MAX (100). Volcano bounds none: a
    negative weight inverts a nodeorder preference or is silently replaced by a default
    (binpack, network-topology-aware), and a huge one drowns every other score. A weight
    that is not an integer is rule numeric-weights' error, not this rule's."""
    errors = []
    for t, p, plugin in plugins_of(conf):
        name = plugin.get("name")
        arguments = plugin.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, Mapping):
            continue
        for key, value in arguments.items():
            if not is_weight(name, str(key)):
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                continue
            if not vc.WEIGHT_MIN <= value <= vc.WEIGHT_MAX:
                errors.append(
                    FieldError(
                        f"{_plugin_field(t, p, name)}.arguments.{key}",
                        f"plugin {name!r} in tier {t}: weight {key} is {value}; a weight is an integer "
                        f"from {vc.WEIGHT_MIN} to {vc.WEIGHT_MAX} (Volcano multiplies node scores of at "
                        f"most 100 by it and bounds it nowhere)",
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
                "tiers" if sla is None else f"{_plugin_field(sla[0], sla[1], 'sla')}.name",
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
                f"{_plugin_field(t, p, 'sla')}.arguments.sla-waiting-time",
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
            f"{_plugin_field(t, p, 'capacity')}.arguments.ancestorReclaimLevel",
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
                    f"{_plugin_field(t, p, 'capacity')}.enableHierarchy",
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


def scheduler_conf_errors(
    conf: str | Mapping[str, Any] | None, platform_policy: bool = True
) -> list[FieldError]:
    """Every rule above, in one list (empty when the configuration is fit to write)."""
    data, errors = parse_conf(conf)
    if errors:
        return errors
    errors += top_level_errors(data)
    errors += action_errors(data)
    errors += tier_shape_errors(data)
    errors += plugin_name_errors(data)
    errors += option_key_errors(data)
    errors += argument_errors(data)
    errors += weight_bound_errors(data)
    errors += configuration_errors(data)
    errors += capacity_proportion_errors(data)
    errors += hierarchy_errors(data)
    errors += capacity_tier_errors(data)
    errors += victim_fallthrough_errors(data)
    errors += sla_enqueue_only_errors(data)
    from .deviceshare import deviceshare_errors  # deviceshare imports this module

    errors += deviceshare_errors(data)
    if platform_policy:
        errors += platform_policy_errors(data)
    return errors


# ---------------------------------------------------------------------------
# Builder

DEFAULT_ACTIONS = (
    "enqueue",
    "allocate",
    "preempt",
    "gangpreempt",
    "reclaim",
    "gangreclaim",
    "backfill",
)

DEFAULT_TIERS: tuple[dict[str, Any], ...] = (
    # Rule sla-before-capacity: admission past a full queue for jobs with a waiting time.
    {"plugins": [{"name": "sla", "enableJobOrder": False, "enableJobPipelined": False}]},
    {
        "plugins": [
            {"name": "priority"},
            {"name": "gang"},
            {"name": "conformance"},
            # Rule tenant-ancestor-reclaim: reclaim also checks the victim's parent.
            {"name": "capacity", "enableHierarchy": True, "arguments": {"ancestorReclaimLevel": 1}},
        ]
    },
    {
        "plugins": [
            {"name": "drf", "enablePreemptable": False},
            {"name": "predicates"},
            {"name": "nodeorder", "arguments": {"leastrequested.weight": 0}},
            {
                "name": "binpack",
                "arguments": {
                    "binpack.weight": 10,
                    "binpack.cpu": 5,
                    "binpack.memory": 2,
                    "binpack.resources": "nvidia.com/gpu",
                    "binpack.resources.nvidia.com/gpu": 10,
                },
            },
            {"name": "network-topology-aware", "arguments": {"weight": 10}},
            # Rule node-groups-need-nodegroup: queues bound to IDC or cloud node groups
            # (hybrid/queues). Not strict, so until nodes are grouped it changes nothing.
            {
                "name": "nodegroup",
                "enableHierarchy": True,
                "arguments": {"strict": False, "enablePreferredOrder": True},
            },
        ]
    },
)


def _plain(value: Any) -> Any:
    """Plain Python values (templating engines hand over str/int/dict subclasses that YAML's
    safe dumper refuses)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def build_scheduler_conf(
    actions: Sequence[str] = DEFAULT_ACTIONS,
    tiers: Sequence[Mapping[str, Any]] = DEFAULT_TIERS,
    configurations: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The configuration as a mapping: actions joined the way Volcano splits them."""
    conf: dict[str, Any] = {
        "actions": ", ".join(str(a).strip() for a in actions),
        "tiers": [
            {"plugins": [dict(plugin) for plugin in tier.get("plugins", [])]} for tier in tiers
        ],
    }
    if configurations:
        conf["configurations"] = [dict(c) for c in configurations]
    return conf


def render_scheduler_conf(
    actions: Sequence[str] = DEFAULT_ACTIONS,
    tiers: Sequence[Mapping[str, Any]] = DEFAULT_TIERS,
    configurations: Sequence[Mapping[str, Any]] | None = None,
) -> str:
    """The YAML text for the ConfigMap key ``volcano-scheduler.conf``."""
    if yaml is None:  # pragma: no cover
        raise RuntimeError("PyYAML is needed to render the scheduler configuration")
    conf = _plain(build_scheduler_conf(actions, tiers, configurations))
    return yaml.safe_dump(conf, sort_keys=False, default_flow_style=False)


def scheduler_configmap(conf_text: str) -> dict[str, Any]:
    """The ConfigMap the chart's vc-scheduler reads (installer/helm/chart/volcano/templates/scheduler.yaml)."""
    from ..common.names import LABEL_MANAGED_BY, MANAGED_BY, VOLCANO_NAMESPACE

    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": vc.SCHEDULER_CONFIGMAP,
            "namespace": VOLCANO_NAMESPACE,
            "labels": {LABEL_MANAGED_BY: MANAGED_BY},
        },
        "data": {vc.SCHEDULER_CONF_KEY: conf_text},
    }
