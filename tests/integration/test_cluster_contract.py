# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The contract cases of tests/cluster_contract.py on the real kube-apiserver,
through the collection's own client layer, so the unit tests' fake cannot drift."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import Cluster
from ansible_collections.gpucloud.platform.tests.cluster_contract import (
    CASES,
    configmap,
    dry_run_case,
)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("case", sorted(CASES))
def test_api_server_keeps_the_contract(case, kubeconfig, namespace):
    CASES[case](Cluster.from_kubeconfig(kubeconfig), namespace)


def test_api_server_dry_run_stores_nothing(kubeconfig, namespace):
    Cluster.from_kubeconfig(kubeconfig).create(configmap(namespace, "kept", {}))
    dry_run_case(Cluster.from_kubeconfig(kubeconfig, dry_run=True), namespace, "kept")
