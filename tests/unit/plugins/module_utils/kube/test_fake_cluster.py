# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fake cluster passes the same contract cases as the real API server
(tests/integration/test_cluster_contract.py runs them there)."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.tests.cluster_contract import (
    CASES,
    configmap,
    dry_run_case,
)
from ansible_collections.gpucloud.platform.tests.unit.fake_cluster import FakeCluster


@pytest.mark.parametrize("case", sorted(CASES))
def test_fake_cluster_keeps_the_contract(case):
    CASES[case](FakeCluster(), "contract")


def test_fake_cluster_dry_run_stores_nothing():
    cluster = FakeCluster([configmap("contract", "kept", {})], dry_run=True)
    dry_run_case(cluster, "contract", "kept")
    assert cluster.real_writes == []
