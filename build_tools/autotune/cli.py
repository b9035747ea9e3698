"""Command line of the tuner: `python -m build_tools tune ...` and `python -m build_tools retune ...`.

`main(argv)` takes the arguments after `python -m build_tools`, starting with the subcommand
(`["tune", "--arch", "sm_90"]`), and returns the exit status. tune: 0 when every planned entry
is finished, 2 when entries remain (budget ran out: run again with --resume) or failed.
retune: see `retune.EXIT_*` (0 unchanged, 3 changed, 1 failed).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
EXIT_INCOMPLETE = 2
DEFAULT_TARGET_TOTAL_S = 1500.0   # the whole library in under 30 minutes of one GPU


def _add_common(parser: argparse.ArgumentParser, arch_default: str | None) -> None:
    parser.add_argument("--arch", default=arch_default, required=arch_default is None,
                        help="table key, e.g. sm_90, or 'auto' to detect the visible GPU")
    parser.add_argument("--ops", action="append", default=[],
                        help="only these ops (comma-separated, repeatable)")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="stop cleanly before this many seconds (state and table are saved)")
    parser.add_argument("--resume", action="store_true", help="skip entries a previous run finished")
    parser.add_argument("--match", action="append", default=[],
                        help="only entries whose label contains this text, e.g. 'matmul bfloat16 [M=64,' (repeatable)")
    parser.add_argument("--missing", action="store_true",
                        help="only suite entries the output table lacks (shapes added to a suite since it was tuned)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--smoke", action="store_true",
                        help="one tiny entry per op, tiny search, CPU timer (integration check)")
    parser.add_argument("--workers", type=int, default=None,
                        help="parallel compile processes (default: cores - 3, at most 16; 0: none)")
    parser.add_argument("--in-process", action="store_true",
                        help="benchmark in this process (no compile pool, no hang protection)")
    parser.add_argument("--out", type=Path, default=None, help="output table (default tuned_configs/<arch>.json, or <arch>-<device>.json "
                             "when <arch>.json belongs to another device)")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="state, log and report folder (default build/autotune/<arch>)")
    parser.add_argument("--strategy", default="de", choices=["de", "random"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--population", type=int, default=None)
    parser.add_argument("--generations", type=int, default=None)
    parser.add_argument("--max-evals", type=int, default=None, help="configs measured per entry at most")
    parser.add_argument("--entry-time-s", type=float, default=None, help="search time per entry at most")
    parser.add_argument("--target-total-s", type=float, default=None,
                        help="spread this much tuning time over all planned entries, across --resume runs "
                             f"(tune default {DEFAULT_TARGET_TOTAL_S:.0f}; retune default: none)")
    parser.add_argument("--compile-timeout-s", type=float, default=None)
    parser.add_argument("--run-timeout-s", type=float, default=None)
    parser.add_argument("--no-baselines", action="store_true", help="skip the eager/torch.compile peers")
    parser.add_argument("--progress", default="auto", choices=["auto", "on", "off"])
    parser.add_argument("--op-source", default="kernels_src:ALL_OPS", help=argparse.SUPPRESS)
    parser.add_argument("--timer", default=None, help=argparse.SUPPRESS)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m build_tools")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_common(commands.add_parser("tune", help="tune configs for one architecture"), None)
    retune = commands.add_parser("retune", help="re-tune, accept real wins, regenerate, report")
    _add_common(retune, "auto")
    retune.add_argument("--min-gain", type=float, default=0.02,
                        help="smallest relative speedup accepted even when noise is lower")
    retune.add_argument("--report", type=Path, default=None, help="markdown report (default <work-dir>/retune-report.md)")
    retune.add_argument("--no-generate", action="store_true", help="do not regenerate helion_kernels/_generated")
    return parser


def default_workers(cores: int | None) -> int:
    """Compile processes: every core but three (main, benchmark and peer processes), at most 16."""
    return min(max((cores or 2) - 3, 1), 16)


def _settings(args, workers: int):
    from build_tools.autotune.search import SearchSettings

    if args.smoke:
        base = SearchSettings(population=4, generations=1, pattern_rounds=1, max_evaluations=6, time_limit_s=120)
    else:  # one generation fills the compile pool
        base = SearchSettings(population=min(max(SearchSettings.population, workers), 16))
    overrides = {
        "strategy": args.strategy, "seed": args.seed, "population": args.population,
        "generations": args.generations, "max_evaluations": args.max_evals, "time_limit_s": args.entry_time_s,
    }
    settings = base.__class__(**{**base.__dict__, **{k: v for k, v in overrides.items() if v is not None}})
    if args.smoke:
        return settings
    if args.max_evals is None:  # a population filling the pool spent the fixed default on the
        # evolution alone, leaving the pattern search's single steps unmeasured
        return replace(settings, max_evaluations=settings.evaluations_for_both_phases())
    # a larger budget than both phases need goes to more pattern-search rounds (the search stops
    # earlier where every neighbour of its best is measured and none is faster)
    return replace(settings, pattern_rounds=max(settings.pattern_rounds, settings.pattern_rounds_within_budget()))


def _limits(args):
    from build_tools.autotune.entry import Limits

    if args.smoke:
        base = Limits(finalists=2, rounds=2, per_round=1, run_timeout_s=300, compile_timeout_s=300)
    elif args.command == "retune":  # the side-by-side comparison decides: measure it longer
        base = Limits(rounds=5, per_round=10)
    else:
        base = Limits()
    overrides = {"compile_timeout_s": args.compile_timeout_s, "run_timeout_s": args.run_timeout_s}
    return base.__class__(**{**base.__dict__, **{k: v for k, v in overrides.items() if v is not None}})


def _target_total(args):
    if args.target_total_s is not None:
        return args.target_total_s
    return DEFAULT_TARGET_TOTAL_S if args.command == "tune" and not args.smoke else None


def _seed_entries() -> list:
    """The default table's entries (what ships for untuned shapes), to seed the searches."""
    from build_tools.autotune.table import load_table

    try:
        return (load_table(REPO_ROOT / "tuned_configs" / "default.json") or {}).get("entries", [])
    except (ValueError, OSError):
        return []


