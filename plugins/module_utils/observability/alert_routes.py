# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the platform's alerts go: Alertmanager's receivers and routes from the monitoring
role's ``monitoring_alerting`` (rule alert-routing, ``alertmanager_config``), checked first
(rule alert-routing-input, ``alerting_errors``). Pure and stdlib only (the local cluster
loads the observability package by path), so a tenant's name is checked by the caller
(filter ``alertmanager_config``, rule tenant-name), not here.

The input, name -> one channel per receiver::

    receivers: {oncall: {webhook_url: ...}, ops-mail: {email_to: ...},
                alpha-chat: {chat_webhook_url: ..., chat: slack}}
    email: {smarthost: "smtp.example.com:587", from: ...}   # only for email_to
    default: oncall
    severity: {critical: oncall, warning: ops-mail}
    tenants: {alpha: alpha-chat}
    group_wait: 30s
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from difflib import get_close_matches
from typing import Any
from urllib.parse import urlsplit

KEYS = (
    "receivers",
    "email",
    "default",
    "severity",
    "tenants",
    "group_wait",
    "group_interval",
    "repeat_interval",
)
CHANNELS = ("webhook_url", "email_to", "chat_webhook_url")
RECEIVER_KEYS = (*CHANNELS, "chat", "send_resolved")
# chat -> (Alertmanager's native config, the key its webhook URL goes under)
CHATS = {
    "slack": ("slack_configs", "api_url"),
    "msteams": ("msteams_configs", "webhook_url"),
    "discord": ("discord_configs", "webhook_url"),
}
EMAIL_KEYS = ("smarthost", "from", "auth_username", "auth_password", "require_tls")
SEVERITIES = ("critical", "warning", "info")
TIMINGS = {"group_wait": "30s", "group_interval": "5m", "repeat_interval": "4h"}
GROUP_BY = ("alertname", "tenant", "node")
# The receiver that drops kube-prometheus-stack's Watchdog and InfoInhibitor (as the
# chart's own configuration does); no receiver of the input may take its name.
NULL_RECEIVER = "null"
SILENT_ALERTS = ("Watchdog", "InfoInhibitor")

_DURATION = re.compile(r"^(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?$")
_EMAIL = re.compile(r"^[^@\s,<>]+@[^@\s,<>]+\.[^@\s,<>]+$")
_HOST_PORT = re.compile(r"^[A-Za-z0-9.\-\[\]:]+:\d{1,5}$")


def _unknown(field: str, key: object, known: tuple[str, ...]) -> str:
    close = get_close_matches(str(key), known, n=1)
    hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(known)}"
    return f"{field}.{key}: not a known key; {hint}"


def _url_errors(field: str, value: Any) -> list[str]:
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        return [f"{field}: {value!r} is not an http:// or https:// URL"]
    return []


def _email_errors(field: str, value: Any) -> list[str]:
    addresses = [a.strip() for a in value.split(",")] if isinstance(value, str) else [None]
    if not all(isinstance(a, str) and _EMAIL.match(a) for a in addresses):
        return [f"{field}: {value!r} is not an email address (or a comma-separated list of them)"]
    return []


def _duration_errors(field: str, value: Any) -> list[str]:
    if not isinstance(value, str) or not value or not _DURATION.match(value) or value == "0s":
        return [f"{field}: {value!r} is not a duration such as 30s, 5m or 4h"]
    return []


def _receiver_errors(name: str, receiver: Any) -> list[str]:
    field = f"receivers.{name}"
    if name == NULL_RECEIVER:
        return [
            f"{field}: {NULL_RECEIVER!r} is kept for the alerts that are dropped; pick another name"
        ]
    if not isinstance(receiver, Mapping):
        return [f"{field}: {receiver!r} must be a mapping with one of {', '.join(CHANNELS)}"]
    errors = [_unknown(field, k, RECEIVER_KEYS) for k in receiver if k not in RECEIVER_KEYS]
    channels = [c for c in CHANNELS if c in receiver]
    if len(channels) != 1:
        have = ", ".join(channels) if channels else "none"
        errors.append(f"{field}: needs exactly one of {', '.join(CHANNELS)} (has {have})")
    if "webhook_url" in receiver:
        errors += _url_errors(f"{field}.webhook_url", receiver["webhook_url"])
    if "chat_webhook_url" in receiver:
        errors += _url_errors(f"{field}.chat_webhook_url", receiver["chat_webhook_url"])
        if receiver.get("chat") not in CHATS:
            errors.append(
                f"{field}.chat: {receiver.get('chat')!r} must be one of {', '.join(CHATS)}"
            )
    elif "chat" in receiver:
        errors.append(f"{field}.chat: only with chat_webhook_url")
    if "email_to" in receiver:
        errors += _email_errors(f"{field}.email_to", receiver["email_to"])
    if not isinstance(receiver.get("send_resolved", True), bool):
        errors.append(f"{field}.send_resolved: {receiver['send_resolved']!r} must be true or false")
    return errors


