# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_node_probe's flow: the plan as a table of (request, observations) -> report, with no
host; the gather on a made-up host; the contract's promise (``parsed`` of what ``gathered``
returned is the run's answer) on the module as Ansible runs it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.flow import PARSED
from ansible_collections.gpucloud.platform.plugins.module_utils.nodes import probe, probe_io
from ansible_collections.gpucloud.platform.tests.unit.plugins.modules.test_gpu_node_probe import (
    run as run_module_process,
)

ROOT = Path(__file__).resolve().parents[5]
H100 = "570.86.15, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n"
PARAMS = {
    "host": "h1",
    "nvidia_smi": "nvidia-smi",
    "driver_min_version": "550.54.15",
    "expected_gpus": 0,
    "runtime_pattern": "nvidia-container-runtime",
    "runtime_config_paths": ["/etc/containerd"],
    "rdma": False,
}


def observed(rc: int = 0, stdout: str = H100, runtime_rc: int = 0, rdma=None) -> dict[str, Any]:
    return {
        "smi": {"rc": rc, "stdout": stdout, "stderr": "", "msg": ""},
        "kmod_loaded": rc == 0,
        "runtime_rc": runtime_rc,
        "rdma_devices": rdma,
    }


PLANS = [
    ({}, observed(), [], "570.86.15", 1),
    ({"expected_gpus": 2}, observed(), ["nvidia-smi"], "570.86.15", 1),
    ({"driver_min_version": "580"}, observed(), ["driver"], "570.86.15", 1),
    ({}, observed(rc=127, stdout=""), ["driver", "nvidia-smi"], "", 0),
    ({}, observed(runtime_rc=1), ["container runtime"], "570.86.15", 1),
    ({"rdma": True}, observed(rdma=[]), ["rdma"], "570.86.15", 1),
    ({"rdma": True}, observed(rdma=["mlx5_0"]), [], "570.86.15", 1),
]


@pytest.mark.parametrize(("options", "facts", "failed", "driver", "gpus"), PLANS)
def test_the_plan_is_rule_node_preflight_over_the_observations(
    options, facts, failed, driver, gpus
):
    request = probe.parse_probe({**PARAMS, **options})
    planned = probe.plan_probe(request, facts)
    result = probe.report_probe(request, planned)
    assert result["changed"] is False
    assert result["observed"] == facts
    assert (result["report"]["failed"], result["report"]["driver"]) == (failed, driver)
    assert result["report"]["gpus"] == gpus and result["report"]["host"] == "h1"


def test_the_settings_are_the_options_as_given():
    request = probe.parse_probe({**PARAMS, "runtime_config_paths": ["/a", "/b"]})
    assert probe.settings_of(request)["runtime_config_paths"] == ["/a", "/b"]
    assert "host" not in probe.settings_of(request)


def test_parsed_refuses_observations_that_are_not_what_gathered_returns():
    request = probe.parse_probe(PARAMS)
    with pytest.raises(PlatformValidationError) as err:
        probe.facts_in(request, {"smi": "x", "kmod_loaded": "yes", "runtime_rc": True})
    assert {e.field for e in err.value.errors} == {
        "facts.smi",
        "facts.kmod_loaded",
        "facts.runtime_rc",
    }
    with pytest.raises(PlatformValidationError):
        probe.facts_in(request, {**observed(), "rdma_devices": "mlx5_0"})


def test_parsed_plans_the_observations_gathered_gives():
    facts = observed(rdma=["mlx5_0"])
    answer = probe_io.PROBE_FLOW.offline({**PARAMS, "rdma": True, "state": PARSED, "facts": facts})
    assert answer["report"]["failed"] == [] and answer["observed"] == facts
    assert answer["state"] == PARSED and answer["changed"] is False


class Host:
    """The module's side a host flow reads through, answering nvidia-smi."""

    def __init__(self, rows: str):
        self.rows, self.commands = rows, []

    def get_bin_path(self, arg: str) -> str | None:
        return sys.executable if arg == "nvidia-smi" else None

    def run_command(self, args: list[str]) -> tuple[int, str, str]:
        self.commands.append(args)
        return 0, self.rows, ""


def test_gather_runs_nvidia_smi_once_and_searches_the_runtime_configuration(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "config.toml").write_text("nvidia-container-runtime")
    host = Host(H100)
    request = probe.parse_probe({**PARAMS, "runtime_config_paths": [str(tmp_path / "c")]})
    facts = probe_io.gather_probe(request, host)
    assert host.commands == [[sys.executable, *probe_io.SMI_QUERY]]
    assert facts["smi"] == {"rc": 0, "stdout": H100, "stderr": "", "msg": ""}
    assert facts["runtime_rc"] == 0 and facts["rdma_devices"] is None
    missing = probe_io.gather_probe(probe.parse_probe({**PARAMS, "nvidia_smi": "nope"}), host)
    assert missing["smi"]["rc"] == 127 and len(host.commands) == 1


# The module as Ansible runs it (its arguments in a file, its answer on stdout).
module_run = run_module_process


def test_the_promise_parsed_of_gathered_is_the_run_on_that_host(tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nprintf '570.86.15, NVIDIA H100 80GB HBM3, 00000000:18:00.0\\n'\n")
    smi.chmod(0o755)
    args = {
        "nvidia_smi": str(smi),
        "expected_gpus": 2,
        "rdma": True,
        "runtime_config_paths": [str(tmp_path / "none")],
    }
    gathered = module_run(tmp_path, state="gathered", **args)
    assert gathered["changed"] is False and set(gathered) >= {"gathered"}
    assert "report" not in gathered
    checked = module_run(tmp_path, check=True, **args)
    parsed = module_run(tmp_path, state="parsed", facts=gathered["gathered"], **args)
    assert checked["report"]["failed"] == ["nvidia-smi", "container runtime", "rdma"]
    assert parsed.pop("state") == "parsed"
    present = module_run(tmp_path, **args)
    for answer in (checked, parsed, present):
        answer.pop("invocation", None)
    assert parsed == checked == present


def test_parsed_without_facts_is_refused_naming_the_option(tmp_path):
    out = module_run(tmp_path, state="parsed")
    assert out["failed"] is True and out["changed"] is False
    assert "facts" in out["msg"] and "state: gathered" in out["msg"]
