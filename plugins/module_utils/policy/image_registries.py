# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule images-from-allowed-registries: a pod in a tenant namespace runs only images
from the site's registries.

A site lists the registry prefixes its tenants may pull from (its mirror, its own
registry): ``scheduling_policy_image_registries``. With the list empty there is no
such policy. The prefixes are matched against each image's full name, as the
container runtime reads it: ``busybox`` is ``docker.io/library/busybox`` and
``team/app`` is ``docker.io/team/app``, so a short name cannot slip past a prefix.

Every container of a tenant's pods is judged (init and ephemeral containers too),
whoever creates the pod: Volcano's controller, a ReplicaSet of KServe, a tenant. A
Volcano Job is judged at submission as well, so that its author reads the refusal
on the spot rather than in the Job's events. Pods are judged when they are made:
a tenant cannot update a pod (its Role reads pods only), and the ephemeral
containers of a debugging session are judged through their own subresource.

Rule registry-prefix-shape (``registry_prefix_errors``): each prefix is a registry
host, optionally with a path, ending in ``/``. Without the slash,
``registry.example.com`` would also allow ``registry.example.com.attacker.net/x``.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..common.errors import FieldError
from .vap import POLICY_PREFIX, cel_list, policy, tenant_match

POLICY_IMAGE_REGISTRIES = POLICY_PREFIX + "image-registries"
# The registry a name without one is pulled from, and the path of its official images.
DEFAULT_REGISTRY = "docker.io"
OFFICIAL_PATH = "library"
# A host (name with a dot, or localhost, optionally with a port), then path parts, then "/".
_PREFIX = re.compile(
    r"^(localhost|[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+)(:[0-9]{1,5})?"
    r"(/[a-z0-9]+([._-][a-z0-9]+)*)*/$"
)


def registry_prefix_errors(prefixes: object, field: str = "image_registries") -> list[FieldError]:
    """Rule registry-prefix-shape: a list of registry prefixes, each ending in ``/``."""
    if isinstance(prefixes, (str, bytes)) or not isinstance(prefixes, Sequence):
        return [FieldError(field, f"{prefixes!r} must be a list of registry prefixes")]
    errors: list[FieldError] = []
    for i, prefix in enumerate(prefixes):
        path = f"{field}[{i}]"
        if not isinstance(prefix, str) or not _PREFIX.match(prefix):
            hint = (
                f"; write {prefix}/"
                if isinstance(prefix, str) and _PREFIX.match(prefix + "/")
                else ""
            )
            errors.append(
                FieldError(
                    path,
                    f"{prefix!r} must be a registry host with an optional path, ending in / "
                    f"(such as registry.example.com/ or {DEFAULT_REGISTRY}/{OFFICIAL_PATH}/){hint}",
                )
            )
    return errors


def _qualified(image: str) -> str:
    """CEL: the image's full name; a first part with no dot or port (and not localhost)
    is a path on the default registry, as the container runtime reads it."""
    first = f"{image}.split('/')[0]"
    has_registry = (
        f"({image}.contains('/') && ({first}.contains('.') || {first}.contains(':') || "
        f"{first} == 'localhost'))"
    )
    return (
        f"({has_registry} ? {image} : ({image}.contains('/') ? '{DEFAULT_REGISTRY}/' + {image} : "
        f"'{DEFAULT_REGISTRY}/{OFFICIAL_PATH}/' + {image}))"
    )


def _containers(spec: str, where: str) -> str:
    """CEL: [field, image, full image name] for every container of a pod spec, ``where`` being
    a CEL string expression that says where that spec sits in the object."""
    parts = []
    for kind in ("containers", "initContainers", "ephemeralContainers"):
        pairs = (
            f"{spec}.{kind}.map(c, [{where} + '.{kind}[' + string(c.name) + '].image', "
            f"string(c.image), {_qualified('string(c.image)')}])"
        )
        parts.append(pairs if kind == "containers" else f"(has({spec}.{kind}) ? {pairs} : [])")
    return "(" + " + ".join(parts) + ")"


def _outside(pairs: str, allowed: str) -> str:
    """CEL: the pairs whose image starts with none of the allowed prefixes."""
    return f"{pairs}.filter(p, !{allowed}.exists(r, p[2].startsWith(r)))"


def image_registries_policy(prefixes: Sequence[str]) -> dict[str, Any]:
    """Rule images-from-allowed-registries, over pods and Volcano Jobs in tenant namespaces."""
    allowed = cel_list(tuple(prefixes))
    in_pod = _outside(_containers("object.spec", "'spec'"), allowed)
    in_task = _outside(
        _containers(
            "t.template.spec", "'spec.tasks[' + (has(t.name) ? t.name : '') + '].template.spec'"
        ),
        allowed,
    )
    return policy(
        POLICY_IMAGE_REGISTRIES,
        {
            "matchConstraints": tenant_match(
                [("", "pods"), ("", "pods/ephemeralcontainers"), ("batch.volcano.sh", "jobs")],
                ["CREATE", "UPDATE"],
            ),
            "matchConditions": [
                {
                    # a pod is judged when made, and when a debugging container joins it
                    "name": "new-containers",
                    "expression": (
                        "request.kind.kind != 'Pod' || request.operation == 'CREATE' || "
                        "(has(request.subResource) && request.subResource == 'ephemeralcontainers')"
                    ),
                },
                {
                    "name": "not-being-deleted",
                    "expression": "!has(object.metadata.deletionTimestamp)",
                },
            ],
            "variables": [
                {
                    # [field, image, full name] of one refused container per pod spec
                    "name": "refused",
                    "expression": (
                        f"request.kind.kind == 'Pod' ? {in_pod} : "
                        f"object.spec.tasks.filter(t, size({in_task}) > 0).map(t, {in_task}[0])"
                    ),
                }
            ],
            "validations": [
                {
                    "expression": "size(variables.refused) == 0",
                    "messageExpression": (
                        "variables.refused[0][0] + ': ' + variables.refused[0][1] + (variables.refused[0][1] "
                        "== variables.refused[0][2] ? '' : ' (' + variables.refused[0][2] + ')') + ' is not from a "
                        f"registry this platform allows ({', '.join(prefixes)}); use an image from one "
                        "of them'"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    )
