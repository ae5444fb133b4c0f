# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trace rules (benchmarks/traces/validate.py): the example trace passes; each rule
refuses its case, naming the field, the value and the rule; every error comes at once."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from ansible_collections.gpucloud.platform.benchmarks.traces import load as trace_load
from ansible_collections.gpucloud.platform.benchmarks.traces.model import Trace
from ansible_collections.gpucloud.platform.benchmarks.traces.validate import RULES, trace_errors
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "docs" / "examples" / "trace-small.yaml"
VARIABLES = trace_load.playbook_variables()
# The example's tenants: acme (12 GPUs; teams algo 8, vision 4; critical allowed) and beta
# (8 GPUs, 4 pay-as-you-go); 32 IDC GPUs and 8 cloud ones; gamma is created at 1800 s and
# acme resized to 16 GPUs at 5400 s.
JOB = {
    "at": 100,
    "tenant": "beta",
    "billing": "payg",
    "class": "normal",
    "kind": "single",
    "replicas": 1,
    "gpus_per_pod": 1,
    "duration_s": 60,
}


def example() -> dict:
    return copy.deepcopy(BASE)


BASE = trace_load.read(EXAMPLE)


def at(data, path: str):
    """The container of ``path`` ("jobs.3.billing") and its last key."""
    *parents, last = path.split(".")
    node = data
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node, int(last) if isinstance(node, list) else last


def put(path: str, value):
    def change(data):
        node, key = at(data, path)
        node[key] = value

    return change


def drop(path: str):
    def change(data):
        node, key = at(data, path)
        del node[key]

    return change


def both(*changes):
    def change(data):
        for one in changes:
            one(data)

    return change


def job(**fields):
    def change(data):
        data["jobs"].append({**JOB, **fields})

    return change


def event(at_second, action, **variables):
    def change(data):
        data["events"].append({"at": at_second, "action": action, "vars": variables})

    return change


DELETE_BETA = event(7000, "delete", tenant_name="beta", tenant_confirm="beta")

