# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The conformance suite shares the integration suite's cluster fixtures
(kubeconfig, api_client, namespace) from tests/integration/conftest.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_INTEGRATION = Path(__file__).resolve().parents[1] / "integration" / "conftest.py"

if _INTEGRATION.exists():
    _spec = importlib.util.spec_from_file_location("_integration_conftest", _INTEGRATION)
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    globals().update({k: v for k, v in vars(_module).items() if not k.startswith("__")})
else:  # pragma: no cover - only before the integration fixtures exist

    @pytest.fixture(scope="session")
    def api_client():
        pytest.skip("tests/integration/conftest.py (the cluster fixtures) is missing")
