# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The alertmanager_config and alerting_errors filters: the builder's errors, and a tenant
named as rule tenant-name names one."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.filter.alertmanager_config import (
    FilterModule,
    alerting_errors,
    alertmanager_config,
)

ALERTING = {
    "receivers": {
        "oncall": {"webhook_url": "https://hooks.example.com/oncall"},
        "alpha-chat": {"chat_webhook_url": "https://chat.example.com/a", "chat": "slack"},
    },
    "default": "oncall",
    "tenants": {"alpha": "alpha-chat"},
}


def test_both_filters_are_offered():
    assert set(FilterModule().filters()) == {"alertmanager_config", "alerting_errors"}


@pytest.mark.parametrize("empty", [None, {}])
def test_no_alerting_keeps_the_charts_configuration(empty):
    assert alerting_errors(empty) == []
    assert alertmanager_config(empty) == {}


def test_a_valid_input_builds_the_routes():
    config = alertmanager_config(ALERTING)
    assert config["route"]["receiver"] == "oncall"
    assert {"receiver": "alpha-chat", "matchers": ['tenant="alpha"'], "continue": True} in config[
        "route"
    ]["routes"]


@pytest.mark.parametrize("tenant", ["Alpha", "a_b", "x" * 50, "-a"])
def test_a_tenant_that_is_not_a_tenant_name_is_refused(tenant):
    alerting = {**ALERTING, "tenants": {tenant: "alpha-chat"}}
    errors = alerting_errors(alerting)
    assert errors and all(e.startswith(f"tenants.{tenant}: ") for e in errors), errors
    with pytest.raises(AnsibleFilterError, match=f"alertmanager_config: tenants.{tenant}"):
        alertmanager_config(alerting)


def test_the_builders_errors_are_raised_together():
    bad = {**ALERTING, "default": "pager", "group_wait": "soon"}
    with pytest.raises(AnsibleFilterError) as raised:
        alertmanager_config(bad)
    assert "default: 'pager' is not a receiver" in str(raised.value)
    assert "group_wait: 'soon' is not a duration" in str(raised.value)
