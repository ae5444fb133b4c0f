# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checkpoint convention a training pod can rely on (docs/jobs.md). Pure: no I/O.

A job with ``checkpoint: {claim, image}`` gets, in every pod of its GPU tasks:

* the claim mounted at ``/checkpoints``, and ``CHECKPOINT_DIR=/checkpoints/<job>`` (one
  claim may be a team's, holding several jobs' directories);
* ``RESUME_FROM=<CHECKPOINT_DIR>/latest``, which exists only when there is a checkpoint
  to resume from (a symbolic link to the newest);
* ``CHECKPOINT_KEEP`` (default 2) and ``CHECKPOINT_URI``
  (``s3://tenant-<tenant>-checkpoints/<job>/``, the tenant's own bucket: derived, never
  named by the caller).

Each pod of the job's first GPU task also runs two containers of ``image`` (one with
the ``aws`` command), with the tenant's store keys (Secret ``platform-object-store``):

* ``checkpoint-resume``, an init container: when the directory holds no checkpoint (a
  new claim, a cloud node), it fetches the newest one from the bucket; then it points
  ``latest`` at the newest;
* ``checkpoint-upload``, a sidecar (an init container that keeps running, stopped only
  after the training container): every ``interval`` seconds and once more at its
  preStop, it uploads the newest checkpoint not yet uploaded to
  ``<bucket>/<job>/<checkpoint>`` and keeps the newest ``keep`` in the claim.

A checkpoint is an entry of ``CHECKPOINT_DIR`` (a file or a directory; names starting
with a dot and ``latest`` are not checkpoints), newest by modification time: the layout
``objectstore/retention`` keeps the newest ``keep`` of in the bucket. A job restarted
after an eviction (RestartJob, up to maxRetry) starts from ``RESUME_FROM``.

Rules held here:

* Rule checkpoint-options (``checkpoint_errors``): what ``checkpoint`` may say.
* Rule checkpoint-convention (``checkpoint_pod``): the volume, variables and containers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.errors import FieldError
from ..common.names import OBJECT_STORE_NAME, dns_subdomain_errors
from ..objectstore.buckets import bucket_name

CHECKPOINT_KEYS = ("claim", "image", "keep", "interval")
CHECKPOINT_VOLUME = "checkpoints"
CHECKPOINT_MOUNT = "/checkpoints"
LATEST = "latest"
DEFAULT_KEEP = 2
DEFAULT_INTERVAL = 600  # seconds between two uploads while the job runs
RESUME_CONTAINER = "checkpoint-resume"
UPLOAD_CONTAINER = "checkpoint-upload"
CHECKPOINT_ENV_NAMES = ("CHECKPOINT_DIR", "RESUME_FROM", "CHECKPOINT_KEEP", "CHECKPOINT_URI")

# The newest checkpoint in $CHECKPOINT_DIR (dot names and `latest` are not checkpoints).
_NEWEST = 'newest=$(ls -1t "$CHECKPOINT_DIR" | grep -vx latest | head -n 1 || true)'

# Init container: fetch the newest checkpoint of the bucket when the claim has none,
# then point `latest` at the newest. POSIX sh and the aws command.
RESUME_SCRIPT = "\n".join(
    (
        "set -eu",
        'mkdir -p "$CHECKPOINT_DIR"',
        _NEWEST,
        'if [ -z "$newest" ]; then',
        '  key=$(aws s3api list-objects-v2 --bucket "$CHECKPOINT_BUCKET"'
        ' --prefix "$CHECKPOINT_JOB/"'
        " --query 'sort_by(Contents || `[]`, &LastModified)[-1].Key' --output text)",
        '  if [ -n "$key" ] && [ "$key" != None ]; then',
        '    rest=${key#"$CHECKPOINT_JOB/"}',
        "    newest=${rest%%/*}",
        '    tmp="$CHECKPOINT_DIR/.incoming-$newest"',
        '    if [ "$rest" = "$newest" ]; then',
        '      aws s3 cp --no-progress "s3://$CHECKPOINT_BUCKET/$key" "$tmp"',
        "    else",
        '      aws s3 cp --no-progress --recursive "$CHECKPOINT_URI$newest/" "$tmp"',
        "    fi",
        '    mv "$tmp" "$CHECKPOINT_DIR/$newest"',
        '    echo "resumed from $CHECKPOINT_URI$newest"',
        "  fi",
        "fi",
        'if [ -n "$newest" ]; then ln -sfn "$newest" "$RESUME_FROM"; fi',
    )
)

# Sidecar step: upload the newest checkpoint once (a marker file says it is done), keep
# the newest $CHECKPOINT_KEEP in the claim, point `latest` at the newest.
UPLOAD_SCRIPT = "\n".join(
    (
        "set -eu",
        'mkdir -p "$CHECKPOINT_DIR"',
        _NEWEST,
        'if [ -z "$newest" ]; then exit 0; fi',
        'if [ ! -e "$CHECKPOINT_DIR/.uploaded-$newest" ]; then',
        '  if [ -d "$CHECKPOINT_DIR/$newest" ]; then',
        '    aws s3 cp --no-progress --recursive "$CHECKPOINT_DIR/$newest" "$CHECKPOINT_URI$newest/"',
        "  else",
        '    aws s3 cp --no-progress "$CHECKPOINT_DIR/$newest" "$CHECKPOINT_URI$newest"',
        "  fi",
        '  touch "$CHECKPOINT_DIR/.uploaded-$newest"',
        '  echo "uploaded $CHECKPOINT_URI$newest"',
        "fi",
        'ls -1t "$CHECKPOINT_DIR" | grep -vx latest | tail -n "+$((CHECKPOINT_KEEP + 1))"'
        ' | while read -r old; do rm -rf "${CHECKPOINT_DIR:?}/$old"'
        ' "$CHECKPOINT_DIR/.uploaded-$old"; done',
        'ln -sfn "$newest" "$RESUME_FROM"',
    )
)

