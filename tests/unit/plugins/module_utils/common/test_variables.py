# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule playbook-variables: misspelt playbook variables are named, others pass."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.filter.unknown_variables import (
    unknown_variables as unknown_filter,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.variables import (
    unknown_variables,
)

KNOWN = ["tenant_catalog", "tenant_catalog_file", "tenant_catalog_prune", "tenant_catalog_force"]


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


def test_the_filter_refuses_arguments_that_are_not_lists():
    with pytest.raises(AnsibleFilterError, match="known must be a list of names"):
        unknown_filter(["a"], "tenant_catalog_file")
    assert unknown_filter(["tenant_catalg_file"], KNOWN, ["tenant_catalog_"], "tc.yml")
