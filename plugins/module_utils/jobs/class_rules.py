# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules on a job's class that a job request (``request_rules``) and a caller's own
manifest (``completion``) must both meet: rule spot-price by class and rule class-size.
Pure: no I/O.

Each rule is one function both callers call; where the two word an error differently
(the request names its options, the manifest its fields), the rule says which bound is
broken and each caller words it.
"""

from __future__ import annotations

from typing import Any

from ..common.errors import FieldError
from .classes import JobClass
from .kinds import Role
from .spot_price import spot_price_errors

# The bounds of a class a job can break (rule class-size), in the order they are reported.
SINGLE_NODE, MAX_GPUS, MIN_GPUS = "single-node", "max-gpus", "min-gpus"


def class_price_errors(job_class: JobClass, price: Any, leave_out: str) -> list[FieldError]:
    """Rule spot-price, by class: a job of a spot class carries a valid price; a job of any
    other class none (``leave_out`` says how to leave it out)."""
    if job_class.billing_type == "spot":
        return spot_price_errors(price, "spot_price")
    if price is not None:
        return [
            FieldError("spot_price", f"class {job_class.name} is not billed as spot; {leave_out}")
        ]
    return []


def class_bounds_broken(job_class: JobClass, pods: int, gpus: int) -> list[str]:
    """Rule class-size: the bounds of ``job_class`` a job of ``pods`` pods and ``gpus`` GPUs
    breaks (SINGLE_NODE, MAX_GPUS, MIN_GPUS, in that order); each caller words them."""
    broken = []
    if not job_class.multi_node and pods > 1:
        broken.append(SINGLE_NODE)
    if job_class.max_gpus is not None and gpus > job_class.max_gpus:
        broken.append(MAX_GPUS)
    if job_class.min_gpus is not None and gpus < job_class.min_gpus:
        broken.append(MIN_GPUS)
    return broken


def class_size_errors(
    job_class: JobClass, job_roles: list[Role], gpus_per_pod: int
) -> list[FieldError]:
    """Rule class-size: the class's GPU bounds and single-node rule (debug: one pod, at most 8 GPUs;
    large: 32 GPUs or more)."""
    pods = sum(r.replicas for r in job_roles)
    gpus = sum(r.replicas for r in job_roles if r.gpus) * gpus_per_pod
    name = job_class.name
    words = {
        SINGLE_NODE: FieldError(
            "replicas",
            f"class {name} runs on a single node but this job has {pods} pods with {gpus} GPUs; "
            "use kind single with replicas: 1, or class normal for a multi-node job",
        ),
        MAX_GPUS: FieldError(
            "gpus_per_pod",
            f"the job asks for {gpus} GPUs and class {name} allows at most {job_class.max_gpus}; "
            "ask for fewer, or use class normal",
        ),
        MIN_GPUS: FieldError(
            "gpus_per_pod",
            f"the job asks for {gpus} GPUs and class {name} is for jobs of {job_class.min_gpus} GPUs "
            "or more; use class normal",
        ),
    }
    return [words[bound] for bound in class_bounds_broken(job_class, pods, gpus)]