# (id, change, the field named, the rule, words of the message)
CASES = [
    ("unknown-top-key", put("clustr", {}), "clustr", "trace-keys", "did you mean 'cluster'?"),
    (
        "unknown-job-key",
        both(put("jobs.3.biling", "payg"), drop("jobs.3.billing")),
        "jobs[3].biling",
        "trace-keys",
        "did you mean 'billing'?",
    ),
    ("missing-key", drop("jobs.3.duration_s"), "jobs[3].duration_s", "trace-keys", "is required"),
    ("not-a-mapping", put("jobs.3", "a job"), "jobs[3]", "trace-keys", "must be a job"),
    ("negative-at", put("jobs.3.at", -1), "jobs[3].at", "trace-time", "-1 must be 0 or more"),
    (
        "zero-duration",
        put("jobs.3.duration_s", 0),
        "jobs[3].duration_s",
        "trace-time",
        "0 must be more than 0",
    ),
    (
        "event-at-text",
        put("events.0.at", "noon"),
        "events[0].at",
        "trace-time",
        "must be a number of seconds",
    ),
    (
        "no-gpus-node",
        put("cluster.nodes.0.gpus", 0),
        "cluster.nodes[0].gpus",
        "trace-cluster",
        "0 must be at least 1",
    ),
    (
        "node-group",
        put("cluster.nodes.1.group", "cloudy"),
        "cluster.nodes[1].group",
        "trace-cluster",
        "did you mean 'cloud'?",
    ),
    ("tenant-name", put("tenants.1.name", "Beta"), "tenants[1].name", "trace-tenant", "DNS-1123"),
    (
        "tenant-twice",
        put("tenants.1.name", "acme"),
        "tenants[1].name",
        "trace-tenant",
        "already tenants[0]",
    ),
    (
        "payg-negative",
        put("tenants.1.payg_gpus", -1),
        "tenants[1].payg_gpus",
        "trace-tenant",
        "-1 must be at least 0",
    ),
    (
        "team-gpus-text",
        put("tenants.0.teams.algo", "8"),
        "tenants[0].teams.algo",
        "trace-tenant",
        "whole number",
    ),
    (
        "billing",
        put("jobs.3.billing", "suscription"),
        "jobs[3].billing",
        "trace-job",
        "did you mean 'subscription'?",
    ),
    (
        "kind",
        put("jobs.3.kind", "pytorch"),
        "jobs[3].kind",
        "trace-job",
        "'pytorch' is not a kind of job",
    ),
    (
        "single-pods",
        put("jobs.3.replicas", 2),
        "jobs[3].replicas",
        "trace-job",
        "a single job is one pod",
    ),
    (
        "placement",
        put("jobs.3.placement", "cloud"),
        "jobs[3].placement",
        "trace-job",
        "'cloud' is not a placement",
    ),
    (
        "spot-no-price",
        drop("jobs.4.spot_price"),
        "jobs[4].spot_price",
        "trace-spot-price",
        "needs its price",
    ),
    (
        "spot-bad-price",
        put("jobs.4.spot_price", "free"),
        "jobs[4].spot_price",
        "trace-spot-price",
        "'free' is not a number",
    ),
    (
        "price-not-spot",
        put("jobs.3.spot_price", "0.3"),
        "jobs[3].spot_price",
        "trace-spot-price",
        "billed payg",
    ),
    (
        "action",
        put("events.1.action", "updte"),
        "events[1].action",
        "trace-event",
        "did you mean 'update'?",
    ),
    (
        "var-typo",
        both(put("events.0.vars.tenant_gpu", 4), drop("events.0.vars.tenant_gpus")),
        "events[0].vars.tenant_gpu",
        "trace-event",
        "not a variable of tenant_create.yml; did you mean 'tenant_gpus'?",
    ),
    (
        "var-missing",
        drop("events.1.vars.tenant_memory"),
        "events[1].vars.tenant_memory",
        "trace-event",
        "is required by tenant_update.yml",
    ),
    (
        "var-payg-on-create",
        put("events.0.vars.tenant_payg_gpus", 2),
        "events[0].vars.tenant_payg_gpus",
        "trace-event",
        "not a variable of tenant_create.yml; it is a variable of tenant_update.yml",
    ),
    (
        "var-gpus",
        put("events.0.vars.tenant_gpus", 2.5),
        "events[0].vars.tenant_gpus",
        "trace-event",
        "2.5 must be a whole number",
    ),
    (
        "var-memory",
        put("events.0.vars.tenant_memory", "lots"),
        "events[0].vars.tenant_memory",
        "trace-event",
        "'lots'",
    ),
    (
        "var-teams-text",
        put("events.0.vars.tenant_teams", "algo"),
        "events[0].vars.tenant_teams",
        "trace-event",
        "must be a list of teams",
    ),
    (
        "confirm",
        event(7000, "delete", tenant_name="beta", tenant_confirm="betta"),
        "events[2].vars.tenant_confirm",
        "trace-event",
        "must repeat tenant_name ('beta')",
    ),
    (
        "events-order",
        put("events.1.at", 100),
        "events[1].at",
        "trace-events-in-order",
        "100 comes before events[0].at (1800)",
    ),
    (
        "no-such-tenant",
        put("jobs.3.tenant", "bta"),
        "jobs[3].tenant",
        "trace-tenant-exists",
        "did you mean 'beta'?",
    ),
    (
        "not-yet",
        put("jobs.6.at", 1799),
        "jobs[6].tenant",
        "trace-tenant-exists",
        "events[0] creates it at 1800 s",
    ),
    (
        "deleted",
        both(DELETE_BETA, job(at=7001)),
        "jobs[10].tenant",
        "trace-tenant-exists",
        "events[2] deleted it at 7000 s",
    ),
    (
        "create-existing",
        put("events.0.vars.tenant_name", "beta"),
        "events[0].vars.tenant_name",
        "trace-tenant-exists",
        "exists already",
    ),
    (
        "update-missing",
        put("events.1.vars.tenant_name", "zed"),
        "events[1].vars.tenant_name",
        "trace-tenant-exists",
        "'zed' is not a tenant",
    ),
    (
        "team-required",
        drop("jobs.0.team"),
        "jobs[0].team",
        "trace-job-team",
        "has teams (algo, vision)",
    ),
    (
        "team-unknown",
        put("jobs.0.team", "algoo"),
        "jobs[0].team",
        "trace-job-team",
        "did you mean 'algo'?",
    ),
    (
        "team-payg",
        put("jobs.3.team", "algo"),
        "jobs[3].team",
        "trace-job-team",
        "only a subscription job",
    ),
    (
        "team-without-teams",
        put("jobs.2.team", "algo"),
        "jobs[2].team",
        "trace-job-team",
        "tenant 'beta' has no teams",
    ),
    (
        "critical-off",
        put("tenants.0.allow_critical", False),
        "jobs[7].class",
        "trace-critical-allowed",
        "does not allow critical jobs",
    ),
    (
        "critical-reset",
        both(
            drop("events.1.vars.tenant_allow_critical"),
            job(
                at=6000, tenant="acme", billing="subscription", team="algo", **{"class": "critical"}
            ),
        ),
        "jobs[10].class",
        "trace-critical-allowed",
        "as events[1] left it",
    ),
    (
        "class-queue",
        put("jobs.3.class", "debug"),
        "jobs[3].class",
        "class-fits-queue",
        "class debug runs only in subscription or team queues",
    ),
    (
        "spot-class",
        put("jobs.4.class", "normal"),
        "jobs[4].class",
        "class-fits-queue",
        "'tenant-beta-spot' is a spot queue",
    ),
    (
        "class-size-large",
        put("jobs.0.class", "large"),
        "jobs[0].gpus_per_pod",
        "class-size",
        "class large is for jobs of 32 GPUs or more",
    ),
    (
        "class-size-debug",
        put("jobs.1.kind", "ps_worker"),
        "jobs[1].replicas",
        "class-size",
        "class debug runs on a single node",
    ),
    (
        "teams-sum",
        put("tenants.0.teams.vision", 5),
        "tenants[0].teams.vision",
        "trace-teams-within-subscription",
        "5 exceeds what is left",
    ),
    (
        "teams-kept",
        put("events.1.vars.tenant_gpus", 10),
        "events[1].vars.tenant_gpus",
        "trace-teams-within-subscription",
        "tenant-acme-subscription",
    ),
    (
        "teams-given",
        put("events.0.vars.tenant_teams", [{"name": "a", "deserved": {"nvidia.com/gpu": 5}}]),
        "events[0].vars.tenant_teams[0].deserved.nvidia.com/gpu",
        "trace-teams-within-subscription",
        "5 exceeds",
    ),
    (
        "oversold-start",
        put("tenants.1.subscription_gpus", 24),
        "tenants[1].subscription_gpus",
        "oversell-guard",
        "(32 in the pool - 12 sold to other tenants = 20)",
    ),
    (
        "oversold-update",
        put("events.1.vars.tenant_gpus", 24),
        "events[1].vars.tenant_gpus",
        "oversell-guard",
        "at most 16 can be granted",
    ),
    (
        "pod-too-big",
        put("jobs.3.gpus_per_pod", 16),
        "jobs[3].gpus_per_pod",
        "trace-job-fits",
        "a pod runs on one node",
    ),
    (
        "gang-too-big",
        put("jobs.8.replicas", 6),
        "jobs[8].replicas",
        "trace-job-fits",
        "hold at most 5 such pods",
    ),
    (
        "idc-only",
        both(drop("jobs.8.placement"), put("jobs.8.replicas", 5)),
        "jobs[8].replicas",
        "trace-job-fits",
        "the IDC nodes it may use hold at most 4",
    ),
    (
        "over-subscription",
        put("jobs.2.replicas", 3),
        "jobs[2].replicas",
        "trace-job-fits",
        "queue tenant-beta-subscription has a capability of 8: it can never run there",
    ),
]


