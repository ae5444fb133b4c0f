# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every module's DOCUMENTATION, with the collection's doc fragments merged in as
ansible-doc merges them, against its argument spec (``OPTIONS``), and the shared
fragments against what they stand for."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.gpucloud.platform.plugins.module_utils.spot.reclaim import (
    RECLAIM_OPTIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.topology.discovery import (
    TREE_OPTIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import POOL_OPTIONS
from ansible_collections.gpucloud.platform.plugins.modules import spot_reclaim

ROOT = Path(__file__).resolve().parents[4]
COLLECTION = "ansible_collections.gpucloud.platform.plugins"
MODULES = sorted(p.stem for p in Path(spot_reclaim.__file__).parent.glob("[a-z]*.py"))
# Modules that run on a managed host, not against the cluster: no kubernetes.core
# connection options, no Kubernetes requirements, not in the action group.
HOST_MODULES = ["gpu_node_probe"]
CLUSTER_MODULES = [m for m in MODULES if m not in HOST_MODULES]


def fragment(slug: str) -> dict[str, Any]:
    """One of the collection's doc fragments, ``gpucloud.platform.<name>[.<var>]``."""
    name, _dot, var = slug.removeprefix("gpucloud.platform.").partition(".")
    doc_class = importlib.import_module(f"{COLLECTION}.doc_fragments.{name}").ModuleDocFragment
    return yaml.safe_load(getattr(doc_class, var.upper() or "DOCUMENTATION"))


def documented(module_name: str) -> dict[str, Any]:
    """The module's DOCUMENTATION with the collection's fragments merged in (the
    module's own keys win, as in ansible-doc); kubernetes.core's are left out, as
    its connection options are not in ``OPTIONS``."""
    module = importlib.import_module(f"{COLLECTION}.modules.{module_name}")
    doc = yaml.safe_load(module.DOCUMENTATION)
    for slug in doc.get("extends_documentation_fragment", []):
        if not slug.startswith("gpucloud.platform."):
            continue
        for key, value in fragment(slug).items():
            if key in ("options", "attributes"):
                own = doc.get(key) or {}
                doc[key] = {**value, **{k: {**value.get(k, {}), **v} for k, v in own.items()}}
            else:
                doc.setdefault(key, value)
    return doc


def spec_mismatches(options: dict[str, Any], spec: dict[str, Any], path: str = "") -> list[str]:
    """Where the documented options and the argument spec differ."""
    if set(options) != set(spec):
        return [f"{path or 'options'}: documented {sorted(options)}, spec {sorted(spec)}"]
    out = []
    for name, doc in options.items():
        arg = spec[name]
        for key, fallback in (
            ("type", "str"),
            ("default", None),
            ("required", False),
            ("elements", None),
            ("choices", None),
            ("aliases", None),
        ):
            if doc.get(key, fallback) != arg.get(key, fallback):
                out.append(f"{path}{name}.{key}: {doc.get(key)!r} != {arg.get(key)!r}")
        if "suboptions" in doc or "options" in arg:
            sub = spec_mismatches(doc.get("suboptions", {}), arg.get("options", {}), f"{name}.")
            out.extend(sub)
    return out


@pytest.mark.parametrize("name", MODULES)
def test_documented_options_are_the_argument_spec(name):
    module = importlib.import_module(f"{COLLECTION}.modules.{name}")
    assert spec_mismatches(documented(name)["options"], module.OPTIONS) == []


@pytest.mark.parametrize("name", CLUSTER_MODULES)
def test_every_module_shares_authors_requirements_and_attributes(name):
    doc = documented(name)
    assert "gpucloud.platform.module" in doc["extends_documentation_fragment"]
    assert doc["requirements"] == fragment("gpucloud.platform.module")["requirements"]
    attributes = doc["attributes"]
    assert set(attributes) == {"check_mode", "diff_mode"}
    assert all(a["description"] and a["support"] for a in attributes.values())
    if attributes["diff_mode"]["support"] != "full":
        assert attributes["diff_mode"].get("details"), "a diff that is not full says why"


def test_module_requirements_are_requirements_txt():
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    wanted = [re.sub(r"\s*>=\s*", " >= ", s) for s in lines if s and not s.startswith("#")]
    assert fragment("gpucloud.platform.module")["requirements"] == wanted


@pytest.mark.parametrize(
    ("slugs", "spec"),
    [
        (["gpucloud.platform.pool"], POOL_OPTIONS),
        (["gpucloud.platform.pool", "gpucloud.platform.reclaim"], RECLAIM_OPTIONS),
        (["gpucloud.platform.topology_tree"], TREE_OPTIONS),
    ],
)
def test_option_fragments_document_their_spec(slugs, spec):
    options = {name: doc for slug in slugs for name, doc in fragment(slug)["options"].items()}
    assert spec_mismatches(options, spec) == []


def test_the_platform_action_group_names_every_module():
    """``module_defaults: {group/gpucloud.platform.platform: ...}`` (docs/development.md)
    reaches every module of the collection."""
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())
    assert sorted(runtime["action_groups"]["platform"]) == CLUSTER_MODULES


@pytest.mark.parametrize("name", HOST_MODULES)
def test_a_host_module_needs_nothing_of_kubernetes(name):
    doc = documented(name)
    assert doc["author"] == fragment("gpucloud.platform.module")["author"]
    assert not doc.get("requirements")
    assert not any("kubernetes" in s for s in doc.get("extends_documentation_fragment", []))
    assert set(doc["attributes"]) == {"check_mode", "diff_mode"}
