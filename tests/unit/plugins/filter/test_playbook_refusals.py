# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule playbook-words in every playbook: a module task given a caller's variable under an
option of another name runs in a block whose rescue says a refusal in the playbook's
variables (``playbooks/tasks/refusal.yml``); the mapping names only variables the playbook
takes (rule playbook-variables) and only options its block's modules are given. The
mappings built from the refusal (inference_canary.yml, inference_canary_step.yml) are
rendered by Ansible's own templating and applied to the inference module's real refusals."""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpucloud.platform.plugins.filter.playbook_words import playbook_words
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference import service
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.inputs import (
    validate_service,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.inference.inference_objects import (
    canary,
    params,
    tenant_cluster,
)

PLAYBOOKS = Path(__file__).resolve().parents[4] / "playbooks"
MODULE = "gpucloud.platform."
REFUSAL = "tasks/refusal.yml"
# Shared task files that are not a module's run.
NOT_RUNS = {"tasks/check_variables.yml", REFUSAL}

# (playbook, task): module tasks given a caller's variable under another name that no
# rescue says in the playbook's words yet. Each entry must still be one (see below).
UNGUARDED = {
    # after vcjob took the same tenant and job; a held Lease is not a failure here
    ("job_submit.yml", "Make room for the job inside its subscription"),
}
# playbook -> the fields its modules are given a caller's variable in that its rescue does
# not map yet (a refusal naming one says the module's option). Each must still be one.
UNMAPPED: dict[str, set[str]] = {}


@functools.cache
def load(name: str) -> Any:
    """A playbook or task file, read once: its tasks are the same objects wherever met."""
    return yaml.safe_load((PLAYBOOKS / name).read_text())


def play_of(name: str) -> dict[str, Any]:
    (play,) = load(name)
    return play


def spec_of(play: dict[str, Any]) -> dict[str, Any]:
    """The variables the playbook takes (rule playbook-variables)."""
    return play["tasks"][0]["vars"]["check_variables_spec"]


def module_of(task: dict[str, Any]) -> str | None:
    return next((k for k in task if k.startswith(MODULE)), None)


def flat(tasks: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every task, into blocks and the shared task files it imports, rescues left out."""
    for task in tasks:
        imported = task.get("ansible.builtin.import_tasks")
        if "block" in task:
            yield from flat(task["block"])
        elif imported and imported not in NOT_RUNS:
            yield from flat(load(imported))
        else:
            yield task


def options_of(module: str) -> set[str]:
    """The options a module of the collection documents (``gpucloud.platform.<name>``)."""
    name = module.removeprefix(MODULE)
    plugin = importlib.import_module(
        f"ansible_collections.gpucloud.platform.plugins.modules.{name}"
    )
    return set(yaml.safe_load(plugin.DOCUMENTATION)["options"])


