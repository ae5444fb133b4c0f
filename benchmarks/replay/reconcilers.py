# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The platform's four scheduled reconcilers as the replay runs them in its own process.

Each is its playbook's module tasks, in order, with the options the playbook passes at
its defaults (``playbooks/<name>.yml``), run through the modules' own services on the
replay's client. What is left out is Ansible's start-up: about 2 to 3 s of CPU per
playbook run, which on two cores, four reconcilers at a compressed period, starved the
API server and Volcano of the CPU the replay measures. ``--reconcilers playbooks`` runs
the playbooks themselves instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.flow import Flow

NAMES = ("spot_recompute", "arbiter_reconcile", "throttle_reconcile", "payg_reconcile")
MODULES = "ansible_collections.gpucloud.platform.plugins.modules"
SERVICES = "ansible_collections.gpucloud.platform.plugins.module_utils"
# The playbooks that recompute spot capacity, and so take the site's spot_offer and
# spot_apportion (the replay gives them to each, as an inventory would).
SPOT_SITE_PLAYBOOKS = frozenset(
    {
        "tenant_create.yml",
        "tenant_update.yml",
        "tenant_delete.yml",
        "tenant_catalog.yml",
        "payg_scale.yml",
        "payg_reconcile.yml",
        "spot_recompute.yml",
    }
)


@dataclass(frozen=True)
class Step:
    """One module task of a reconcile playbook: the module (for its options' defaults),
    its service function, the options the playbook passes, and, when the playbook runs it
    only on a condition, that condition over the results of the steps before it."""

    module: str
    service: str  # "<domain>.service:<function>", the function the module's main() runs
    options: Mapping[str, Any] = field(default_factory=dict)
    when: Callable[[Mapping[str, Mapping[str, Any]]], bool] | None = None


def steps(
    name: str,
    timeout_s: int,
    grace_min: int,
    settle_s: int,
    offer: str = "unsold",
    apportion: str = "share",
) -> tuple[Step, ...]:
    """The module tasks of ``playbooks/<name>.yml`` with its default variables, the
    throttle's timeout, pay-as-you-go's grace, the arbiter's settle time and the site's
    ``spot_offer`` and ``spot_apportion`` given."""
    recompute = Step(
        "spot_capacity",
        "spot.service:RECOMPUTE_FLOW",
        {"node_selector": {}, "offer": offer, "apportion": apportion},
    )
    table = {
        "spot_recompute": (
            Step(
                "spot_reclaim",
                "spot.service:RECLAIM_FLOW",
                {
                    "need": 0,
                    "need_from": offer,
                    "demand_reason": (
                        "spot jobs held GPUs that tenants bought"
                        if offer == "unsold"
                        else "paying jobs waited for GPUs spot held"
                    ),
                    "node_selector": {},
                    "allow_partial": True,
                },
            ),
            recompute,
        ),
        "arbiter_reconcile": (
            Step("queue_arbiter", "arbiter.service:ARBITER_FLOW", {"settle_seconds": settle_s}),
        ),
        "throttle_reconcile": (
            Step(
                "large_job_throttle",
                "jobs.service:THROTTLE_FLOW",
                {"timeout": timeout_s, "namespaces": []},
            ),
        ),
        "payg_reconcile": (
            Step(
                "payg_capacity",
                "capacity.service:PAYG_FLOW",
                {"fit_to_use": True, "grace_minutes": grace_min, "node_selector": {}},
            ),
            Step(
                recompute.module,
                recompute.service,
                recompute.options,
                # "Recompute spot capacity when a queue shrank"
                when=lambda done: bool(done["payg_capacity"].get("updated")),
            ),
        ),
    }
    return table[name]


def params_of(step: Step) -> dict[str, Any]:
    """The module's parameters as Ansible gives them: every option's default, then the
    playbook's."""
    options = importlib.import_module(f"{MODULES}.{step.module}").OPTIONS
    return {key: spec.get("default") for key, spec in options.items()} | dict(step.options)


def service_of(step: Step) -> Callable[..., dict[str, Any]]:
    """The function the module's main() runs: a service function, or a flow's ``run``
    (``kube.flow``) for a module that runs through one."""
    where, function = step.service.split(":")
    found = getattr(importlib.import_module(f"{SERVICES}.{where}"), function)
    return found.run if isinstance(found, Flow) else found


def run(reconcile: tuple[Step, ...], cluster: Any) -> dict[str, Mapping[str, Any]]:
    """Run one reconcile's steps in order on ``cluster``; each step's result by module.
    A step that raises stops the reconcile, as a failed task stops its playbook."""
    done: dict[str, Mapping[str, Any]] = {}
    for step in reconcile:
        if step.when is not None and not step.when(done):
            continue
        done[step.module] = service_of(step)(params_of(step), cluster, False)
    return done
