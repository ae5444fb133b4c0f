#!/usr/bin/env python3
# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Replays a trace on the local cluster under the platform and its baselines, and says how busy and how fair the day was.

Each configuration replays the same trace, one after the other, on the same cluster:
``platform`` (the platform's scheduler configuration, its submission path and its four
reconcilers on their schedules), ``static`` (each tenant exactly its subscription: no
spot, no borrowing) and ``volcano`` (the same queues under Volcano's chart default
configuration, no reconciler); on request, ``platform-events`` (the platform with its
reconcilers started by the cluster's events, the rulebook's way, the schedules kept as
the safety net). Time runs ``--factor`` times faster than the trace. It
prints progress as it goes, then a table of figures per configuration and whether the
targets hold (docs/trace-replay.md). ``--validate-only`` checks the file and exits, with
no cluster.

    .venv/bin/python benchmarks/trace_replay.py --trace /tmp/day.yaml --factor 96 --picture docs/trace-day.png
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".venv" / "collections"))

from ansible_collections.gpucloud.platform.benchmarks.replay import metrics
from ansible_collections.gpucloud.platform.benchmarks.replay.records import (
    CONFIGURATIONS,
    DEFAULT_CONFIGURATIONS,
    PLATFORMS,
    STATIC,
)
from ansible_collections.gpucloud.platform.benchmarks.traces.load import load
from ansible_collections.gpucloud.platform.benchmarks.traces.summary import line
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.lending import APPORTIONS
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.offer import OFFERS

