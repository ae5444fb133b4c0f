# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule playbook-variables: misspelt playbook variables are named, others pass."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.filter.unknown_variables import (
    unknown_variables as unknown_filter,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.variables import (
    unknown_variables,
)

KNOWN = ["tenant_catalog", "tenant_catalog_file", "tenant_catalog_prune", "tenant_catalog_force"]
PLAYBOOKS = Path(__file__).resolve().parents[5] / "playbooks"


def test_a_letter_dropped_from_a_known_name_is_named_with_the_name_it_meant():
    (message,) = unknown_variables(
        ["tenant_catalg_file", "tenant_catalog_prune"], KNOWN, ["tenant_catalog_"], "tc.yml"
    )
    assert message == (
        "tenant_catalg_file: not a variable of tc.yml; did you mean tenant_catalog_file? "
        "(rule playbook-variables)"
    )


def test_an_unknown_name_with_the_playbooks_prefix_is_refused_whatever_it_looks_like():
    (message,) = unknown_variables(["tenant_catalog_xyz_abc"], KNOWN, ["tenant_catalog_"], "tc.yml")
    assert message.startswith("tenant_catalog_xyz_abc: not a variable of tc.yml; it knows ")


def test_the_inventorys_own_variables_pass():
    present = [*KNOWN, "platform_kubeconfig", "tenants", "metering_prices", "ansible_host"]
    assert unknown_variables(present, KNOWN, ["tenant_catalog_"], "tc.yml") == []


def test_ansibles_own_variables_pass_even_where_they_look_like_a_known_name():
    """An inventory sets inventory_file, which looks like awx_configure.yml's awx_inventory_file."""
    known = ["awx_inventory_file", "awx_inventory", "playbook_dirs"]
    present = ["inventory_file", "playbook_dir", "ansible_awx_inventory", "awx_inventory_fle"]
    (message,) = unknown_variables(present, known, ["awx_"], "awx.yml")
    assert message.startswith(
        "awx_inventory_fle: not a variable of awx.yml; did you mean awx_inventory_file?"
    )


def test_names_set_around_the_playbook_pass_with_its_own_prefix_or_looking_like_its_names():
    """tenant_create.yml's prefix is tenant_, and an inventory that holds the tenant
    catalog (tenant_catalog.yml's) or site.yml's tenants list runs it too."""
    known = ["tenant", "tenant_name", "tenant_gpus"]
    present = ["tenant_catalog", "tenant_catalog_file", "tenants", "tenant_nmae", "tenant_xyz"]
    messages = unknown_variables(
        present, known, ["tenant_"], "tc.yml", ["tenant_catalog", "tenants"]
    )
    assert [m.split(":")[0] for m in messages] == ["tenant_nmae", "tenant_xyz"]
    # without them, both would be refused: the prefix, and one letter away from tenant
    refused = unknown_variables(present, known, ["tenant_"], "tc.yml")
    assert {"tenant_catalog", "tenants"} <= {m.split(":")[0] for m in refused}


def test_the_filter_refuses_arguments_that_are_not_lists():
    with pytest.raises(AnsibleFilterError, match="known must be a list of names"):
        unknown_filter(["a"], "tenant_catalog_file")
    with pytest.raises(AnsibleFilterError, match="others must be a list of names"):
        unknown_filter(["a"], KNOWN, others="tenant_catalog")
    assert unknown_filter(["tenant_catalg_file"], KNOWN, ["tenant_catalog_"], "tc.yml")
    assert not unknown_filter(["tenant_catalg_file"], KNOWN, ["tenant_"], "tc.yml", ["tenant_cat"])


# site.yml is left out: its variables are the defaults of every role it runs.
@pytest.mark.parametrize(
    "name", sorted(p.name for p in PLAYBOOKS.glob("*.yml") if p.name != "site.yml")
)
def test_every_playbook_refuses_misspelt_variables_before_anything_else(name):
    (play,) = yaml.safe_load((PLAYBOOKS / name).read_text())
    first, *rest = play["tasks"]
    assert first["ansible.builtin.import_tasks"] == "tasks/check_variables.yml"
    check = first["vars"]
    assert check["check_variables_playbook"] == name and check["check_variables_prefixes"]
    known = {*check["check_variables_known"], *check["check_variables_spec"]}
    # every default is checked, and what the playbook registers or sets is known
    assert set(play.get("vars") or {}) <= known
    tasks = list(every_task(rest))
    made = {t["register"] for t in tasks if "register" in t}
    made |= {k for t in tasks for k in t.get("ansible.builtin.set_fact") or {}}
    assert made <= known


def every_task(tasks):
    """The tasks, and those of their blocks (a module run in a block whose rescue says a
    refusal in the playbook's words registers its result there)."""
    for task in tasks:
        yield task
        for part in ("block", "rescue", "always"):
            yield from every_task(task.get(part) or [])
