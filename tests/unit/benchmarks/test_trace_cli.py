# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""benchmarks/trace_generate.py and benchmarks/trace_check.py as docs/trace-replay.md runs
them: the venv's Python, from the checkout, no PYTHONPATH; their output and exit codes."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.tests.unit.benchmarks.scripts import ROOT
from ansible_collections.gpucloud.platform.tests.unit.benchmarks.scripts import run_script as run

EXAMPLE = "docs/examples/trace-small.yaml"


def test_a_generated_day_and_the_example_check_clean(tmp_path):
    day = tmp_path / "day.yaml"
    made = run("trace_generate", "--seed", "3", "--jobs", "200", "--gpus", "64", "-o", str(day))
    assert made.returncode == 0, made.stderr
    # one paragraph, its lines wrapped
    assert " ".join(made.stdout.split()).startswith(
        f"{day}: 200 jobs over a day of 86400 s on 64 GPUs"
    )
    assert "--seed 3 --jobs 200 --gpus 64" in day.read_text(encoding="utf-8")
    checked = run("trace_check", str(day), EXAMPLE)
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.splitlines() == [
        f"{day}: valid; 200 jobs, 3 tenants, 3 events, 64 GPUs, 1,515 GPU-hours asked",
        f"{EXAMPLE}: valid; 10 jobs, 2 tenants, 2 events, 40 GPUs, 74 GPU-hours asked",
    ]


def test_a_broken_file_is_refused_with_every_error_and_exit_1(tmp_path):
    broken = tmp_path / "broken.yaml"
    text = (ROOT / EXAMPLE).read_text(encoding="utf-8")
    text = text.replace(
        "billing: payg, class: normal, kind: single, replicas: 1, gpus_per_pod: 4",
        "billing: payg, class: normal, kind: single, replicas: 1, gpus_per_pod: 0",
    )
    text = text.replace("tenant_name: gamma, tenant_gpus: 4", "tenant_name: gamma, tenant_gpu: 4")
    broken.write_text(text, encoding="utf-8")
    checked = run("trace_check", EXAMPLE, str(broken))
    assert checked.returncode == 1
    assert checked.stdout.splitlines()[1:] == [
        f"{broken}: invalid, 2 errors:",
        "  jobs[3].gpus_per_pod: 0 must be at least 1 (rule trace-job)",
        "  events[0].vars.tenant_gpu: is not a variable of tenant_create.yml; did you mean 'tenant_gpus'? (rule trace-event)",
    ]


def test_a_missing_file_exits_1_and_bad_arguments_2(tmp_path):
    missing = run("trace_check", str(tmp_path / "none.yaml"))
    assert missing.returncode == 1 and "No such file or directory" in missing.stdout
    assert run("trace_check").returncode == 2
    refused = run("trace_generate", "--gpus", "100")
    assert refused.returncode == 2
    assert "gpus: 100 must be a multiple of 8" in refused.stderr


def test_without_o_the_trace_goes_to_standard_output():
    made = run("trace_generate", "--jobs", "5", "--gpus", "8", "--tenants", "1")
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("---\n# A generated day of traffic")
    assert made.stderr.startswith("5 jobs over a day of 86400 s on 8 GPUs")