# The sidecar's own process: the upload every $CHECKPOINT_INTERVAL seconds until stopped.
SIDECAR_SCRIPT = "\n".join(
    (
        "trap 'exit 0' TERM",
        "while :; do",
        '  sleep "$CHECKPOINT_INTERVAL" & wait $!',
        '  sh -c "$CHECKPOINT_UPLOAD" || echo "checkpoint upload failed; next try in'
        ' $CHECKPOINT_INTERVAL s"',
        "done",
    )
)


def checkpoint_errors(checkpoint: Any, field: str = "checkpoint") -> list[FieldError]:
    """Rule checkpoint-options: ``{claim, image}`` and optionally ``keep`` (at least 1)
    and ``interval`` (seconds, at least 60)."""
    if checkpoint is None:
        return []
    if not isinstance(checkpoint, Mapping):
        return [FieldError(field, f"{checkpoint!r} must be a mapping: {{claim, image}}")]
    errors = [
        FieldError(f"{field}.{k}", f"unknown key; a checkpoint has {', '.join(CHECKPOINT_KEYS)}")
        for k in sorted(set(checkpoint) - set(CHECKPOINT_KEYS))
    ]
    errors += dns_subdomain_errors(f"{field}.claim", checkpoint.get("claim"))
    image = checkpoint.get("image")
    if not isinstance(image, str) or not image.strip():
        errors.append(FieldError(f"{field}.image", "is required: an image with the aws command"))
    for key, least in (("keep", 1), ("interval", 60)):
        value = checkpoint.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < least
        ):
            errors.append(
                FieldError(
                    f"{field}.{key}", f"{value!r} must be a whole number of at least {least}"
                )
            )
    return errors


def checkpoint_env(job: str, bucket_uri: str, keep: int) -> list[dict[str, str]]:
    """The variables every GPU container of the job gets (rule checkpoint-convention)."""
    directory = f"{CHECKPOINT_MOUNT}/{job}"
    return [
        {"name": "CHECKPOINT_DIR", "value": directory},
        {"name": "RESUME_FROM", "value": f"{directory}/{LATEST}"},
        {"name": "CHECKPOINT_KEEP", "value": str(keep)},
        {"name": "CHECKPOINT_URI", "value": f"{bucket_uri}{job}/"},
    ]


def checkpoint_pod(
    tenant: str, job: str, checkpoint: Mapping[str, Any], with_containers: bool
) -> dict[str, Any]:
    """Rule checkpoint-convention for one pod: ``env`` and ``mounts`` for its GPU
    container, ``volumes``, and (``with_containers``: the first GPU task) the
    ``init_containers`` that resume and upload."""
    keep = int(checkpoint.get("keep") or DEFAULT_KEEP)
    interval = int(checkpoint.get("interval") or DEFAULT_INTERVAL)
    # The bucket is the tenant's own, derived from the tenant: never the caller's to name.
    bucket = bucket_name(tenant, "checkpoints")
    env = checkpoint_env(job, f"s3://{bucket}/", keep)
    mount = {"name": CHECKPOINT_VOLUME, "mountPath": CHECKPOINT_MOUNT}
    out: dict[str, Any] = {
        "env": env,
        "mounts": [mount],
        "volumes": [
            {
                "name": CHECKPOINT_VOLUME,
                "persistentVolumeClaim": {"claimName": checkpoint["claim"]},
            }
        ],
        "init_containers": [],
    }
    if not with_containers:
        return out
    common = {
        "image": checkpoint["image"],
        "envFrom": [{"secretRef": {"name": OBJECT_STORE_NAME}}],
        "env": [
            {"name": "CHECKPOINT_JOB", "value": job},
            {"name": "CHECKPOINT_BUCKET", "value": bucket},
            *env,
        ],
        "volumeMounts": [dict(mount)],
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
    }
    resume = {"name": RESUME_CONTAINER, "command": ["sh", "-c", RESUME_SCRIPT], **common}
    upload = {
        "name": UPLOAD_CONTAINER,
        "command": ["sh", "-c", SIDECAR_SCRIPT],
        **common,
        "env": [
            *common["env"],
            {"name": "CHECKPOINT_INTERVAL", "value": str(interval)},
            {"name": "CHECKPOINT_UPLOAD", "value": UPLOAD_SCRIPT},
        ],
        # A sidecar: started after the resume, stopped after the training container, so
        # its preStop uploads the checkpoint the training container's own preStop wrote.
        "restartPolicy": "Always",
        "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", UPLOAD_SCRIPT]}}},
    }
    out["init_containers"] = [resume, upload]
    return out
