# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads ``volcano-scheduler.conf`` for Volcano 1.15.1. Pure: no I/O.

Parses the configuration (rule conf-parses), walks its actions and its
well-formed plugin entries, and words two things every error message uses:
the field of a plugin (``tiers[<t>].plugins[<p>](<name>)``) and a "did you
mean" hint. The rules are in ``scheduler_conf_rules`` (what Volcano reads),
``scheduler_conf_tier_rules`` (how the tiers' plugins work together, the
platform's policy) and ``deviceshare``; the builder is
``scheduler_conf_builder``. They all import this module, and it imports none
of them.
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


def plugin_field(tier: int, index: int, name: object) -> str:
    """The field of a plugin entry in error messages: ``tiers[<tier>].plugins[<index>](<name>)``."""
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


def action_names(conf: Mapping[str, Any]) -> list[str]:
    actions = conf.get("actions")
    if not isinstance(actions, str):
        return []
    return [a.strip() for a in actions.split(",")]


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
