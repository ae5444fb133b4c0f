# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules alert-routing and alert-routing-input: Alertmanager's configuration from
``monitoring_alerting``. With GPUCLOUD_AMTOOL set, Alertmanager's own amtool checks the
configurations and says where labelled alerts go (scripts/test sets it)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.observability.alert_routes import (
    NULL_RECEIVER,
    SEVERITIES,
    alerting_errors,
    alertmanager_config,
    referenced_receivers,
)

EXAMPLE = {
    "receivers": {
        "oncall": {"webhook_url": "https://hooks.example.com/oncall"},
        "ops-mail": {"email_to": "gpu-ops@example.com"},
        "alpha-chat": {"chat_webhook_url": "https://chat.example.com/hooks/alpha", "chat": "slack"},
        "beta-teams": {"chat_webhook_url": "https://chat.example.com/beta", "chat": "msteams"},
        "gamma-discord": {"chat_webhook_url": "https://chat.example.com/g", "chat": "discord"},
    },
    "email": {
        "smarthost": "smtp.example.com:587",
        "from": "alerts@example.com",
        "auth_username": "alerts",
        "auth_password": "secret",
    },
    "default": "oncall",
    "severity": {"critical": "oncall", "warning": "ops-mail"},
    "tenants": {"alpha": "alpha-chat", "beta": "beta-teams", "gamma": "gamma-discord"},
    "group_wait": "10s",
}


def with_(**changes):
    return {**EXAMPLE, **changes}


def receivers(**extra):
    return {**EXAMPLE["receivers"], **extra}


def test_the_example_is_valid():
    assert alerting_errors(EXAMPLE) == []


@pytest.mark.parametrize("empty", [None, {}])
def test_no_alerting_is_no_errors_and_no_configuration(empty):
    assert alerting_errors(empty) == []
    assert alertmanager_config(empty or {}) == {}


@pytest.mark.parametrize(
    ("alerting", "error"),
    [
        (["oncall"], "['oncall'] must be a mapping with receivers and default"),
        (with_(defualt="oncall"), "alerting.defualt: not a known key; did you mean default?"),
        (with_(receivers={}), "receivers: must name at least one receiver"),
        ({"receivers": EXAMPLE["receivers"], "email": EXAMPLE["email"]}, "default: required"),
        (with_(default="on-call"), "default: 'on-call' is not a receiver; did you mean oncall?"),
        (with_(severity={"critical": "pager"}), "severity.critical: 'pager' is not a receiver"),
        (
            with_(severity={"critcal": "oncall"}),
            "severity.critcal: not a known key; did you mean critical?",
        ),
        (
            with_(tenants={"alpha": "alpha-chta"}),
            "tenants.alpha: 'alpha-chta' is not a receiver; did you mean alpha-chat?",
        ),
        (with_(tenants=["alpha"]), "tenants: ['alpha'] must be a mapping"),
        (
            with_(receivers=receivers(x={})),
            "receivers.x: needs exactly one of webhook_url, email_to, chat_webhook_url (has none)",
        ),
        (
            with_(
                receivers=receivers(
                    x={"webhook_url": "https://a.example.com", "email_to": "a@example.com"}
                )
            ),
            "receivers.x: needs exactly one of webhook_url, email_to, chat_webhook_url (has webhook_url, email_to)",
        ),
        (
            with_(receivers=receivers(x={"webhook_url": "ftp://a.example.com"})),
            "receivers.x.webhook_url: 'ftp://a.example.com' is not an http",
        ),
        (
            with_(receivers=receivers(x={"webhook_url": "https://"})),
            "receivers.x.webhook_url: 'https://' is not an http",
        ),
        (
            with_(receivers=receivers(x={"email_to": "ops"})),
            "receivers.x.email_to: 'ops' is not an email address",
        ),
        (
            with_(receivers=receivers(x={"chat_webhook_url": "https://c.example.com"})),
            "receivers.x.chat: None must be one of slack, msteams, discord",
        ),
        (
            with_(
                receivers=receivers(x={"chat_webhook_url": "https://c.example.com", "chat": "irc"})
            ),
            "receivers.x.chat: 'irc' must be one of",
        ),
        (
            with_(receivers=receivers(x={"webhook_url": "https://c.example.com", "chat": "slack"})),
            "receivers.x.chat: only with chat_webhook_url",
        ),
        (
            with_(receivers=receivers(x={"webhook_url": "https://c.example.com", "url": 1})),
            "receivers.x.url: not a known key",
        ),
        (
            with_(
                receivers=receivers(
                    x={"webhook_url": "https://c.example.com", "send_resolved": "yes"}
                )
            ),
            "receivers.x.send_resolved: 'yes' must be true or false",
        ),
        (
            with_(receivers=receivers(null={"webhook_url": "https://c.example.com"})),
            "receivers.null: 'null' is kept",
        ),
        (
            with_(receivers=receivers(x="https://c.example.com")),
            "receivers.x: 'https://c.example.com' must be a mapping",
        ),
        (
            {k: v for k, v in EXAMPLE.items() if k != "email"},
            "email: None must be a mapping with smarthost and from",
        ),
        (
            with_(email={"smarthost": "smtp.example.com", "from": "a@example.com"}),
            "email.smarthost: 'smtp.example.com' must be host:port",
        ),
        (
            with_(email={"smarthost": "smtp.example.com:25", "from": "alerts"}),
            "email.from: 'alerts' is not an email address",
        ),
        (with_(email={**EXAMPLE["email"], "password": "x"}), "email.password: not a known key"),
        (with_(group_wait="30 seconds"), "group_wait: '30 seconds' is not a duration"),
        (with_(repeat_interval=4), "repeat_interval: 4 is not a duration"),
    ],
)
def test_errors_in_the_callers_terms(alerting, error):
    errors = alerting_errors(alerting)
    assert any(e.startswith(error) for e in errors), errors


