# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules a trace meets, each one function named after it, every error at once.

Each error names the field path (``jobs[12].billing``), the value and the rule, in the
collection's words (``FieldError``). Where the platform holds the rule a replayed job or
purchase would meet, the rule here asks the platform's own function and keeps its name
and words: class-fits-queue and class-size (``jobs/classes``, ``jobs/class_rules``),
oversell-guard (``capacity/oversell``); trace-job-fits asks rule job-never-runs
(``jobs/feasibility``), trace-spot-price rule spot-price (``jobs/spot_price``),
trace-teams-within-subscription the queue tree (``tenants/tenant_queues``).

First the shape of every entry (trace-keys, trace-time, trace-cluster, trace-tenant,
trace-job, trace-spot-price, trace-event); then, over the entries whose shape is right,
the rules between fields and entries, with the tenants as the events change them
(``model.tenant_history``). A job or event whose tenant is named by an entry with a
broken shape is left out of the second part, so one typo is reported once.

Events must be listed in the order they happen (rule trace-events-in-order): that order
is the order the playbooks run in, and events at the same second run as listed. Jobs may
be listed in any order; each is submitted at its ``at``, after the events of that second.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from itertools import pairwise
from typing import Any

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.oversell import (
    oversell_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    FieldError,
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    BILLING_TYPES,
    JOB_CLASSES,
    NODE_LOCATIONS,
    QUEUE_TYPE_SUBSCRIPTION,
    QUEUE_TYPE_TEAM,
    ROOT_QUEUE,
    queue_name,
    team_name_errors,
    tenant_name_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.quantity import GPU, parse
from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid.placement import PLACEMENTS
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.class_rules import (
    class_size_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.classes import (
    DEFAULT_CLASSES,
    class_queue_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.feasibility import (
    Gang,
    Limit,
    Supply,
    never_runs,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.kinds import KINDS, roles
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.request import JobRequest
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.spot_price import (
    spot_price_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_reader import (
    suggestion,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.spec import parse_teams
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.tenant_queues import (
    TeamSpec,
    input_tree_errors,
)

from .model import (
    ACTIONS,
    IDC,
    SECTIONS,
    START,
    VAR_CONFIRM,
    VAR_CRITICAL,
    VAR_GPUS,
    VAR_PAYG,
    VAR_QUANTITIES,
    VAR_TEAMS,
    VAR_TENANT,
    Change,
    Cluster,
    Event,
    Job,
    Section,
    Tenant,
    TenantState,
    change_at,
    state_of,
    states_from,
    tenant_history,
)

# action -> playbook variable -> whether the playbook requires it (``load.playbook_variables``).
PlaybookVariables = Mapping[str, Mapping[str, bool]]

RULES = (
    "trace-yaml",
    "trace-keys",
    "trace-time",
    "trace-cluster",
    "trace-tenant",
    "trace-job",
    "trace-spot-price",
    "trace-event",
    "trace-events-in-order",
    "trace-tenant-exists",
    "trace-job-team",
    "trace-critical-allowed",
    "class-fits-queue",
    "class-size",
    "trace-teams-within-subscription",
    "oversell-guard",
    "trace-job-fits",
)
_SECTION_ORDER = {"cluster": 0, "tenants": 1, "jobs": 2, "events": 3}
_ENTRY = re.compile(r"^(?P<section>cluster|tenants|jobs|events)(?:\[(?P<index>\d+)\])?")
_RULE_TAG = re.compile(r"\(rule [\w-]+\)$")


def _tagged(error: FieldError, rule: str, field: str | None = None) -> FieldError:
    """``error`` (from the platform's core) ending in its rule, under ``field`` if given."""
    message = error.message if _RULE_TAG.search(error.message) else f"{error.message} (rule {rule})"
    return FieldError(error.field if field is None else field, message)


def _error(field: str, message: str, rule: str) -> FieldError:
    return FieldError(field, f"{message} (rule {rule})")


def _join(where: str, key: object) -> str:
    return f"{where}.{key}" if where else str(key)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _seconds(at: float) -> str:
    return "the start" if at == START else f"{at:g} s"


def _whole(field: str, value: Any, minimum: int, rule: str) -> list[FieldError]:
    if isinstance(value, bool) or not isinstance(value, int):
        return [_error(field, f"{_shown(value)} must be a whole number, {minimum} or more", rule)]
    if value < minimum:
        return [_error(field, f"{value} must be at least {minimum}", rule)]
    return []


def _one_of(
    field: str, value: Any, choices: Sequence[str], what: str, rule: str
) -> list[FieldError]:
    if isinstance(value, str) and value in choices:
        return []
    hint = suggestion(value, choices) if isinstance(value, str) else ""
    listed = hint or f"; use {', '.join(choices)}"
    return [_error(field, f"{_shown(value)} is not {what}{listed}", rule)]


def _bool(field: str, value: Any, rule: str) -> list[FieldError]:
    if isinstance(value, bool):
        return []
    return [_error(field, f"{_shown(value)} must be true or false", rule)]


def _entries(field: str, value: Any, what: str) -> list[FieldError]:
    if isinstance(value, list):
        return []
    return [_error(field, f"{_shown(value)} must be a list of {what}", "trace-keys")]


# --------------------------------------------------------------------------
# Shape
# --------------------------------------------------------------------------


def _names(
    where: str,
    given: Iterable[Any],
    known: Sequence[str],
    required: Mapping[str, str],
    unknown: str,
    rule: str,
    elsewhere: Mapping[str, str] | None = None,
) -> list[FieldError]:
    """``unknown`` said of every name in ``given`` not in ``known`` (with a near miss named,
    else where it belongs, from ``elsewhere``, else the names listed) and "is required" of
    every ``required`` name missing, except the one a near miss was taken for (one error
    for one typo)."""
    errors = []
    meant = set()
    given = list(given)
    for name in given:
        if name in known:
            continue
        if elsewhere and name in elsewhere:
            errors.append(_error(_join(where, name), f"{unknown}; it is {elsewhere[name]}", rule))
            continue
        hint = suggestion(str(name), known)
        meant |= {k for k in known if hint == f"; did you mean {k!r}?"}
        listed = hint or f"; use {', '.join(known)}"
        errors.append(_error(_join(where, name), f"{unknown}{listed}", rule))
    for name, what in required.items():
        if name not in given and name not in meant:
            errors.append(_error(_join(where, name), f"is required{what}", rule))
    return errors


def trace_keys(where: str, data: Any, section: Section) -> list[FieldError]:
    """Rule trace-keys: ``data`` is a mapping with the section's keys: every required key,
    no other (a near miss is named: "did you mean 'billing'?")."""
    if not isinstance(data, Mapping):
        keys = ", ".join(section.keys)
        what = f"{_shown(data)} must be {section.what}: a mapping of {keys}"
        return [_error(where or "trace", what, "trace-keys")]
    required = {key: f": {what}" for key, what in section.required.items()}
    return _names(
        where, data, section.keys, required, f"is not a key of {section.what}", "trace-keys"
    )


def trace_time(field: str, value: Any, positive: bool = False) -> list[FieldError]:
    """Rule trace-time: an ``at`` is a number of seconds, 0 or more; a ``duration_s`` is
    more than 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return [_error(field, f"{_shown(value)} must be a number of seconds", "trace-time")]
    if positive and value <= 0:
        return [_error(field, f"{value} must be more than 0", "trace-time")]
    if not positive and value < 0:
        return [_error(field, f"{value} must be 0 or more", "trace-time")]
    return []


def _mappings(
    where: str, kind: str, entries: Sequence[Any], errors: list[FieldError]
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(path, entry) of each entry that is a mapping, after adding to ``errors`` what
    rules trace-keys and (for its ``at``) trace-time say of every entry."""
    for i, entry in enumerate(entries):
        path = f"{where}[{i}]"
        errors += trace_keys(path, entry, SECTIONS[kind])
        if not isinstance(entry, Mapping):
            continue
        if "at" in entry and "at" in SECTIONS[kind].keys:
            errors += trace_time(f"{path}.at", entry["at"])
        yield path, entry


def trace_cluster(cluster: Any) -> list[FieldError]:
    """Rule trace-cluster: ``nodes`` is a non-empty list of node kinds, each ``count`` nodes
    (1 or more) of ``gpus`` GPUs (1 or more) in group idc (the default) or cloud."""
    errors = trace_keys("cluster", cluster, SECTIONS["cluster"])
    if not isinstance(cluster, Mapping) or "nodes" not in cluster:
        return errors
    nodes = cluster["nodes"]
    if not isinstance(nodes, list) or not nodes:
        return [
            *errors,
            _error(
                "cluster.nodes",
                f"{_shown(nodes)} must be a non-empty list of node kinds",
                "trace-cluster",
            ),
        ]
    for where, node in _mappings("cluster.nodes", "nodes", nodes, errors):
        for key in ("count", "gpus"):
            if key in node:
                errors += _whole(f"{where}.{key}", node[key], 1, "trace-cluster")
        if "group" in node:
            errors += _one_of(
                f"{where}.group", node["group"], NODE_LOCATIONS, "a node group", "trace-cluster"
            )
    return errors


def trace_tenant(tenants: Sequence[Any]) -> list[FieldError]:
    """Rule trace-tenant: each tenant has a unique name (rule tenant-name's words), a
    subscription and a pay-as-you-go grant of 0 or more GPUs, teams as team name (rule
    team-name's words) -> deserved GPUs (0 or more), and allow_critical true or false."""
    errors: list[FieldError] = []
    seen: dict[str, str] = {}
    for where, tenant in _mappings("tenants", "tenant", tenants, errors):
        name = tenant.get("name")
        if "name" in tenant:
            errors += [
                _tagged(e, "trace-tenant") for e in tenant_name_errors(name, f"{where}.name")
            ]
        if isinstance(name, str) and name in seen:
            errors.append(
                _error(
                    f"{where}.name",
                    f"{name!r} is already {seen[name]}; tenant names are unique",
                    "trace-tenant",
                )
            )
        elif isinstance(name, str):
            seen[name] = where
        for key in ("subscription_gpus", "payg_gpus"):
            if key in tenant:
                errors += _whole(f"{where}.{key}", tenant[key], 0, "trace-tenant")
        if "allow_critical" in tenant:
            errors += _bool(f"{where}.allow_critical", tenant["allow_critical"], "trace-tenant")
        teams = tenant.get("teams")
        if teams is None:
            continue
        if not isinstance(teams, Mapping):
            errors.append(
                _error(
                    f"{where}.teams",
                    f"{_shown(teams)} must be a mapping of team name to deserved GPUs",
                    "trace-tenant",
                )
            )
            continue
        for team, gpus in teams.items():
            if isinstance(name, str):
                errors += [
                    _tagged(e, "trace-tenant")
                    for e in team_name_errors(name, team, f"{where}.teams.{team}")
                ]
            errors += _whole(f"{where}.teams.{team}", gpus, 0, "trace-tenant")
    return errors


def trace_job(jobs: Sequence[Any]) -> list[FieldError]:
    """Rule trace-job: each job names its tenant, a billing type, a job class and a kind
    of job, 1 or more GPU pods of 1 or more GPUs each (a ``single`` job is one pod, as
    the job builder's rule job-kinds says), a team name if any and a placement if any.
    Its ``at`` and ``duration_s`` are rule trace-time's."""
    errors: list[FieldError] = []
    for where, job in _mappings("jobs", "job", jobs, errors):
        if "duration_s" in job:
            errors += trace_time(f"{where}.duration_s", job["duration_s"], positive=True)
        for key in ("tenant", "team"):
            if key in job and (not isinstance(job[key], str) or not job[key]):
                errors.append(
                    _error(
                        f"{where}.{key}", f"{_shown(job[key])} must be a {key}'s name", "trace-job"
                    )
                )
        for key, choices, what in (
            ("billing", BILLING_TYPES, "a billing type"),
            ("class", JOB_CLASSES, "a job class"),
            ("kind", KINDS, "a kind of job"),
            ("placement", PLACEMENTS, "a placement"),
        ):
            if key in job:
                errors += _one_of(f"{where}.{key}", job[key], choices, what, "trace-job")
        for key in ("replicas", "gpus_per_pod"):
            if key in job:
                errors += _whole(f"{where}.{key}", job[key], 1, "trace-job")
        replicas = job.get("replicas")
        if job.get("kind") == "single" and isinstance(replicas, int) and replicas > 1:
            errors.append(
                _error(
                    f"{where}.replicas",
                    f"{replicas}: a single job is one pod; set replicas: 1, or use pytorch_ddp",
                    "trace-job",
                )
            )
    return errors


def trace_spot_price(jobs: Sequence[Any]) -> list[FieldError]:
    """Rule trace-spot-price: a spot job bids a price per GPU-hour (rule spot-price: a
    decimal above 0, below the limit, at most 6 places); no other job has one."""
    errors: list[FieldError] = []
    for i, job in enumerate(jobs):
        if not isinstance(job, Mapping) or "billing" not in job:
            continue
        field = f"jobs[{i}].spot_price"
        if job["billing"] == "spot":
            errors += [
                _tagged(e, "trace-spot-price")
                for e in spot_price_errors(job.get("spot_price"), field)
            ]
        elif "spot_price" in job:
            errors.append(
                _error(
                    field,
                    f"{_shown(job['spot_price'])}: only a spot job bids a price; this one is billed {job['billing']}",
                    "trace-spot-price",
                )
            )
    return errors


def _event_var_errors(where: str, action: str, variables: Mapping[str, Any]) -> list[FieldError]:
    """The variables the trace reads, each as the playbook takes it."""
    errors: list[FieldError] = []
    name = variables.get(VAR_TENANT)
    if VAR_TENANT in variables:
        errors += [
            _tagged(e, "trace-event") for e in tenant_name_errors(name, f"{where}.{VAR_TENANT}")
        ]
    for key in (VAR_GPUS, VAR_PAYG):
        if key in variables:
            errors += _whole(f"{where}.{key}", variables[key], 0, "trace-event")
    if VAR_CRITICAL in variables:
        errors += _bool(f"{where}.{VAR_CRITICAL}", variables[VAR_CRITICAL], "trace-event")
    for key in VAR_QUANTITIES:
        if key in variables:
            try:
                parse(variables[key], f"{where}.{key}")
            except PlatformValidationError as exc:
                errors += [_tagged(e, "trace-event") for e in exc.errors]
    if action == "delete" and VAR_CONFIRM in variables and variables[VAR_CONFIRM] != name:
        errors.append(
            _error(
                f"{where}.{VAR_CONFIRM}",
                f"{_shown(variables[VAR_CONFIRM])} must repeat {VAR_TENANT} ({_shown(name)}), as {ACTIONS[action]} asserts",
                "trace-event",
            )
        )
    if VAR_TEAMS not in variables:
        return errors
    teams = variables[VAR_TEAMS]
    field = f"{where}.{VAR_TEAMS}"
    if not isinstance(teams, list):
        return [
            *errors,
            _error(
                field,
                f"{_shown(teams)} must be a list of teams, each name and deserved: {{{GPU}: N}}",
                "trace-event",
            ),
        ]
    _parsed, team_errors = parse_teams(name if isinstance(name, str) else "", teams, field)
    errors += [_tagged(e, "trace-event") for e in team_errors]
    for j, team in enumerate(teams):
        deserved = team.get("deserved") if isinstance(team, Mapping) else None
        if isinstance(deserved, Mapping) and GPU in deserved:
            errors += _whole(f"{field}[{j}].deserved.{GPU}", deserved[GPU], 0, "trace-event")
    return errors


def trace_event(events: Sequence[Any], playbooks: PlaybookVariables) -> list[FieldError]:
    """Rule trace-event: each event's action is create, update or delete; its vars are
    variables of that action's playbook (a near miss is named), every variable the
    playbook requires is there, and those the trace reads are as the playbook takes
    them: tenant_name (rule tenant-name's words), tenant_gpus and tenant_payg_gpus (whole
    GPUs), tenant_teams (a list, as the playbook's teams), tenant_allow_critical (true or
    false), tenant_cpu and tenant_memory (quantities) and, for a delete, tenant_confirm
    repeating tenant_name. Its ``at`` is rule trace-time's."""
    errors: list[FieldError] = []
    for where, event in _mappings("events", "event", events, errors):
        action = event.get("action")
        if "action" in event:
            errors += _one_of(f"{where}.action", action, tuple(ACTIONS), "an action", "trace-event")
        variables = event.get("vars")
        if "vars" not in event:
            continue
        if not isinstance(variables, Mapping):
            errors.append(
                _error(
                    f"{where}.vars",
                    f"{_shown(variables)} must be a mapping of playbook variables",
                    "trace-event",
                )
            )
            continue
        if action not in ACTIONS:
            continue
        known = playbooks[action]
        playbook = ACTIONS[action]
        required = {name: f" by {playbook}" for name, needed in known.items() if needed}
        others = {
            name: f"a variable of {ACTIONS[other]}"
            for other in ACTIONS
            if other != action
            for name in playbooks[other]
        }
        errors += _names(
            f"{where}.vars",
            variables,
            tuple(known),
            required,
            f"is not a variable of {playbook}",
            "trace-event",
            others,
        )
        errors += _event_var_errors(f"{where}.vars", action, variables)
    return errors


# --------------------------------------------------------------------------
# Between fields and entries
# --------------------------------------------------------------------------


def trace_events_in_order(events: Sequence[tuple[int, Event]]) -> list[FieldError]:
    """Rule trace-events-in-order: events are listed in the order they happen (ties run
    as listed)."""
    errors = []
    for (i, before), (j, event) in pairwise(events):
        if event.at < before.at:
            errors.append(
                _error(
                    f"events[{j}].at",
                    f"{event.at:g} comes before events[{i}].at ({before.at:g}); list events in the order they happen",
                    "trace-events-in-order",
                )
            )
    return errors


def _previous(changes: Sequence[Change], source: str) -> Change | None:
    before = None
    for change in changes:
        if change.source == source:
            return before
        before = change
    return before


def _absent(
    history: Mapping[str, Sequence[Change]],
    tenant: str,
    at: float,
    before: Change | None,
    source: str = "",
) -> str:
    """Why ``tenant`` is not a tenant at ``at``; ``before`` is the change in force then
    (its state None: deleted), ``source`` the entry asking (not counted as a creation)."""
    if before is not None:
        return f"{tenant!r} is not a tenant at {_seconds(at)}: {before.source} deleted it at {_seconds(before.at)}"
    changes = history.get(tenant, ())
    later = next(
        (c for c in changes if c.at >= at and c.state is not None and c.source != source), None
    )
    if later is not None:
        return f"{tenant!r} is not a tenant yet at {_seconds(at)}: {later.source} creates it at {_seconds(later.at)}"
    known = sorted(n for n, c in history.items() if n != tenant and any(x.state for x in c))
    hint = suggestion(tenant, known) or (
        f"; the tenants are {', '.join(known)}" if known else "; the trace has no tenants"
    )
    return f"{tenant!r} is not a tenant of the trace (in tenants or created by an event){hint}"


def trace_tenant_exists(
    history: Mapping[str, Sequence[Change]],
    jobs: Iterable[tuple[int, Job]],
    events: Iterable[tuple[int, Event]],
) -> list[FieldError]:
    """Rule trace-tenant-exists: a job's tenant exists when it is submitted (in tenants and
    not deleted yet, or created by an event at or before its second); an update or a
    delete is of a tenant that exists then; a create is of one that does not."""
    errors = []
    for i, event in events:
        source = f"events[{i}]"
        before = _previous(history.get(event.tenant, ()), source)
        exists = before is not None and before.state is not None
        field = f"{source}.vars.{VAR_TENANT}"
        if event.action == "create" and exists and before is not None:
            errors.append(
                _error(
                    field,
                    f"{event.tenant!r} exists already at {_seconds(event.at)} (from {before.source}); a create buys a new tenant: use action update",
                    "trace-tenant-exists",
                )
            )
        elif event.action != "create" and not exists:
            why = _absent(history, event.tenant, event.at, before, source)
            errors.append(_error(field, why, "trace-tenant-exists"))
    for i, job in jobs:
        change = change_at(history.get(job.tenant, ()), job.at)
        if change is None or change.state is None:
            why = _absent(history, job.tenant, job.at, change)
            errors.append(_error(f"jobs[{i}].tenant", why, "trace-tenant-exists"))
    return errors


def _state(history: Mapping[str, Sequence[Change]], job: Job) -> tuple[TenantState, str]:
    change = change_at(history[job.tenant], job.at)
    if change is None or change.state is None:  # trace-tenant-exists left such jobs out
        raise AssertionError(f"no tenant {job.tenant} at {job.at}")
    return change.state, change.source


def trace_job_team(
    history: Mapping[str, Sequence[Change]], jobs: Iterable[tuple[int, Job]]
) -> list[FieldError]:
    """Rule trace-job-team: only a subscription job names a team, one of its tenant's teams
    when it is submitted; a subscription job of a tenant with teams names one (Volcano
    runs jobs only in leaf queues: the subscription queue is the teams' parent)."""
    errors = []
    for i, job in jobs:
        field = f"jobs[{i}].team"
        state, _source = _state(history, job)
        when = f"at {_seconds(job.at)}"
        if job.billing != QUEUE_TYPE_SUBSCRIPTION:
            if job.team is not None:
                errors.append(
                    _error(
                        field,
                        f"{job.team!r}: only a subscription job runs in a team's queue; a {job.billing} job runs in {job.queue}",
                        "trace-job-team",
                    )
                )
            continue
        teams = sorted(state.teams)
        if job.team is None and teams:
            errors.append(
                _error(
                    field,
                    f"is required: tenant {job.tenant!r} has teams ({', '.join(teams)}) {when}, and Volcano runs jobs only in leaf queues",
                    "trace-job-team",
                )
            )
        elif job.team is not None and not teams:
            errors.append(
                _error(
                    field,
                    f"{job.team!r}: tenant {job.tenant!r} has no teams {when}; leave team out to use {queue_name(job.tenant, QUEUE_TYPE_SUBSCRIPTION)}",
                    "trace-job-team",
                )
            )
        elif job.team is not None and job.team not in state.teams:
            hint = suggestion(job.team, teams) or f"; its teams are {', '.join(teams)}"
            errors.append(
                _error(
                    field,
                    f"{job.team!r} is not a team of tenant {job.tenant!r} {when}{hint}",
                    "trace-job-team",
                )
            )
    return errors


def trace_critical_allowed(
    history: Mapping[str, Sequence[Change]], jobs: Iterable[tuple[int, Job]]
) -> list[FieldError]:
    """Rule trace-critical-allowed: a critical job's tenant allows critical jobs when it is
    submitted (the admission policy refuses a critical-job elsewhere: critical-not-allowed).
    An update event sets what tenant_allow_critical says, false when it is left out."""
    errors = []
    for i, job in jobs:
        if job.job_class != "critical":
            continue
        state, source = _state(history, job)
        if not state.allow_critical:
            errors.append(
                _error(
                    f"jobs[{i}].class",
                    f"'critical': tenant {job.tenant!r} does not allow critical jobs at {_seconds(job.at)} (as {source} left it); give the tenant allow_critical: true, or its event {VAR_CRITICAL}: true",
                    "trace-critical-allowed",
                )
            )
    return errors


def class_fits_queue(jobs: Iterable[tuple[int, Job]]) -> list[FieldError]:
    """Rule class-fits-queue (``jobs/classes``): the queue a job's billing type (and team)
    sends it to is one its class runs in: critical and debug subscription only, large
    and normal subscription or payg, spot spot only."""
    errors = []
    for i, job in jobs:
        found = class_queue_errors(
            DEFAULT_CLASSES[job.job_class], job.queue, job.queue_type, f"jobs[{i}].class"
        )
        errors += [_tagged(e, "class-fits-queue") for e in found]
    return errors


def class_size(jobs: Iterable[tuple[int, Job]]) -> list[FieldError]:
    """Rule class-size (``jobs/class_rules``): debug is one pod of at most 8 GPUs, large 32
    GPUs or more; the pods are those the kind makes (a ps_worker job has its ps pods too)."""
    errors = []
    for i, job in jobs:
        request = JobRequest(
            name="trace",
            tenant=job.tenant,
            queue=job.queue,
            kind=job.kind,
            replicas=job.replicas,
            gpus_per_pod=job.gpus_per_pod,
        )
        found = class_size_errors(DEFAULT_CLASSES[job.job_class], roles(request), job.gpus_per_pod)
        errors += [_tagged(e, "class-size", f"jobs[{i}].{e.field}") for e in found]
    return errors


def _team_fields(change: Change, events: Mapping[int, Event]) -> list[str]:
    """Where each team of ``change`` is written: ``tenants[0].teams.algo``, an event's
    ``tenant_teams[1].deserved.nvidia.com/gpu``, or the ``tenant_gpus`` of an update that
    keeps the teams."""
    state = change.state
    teams = list(state.teams) if state is not None else []
    if not change.source.startswith("events["):
        return [f"{change.source}.teams.{name}" for name in teams]
    event = events[int(change.source[len("events[") : -1])]
    if event.vars.get(VAR_TEAMS) is None:
        return [f"{change.source}.vars.{VAR_GPUS}"] * len(teams)
    return [f"{change.source}.vars.{VAR_TEAMS}[{j}].deserved.{GPU}" for j in range(len(teams))]


def trace_teams_within_subscription(
    history: Mapping[str, Sequence[Change]], events: Mapping[int, Event]
) -> list[FieldError]:
    """Rule trace-teams-within-subscription: whenever a tenant exists, its teams' deserved
    GPUs add up to at most its subscription (the queue tree's children-deserved rule, in
    its words), also after an update that shrinks the subscription and keeps the teams."""
    errors = []
    for tenant, changes in history.items():
        for change in changes:
            state = change.state
            if state is None or sum(state.teams.values()) <= state.subscription_gpus:
                continue
            fields = _team_fields(change, events)
            specs = [
                TeamSpec(name=name, deserved={GPU: Decimal(gpus)}, source=str(j))
                for j, (name, gpus) in enumerate(state.teams.items())
            ]
            found = input_tree_errors(tenant, {GPU: Decimal(state.subscription_gpus)}, {}, specs)
            errors += [
                _tagged(e, "trace-teams-within-subscription", fields[int(e.field.split(".")[0])])
                for e in found
            ]
    return errors


def oversell_guard(
    cluster: Cluster,
    tenants: Iterable[tuple[int, Tenant]],
    events: Iterable[tuple[int, Event]],
    history: Mapping[str, Sequence[Change]],
) -> list[FieldError]:
    """Rule oversell-guard (``capacity/oversell``): the subscriptions and pay-as-you-go
    grants sold add up to at most the IDC's GPUs (the pool leaves cloud nodes out), from
    the start and after every create or update that grows a tenant. A purchase refused
    is not counted as sold, so the ones after it are judged as the platform would."""
    pool = {GPU: Decimal(cluster.idc_gpus)}
    sold: dict[str, int] = {}
    errors = []

    def sell(field: str, tenant: str, state: TenantState) -> None:
        others = sum(gpus for name, gpus in sold.items() if name != tenant)
        what = f"tenant {tenant!r}"
        if state.payg_gpus:
            what += f" (subscription {state.subscription_gpus} + pay-as-you-go {state.payg_gpus})"
        found = oversell_errors(
            field,
            pool,
            {GPU: Decimal(others)},
            {GPU: Decimal(state.sold_gpus)},
            what=what,
            parts=[("sold to other tenants", {GPU: Decimal(others)})],
        )
        errors.extend(_tagged(e, "oversell-guard", field) for e in found)
        if not found:
            sold[tenant] = state.sold_gpus

    for i, tenant in tenants:
        if tenant.name not in sold:
            sell(f"tenants[{i}].subscription_gpus", tenant.name, state_of(tenant))
    for i, event in events:
        source = f"events[{i}]"
        change = next(c for c in history[event.tenant] if c.source == source)
        if change.state is None:
            sold.pop(event.tenant, None)
        elif change.state.sold_gpus <= sold.get(event.tenant, 0):
            sold[event.tenant] = change.state.sold_gpus
        else:
            previous = _previous(history[event.tenant], source)
            payg_before = previous.state.payg_gpus if previous and previous.state else 0
            grew = VAR_PAYG if change.state.payg_gpus > payg_before else VAR_GPUS
            sell(f"{source}.vars.{grew}", event.tenant, change.state)
    return errors


def _where(groups: Sequence[str]) -> str:
    return "IDC nodes" if tuple(groups) == (IDC,) else "nodes"


def trace_job_fits(
    cluster: Cluster, history: Mapping[str, Sequence[Change]], jobs: Iterable[tuple[int, Job]]
) -> list[FieldError]:
    """Rule trace-job-fits: a job can run some day. Its pods fit on the nodes it may use
    (IDC nodes; cloud nodes too with placement local-first or cloud-ok): each pod on one
    node, all its pods at once (a gang starts whole). A subscription job also fits its
    queue's capability (rule job-never-runs): its tenant's subscription, the most it has
    from the job's second on (a team queue has no capability of its own and borrows up
    to the subscription). Pay-as-you-go grants grow before use, and spot follows the
    idle GPUs: neither bounds a job here."""
    errors = []
    for i, job in jobs:
        groups = job.node_groups
        largest = cluster.largest_node(groups)
        if largest == 0:
            errors.append(
                _error(
                    f"jobs[{i}].placement",
                    f"{_shown(job.placement)}: the job may run only on {_where(groups)} and the cluster has none; use placement local-first or cloud-ok",
                    "trace-job-fits",
                )
            )
            continue
        if job.gpus_per_pod > largest:
            errors.append(
                _error(
                    f"jobs[{i}].gpus_per_pod",
                    f"{job.gpus_per_pod} GPUs in one pod and the largest of the {_where(groups)} it may use has {largest}: a pod runs on one node",
                    "trace-job-fits",
                )
            )
            continue
        fit = cluster.pods_that_fit(job.gpus_per_pod, groups)
        if job.replicas > fit:
            errors.append(
                _error(
                    f"jobs[{i}].replicas",
                    f"{job.replicas} pods of {job.gpus_per_pod} GPUs and the {_where(groups)} it may use hold at most {fit} such pods at once: it can never run (a gang starts whole)",
                    "trace-job-fits",
                )
            )
            continue
        if job.billing != QUEUE_TYPE_SUBSCRIPTION:
            continue
        ceiling = max(s.subscription_gpus for s in states_from(history[job.tenant], job.at))
        subscription = queue_name(job.tenant, QUEUE_TYPE_SUBSCRIPTION)
        chain = (Limit(subscription, ceiling, 0, ROOT_QUEUE, QUEUE_TYPE_SUBSCRIPTION),)
        if job.team is not None:
            chain = (Limit(job.queue, None, 0, subscription, QUEUE_TYPE_TEAM), *chain)
        why = never_runs(Gang("the job", job.queue, job.gpus), Supply(chain=chain))
        if why is not None:
            errors.append(
                _error(
                    f"jobs[{i}].replicas",
                    f"{why}; {ceiling} is the most tenant {job.tenant!r} subscribes from {_seconds(job.at)} on",
                    "trace-job-fits",
                )
            )
    return errors


# --------------------------------------------------------------------------
# All of them
# --------------------------------------------------------------------------


def _order(error: FieldError) -> tuple[int, int]:
    found = _ENTRY.match(error.field)
    if found is None:
        return (-1, -1)
    index = found.group("index")
    return (_SECTION_ORDER[found.group("section")], int(index) if index is not None else -1)


def _broken(section: str, errors: Iterable[FieldError]) -> set[int]:
    """The indices of ``section``'s entries that an error names."""
    out = set()
    for error in errors:
        found = _ENTRY.match(error.field)
        if found and found.group("section") == section and found.group("index") is not None:
            out.add(int(found.group("index")))
    return out


def _named_tenants(entries: Iterable[Any], key: str) -> set[str]:
    """The tenant names that ``entries`` (raw mappings) name under ``key`` (a dotted path)."""
    out = set()
    for entry in entries:
        value: Any = entry
        for part in key.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if isinstance(value, str):
            out.add(value)
    return out


def trace_errors(data: Any, playbooks: PlaybookVariables) -> list[FieldError]:
    """Every rule over a trace as read from YAML (``data``); ``playbooks`` are the event
    playbooks' variables. The errors come by section, then entry, then rule."""
    errors = trace_keys("", data, SECTIONS["trace"])
    if not isinstance(data, Mapping):
        return errors
    raw: dict[str, list[Any]] = {}
    for key in ("tenants", "jobs", "events"):
        value = data.get(key)
        if key not in data or (value is None and key != "jobs"):
            raw[key] = []  # a missing jobs is trace-keys'
            continue
        found = _entries(key, value, key)
        errors += found
        raw[key] = [] if found else value
    cluster_errors = trace_cluster(data["cluster"]) if "cluster" in data else []
    errors += cluster_errors
    shape = (
        trace_tenant(raw["tenants"])
        + trace_job(raw["jobs"])
        + trace_spot_price(raw["jobs"])
        + trace_event(raw["events"], playbooks)
    )
    errors += shape

    bad = {section: _broken(section, shape) for section in ("tenants", "jobs", "events")}
    unsure = _named_tenants(
        (t for n, t in enumerate(raw["tenants"]) if n in bad["tenants"]), "name"
    )
    # A broken create (or an event whose action is unknown) may be what makes its tenant.
    unsure |= _named_tenants(
        (
            e
            for n, e in enumerate(raw["events"])
            if n in bad["events"]
            and isinstance(e, Mapping)
            and e.get("action") not in ("update", "delete")
        ),
        f"vars.{VAR_TENANT}",
    )
    tenants = [
        (n, Tenant.from_mapping(t)) for n, t in enumerate(raw["tenants"]) if n not in bad["tenants"]
    ]
    events = [
        (n, Event.from_mapping(e)) for n, e in enumerate(raw["events"]) if n not in bad["events"]
    ]
    jobs = [(n, Job.from_mapping(j)) for n, j in enumerate(raw["jobs"]) if n not in bad["jobs"]]
    history = tenant_history(tenants, events)
    by_index = dict(events)
    events = [(n, e) for n, e in events if e.tenant not in unsure]
    jobs_of_known = [(n, j) for n, j in jobs if j.tenant not in unsure]

    errors += trace_events_in_order(events)
    exists = trace_tenant_exists(history, jobs_of_known, events)
    errors += exists
    missing = _broken("jobs", exists)
    present = [(n, j) for n, j in jobs_of_known if n not in missing]
    errors += trace_job_team(history, present)
    errors += trace_critical_allowed(history, present)
    errors += class_fits_queue(jobs)
    errors += class_size(jobs)
    errors += trace_teams_within_subscription(history, by_index)
    if "cluster" in data and not cluster_errors:
        cluster = Cluster.from_mapping(data["cluster"])
        judged = [(n, e) for n, e in events if n not in _broken("events", exists)]
        errors += oversell_guard(cluster, tenants, judged, history)
        errors += trace_job_fits(cluster, history, present)
    return sorted(errors, key=_order)


def check(data: Any, playbooks: PlaybookVariables) -> None:
    """Raise PlatformValidationError with every error of ``trace_errors``, or return."""
    errors = trace_errors(data, playbooks)
    if errors:
        raise PlatformValidationError(errors)
