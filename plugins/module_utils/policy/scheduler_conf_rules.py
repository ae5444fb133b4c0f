# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules on what Volcano 1.15.1 reads in ``volcano-scheduler.conf``, and
``scheduler_conf_errors``, which runs every rule. Pure: no I/O.

Volcano silently ignores misspelled option keys and unknown plugin
arguments, and keeps its previous configuration when a new one does not
parse, so every configuration the platform writes is checked here first.
Each rule is one function named ``Rule <name>`` in its docstring; every error
names the tier index, the plugin and the key. The rules here are on keys,
names, types and bounds; the rules on how the tiers' plugins work together
(queue shares, victims) and the platform's own policy are in
``scheduler_conf_tier_rules``, deviceshare's arguments in ``deviceshare``.
``RULES`` lists every rule ``scheduler_conf_errors`` runs, in the order of
its errors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..common.errors import FieldError
from . import volcano_catalog as vc
from .deviceshare import deviceshare_errors
from .scheduler_conf_reader import action_names, parse_conf, plugin_field, plugins_of, suggestion
from .scheduler_conf_tier_rules import (
    capacity_proportion_errors,
    capacity_tier_errors,
    hierarchy_errors,
    platform_policy_errors,
    sla_enqueue_only_errors,
    victim_fallthrough_errors,
)

TOP_LEVEL_KEYS = ("actions", "tiers", "configurations", "metrics")


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
                    plugin_field(t, p, name) + ".name",
                    f"plugin {name!r} in tier {t} is not a plugin of Volcano {vc.VOLCANO_VERSION}"
                    f"{suggestion(name, vc.PLUGINS)}; Volcano skips it and logs an error",
                )
            )
        elif name in seen:
            errors.append(
                FieldError(
                    plugin_field(t, p, name) + ".name",
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
            field = f"{plugin_field(t, p, name)}.{key}"
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
        base = plugin_field(t, p, name) + ".arguments"
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
                        f"{plugin_field(t, p, name)}.arguments.{key}",
                        f"plugin {name!r} in tier {t}: weight {key} is {value}; a weight is an integer "
                        f"from {vc.WEIGHT_MIN} to {vc.WEIGHT_MAX} (Volcano multiplies node scores of at "
                        f"most 100 by it and bounds it nowhere)",
                    )
                )
    return errors


Rule = Callable[[Mapping[str, Any]], list[FieldError]]

# Every rule scheduler_conf_errors runs on a configuration that parses, in the order of
# its errors; rule platform-policy follows when the platform's own policy is asked for.
RULES: tuple[Rule, ...] = (
    top_level_errors,
    action_errors,
    tier_shape_errors,
    plugin_name_errors,
    option_key_errors,
    argument_errors,
    weight_bound_errors,
    configuration_errors,
    capacity_proportion_errors,
    hierarchy_errors,
    capacity_tier_errors,
    victim_fallthrough_errors,
    sla_enqueue_only_errors,
    deviceshare_errors,
)


def scheduler_conf_errors(
    conf: str | Mapping[str, Any] | None, platform_policy: bool = True
) -> list[FieldError]:
    """Every rule, in one list (empty when the configuration is fit to write): rule
    conf-parses, then ``RULES``, then rule platform-policy when ``platform_policy``."""
    data, errors = parse_conf(conf)
    if errors:
        return errors
    for rule in RULES:
        errors += rule(data)
    if platform_policy:
        errors += platform_policy_errors(data)
    return errors
