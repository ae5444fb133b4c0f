# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner of a host flow (``kube.flow``): a module that reads the host it runs on,
not the API server.

``run_flow``'s steps without the cluster: the request parsed first, ``parsed`` answered
from option ``facts``, ``gathered`` reading only, any other state gathered, planned and
applied, with the running module as the ``Host`` the flow reads. No connection option,
no Kubernetes client (this file imports neither ``kube.module`` nor ``kube.cluster``, so
the module shipped to the host carries none of kubernetes.core), no ``requests``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ..common.errors import PlatformValidationError, Refused
from .flow import Flow


def run_host_flow(options: Mapping[str, Any], flow: Flow[Any, Any, Any], **kwargs: Any) -> None:
    """Run one host module through its flow: ``options`` is its whole argument spec;
    ``kwargs`` go to ``AnsibleModule``."""
    module = AnsibleModule(argument_spec=dict(options), supports_check_mode=True, **kwargs)
    params = dict(module.params)
    try:
        flow.parse(params)  # every input checked before the host is read
        answer = flow.offline(params)
        if answer is None:
            answer = flow.run(params, module, module.check_mode)
    except PlatformValidationError as exc:
        module.fail_json(msg=str(exc), errors=exc.messages, changed=False)
    except Refused as exc:
        module.fail_json(msg=str(exc), changed=False, **exc.extra)
    module.exit_json(**answer)
