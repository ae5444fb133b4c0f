# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules prometheus-answer and metering-resolution: what Prometheus's answers hold."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.metering import answer
from ansible_collections.gpucloud.platform.plugins.module_utils.observability import metering_rules

RULE = metering_rules.TENANT_BILLING_GPUS


def rules_answer(*groups):
    return json.dumps({"status": "success", "data": {"groups": list(groups)}})


def group(name, interval, *records):
    return {
        "name": name,
        "file": "/etc/prometheus/rules/gpucloud-platform.yaml",
        "interval": interval,
        "rules": [{"name": r, "type": "recording", "health": "ok"} for r in records],
    }


def test_the_interval_is_the_one_of_the_group_recording_the_rule():
    body = rules_answer(
        group("platform-gpu", 60, "platform:cluster_gpu_allocation:ratio"),
        group(metering_rules.METERING_GROUP, 15, metering_rules.POD_GPUS_RUNNING, RULE),
    )
    assert answer.interval_of(body, RULE) == Decimal(15)
    assert answer.interval_of(body.encode(), "platform:cluster_gpu_allocation:ratio") == 60


def test_a_sub_second_interval_is_kept_exactly():
    assert answer.interval_of(rules_answer(group("g", 0.5, RULE)), RULE) == Decimal("0.5")


def test_a_prometheus_without_the_platform_rules_cannot_bill():
    body = rules_answer(group("platform-gpu", 60, "platform:cluster_gpu_allocation:ratio"))
    with pytest.raises(answer.AnswerError, match="no rule group records " + RULE) as info:
        answer.interval_of(body, RULE)
    assert "the monitoring role's PrometheusRule gpucloud-platform" in str(info.value)
    with pytest.raises(answer.AnswerError, match="no rule group records"):
        answer.interval_of(json.dumps({"status": "success", "data": {}}), RULE)


@pytest.mark.parametrize("interval", [0, -30, None, "soon", "NaN", "Infinity", [30]])
def test_a_group_without_a_usable_interval_is_refused(interval):
    body = rules_answer(group(metering_rules.METERING_GROUP, interval, RULE))
    with pytest.raises(answer.AnswerError, match="rule group 'platform-metering' has no usable"):
        answer.interval_of(body, RULE)


def test_an_error_answer_gives_prometheus_reason():
    body = json.dumps({"status": "error", "errorType": "unavailable", "error": "starting"})
    with pytest.raises(
        answer.AnswerError, match=r"'error', not 'success' \(unavailable: starting\)"
    ):
        answer.interval_of(body, RULE)
    with pytest.raises(answer.AnswerError, match="not a JSON object"):
        answer.interval_of(b"<html>", RULE)


def test_a_matrix_is_its_series():
    result = [{"metric": {"tenant": "a"}, "values": [[1, "2"]]}]
    body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})
    assert answer.matrix_of(body) == result
    vector = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}})
    with pytest.raises(answer.AnswerError, match="is a 'vector', not a matrix"):
        answer.matrix_of(vector)
