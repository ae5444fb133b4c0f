# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The awx_objects filter: bad input names the field, the value and the rule."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.filter.awx_objects import awx_objects
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.awx.test_awx_objects import (
    settings,
)


def test_the_shape_of_each_argument_is_checked():
    with pytest.raises(AnsibleFilterError, match="settings: 'x' must be a mapping"):
        awx_objects("x", {}, [])
    with pytest.raises(AnsibleFilterError, match="surveys: \\[\\] must be a mapping"):
        awx_objects(settings(), [], [])
    with pytest.raises(AnsibleFilterError, match="playbooks: 'spot_recompute' must be a list"):
        awx_objects(settings(), {}, "spot_recompute")


def test_every_broken_setting_is_named_before_anything_is_built():
    with pytest.raises(AnsibleFilterError) as caught:
        awx_objects(settings(ee_image="", job_timeout="1h"), {}, ["spot_recompute"])
    assert str(caught.value) == (
        "awx_objects: awx_ee_image: '' must be a non-empty string (rule awx-settings); "
        "awx_job_timeout: '1h' must be a whole number of seconds, 0 or more (rule awx-settings)"
    )


def test_masked_output():
    shown = awx_objects(settings(), {}, ["spot_recompute"], masked=True)
    assert next(o for o in shown if o["kind"] == "credential")["params"]["inputs"] == {
        "kubeconfig": "<secret: 28 characters>"
    }
