# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The replay's in-process reconcilers (benchmarks/replay/reconcilers.py) are their
playbooks' module tasks: the same modules in the same order, each given the options its
playbook passes (a literal the same, a variable at its default), each step's function the
one its module's main() runs, and a conditional step run only on its condition."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.gpucloud.platform.benchmarks.replay import reconcilers

ROOT = Path(__file__).resolve().parents[3]
PREFIX = "gpucloud.platform."


def module_tasks(tasks: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str | None]]:
    """The collection's module tasks, blocks opened, rescues left out: (module, its
    options, its ``when``)."""
    out = []
    for task in tasks:
        if "block" in task:
            out += module_tasks(task["block"])
            continue
        for key, value in task.items():
            if key.startswith(PREFIX):
                out.append((key[len(PREFIX) :], value or {}, task.get("when")))
    return out


def playbook_tasks(name: str) -> tuple[dict[str, Any], list]:
    (play,) = yaml.safe_load((ROOT / "playbooks" / f"{name}.yml").read_text())
    return play.get("vars") or {}, module_tasks(play["tasks"])


def main_service(module: str) -> str:
    """What a module's main() hands run_module or run_flow: ``service.<function or flow>``."""
    tree = ast.parse((ROOT / "plugins" / "modules" / f"{module}.py").read_text())
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    call = next(n for n in ast.walk(main) if isinstance(n, ast.Call))
    service = call.args[1]
    assert isinstance(service, ast.Attribute)
    return service.attr


@pytest.mark.parametrize("name", reconcilers.NAMES)
def test_each_reconciler_runs_its_playbooks_modules_in_order(name):
    _vars, tasks = playbook_tasks(name)
    steps = reconcilers.steps(name, timeout_s=12, grace_min=1, settle_s=1)
    assert [s.module for s in steps] == [module for module, _options, _when in tasks]


@pytest.mark.parametrize("name", reconcilers.NAMES)
def test_each_step_is_given_what_its_playbook_passes(name):
    defaults, tasks = playbook_tasks(name)
    # At the playbook's own timings (the replay compresses them, and passes them as the
    # playbooks' variables would be).
    steps = reconcilers.steps(
        name,
        timeout_s=defaults.get("throttle_timeout", 0),
        grace_min=defaults.get("payg_grace_minutes", 0),
        settle_s=defaults.get("arbiter_settle_seconds", 0),
    )
    for step, (module, options, _when) in zip(steps, tasks, strict=True):
        given = {k: v for k, v in options.items() if "omit" not in str(v)}
        assert set(step.options) == set(given), module
        for key, value in given.items():
            if isinstance(value, str) and "{{" in value:
                variable = value.strip("{} ").split("|")[0].strip()
                if variable in defaults:
                    assert step.options[key] == defaults[variable], (module, key)
            else:
                assert step.options[key] == value, (module, key)


@pytest.mark.parametrize("name", reconcilers.NAMES)
def test_each_step_runs_the_function_its_modules_main_runs(name):
    for step in reconcilers.steps(name, timeout_s=12, grace_min=1, settle_s=1):
        _where, function = step.service.split(":")
        assert function == main_service(step.module), step
        assert callable(reconcilers.service_of(step))
        params = reconcilers.params_of(step)
        assert set(step.options) <= set(params), step.module


def test_the_timings_given_are_the_ones_passed():
    (throttle,) = reconcilers.steps("throttle_reconcile", timeout_s=13, grace_min=2, settle_s=3)
    (arbiter,) = reconcilers.steps("arbiter_reconcile", timeout_s=13, grace_min=2, settle_s=3)
    payg, _recompute = reconcilers.steps("payg_reconcile", timeout_s=13, grace_min=2, settle_s=3)
    assert throttle.options["timeout"] == 13
    assert arbiter.options["settle_seconds"] == 3
    assert payg.options["grace_minutes"] == 2


def test_a_conditional_step_runs_only_on_its_condition(monkeypatch):
    ran: list[str] = []

    def fake(step_result):
        def service(_params, _cluster, _check):
            return step_result

        return service

    results = {"payg_capacity": {"updated": []}, "spot_capacity": {"changed": True}}

    def service_of(step):
        ran.append(step.module)
        return fake(results[step.module])

    monkeypatch.setattr(reconcilers, "service_of", service_of)
    steps = reconcilers.steps("payg_reconcile", timeout_s=12, grace_min=1, settle_s=1)
    reconcilers.run(steps, cluster=None)
    assert ran == ["payg_capacity"]  # nothing shrank: no recompute
    ran.clear()
    results["payg_capacity"] = {"updated": ["tenant-a-payg"]}
    done = reconcilers.run(steps, cluster=None)
    assert ran == ["payg_capacity", "spot_capacity"]
    assert done["spot_capacity"] == {"changed": True}
    # The playbook's condition is the same one.
    _defaults, tasks = playbook_tasks("payg_reconcile")
    assert tasks[1][2] == "payg_reconcile_result.updated | length > 0"


def test_the_sites_spot_apportion_reaches_every_recompute():
    _reclaim, recompute = reconcilers.steps("spot_recompute", 12, 1, 1, apportion="demand")
    assert recompute.options["apportion"] == "demand"
    _payg, after_shrink = reconcilers.steps("payg_reconcile", 12, 1, 1, "unused", "demand")
    assert after_shrink.options["apportion"] == "demand"
    assert reconcilers.steps("spot_recompute", 12, 1, 1)[1].options["apportion"] == "share"


def test_the_sites_spot_offer_reaches_every_spot_step():
    reclaim, recompute = reconcilers.steps("spot_recompute", 12, 1, 1, offer="unused")
    assert reclaim.options["need_from"] == "unused" and recompute.options["offer"] == "unused"
    _payg, after_shrink = reconcilers.steps("payg_reconcile", 12, 1, 1, offer="unused")
    assert after_shrink.options["offer"] == "unused"
    # At the playbooks' default, the design's offer.
    reclaim, recompute = reconcilers.steps("spot_recompute", 12, 1, 1)
    assert reclaim.options["need_from"] == recompute.options["offer"] == "unsold"


@pytest.mark.parametrize("variable", ["spot_offer", "spot_apportion"])
def test_the_replay_gives_the_spot_site_variables_to_every_playbook_that_declares_them(variable):
    declared = {
        path.name
        for path in (ROOT / "playbooks").glob("*.yml")
        if variable in (yaml.safe_load(path.read_text())[0].get("vars") or {})
    }
    assert declared == reconcilers.SPOT_SITE_PLAYBOOKS