def _email_settings_errors(email: Any) -> list[str]:
    if not isinstance(email, Mapping):
        return [f"email: {email!r} must be a mapping with smarthost and from"]
    errors = [_unknown("email", k, EMAIL_KEYS) for k in email if k not in EMAIL_KEYS]
    smarthost = email.get("smarthost")
    if not isinstance(smarthost, str) or not _HOST_PORT.match(smarthost):
        errors.append(
            f"email.smarthost: {smarthost!r} must be host:port, e.g. smtp.example.com:587"
        )
    errors += _email_errors("email.from", email.get("from"))
    for key in ("auth_username", "auth_password"):
        if key in email and not isinstance(email[key], str):
            errors.append(f"email.{key}: must be a string")
    if not isinstance(email.get("require_tls", True), bool):
        errors.append("email.require_tls: must be true or false")
    return errors


def _reference_errors(alerting: Mapping[str, Any], names: set[str]) -> list[str]:
    """Every receiver named by ``default``, ``severity`` and ``tenants`` is a receiver."""
    errors = []
    referenced: list[tuple[str, Any]] = []
    if "default" in alerting:
        referenced.append(("default", alerting["default"]))
    for key, known in (("severity", SEVERITIES), ("tenants", None)):
        routes = alerting.get(key, {})
        if not isinstance(routes, Mapping):
            errors.append(f"{key}: {routes!r} must be a mapping of {key} to receiver name")
            continue
        for label, receiver in routes.items():
            if known and label not in known:
                errors.append(_unknown(key, label, known))
            elif not known and (not isinstance(label, str) or not label):
                errors.append(f"tenants: {label!r} is not a tenant name")
            referenced.append((f"{key}.{label}", receiver))
    for field, receiver in referenced:
        if receiver not in names:
            close = get_close_matches(str(receiver), sorted(names), n=1)
            hint = (
                f"; did you mean {close[0]}?"
                if close
                else f"; receivers: {', '.join(sorted(names)) or 'none'}"
            )
            errors.append(f"{field}: {receiver!r} is not a receiver{hint}")
    return errors


def alerting_errors(alerting: Any) -> list[str]:
    """Rule alert-routing-input: the ``monitoring_alerting`` input's errors, in its own
    terms: unknown keys (with the nearest known one), a receiver with no or two channels,
    a URL, email address or duration that is not one, a receiver referenced by
    ``default``, ``severity`` or ``tenants`` that is not defined, email receivers
    without ``email`` settings. Empty (or None) is no alerting configuration: no errors."""
    if not alerting:
        return []
    if not isinstance(alerting, Mapping):
        return [f"{alerting!r} must be a mapping with receivers and default"]
    errors = [_unknown("alerting", k, KEYS) for k in alerting if k not in KEYS]
    receivers = alerting.get("receivers")
    if not isinstance(receivers, Mapping) or not receivers:
        errors.append("receivers: must name at least one receiver, name -> channel")
        receivers = {}
    for name, receiver in receivers.items():
        errors += _receiver_errors(str(name), receiver)
    if "default" not in alerting:
        errors.append("default: required, the receiver of every alert not routed otherwise")
    errors += _reference_errors(alerting, {str(n) for n in receivers})
    uses_email = any(isinstance(r, Mapping) and "email_to" in r for r in receivers.values())
    if uses_email:
        errors += _email_settings_errors(alerting.get("email"))
    for key in TIMINGS:
        if key in alerting:
            errors += _duration_errors(key, alerting[key])
    return errors


def _matcher(label: str, value: str) -> str:
    return f"{label}={json.dumps(value)}"