def test_email_settings_are_needed_only_for_email_receivers():
    alerting = {
        "receivers": {"oncall": {"webhook_url": "https://h.example.com"}},
        "default": "oncall",
    }
    assert alerting_errors(alerting) == []
    assert "global" not in alertmanager_config(alerting)


def test_the_routes_tenant_first_continuing_then_severity_then_default():
    config = alertmanager_config(EXAMPLE)
    route = config["route"]
    assert route["receiver"] == "oncall"
    assert route["group_by"] == ["alertname", "tenant", "node"]
    assert (route["group_wait"], route["group_interval"], route["repeat_interval"]) == (
        "10s",
        "5m",
        "4h",
    )
    assert route["routes"] == [
        {"receiver": NULL_RECEIVER, "matchers": ['alertname="Watchdog"']},
        {"receiver": NULL_RECEIVER, "matchers": ['alertname="InfoInhibitor"']},
        {"receiver": "alpha-chat", "matchers": ['tenant="alpha"'], "continue": True},
        {"receiver": "beta-teams", "matchers": ['tenant="beta"'], "continue": True},
        {"receiver": "gamma-discord", "matchers": ['tenant="gamma"'], "continue": True},
        {"receiver": "oncall", "matchers": ['severity="critical"']},
        {"receiver": "ops-mail", "matchers": ['severity="warning"']},
        # a tenant's alert of a severity with no route still reaches the default
        {"receiver": "oncall"},
    ]


def test_each_channel_is_alertmanagers_native_config():
    by_name = {r["name"]: r for r in alertmanager_config(EXAMPLE)["receivers"]}
    assert by_name[NULL_RECEIVER] == {"name": NULL_RECEIVER}
    assert by_name["oncall"]["webhook_configs"] == [
        {"url": "https://hooks.example.com/oncall", "send_resolved": True}
    ]
    assert by_name["ops-mail"]["email_configs"] == [
        {"to": "gpu-ops@example.com", "send_resolved": True}
    ]
    assert by_name["alpha-chat"]["slack_configs"] == [
        {"api_url": "https://chat.example.com/hooks/alpha", "send_resolved": True}
    ]
    assert by_name["beta-teams"]["msteams_configs"] == [
        {"webhook_url": "https://chat.example.com/beta", "send_resolved": True}
    ]
    assert by_name["gamma-discord"]["discord_configs"] == [
        {"webhook_url": "https://chat.example.com/g", "send_resolved": True}
    ]
    config = alertmanager_config(EXAMPLE)
    assert config["global"] == {
        "smtp_smarthost": "smtp.example.com:587",
        "smtp_from": "alerts@example.com",
        "smtp_auth_username": "alerts",
        "smtp_auth_password": "secret",
        "smtp_require_tls": True,
    }
    assert config["templates"] == []


# --- invariants --------------------------------------------------------------------

NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,10}[a-z0-9]", fullmatch=True).filter(
    lambda n: n != NULL_RECEIVER
)
CHANNEL = st.one_of(
    st.builds(lambda h: {"webhook_url": f"https://{h}.example.com/hook"}, NAMES),
    st.builds(lambda u: {"email_to": f"{u}@example.com"}, NAMES),
    st.builds(
        lambda h, chat: {"chat_webhook_url": f"https://{h}.example.com/chat", "chat": chat},
        NAMES,
        st.sampled_from(["slack", "msteams", "discord"]),
    ),
)


@st.composite
def alertings(draw):
    receivers = draw(st.dictionaries(NAMES, CHANNEL, min_size=1, max_size=5))
    names = sorted(receivers)
    pick = st.sampled_from(names)
    alerting = {
        "receivers": receivers,
        "default": draw(pick),
        "severity": draw(st.dictionaries(st.sampled_from(SEVERITIES), pick, max_size=3)),
        "tenants": draw(st.dictionaries(NAMES, pick, max_size=4)),
    }
    if any("email_to" in r for r in receivers.values()):
        alerting["email"] = {"smarthost": "smtp.example.com:587", "from": "alerts@example.com"}
    return alerting


@settings(max_examples=60, deadline=None)
@given(alertings())
def test_every_receiver_a_route_names_exists(alerting):
    assert alerting_errors(alerting) == []
    config = alertmanager_config(alerting)
    defined = {r["name"] for r in config["receivers"]}
    assert set(referenced_receivers(config)) <= defined
    assert len(defined) == len(config["receivers"])


@settings(max_examples=60, deadline=None)
@given(alertings())
def test_every_tenant_route_precedes_the_severity_routes(alerting):
    routes = alertmanager_config(alerting)["route"]["routes"]
    kinds = [r["matchers"][0].split("=")[0] if "matchers" in r else "default" for r in routes]
    tenant_at = [i for i, k in enumerate(kinds) if k == "tenant"]
    severity_at = [i for i, k in enumerate(kinds) if k == "severity"]
    assert len(tenant_at) == len(alerting["tenants"])
    assert all(t < s for t in tenant_at for s in severity_at)
    assert all(routes[i].get("continue") is True for i in tenant_at)
    assert not any(routes[i].get("continue") for i in severity_at)
    # with tenant routes, the last route is the default's, after every other
    if tenant_at:
        assert routes[-1] == {"receiver": alerting["default"]}


# --- Alertmanager's own checks -----------------------------------------------------

AMTOOL = os.environ.get("GPUCLOUD_AMTOOL")
needs_amtool = pytest.mark.skipif(
    not AMTOOL, reason="GPUCLOUD_AMTOOL is not set (scripts/test sets it)"
)


def amtool(config_file: Path, *args: str) -> subprocess.CompletedProcess:
    if not Path(str(AMTOOL)).is_file():
        pytest.fail(f"GPUCLOUD_AMTOOL={AMTOOL} is not a file")
    return subprocess.run(
        [str(AMTOOL), *args, f"--config.file={config_file}"]
        if args
        else [str(AMTOOL), "check-config", str(config_file)],
        capture_output=True,
        text=True,
        check=False,
    )


def write(tmp_path: Path, alerting) -> Path:
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(alertmanager_config(alerting), sort_keys=False))
    return path


@needs_amtool
def test_amtool_accepts_the_example_and_routes_it(tmp_path):
    path = write(tmp_path, EXAMPLE)
    checked = amtool(path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    cases = {
        ("tenant=alpha", "severity=warning"): "alpha-chat,ops-mail",
        ("tenant=alpha", "severity=info"): "alpha-chat,oncall",
        ("tenant=beta", "severity=critical"): "beta-teams,oncall",
        ("tenant=delta", "severity=critical"): "oncall",
        ("severity=info",): "oncall",
        ("alertname=Watchdog", "severity=none"): NULL_RECEIVER,
    }
    for labels, expected in cases.items():
        named = labels if labels[0].startswith("alertname=") else ("alertname=X", *labels)
        out = amtool(path, "config", "routes", "test", *named)
        assert out.stdout.strip() == expected, (labels, out.stdout, out.stderr)


@needs_amtool
@settings(max_examples=10, deadline=None)
@given(alertings())
def test_amtool_accepts_every_valid_input(tmp_path_factory, alerting):
    path = write(tmp_path_factory.mktemp("am"), alerting)
    checked = amtool(path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