def _entries(args, ops, table_path):
    from build_tools.autotune.plan import plan_entries, smoke_entries
    from build_tools.autotune.table import key_of, load_table

    only = {name.strip() for chunk in args.ops for name in chunk.split(",") if name.strip()} or None
    if args.smoke:
        return smoke_entries(ops, only)
    tabled = set()
    if args.missing:
        table = load_table(table_path) or {}
        tabled = {key_of(e) for e in table.get("entries", [])}
    return plan_entries(ops, only, match=args.match, skip_keys=tabled)


def main(argv=None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else list(argv))
    # A SIGTERM (e.g. from `timeout`) unwinds normally, so the worker processes are stopped.
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        return _run(args)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(args) -> int:
    if args.smoke:
        args.device = "cpu"
    if args.device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton's runtime
    else:  # inherited by every worker: entries of very different sizes fragment the caching allocator less
        os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")

    from build_tools.autotune.arch import detect_arch, device_name
    from build_tools.autotune.backend import InProcessBackend, ProcessBackend
    from build_tools.autotune.run import RunOptions, Tuner
    from build_tools.autotune.table import environment_header, sibling_entries, table_path_for
    from build_tools.autotune.workers import resolve

    arch = detect_arch(args.device) if args.arch == "auto" else args.arch
    work_dir = args.work_dir or REPO_ROOT / "build" / "autotune" / (arch + ("-retune" if args.command == "retune" else ""))
    name = device_name(args.device)
    shipped_path = args.out or table_path_for(REPO_ROOT / "tuned_configs", arch, name)
    if args.command == "tune":
        out_path = shipped_path if not args.smoke or args.out else work_dir / f"{arch}-smoke.json"
    else:
        out_path = work_dir / "candidate.json"
    timer = args.timer or (
        "build_tools.autotune.timing:CudaEventTimer" if args.device == "cuda" else "build_tools.autotune.timing:CpuTimer"
    )
    workers = args.workers if args.workers is not None else default_workers(os.cpu_count())

    incumbents, hidden = {}, []
    if args.command == "retune":  # re-measured against what runs on this device today
        from build_tools.autotune.retune import hidden_entries, shipped_entries

        shipped = shipped_entries(shipped_path, arch, name)
        incumbents = {key: e["config"] for key, e in shipped.items()}
        hidden = hidden_entries(shipped_path, arch, name)
    else:  # what would run on this device without the table being tuned
        shipped = sibling_entries(shipped_path, arch, name)
    options = RunOptions(
        arch=arch, out_path=out_path, work_dir=work_dir, device=args.device, device_name=name,
        budget_s=args.budget_s, resume=args.resume, settings=_settings(args, workers), limits=_limits(args),
        with_baselines=not (args.no_baselines or args.smoke), target_total_s=_target_total(args),
        incumbents=incumbents, arch_entries=list(shipped.values()), seed_entries=_seed_entries(),
        other_device_entries=hidden,
        show_bar=args.progress == "on" or (args.progress == "auto" and sys.stderr.isatty()),
    )
    entries = _entries(args, resolve(args.op_source), shipped_path)
    backend = (
        InProcessBackend(args.op_source, args.device, timer) if args.in_process
        else ProcessBackend(workers, args.op_source, args.device, timer, prefetch_peers=options.with_baselines)
    )
    try:
        summary = Tuner(options, entries, backend).run()
    finally:
        backend.close()

    if args.command == "retune":
        from build_tools.autotune.retune import finish_retune, regenerate

        return finish_retune(
            arch, name, environment_header(arch, name), shipped_path, entries, summary,
            args.report or work_dir / "retune-report.md", args.min_gain,
            regenerate_fn=(lambda: True) if args.no_generate else regenerate,
        )
    remaining = len(entries) - len(summary.records.keys() & {e.key for e in entries})
    return 0 if remaining == 0 else EXIT_INCOMPLETE


if __name__ == "__main__":
    sys.exit(main())
