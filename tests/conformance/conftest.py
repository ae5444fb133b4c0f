# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The conformance suite shares the integration suite's cluster fixtures."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.tests.integration.conftest import (
    ansible_env,
    api_client,
    kubeconfig,
    localcluster,
    namespace,
    platform_scheduler_conf,
    priority_classes,
    run_module,
    start_module,
)

# pytest finds fixtures by name in this module; exporting them says they are meant to be here.
__all__ = [
    "ansible_env",
    "api_client",
    "kubeconfig",
    "localcluster",
    "namespace",
    "platform_scheduler_conf",
    "priority_classes",
    "run_module",
    "start_module",
]


@pytest.fixture
def kube(api_client):
    """The collection's PriorityClasses and scheduler configuration, loaded into vc-scheduler
    (and left loaded: it is the configuration the platform runs)."""
    from ansible_collections.gpucloud.platform.plugins.module_utils.policy.priority_classes import (
        priority_class_manifests,
    )
    from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
        render_scheduler_conf,
    )
    from ansible_collections.gpucloud.platform.tests.conformance.conformance_kube import Kube

    k = Kube(api_client)
    for manifest in priority_class_manifests():
        k.apply(manifest)
    k.load_scheduler_conf(render_scheduler_conf())
    return k
