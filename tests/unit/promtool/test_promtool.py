# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every shipped rule, checked and tested by the real promtool.

The rule file is what the monitoring role applies (filter
prometheus_rule_groups with the role's default thresholds). promtool is built
with the local cluster's binaries (tools/localcluster/build.py); without it
these tests fail, they do not skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpucloud.platform.plugins.module_utils.observability import (
    alert_rules,
    rules,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
TESTS = sorted(HERE.glob("*.test.yml"))


def promtool() -> str:
    explicit = os.environ.get("GPUCLOUD_PROMTOOL")
    if explicit:
        return explicit
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools/localcluster/build.py"), "--print-dir"],
        check=True,
        capture_output=True,
        text=True,
    )
    path = Path(out.stdout.strip()) / "promtool"
    if not path.exists():
        pytest.fail(f"promtool is not built ({path}); run: python tools/localcluster/build.py")
    return str(path)


def write_rules(directory: Path, groups: list) -> None:
    (directory / "rules.yml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))


def run_tests(directory: Path, groups: list) -> subprocess.CompletedProcess:
    write_rules(directory, groups)
    for test in TESTS:
        shutil.copy(test, directory / test.name)
    return subprocess.run(
        [promtool(), "test", "rules", *(t.name for t in TESTS)],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )


def test_promtool_checks_the_rule_file(tmp_path):
    write_rules(tmp_path, rules.rule_groups())
    out = subprocess.run(
        [promtool(), "check", "rules", "rules.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(rules.rule_names(rules.rule_groups()))} rules found" in out.stdout


def test_every_rule_passes_its_promtool_test(tmp_path):
    out = run_tests(tmp_path, rules.rule_groups())
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("SUCCESS") == len(TESTS)


def test_every_shipped_rule_has_a_test():
    alerts, exprs = set(), []
    for path in TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            alerts |= {t["alertname"] for t in case.get("alert_rule_test", [])}
            exprs += [t["expr"] for t in case.get("promql_expr_test", [])]
    untested = []
    for group in rules.rule_groups():
        for rule in group["rules"]:
            if "alert" in rule and rule["alert"] not in alerts:
                untested.append(rule["alert"])
            if "record" in rule and not any(
                re.search(re.escape(rule["record"]) + r"\b", e) for e in exprs
            ):
                untested.append(rule["record"])
    assert untested == []


def dashboard_queries() -> list[tuple[str, str]]:
    """(dashboard and panel, query) of every panel target of the shipped dashboards."""
    out = []
    for board in sorted((ROOT / "roles/monitoring/files/dashboards").glob("*.json")):
        for panel in json.loads(board.read_text())["panels"]:
            out += [(f"{board.stem}: {panel['title']}", t["expr"]) for t in panel["targets"]]
    return out


def test_every_dashboard_query_is_promql(tmp_path):
    """Each panel's query, as a recording rule, passes promtool's check (Grafana's
    ``$variables`` sit inside label matchers, where any text is valid)."""
    queries = dashboard_queries()
    rules_ = [
        {"record": f"dashboard:query_{i}:check", "expr": e} for i, (_where, e) in enumerate(queries)
    ]
    write_rules(tmp_path, [{"name": "dashboards", "rules": rules_}])
    out = subprocess.run(
        [promtool(), "check", "rules", "rules.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(queries)} rules found" in out.stdout


def test_a_query_that_is_not_promql_fails_the_check(tmp_path):
    write_rules(
        tmp_path,
        [
            {
                "name": "dashboards",
                "rules": [{"record": "x:y:z", "expr": "rate(a[$__rate_interval])"}],
            }
        ],
    )
    out = subprocess.run(
        [promtool(), "check", "rules", "rules.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode != 0


def test_a_broken_rule_fails_its_test(tmp_path):
    """The tests can fail: Volcano's GPUs read without the milli conversion."""
    groups = rules.rule_groups()
    for group in groups:
        for rule in group["rules"]:
            if rule.get("record") == "platform:queue_gpus:allocated":
                rule["expr"] = rule["expr"].replace(f"/ {alert_rules.VOLCANO_MILLI}", "")
    out = run_tests(tmp_path, groups)
    assert out.returncode != 0
    assert "platform:queue_gpus:allocated" in out.stdout + out.stderr