def arg_paths(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(field path, template) for every string a module is given: ``model.gpus``,
    ``canaries[0].version``; a whole option given by one template is the option."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from arg_paths(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from arg_paths(item, f"{path}[{i}]")
    elif isinstance(value, str):
        yield path, value


def callers(task: dict[str, Any], spec: dict[str, Any]) -> list[tuple[str, str]]:
    """(field path, variable): the caller's variables the module task is given under a
    field of another name."""
    return [
        (path, var)
        for path, text in arg_paths(task[module_of(task)])
        for var in spec
        if var != path and re.search(rf"\b{re.escape(var)}\b", text)
    ]


def guarded(play: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(block, the rescue's refusal.yml vars) for every block whose rescue says a refusal."""
    for task in play["tasks"]:
        for said in task.get("rescue") or []:
            if said.get("ansible.builtin.import_tasks") == REFUSAL:
                yield task, said["vars"]


def trusted(value: Any) -> Any:
    """A playbook's value as Ansible reads it: its strings are templates."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {k: trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [trusted(v) for v in value]
    return value


def render(value: Any, play: dict[str, Any], **variables: Any) -> Any:
    """``value`` templated as in the play: its defaults, then ``variables`` (-e)."""
    env = {**trusted(play.get("vars") or {}), **variables}
    return Templar(loader=DataLoader(), variables=env).template(trusted(value))


def mapping(
    play: dict[str, Any], refusal: dict[str, Any], msg: str, **variables: Any
) -> dict[str, str]:
    """refusal_variables as the rescue sees it after a refusal saying ``msg``."""
    local = {k: trusted(v) for k, v in refusal.items() if k != "refusal_variables"}
    return render(
        refusal["refusal_variables"],
        play,
        ansible_failed_result={"msg": msg},
        **local,
        **variables,
    )


def covers(key: str, path: str) -> bool:
    """A mapping key says the field path, or a field inside it (``canaries[]``: any canary)."""
    key, path = (re.sub(r"\[\d+\]", "[]", p) for p in (key, path))
    return any(a == b or a.startswith((b + ".", b + "[")) for a, b in ((key, path), (path, key)))


NAMES = sorted(p.name for p in PLAYBOOKS.glob("*.yml") if p.name != "site.yml")


@pytest.mark.parametrize("name", NAMES)
def test_a_module_given_the_callers_variables_under_other_names_runs_in_a_refusal_block(name):
    play = play_of(name)
    spec = spec_of(play)
    inside = {
        id(task)
        for block, _unused in guarded(play)
        for task in flat(block["block"])
        if module_of(task)
    }
    bare = [
        (task["name"], callers(task, spec))
        for task in flat(play["tasks"])
        if module_of(task) and id(task) not in inside and callers(task, spec)
    ]
    assert {(name, task) for task, _unused in bare} == {u for u in UNGUARDED if u[0] == name}, bare


@pytest.mark.parametrize("name", NAMES)
def test_each_refusal_mapping_says_the_playbooks_variables_for_its_modules_options(name):
    play = play_of(name)
    spec = spec_of(play)
    for block, refusal in guarded(play):
        assert refusal["refusal_playbook"] == name
        runs = [t for t in flat(block["block"]) if module_of(t)]
        given = [(path, var) for t in runs for path, var in callers(t, spec)]
        paths = [path for t in runs for path, _unused in arg_paths(t[module_of(t)])]
        # a refusal naming every field the modules are given, as the module says it
        msg = "; ".join(f"{path}: refused" for path in paths)
        said = mapping(play, refusal, msg)
        assert set(said.values()) <= set(spec), (block["name"], said)
        # a field the modules are given, or a field of a module's option that the module
        # derives from them (a step's traffic is checked as canaries[].traffic_percent)
        documented = {o for t in runs for o in options_of(module_of(t))}
        stale = [
            k
            for k in said
            if not any(covers(k, path) for path in paths)
            and re.split(r"[.\[]", k)[0] not in documented
        ]
        assert stale == [], (block["name"], "options no module of the block takes", stale)
        unsaid = [(p, v) for p, v in given if not any(covers(k, p) for k in said)]
        assert {p for p, _unused in unsaid} == UNMAPPED.get(name, set()), (block["name"], unsaid)


def refusal_of(name: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The play, its inference_service task and its rescue's refusal vars."""
    play = play_of(name)
    ((block, refusal),) = guarded(play)
    (task,) = [t for t in flat(block["block"]) if module_of(t)]
    return play, task, refusal


def module_params(play: dict[str, Any], task: dict[str, Any], **variables: Any) -> dict[str, Any]:
    """The inference_service parameters the playbook gives for ``variables``."""
    args = render(task["gpucloud.platform.inference_service"], play, **variables)
    return params(**{"model": None, "queue": None, **args})


def refused(run, *args: Any) -> str:
    with pytest.raises(PlatformValidationError) as excinfo:
        run(*args)
    return str(excinfo.value)


def test_a_canary_after_the_live_ones_is_said_as_the_playbooks_variables():
    """The service has canary v2: the one inference_canary.yml adds is canaries[1] of it."""
    play, task, refusal = refusal_of("inference_canary.yml")
    cluster = tenant_cluster()
    service.run_service(params(canaries=[canary("v2", 20)]), cluster, False)
    given = {
        "tenant": "alpha",
        "inference_name": "llm",
        "inference_version": "v1",
        "inference_storage_uri": "s3://models/llama/v1",
        "inference_traffic_percent": 30,
    }
    msg = refused(service.run_service, module_params(play, task, **given), cluster, False)
    assert msg.startswith("canaries[1].version: 'v1' is already model.version"), msg
    words = playbook_words(msg, mapping(play, refusal, msg, **given), "inference_canary.yml")
    assert words == (
        "inference_version: 'v1' is already model.version; name each version once "
        "(inference_version is a variable of inference_canary.yml)"
    )
    # 20 + 90: the shares of the live canary and this one
    given.update(inference_version="v3", inference_storage_uri="s3://models/llama/v3")
    given["inference_traffic_percent"] = 90
    msg = refused(service.run_service, module_params(play, task, **given), cluster, False)
    words = playbook_words(msg, mapping(play, refusal, msg, **given), "inference_canary.yml")
    assert words.startswith("inference_traffic_percent: 20 + 90 = 110 is over 100"), words
    assert words.endswith("(inference_traffic_percent is a variable of inference_canary.yml)")


@pytest.mark.parametrize(
    ("share", "version", "said"),
    [
        (150, "v2", "inference_traffic_percent: 150 must be a whole percent, 0 to 100"),
        (50, "v9", "inference_version: v9 is not a canary of llm; its canaries: v2, v3"),
        (90, "v2", "inference_traffic_percent: 90 + 30 = 120 is over 100"),
    ],
)
def test_a_step_is_said_as_the_share_or_the_version_the_caller_gave(share, version, said):
    play, task, refusal = refusal_of("inference_canary_step.yml")
    cluster = tenant_cluster()
    service.run_service(params(canaries=[canary("v2", 20), canary("v3", 30)]), cluster, False)
    given = {
        "tenant": "alpha",
        "inference_name": "llm",
        "inference_version": version,
        "inference_traffic_percent": share,
    }
    args = module_params(play, task, **given)

    def step(args):
        validate_service(args)
        service.run_service(args, cluster, False)

    msg = refused(step, args)
    words = playbook_words(msg, mapping(play, refusal, msg, **given), "inference_canary_step.yml")
    variable = said.split(":")[0]
    assert words.startswith(said), words
    assert words.endswith(f"({variable} is a variable of inference_canary_step.yml)"), words
