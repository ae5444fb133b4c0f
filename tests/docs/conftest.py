# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The docs test shares the integration suite's cluster fixtures."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.tests.integration.conftest import (
    kubeconfig,
    localcluster,
)

# pytest finds fixtures by name in this module; exporting them says they are meant to be here.
__all__ = ["kubeconfig", "localcluster"]
