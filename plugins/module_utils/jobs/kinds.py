# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kinds of job (design section 9) and the tasks and Volcano job plugins each makes of
a request (rules job-kinds and job-plugins). Pure: no I/O.

Kinds: ``pytorch_ddp``, ``ps_worker``, ``mpi``, ``spark``, ``ray``, ``single``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .request import JobRequest

KINDS = ("pytorch_ddp", "ps_worker", "mpi", "spark", "ray", "single")
# Volcano's svc plugin writes one "<task>.host" file per task here.
HOSTFILE_DIR = "/etc/volcano"
PYTORCH_PORT = 23456
TF_PORT = 2222
SSH_PORT = 22
RAY_PORTS = {"port": 6379, "dashboardPort": 8265, "clientPort": 10001}


@dataclass(frozen=True)
class Role:
    """One task of a kind: its name, pod count, container name, whether it gets GPUs."""

    task: str
    replicas: int
    container: str
    gpus: bool
    command: list[str] | None
    restart_policy: str = "Never"
    policies: tuple[dict[str, str], ...] = ()


def roles(req: JobRequest) -> list[Role]:
    """Rule job-kinds: the tasks of each kind (design section 9), coordinator first."""
    gpus = max(req.gpus_per_pod, 1)
    cmd = list(req.command) if req.command else None
    wcmd = list(req.worker_command) if req.worker_command else None
    if req.kind == "pytorch_ddp":
        torchrun = [
            "torchrun",
            "--nnodes=$(WORLD_SIZE)",
            "--node_rank=$(RANK)",
            f"--nproc_per_node={gpus}",
            "--master_addr=$(MASTER_ADDR)",
            "--master_port=$(MASTER_PORT)",
            *(cmd or []),
        ]
        return [
            Role("master", 1, "trainer", True, torchrun),
            Role("worker", req.replicas - 1, "trainer", True, torchrun),
        ]
    if req.kind == "ps_worker":
        return [
            Role("ps", req.ps_replicas, "ps", False, cmd),
            Role("worker", req.replicas, "worker", True, wcmd or cmd),
        ]
    if req.kind == "mpi":
        mpirun = [
            "mpirun",
            "--allow-run-as-root",
            "--hostfile",
            f"{HOSTFILE_DIR}/worker.host",
            "-np",
            str(req.replicas * gpus),
            "-npernode",
            str(gpus),
            *(cmd or []),
        ]
        return [
            Role(
                "master",
                1,
                "mpi",
                False,
                mpirun,
                "OnFailure",
                ({"event": "TaskCompleted", "action": "CompleteJob"},),
            ),
            Role("worker", req.replicas, "mpi", True, wcmd or ["/usr/sbin/sshd", "-D"]),
        ]
    if req.kind == "spark":
        return [
            Role(
                "driver",
                1,
                "spark-driver",
                False,
                cmd,
                "Never",
                ({"event": "TaskCompleted", "action": "CompleteJob"},),
            ),
            Role("executor", req.replicas, "spark-executor", True, wcmd),
        ]
    if req.kind == "ray":
        # Volcano's ray plugin writes both commands (ray start --head / --address).
        return [
            Role("head", 1, "head", False, None),
            Role("worker", req.replicas, "worker", True, None),
        ]
    return [Role("task", 1, "trainer", True, cmd, "OnFailure")]


def plugins(kind: str) -> dict[str, list[str]]:
    """Rule job-plugins: Volcano job plugins per kind, with their arguments written out."""
    if kind == "pytorch_ddp":
        return {
            "pytorch": ["--master=master", "--worker=worker", f"--port={PYTORCH_PORT}"],
            "svc": [],
            "env": [],
        }
    if kind == "ps_worker":
        return {
            "tensorflow": ["--ps=ps", "--worker=worker", f"--port={TF_PORT}"],
            "svc": [],
            "env": [],
        }
    if kind == "mpi":
        return {
            "mpi": ["--master=master", "--worker=worker", f"--port={SSH_PORT}"],
            "ssh": [],
            "svc": [],
            "env": [],
        }
    if kind == "spark":
        return {"svc": [], "env": []}
    if kind == "ray":
        args = [
            "--head=head",
            "--headContainer=head",
            "--worker=worker",
            "--workerContainer=worker",
        ]
        args += [f"--{k}={v}" for k, v in RAY_PORTS.items()]
        return {"ray": args, "svc": []}
    return {}


def gpu_pods(req: JobRequest) -> int:
    return sum(r.replicas for r in roles(req) if r.gpus)


def pod_name_room(req: JobRequest) -> int:
    """Pods are named <job>-<task>-<index> and that name is also the pod's host name (63 characters)."""
    longest = max((len(f"-{r.task}-{max(r.replicas - 1, 0)}") for r in roles(req)), default=0)
    return 63 - longest