DAY = 86400


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", required=True, metavar="FILE", help="the trace (YAML)")
    parser.add_argument("--validate-only", action="store_true", help="check the file, no cluster")
    parser.add_argument(
        "--configurations",
        default=",".join(DEFAULT_CONFIGURATIONS),
        help=f"which to replay, in order, of {', '.join(CONFIGURATIONS)} (default: %(default)s)",
    )
    parser.add_argument(
        "--factor", type=float, default=96, help="traced seconds per second (default: %(default)s)"
    )
    parser.add_argument(
        "--day-seconds",
        type=float,
        default=DAY,
        help="the traced length to replay, as the trace was generated (default: %(default)s)",
    )
    parser.add_argument(
        "--sample-seconds", type=float, default=1.0, help="wall-clock seconds between looks"
    )
    parser.add_argument("--seed", type=int, help="the generator's seed, printed with the results")
    parser.add_argument("--json", metavar="FILE", help="write every run's records and figures here")
    parser.add_argument("--picture", metavar="PNG", help="draw allocation over time here")
    parser.add_argument(
        "--idle-picture",
        metavar="PNG",
        help="draw the first platform configuration's idle GPUs by cause here",
    )
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown too")
    parser.add_argument(
        "--kubeconfig", default=os.environ.get("KUBECONFIG"), help="default: $KUBECONFIG"
    )
    parser.add_argument(
        "--reconcilers",
        choices=("in-process", "playbooks"),
        default="in-process",
        help="run the platform's reconcilers as their playbooks' module tasks in this process "
        "(default: no Ansible start-up per run) or as the playbooks themselves",
    )
    parser.add_argument(
        "--spot-offer",
        choices=OFFERS,
        default="unsold",
        help="what spot may hold under the platform, the site's spot_offer: the GPUs nobody "
        "bought (default, the design's) or those no paying queue holds or waits for",
    )
    parser.add_argument(
        "--spot-apportion",
        choices=APPORTIONS,
        default="share",
        help="how the spot offer is shared under the platform, the site's spot_apportion: by "
        "subscription share (default, the design's) or by share and then lent to waiting "
        "spot gangs larger than their tenant's share",
    )
    parser.add_argument(
        "--prometheus-url",
        help="where usage_report reads the day (default: the local cluster's prometheus-url "
        "beside the kubeconfig, else the local inventory's)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    try:
        trace = load(args.trace)
    except PlatformValidationError as exc:
        print(f"{args.trace}: invalid, {len(exc.errors)} error(s):")
        for error in exc.errors:
            print(f"  {error}")
        return 1
    print(line(args.trace, trace))
    if args.validate_only:
        return 0
    configurations = [c.strip() for c in args.configurations.split(",") if c.strip()]
    unknown = sorted(set(configurations) - set(CONFIGURATIONS))
    if unknown:
        print(
            f"--configurations: {', '.join(unknown)} unknown; choose from {', '.join(CONFIGURATIONS)}"
        )
        return 2
    if not args.kubeconfig:
        print("--kubeconfig: not given and KUBECONFIG is not set")
        return 2
    from ansible_collections.gpucloud.platform.benchmarks.replay.replayer import (
        Settings,
        prometheus_beside,
        replay,
    )

    prometheus = args.prometheus_url or prometheus_beside(args.kubeconfig)

    runs, figures, failed = [], {}, {}
    busy = metrics.busy_windows(trace, args.day_seconds / 24)
    for configuration in configurations:
        settings = Settings(
            trace_path=args.trace,
            configuration=configuration,
            factor=args.factor,
            kubeconfig=args.kubeconfig,
            day_s=args.day_seconds,
            sample_s=args.sample_seconds,
            seed=args.seed,
            prometheus_url=prometheus,
            reconcilers=args.reconcilers,
            spot_offer=args.spot_offer,
            spot_apportion=args.spot_apportion,
        )
        try:
            run, failures = replay(trace, settings)
        except RuntimeError as exc:
            # A cluster that is not the trace's or not the platform's is refused before
            # anything is bought; a replay that broke down has put the cluster back.
            print(f"{configuration}: {exc}")
            return 1
        runs.append(run)
        figures[configuration] = metrics.measure(run, busy)
        failed[configuration] = failures
    report(args, trace, runs, figures, failed, busy)
    return 0


def report(args, trace, runs, figures, failed, busy) -> None:
    seed = f", seed {args.seed}" if args.seed is not None else ""
    print(
        f"\n{args.trace}: {len(trace.jobs)} jobs, {trace.cluster.gpus()} GPUs, {args.factor:g}x{seed}, "
        f"reconcilers {args.reconcilers}, spot offer {args.spot_offer}, "
        f"spot apportion {args.spot_apportion}"
    )
    windows = ", ".join(f"{a / 3600:g}-{b / 3600:g} h" for a, b in busy)
    print(f"busy window: {windows}")
    print(metrics.table(figures))
    if args.markdown:
        print()
        print(metrics.markdown_table(figures))
    for run in runs:
        if run.refusals:
            print(f"\n{run.configuration}: {run.refused} jobs refused at submission; the first 5:")
            for refusal in run.refusals[:5]:
                print(f"  {refusal}")
    for configuration, failures in failed.items():
        if failures:
            print(f"\n{configuration}: {len(failures)} playbook runs failed; the first 5:")
            for failure in failures[:5]:
                print(f"  {failure}")
    for platform in PLATFORMS:
        if platform in figures:
            print(f"\n{platform}:")
            for text in metrics.verdict(figures[platform], figures.get(STATIC)):
                print(text)
    if args.picture:
        from ansible_collections.gpucloud.platform.benchmarks.replay.picture import draw

        print(f"\npicture: {draw(runs, busy, args.picture)}")
    platform_runs = [run for run in runs if run.configuration in PLATFORMS]
    if args.idle_picture and not platform_runs:
        print("idle picture: not drawn, no platform configuration was replayed")
    elif args.idle_picture:
        from ansible_collections.gpucloud.platform.benchmarks.replay.idle_picture import draw_idle

        print(f"idle picture: {draw_idle(platform_runs[0], busy, args.idle_picture)}")
    if args.json:
        out = {
            "factor": args.factor,
            "seed": args.seed,
            "reconcilers": args.reconcilers,
            "spot_offer": args.spot_offer,
            "spot_apportion": args.spot_apportion,
            "runs": [asdict(run) for run in runs],
            "figures": {c: metrics.as_dict(f) for c, f in figures.items()},
            "refused": {run.configuration: list(run.refusals) for run in runs},
            "failed": failed,
        }
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
        print(f"records: {args.json}")


if __name__ == "__main__":
    sys.exit(main())