def _receiver(name: str, receiver: Mapping[str, Any]) -> dict[str, Any]:
    resolved = {"send_resolved": bool(receiver.get("send_resolved", True))}
    if "webhook_url" in receiver:
        return {"name": name, "webhook_configs": [{"url": receiver["webhook_url"], **resolved}]}
    if "email_to" in receiver:
        return {"name": name, "email_configs": [{"to": receiver["email_to"], **resolved}]}
    configs, url_key = CHATS[receiver["chat"]]
    return {"name": name, configs: [{url_key: receiver["chat_webhook_url"], **resolved}]}


def _email_global(email: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"smtp_smarthost": email["smarthost"], "smtp_from": email["from"]}
    for key in ("auth_username", "auth_password"):
        if key in email:
            out[f"smtp_{key}"] = email[key]
    out["smtp_require_tls"] = bool(email.get("require_tls", True))
    return out


def _routes(alerting: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Dropped alerts first, then one route per tenant (continuing, so the severity routes
    still see the alert), then one per severity, then (with tenant routes) the default."""
    routes: list[dict[str, Any]] = [
        {"receiver": NULL_RECEIVER, "matchers": [_matcher("alertname", name)]}
        for name in SILENT_ALERTS
    ]
    for tenant, receiver in sorted((alerting.get("tenants") or {}).items()):
        routes.append(
            {"receiver": receiver, "matchers": [_matcher("tenant", tenant)], "continue": True}
        )
    severity = alerting.get("severity") or {}
    for level in SEVERITIES:
        if level in severity:
            routes.append({"receiver": severity[level], "matchers": [_matcher("severity", level)]})
    if alerting.get("tenants"):
        # Alertmanager hands an alert to the parent's receiver only when no child route
        # matched it, and a tenant route did: a tenant's alert of a severity with no route
        # of its own reaches the default receiver only through this last route.
        routes.append({"receiver": alerting["default"]})
    return routes


def _inhibit_rules() -> list[dict[str, Any]]:
    """A critical alert silences the warning and info alerts of the same name, tenant and
    node, a warning the info ones (kube-prometheus-stack's own rules, by this grouping);
    the chart's InfoInhibitor silences the info alerts of its namespace."""
    return [
        {
            "source_matchers": ['severity="critical"'],
            "target_matchers": ['severity=~"warning|info"'],
            "equal": list(GROUP_BY),
        },
        {
            "source_matchers": ['severity="warning"'],
            "target_matchers": ['severity="info"'],
            "equal": list(GROUP_BY),
        },
        {
            "source_matchers": ['alertname="InfoInhibitor"'],
            "target_matchers": ['severity="info"'],
            "equal": ["namespace"],
        },
    ]


def alertmanager_config(alerting: Mapping[str, Any]) -> dict[str, Any]:
    """Rule alert-routing: Alertmanager's whole configuration from a checked
    ``monitoring_alerting`` (``alerting_errors`` empty): alerts grouped by alertname,
    tenant and node; an alert labelled ``tenant=<name>`` goes to that tenant's receiver
    and continues to the severity routes (the platform still hears of it); then by
    ``severity``; everything else to ``default``. kube-prometheus-stack's Watchdog and
    InfoInhibitor go to the ``null`` receiver. Empty input gives ``{}``: the chart keeps
    its own configuration."""
    if not alerting:
        return {}
    receivers = alerting["receivers"]
    config: dict[str, Any] = {}
    if any("email_to" in r for r in receivers.values()):
        config["global"] = _email_global(alerting["email"])
    config["route"] = {
        "receiver": alerting["default"],
        "group_by": list(GROUP_BY),
        **{key: alerting.get(key, default) for key, default in TIMINGS.items()},
        "routes": _routes(alerting),
    }
    config["inhibit_rules"] = _inhibit_rules()
    config["receivers"] = [{"name": NULL_RECEIVER}] + [
        _receiver(str(name), receiver) for name, receiver in sorted(receivers.items())
    ]
    config["templates"] = []
    return config


def referenced_receivers(config: Mapping[str, Any]) -> list[str]:
    """Every receiver name the configuration's routes use, the top route's first."""
    route = config.get("route") or {}
    return [route.get("receiver"), *(r["receiver"] for r in route.get("routes", []))]
