# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tenant modules' input checks, which run before the module connects."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.inputs import (
    check_tenant,
    parse_absent,
    parse_info,
    parse_present,
    parse_team_queue,
    rule_wait_timeout_positive,
)

GPU = "nvidia.com/gpu"


def fields(call, params):
    with pytest.raises(PlatformValidationError) as exc:
        call(params)
    return [e.field for e in exc.value.errors]


@pytest.mark.parametrize("timeout", [0, -1, True, "10"])
def test_wait_timeout_must_be_positive_seconds_with_wait(timeout):
    [error] = rule_wait_timeout_positive({"wait": True, "wait_timeout": timeout})
    assert error.field == "wait_timeout"
    assert error.message.startswith(f"{timeout!r} must be a whole number of seconds of at least 1")
    assert error.message.endswith("(rule wait-timeout-positive)")


def test_wait_timeout_is_free_without_wait_and_defaults_to_120_s():
    assert rule_wait_timeout_positive({"wait": False, "wait_timeout": 0}) == []
    assert rule_wait_timeout_positive({"wait": True}) == []
    assert rule_wait_timeout_positive({"wait": True, "wait_timeout": 1}) == []


def test_absent_reports_the_name_and_the_timeout_at_once():
    params = {"name": "Bad_Name", "state": "absent", "wait": True, "wait_timeout": 0}
    assert fields(parse_absent, params) == ["name", "wait_timeout"]
    assert fields(check_tenant, params) == ["name", "wait_timeout"]
    assert parse_absent({"name": "a", "wait": True, "wait_timeout": 5}) == "a"


def test_present_reports_node_selector_with_the_spec_errors():
    params = {"name": "Bad_Name", "node_selector": {"platform.io/pool": 1}}
    found = fields(parse_present, params)
    assert found[0] == "name" and found[-1] == "node_selector.platform.io/pool"
    assert "subscription" in found
    found = fields(check_tenant, {"name": "a", "node_selector": []})
    assert found[-1] == "node_selector" and "subscription" in found


def test_present_spec():
    spec = parse_present({"name": "a", "subscription": {GPU: 8}, "teams": None})
    assert spec.name == "a" and spec.teams is None


def test_team_queue_input():
    team = parse_team_queue({"tenant": "a", "name": "ml", "deserved": {GPU: 2}})
    assert team is not None and team.name == "ml"
    assert parse_team_queue({"tenant": "a", "name": "ml", "state": "absent"}) is None
    bad = {"tenant": "A", "name": "payg", "deserved": {"gpu": 1}}
    assert fields(parse_team_queue, bad) == ["tenant", "name", "deserved.gpu"]


def test_info_input():
    assert parse_info({}) is None
    assert parse_info({"name": "a"}) == "a"
    assert fields(parse_info, {"name": "-a"}) == ["name"]
