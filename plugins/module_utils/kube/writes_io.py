# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module k8s_objects' reads and writes, through kubernetes.core (its ``K8sService`` and
``perform_action``, as kubernetes.core.k8s makes them), its flow and its run.

Its run is not ``kube.runner.run_flow``'s: the writes are kubernetes.core's, made with the
module itself (its parameters, check mode and diff mode) rather than through ``Cluster``,
so the collection does not count them (no ``requests``), and a run fails as
kubernetes.core.k8s fails. The decisions are ``kube/writes``'.
"""

from __future__ import annotations

from typing import Any

from .flow import Flow
from .writes import (
    Write,
    WritesRequest,
    entry_of,
    error_of,
    failed_entry,
    parse_writes,
    plan_writes,
    report_writes,
    result_of,
)


class WriteFailed(Exception):
    """An object failed and the run stops: ``error`` is what the module fails with."""

    def __init__(self, error: dict[str, Any]):
        super().__init__(error.get("msg"))
        self.error = error


def gather_writes(_request: WritesRequest, svc: Any) -> list[dict[str, Any]]:
    """The objects of option ``definition`` as kubernetes.core reads it (no request: the
    live objects are read by kubernetes.core as it writes each one)."""
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.resource import (
        create_definitions,
    )

    return create_definitions(svc.module.params)


def apply_writes(
    request: WritesRequest, planned: tuple[Write, ...], svc: Any, _check_mode: bool
) -> dict[str, Any]:
    """Each write in the plan's order, as kubernetes.core.k8s makes it (in check mode its
    dry runs: the module's check mode is kubernetes.core's)."""
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.runner import perform_action

    results, entries = [], []
    for write in planned:
        try:
            result = perform_action(svc, write.definition, svc.module.params)
        except Exception as exc:  # as kubernetes.core.k8s: the error names the object
            if unreachable(exc):
                raise
            reason = getattr(exc.__cause__, "reason", None)
            error = error_of(write, getattr(exc, "result", None), reason, str(exc))
            if not request.continue_on_error:
                raise WriteFailed(error) from exc
            results.append(failed_entry(error))
            continue
        entry = entry_of(write.definition, write.index, result)
        result.pop("diff", None)
        if entry is not None:
            entries.append(entry)
        results.append(result)
    return result_of(results, entries)


WRITES_FLOW: Flow[WritesRequest, list[dict[str, Any]], tuple[Write, ...]] = Flow(
    parse=parse_writes,
    gather=gather_writes,
    plan=plan_writes,
    apply=apply_writes,
    report=report_writes,
)


def unreachable(exc: BaseException) -> bool:
    """``kube.cluster.unreachable``, imported when a run needs it (the client with it)."""
    from .cluster import unreachable as judged

    return judged(exc)


def fail_unreachable(module: Any, exc: BaseException) -> None:
    """One line naming the server, as every module of the collection says it."""
    from .cluster import unreachable_message

    module.fail_json(msg=unreachable_message(exc), changed=False)


def failed_core(module: Any, exc: BaseException) -> None:
    """kubernetes.core could not make its client or read ``definition``: an unreachable
    server (making the client asks it its version) in one line, kubernetes.core's own
    errors as it reports them, anything else raised."""
    from .cluster import CoreException

    if unreachable(exc):
        fail_unreachable(module, exc)
    if isinstance(exc, CoreException):
        module.fail_from_exception(exc)
    raise exc


def run_writes(module: Any) -> None:
    """The module's run: the flow's steps, in the order kubernetes.core.k8s takes them
    (its client, the objects, each write); the diff is returned in diff mode only."""
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.service import K8sService

    shown = module._diff
    # kubernetes.core compares with the live object only in diff mode; the comparison
    # decides "changed" here, so it is always made and dropped at the end when not asked.
    module._module._diff = True
    request = WRITES_FLOW.parse(module.params)
    module.params.update(request.k8s_params)  # kubernetes.core reads the module's
    try:
        svc = K8sService(get_api_client(module), module)
        definitions = WRITES_FLOW.gather(request, svc)
    except Exception as exc:
        failed_core(module, exc)
    try:
        planned = WRITES_FLOW.plan(request, definitions)
        out = WRITES_FLOW.apply(request, planned, svc, module.check_mode)
    except WriteFailed as exc:
        module.fail_json(**exc.error)
    except Exception as exc:  # apply raises only an unreachable server's error
        if unreachable(exc):
            fail_unreachable(module, exc)
        raise
    if not shown:
        out.pop("diff")
    module.exit_json(**out)
