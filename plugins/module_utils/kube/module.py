# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A module's Ansible side: its argument spec with kubernetes.core's connection
options, and the AnsibleK8SModule that parses it.

Neither imports the Kubernetes client (about half a second in every module process):
a module that answers without a cluster (``state: rendered``) or refuses its input
never pays for it. ``kube.cluster`` brings the client once a module connects.
"""

from __future__ import annotations

import copy
from typing import Any

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
except ImportError:  # pragma: no cover - only when kubernetes.core is absent
    AUTH_ARG_SPEC = {}


def argument_spec(**options: Any) -> dict[str, Any]:
    """The module's own options plus kubernetes.core's connection options."""
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(options)
    return spec


def platform_module(**kwargs: Any):
    """An AnsibleK8SModule whose library checks wait until the module connects
    (``require_client``): kubernetes.core's check of any library imports the client."""
    return AnsibleK8SModule(check_k8s=False, check_pyyaml=False, **kwargs)


def require_client(module: Any) -> None:
    """kubernetes.core's checks, once the module connects: fails the module naming a
    missing library (kubernetes or PyYAML), warns below the supported version."""
    module.requires("kubernetes")
    module.has_at_least("kubernetes", "24.2.0", warn=True)
    module.requires("pyyaml")
