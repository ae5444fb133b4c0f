# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The promise of a read-only module's flow (``kube.flow``): ``parsed`` of what
``gathered`` returned answers as the run on the cluster does."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible_collections.gpucloud.platform.tests.unit.outcomes import outcome


def _keyed(answer: Mapping[str, Any]) -> dict[str, Any]:
    return dict(sorted(answer.items()))


def _parsed(flow: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    answer = flow.offline(params)
    assert answer is not None and answer.pop("state") == "parsed"
    return answer


def assert_parsed_is_the_run(
    flow: Any, run: Callable[[], Mapping[str, Any]], parsed_params: Mapping[str, Any]
) -> None:
    """``run()`` (the normal run on a fake cluster) and ``parsed`` with ``parsed_params``
    give the same result, or the same refusal."""
    expected = outcome(lambda: _keyed(run()))
    assert outcome(lambda: _keyed(_parsed(flow, parsed_params))) == expected


def assert_parsed_is_the_check_run(
    flow: Any, run: Callable[[], Mapping[str, Any]], parsed_params: Mapping[str, Any]
) -> None:
    """For a module that writes: ``run()`` (the check-mode run on a fake cluster) and
    ``parsed`` with ``parsed_params`` give the same result but ``changed`` (``parsed``
    writes nothing, so says false), or the same refusal."""

    def checked() -> dict[str, Any]:
        answer = dict(run())
        answer.pop("changed")
        return _keyed(answer)

    def parsed() -> dict[str, Any]:
        answer = _parsed(flow, parsed_params)
        assert answer.pop("changed") is False
        return _keyed(answer)

    assert outcome(parsed) == outcome(checked)
