# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's own code sets off no deprecation warning on the pinned ansible-core
(2.19 deprecates, for example, ``warnings`` passed to exit_json): the spot modules a
scheduled recompute runs every minute, run as a person runs them from the checkout, print
none. Check mode: nothing is written. (tests/unit/plugins/test_no_deprecated_result_keys.py
refuses the result keys in the source; tests/unit/conftest.py fails any unit-test module
run that reports one of ansible-core's deprecations.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "args",
    [
        ["-m", "gpucloud.platform.spot_capacity"],
        ["-m", "gpucloud.platform.spot_reclaim", "-a", "need=0 need_from=unsold"],
    ],
    ids=["spot_capacity", "spot_reclaim"],
)
def test_a_spot_module_run_prints_no_deprecation_warning(args, kubeconfig):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env |= {
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_DEPRECATION_WARNINGS": "true",
        "ANSIBLE_NOCOLOR": "1",
        "K8S_AUTH_KUBECONFIG": kubeconfig,
    }
    run = subprocess.run(
        [BIN / "ansible", "localhost", *args, "--check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-3000:]
    assert "DEPRECATION" not in output, output[-3000:]
