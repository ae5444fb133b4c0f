# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_objects says an unreachable API server as every module of the collection does."""

from __future__ import annotations

import urllib3.exceptions

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.writes_io import unreachable


def test_a_connection_error_anywhere_in_the_chain_is_unreachable():
    refused = ConnectionRefusedError(111, "Connection refused")
    try:
        try:
            raise refused
        except ConnectionRefusedError as inner:
            raise RuntimeError("Failed to get client due to discovery") from inner
    except RuntimeError as outer:
        assert unreachable(outer)
    retries = urllib3.exceptions.MaxRetryError(None, "/api", reason=refused)
    assert unreachable(retries)


def test_an_api_refusal_is_not_unreachable():
    assert not unreachable(ValueError("ConfigMap is invalid"))
