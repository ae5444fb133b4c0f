# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way a module runs: argument spec in, ``service.run`` in the middle, one
result shape out.

Every module is ``run_module(OPTIONS, service.run, ...)``. The runner validates
the input before it connects (``validate``), builds the ``Cluster`` from
kubernetes.core's connection options, maps the collection's typed errors to
``fail_json`` with the same keys everywhere, drops ``diff`` unless diff mode is
on (and shapes it when it is: ``common.diffs.shaped``), and adds ``requests``: the API
requests the run made.

The Kubernetes client (``kube.cluster``) is imported only once the module
connects: a refused input or an offline answer never pays its half second.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..common.diffs import shaped
from ..common.errors import PartialWrite, PlatformValidationError, Refused
from .flow import Flow
from .module import argument_spec, platform_module, require_client

if TYPE_CHECKING:  # the client is imported at run time only once the module connects
    from .cluster import Cluster

Service = Callable[[dict[str, Any], "Cluster", bool], dict[str, Any]]


def failure(exc: BaseException) -> dict[str, Any]:
    """The ``fail_json`` keys for one of the collection's typed errors."""
    if isinstance(exc, PlatformValidationError):
        return {"msg": str(exc), "errors": exc.messages, "changed": False}
    if isinstance(exc, Refused):
        return {"msg": str(exc), "changed": False, **exc.extra}
    # Only a run that connected gets this far, with the client already imported.
    from .cluster import ApiException, TransportError, api_error_message, unreachable_message

    if isinstance(exc, PartialWrite):
        cause = exc.cause
        if isinstance(cause, ApiException):
            why = api_error_message(cause)
        elif isinstance(cause, TransportError):
            why = f"cannot reach the Kubernetes API server ({cause})"
        else:
            why = str(cause)
        return {
            "msg": f"{exc.what} failed after {len(exc.done)} change(s): {why}; "
            "every write is idempotent, so running again finishes the change",
            "changed": bool(exc.done),
            "done": exc.done,
            **exc.report,
        }
    if isinstance(exc, ApiException):
        return {"msg": api_error_message(exc)}
    return {"msg": unreachable_message(exc), "changed": False}


def _diff_as_asked(module: Any, result: dict[str, Any], by_object: bool) -> dict[str, Any]:
    """``result`` without its diff unless diff mode is on, and with it shaped when it is."""
    if not module._diff:
        result.pop("diff", None)
    elif "diff" in result:
        # rules diff-per-object and diff-shows-change: no field the server owns
        result["diff"] = shaped(result["diff"], by_object=by_object)
    return result


def run_module(
    options: Mapping[str, Any],
    service: Service,
    validate: Callable[[dict[str, Any]], Any] | None = None,
    offline: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
    diff_by_object: bool = False,
    summary: Callable[[dict[str, Any], dict[str, Any], bool], list[str]] | None = None,
    **module_kwargs: Any,
) -> None:
    """Run one module: ``options`` is its argument spec without the connection
    options, ``service`` its domain service's ``run(params, cluster, check_mode)``.
    ``offline``, when it returns a result (``state: rendered``), answers without
    connecting: no kubeconfig is needed and no request is made. ``diff_by_object``:
    the service's diff is keyed by object, and is returned as one diff per object
    (rule diff-per-object, ``common.diffs``). ``summary(params, result, check_mode)``:
    what the run did (in check mode, would do) in a few lines a person reads, returned as
    ``summary`` for the playbook's last task to print (rule run-summary)."""
    module = platform_module(
        argument_spec=argument_spec(**options), supports_check_mode=True, **module_kwargs
    )
    params = dict(module.params)
    if validate is not None:
        try:
            validate(params)  # every input checked before connecting
        except PlatformValidationError as exc:
            module.fail_json(requests=0, **failure(exc))
    if offline is not None:
        try:
            answer = offline(params)
        except (PlatformValidationError, Refused) as exc:  # a plan's refusal, offline
            module.fail_json(requests=0, **failure(exc))
        if answer is not None:
            module.exit_json(requests=0, **_diff_as_asked(module, answer, diff_by_object))
    require_client(module)
    from . import cluster as kube  # the client, now that the module connects

    cluster = kube.Cluster.from_module(module)
    try:
        result = service(params, cluster, module.check_mode)
    except (
        PlatformValidationError,
        Refused,
        PartialWrite,
        kube.ApiException,
        kube.TransportError,
    ) as exc:
        module.fail_json(requests=cluster.requests, **failure(exc))
    result = _diff_as_asked(module, result, diff_by_object)
    if summary is not None:
        result["summary"] = summary(params, result, module.check_mode)
    result["requests"] = cluster.requests
    module.exit_json(**result)


def run_flow(
    options: Mapping[str, Any],
    flow: Flow[Any, Any, Any],
    summary: Callable[[dict[str, Any], dict[str, Any], bool], list[str]] | None = None,
    **kwargs: Any,
) -> None:
    """Run one module through its flow (``kube.flow``): the request parsed before the
    module connects; ``rendered`` and ``parsed`` answered without connecting, with the
    summary a check-mode run would give; ``gathered`` reading only; any other state
    gathered, planned and applied. ``kwargs`` as ``run_module``'s."""

    # The options are parsed once, before the module connects; every step after gets the
    # request.
    parsed: dict[str, Any] = {}

    def parse(params: dict[str, Any]) -> None:
        parsed["request"] = flow.parse(params)

    def offline(params: dict[str, Any]) -> dict[str, Any] | None:
        answer = flow.offline(params, parsed.get("request"))
        if answer is not None and summary is not None:
            answer["summary"] = summary(params, answer, True)
        return answer

    def said(params: dict[str, Any], result: dict[str, Any], check_mode: bool) -> list[str]:
        if "gathered" in result:
            kinds = ", ".join(sorted(result["gathered"]))
            return [f"gathered {kinds} from the cluster; nothing was written"]
        return summary(params, result, check_mode) if summary is not None else []

    def run(params: dict[str, Any], cluster: Any, check_mode: bool) -> dict[str, Any]:
        return flow.run(params, cluster, check_mode, parsed.get("request"))

    run_module(options, run, validate=parse, offline=offline, summary=said, **kwargs)
