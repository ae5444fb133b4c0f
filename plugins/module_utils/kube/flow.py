# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The contract a module runs through: parse, gather, plan, apply.

* ``parse(params) -> request``: the module's options as a typed request, checked before
  the module connects; nothing after it sees ``params``.
* ``gather(request, cluster) -> facts``: reads only (one LIST per kind).
* ``plan(request, facts) -> planned``: pure; every decision and every refusal.
* ``apply(request, planned, cluster, check_mode) -> result``: writes only, in the plan's
  order; in check mode the writes are the API server's dry runs.
* ``report(request, planned) -> result``: what the plan says, without writing: the
  answer of ``rendered`` and ``parsed`` below, and the part of a run's result the plan
  decides.

So a module also answers, as Ansible's resource modules do (option ``state``):

* ``rendered``: the plan from the facts of an empty cluster (``empty``), without
  connecting, for a change a cluster is not needed to decide;
* ``gathered``: the facts as data (``facts_out``), reading only;
* ``parsed``: the plan from facts given in option ``facts`` (as ``gathered`` returned
  them, ``facts_in``), without connecting: the plan of another cluster, reviewed offline.

The runner (``kube.runner.run_flow``) makes these the only ways a module runs.

A flow that reads the host the module runs on instead of the API server (a GPU node's
devices) is a host flow, run by ``kube.host_runner.run_host_flow``: its ``gather`` and
``apply`` take the running module as a ``Host`` (``get_bin_path``, ``run_command``) where
a cluster flow's take the ``Cluster``; no client is loaded and no connection option is
taken, and the result has no ``requests``. Every other step is the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ansible.module_utils.common.warnings import warn

from ..common.errors import FieldError, raise_if

if TYPE_CHECKING:  # the client is imported at run time only once the module connects
    from .cluster import Cluster

Request = TypeVar("Request")
Facts = TypeVar("Facts")
Planned = TypeVar("Planned")

RENDERED = "rendered"
GATHERED = "gathered"
PARSED = "parsed"
# The states of a module run through a flow that answer without writing.
OFFLINE_STATES = (RENDERED, GATHERED, PARSED)
# Options state and facts of a read-only module (doc fragment gpucloud.platform.read_states).
READ_STATE_OPTIONS: dict[str, dict[str, Any]] = {
    "state": {"type": "str", "choices": ["present", GATHERED, PARSED], "default": "present"},
    "facts": {"type": "dict"},
}


class Host(Protocol):
    """What a host flow reads the host through: the running module."""

    def get_bin_path(self, arg: str) -> str | None: ...

    def run_command(self, args: list[str]) -> tuple[int, str, str]: ...


@dataclass(frozen=True)
class Flow(Generic[Request, Facts, Planned]):
    """One module's run as its steps (see the module docstring)."""

    parse: Callable[[Mapping[str, Any]], Request]
    gather: Callable[[Request, Cluster], Facts]
    plan: Callable[[Request, Facts], Planned]
    apply: Callable[[Request, Planned, Cluster, bool], dict[str, Any]]
    report: Callable[[Request, Planned], dict[str, Any]]
    empty: Callable[[Request], Facts] | None = None
    facts_out: Callable[[Facts], dict[str, Any]] | None = None
    facts_in: Callable[[Request, Mapping[str, Any]], Facts] | None = None
    # What the plan warns about, said with the module's result in every state that plans.
    warnings_of: Callable[[Planned], list[str]] | None = None

    def _planned(self, request: Request, facts: Facts) -> Planned:
        planned = self.plan(request, facts)
        for warning in self.warnings_of(planned) if self.warnings_of is not None else ():
            warn(warning)
        return planned

    def run(
        self,
        params: Mapping[str, Any],
        cluster: Cluster,
        check_mode: bool,
        request: Request | None = None,
    ) -> dict[str, Any]:
        """A run that connected: ``gathered`` reads and returns the facts; any other state
        gathers, plans and applies. ``request``: ``params`` already parsed (the runner
        parses once, before it connects)."""
        if request is None:
            request = self.parse(params)
        facts = self.gather(request, cluster)
        if params.get("state") == GATHERED and self.facts_out is not None:
            return {"changed": False, "gathered": self.facts_out(facts)}
        return self.apply(request, self._planned(request, facts), cluster, check_mode)

    def offline(
        self, params: Mapping[str, Any], request: Request | None = None
    ) -> dict[str, Any] | None:
        """The answer of ``rendered`` and ``parsed``, which need no cluster; None for a run
        that connects. ``request``: ``params`` already parsed."""
        state = params.get("state")
        if state == RENDERED and self.empty is not None:
            request = self.parse(params) if request is None else request
            facts = self.empty(request)
        elif state == PARSED and self.facts_in is not None:
            request = self.parse(params) if request is None else request
            facts = self.facts_in(request, facts_option(params))
        else:
            return None
        # Nothing is written: the plan is the answer, said as a check-mode run says it.
        planned = self._planned(request, facts)
        return {**self.report(request, planned), "changed": False, "state": state}

    def states(self) -> list[str]:
        """The offline states this flow answers."""
        offered = (
            (RENDERED, self.empty),
            (GATHERED, self.facts_out),
            (PARSED, self.facts_in),
        )
        return [state for state, step in offered if step is not None]


def facts_option(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """Option ``facts`` of a ``parsed`` run: what ``gathered`` returned, required."""
    facts = params.get("facts")
    if not isinstance(facts, Mapping):
        raise_if(
            [
                FieldError(
                    "facts",
                    "is required with state: parsed; give what state: gathered returned "
                    "(its 'gathered' key)",
                )
            ]
        )
    return facts or {}


def fact_lists(data: Mapping[str, Any], *keys: str) -> tuple[tuple[Any, ...], ...]:
    """The lists ``keys`` of facts given to ``parsed``, in that order (a missing key is an
    empty list); raises naming each key that holds something else."""
    raise_if(
        [
            FieldError(f"facts.{key}", "must be a list, as state: gathered returns it")
            for key in keys
            if not isinstance(data.get(key, []), list)
        ]
    )
    return tuple(tuple(data.get(key) or ()) for key in keys)
