# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The federation pages' examples (``pages.yml``'s ``federation``), run as written and in
order, as the docs test runs the other pages (``tests/docs/test_docs.run_example``). They
start member clusters and a federation of their own and end by removing them, so they run
in the federation stage, beside the single-cluster suites and never against their cluster.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from ansible_collections.gpucloud.platform.tests.docs.examples import examples_of
from ansible_collections.gpucloud.platform.tests.docs.test_docs import FEDERATION, run_example
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import ROOT

pytestmark = pytest.mark.federation


def federation_env() -> dict[str, str]:
    """A reader's shell on the federation page: the venv first on PATH and the
    repository's ansible.cfg; no cluster of the single-cluster pages."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG")}
    env.update(
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
    )
    for name in (
        "GPUCLOUD_LOCALCLUSTER",
        "GPUCLOUD_LOCALCLUSTER_PORT_OFFSET",
        "GPUCLOUD_FEDERATION",
    ):
        env.pop(name, None)
    return env


@pytest.mark.parametrize("page", FEDERATION)
def test_federation_page_examples_run_as_written(page: str):
    examples = [e for e in examples_of(ROOT, [page]) if e.skip is None]
    assert examples, f"{page} is listed as a federation page but has no example to run"
    # Every example runs, after a failure too: the page's last ones remove what it started.
    failures = []
    with tempfile.TemporaryDirectory(prefix="docs-federation-") as scratch:
        for example in examples:
            why = run_example(example, federation_env(), Path(scratch))
            if why is not None:
                failures.append(f"{example.where} ({example.kind}): {why}")
    assert not failures, "\n\n".join(failures)