def test_the_example_trace_passes():
    assert trace_errors(example(), VARIABLES) == []
    trace = trace_load.load(EXAMPLE)
    assert (len(trace.tenants), len(trace.jobs), len(trace.events)) == (2, 10, 2)


@pytest.mark.parametrize(
    ("change", "field", "rule", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_rule_refuses_its_case_naming_the_field(change, field, rule, words):
    data = example()
    change(data)
    errors = trace_errors(data, VARIABLES)
    named = [e for e in errors if e.field == field]
    assert named, [str(e) for e in errors]
    assert any(e.message.endswith(f"(rule {rule})") and words in e.message for e in named), [
        str(e) for e in errors
    ]


def test_every_rule_has_a_case():
    assert {c[3] for c in CASES} | {"trace-yaml"} == set(RULES)


def test_the_error_reads_as_the_convention_says():
    data = example()
    data["jobs"][3]["gpus_per_pod"] = 0
    assert [str(e) for e in trace_errors(data, VARIABLES)] == [
        "jobs[3].gpus_per_pod: 0 must be at least 1 (rule trace-job)"
    ]


def test_one_typo_is_one_error():
    data = example()
    both(put("jobs.3.biling", "payg"), drop("jobs.3.billing"))(data)
    assert [e.field for e in trace_errors(data, VARIABLES)] == ["jobs[3].biling"]


def test_a_broken_create_is_reported_once_not_at_every_job_of_its_tenant():
    data = example()
    drop("events.0.vars.tenant_cpu")(data)
    assert [e.field for e in trace_errors(data, VARIABLES)] == ["events[0].vars.tenant_cpu"]


def test_every_error_at_once_in_file_order():
    data = example()
    for change in (
        put("events.1.at", 100),
        put("jobs.4.spot_price", "free"),
        put("clustr", {}),
        put("tenants.1.payg_gpus", -1),
        put("jobs.0.team", "algoo"),
    ):
        change(data)
    assert [e.field for e in trace_errors(data, VARIABLES)] == [
        "clustr",
        "tenants[1].payg_gpus",
        "jobs[0].team",
        "jobs[4].spot_price",
        "events[1].at",
    ]


def test_a_subscription_job_fits_the_most_its_tenant_ever_subscribes():
    # 16 GPUs at 0 s: acme subscribes 12 then, 16 from the resize at 5400 s on.
    data = example()
    put("jobs.0.replicas", 2)(data)
    assert trace_errors(data, VARIABLES) == []
    put("events.1.vars.tenant_gpus", 14)(data)
    assert [e.field for e in trace_errors(data, VARIABLES)] == ["jobs[0].replicas"]


def test_a_job_at_the_second_of_its_tenants_creation_runs_after_it():
    data = example()
    assert data["jobs"][6]["at"] == data["events"][0]["at"] == 1800
    assert trace_errors(data, VARIABLES) == []


def test_tenants_over_time_as_the_playbooks_change_them():
    data = example()
    DELETE_BETA(data)
    event(
        7100, "update", tenant_name="acme", tenant_gpus=20, tenant_cpu="80", tenant_memory="320Gi"
    )(data)
    history = Trace.from_mapping(data).history()
    acme = [
        (c.source, c.state.subscription_gpus, dict(c.state.teams), c.state.allow_critical)
        for c in history["acme"]
    ]
    # teams kept when tenant_teams is not given; allow_critical as the update says (default false)
    assert acme == [
        ("tenants[0]", 12, {"algo": 8, "vision": 4}, True),
        ("events[1]", 16, {"algo": 8, "vision": 4}, True),
        ("events[3]", 20, {"algo": 8, "vision": 4}, False),
    ]
    beta = history["beta"]
    assert [c.source for c in beta] == ["tenants[1]", "events[2]"]
    assert beta[0].state is not None and beta[0].state.payg_gpus == 4
    assert beta[1].state is None


def test_the_trace_written_reads_back_the_same(tmp_path):
    trace = Trace.from_mapping(example())
    path = tmp_path / "t.yaml"
    path.write_text(trace_load.dump(trace, "a comment"), encoding="utf-8")
    assert path.read_text(encoding="utf-8").startswith("---\n# a comment\n")
    assert trace_load.load(path) == trace


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "cluster: {nodes: [{count: 1, gpus: 8}]}\njobs: []\njobs: []\n",
            "key 'jobs' appears twice in one mapping (first on line 2)",
        ),
        ("cluster: [\n", "not YAML (line 2, column 1)"),
    ],
    ids=["key-twice", "not-yaml"],
)
def test_a_file_that_is_not_a_trace_is_refused_with_its_line(tmp_path, text, words):
    path = tmp_path / "t.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PlatformValidationError) as caught:
        trace_load.load(path)
    assert words in str(caught.value) and str(caught.value).endswith("(rule trace-yaml)")


def test_the_page_shows_the_example_file_as_it_is():
    page = (ROOT / "docs" / "trace-replay.md").read_text(encoding="utf-8")
    assert f"```yaml\n{EXAMPLE.read_text(encoding='utf-8')}```\n" in page
