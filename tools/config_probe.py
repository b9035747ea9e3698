"""Config probe: tuned-table entries under their config and under variants, timed in one process.

    python3 tools/config_probe.py time JOBS.json --out DIR            (on a CUDA GPU)
    python3 tools/config_probe.py time --other-dtype OP[,OP] --out DIR
    python3 tools/config_probe.py time --other-device OP[,OP] --out DIR
    python3 tools/config_probe.py time --flag-steps OP[,OP] --out DIR
    python3 tools/config_probe.py time --knob-steps OP[,OP] [--knobs K[,K]] [--match TEXT] --out DIR
    python3 tools/config_probe.py time --foreign-shapes OP[,OP] --out DIR
    python3 tools/config_probe.py jobs --flag-steps OP[,OP] --out JOBS.json   (no GPU needed)
    python3 tools/config_probe.py jobs [JOBS.json] ... --no-more-spills --out JOBS.json
    python3 tools/config_probe.py apply DIR/config_probe.json [--min-gain 0.03]

`time` takes jobs `[{"op", "dtype", "shape", "variants": {label: config overrides}}]` naming entries
of --table or, where it lacks them, of the other tables of its architecture beside it, as the
runtime on this GPU takes them. Or it makes the jobs: with --other-dtype, one job per entry of those
ops whose other dtype, bf16 <-> fp16, has a different config at the same shape; with --other-device,
whose shape another table of the architecture, another GPU's, holds with a different config; with
--flag-steps, each entry of those ops under each of its per-loop and whole-kernel flags flipped
alone (one loop's `range_peel_tails` was worth 10% at six entries the tuner had left); with
--knob-steps, under each of its integer knobs (warps, stages, an element of the block sizes, tiles a
piece) one notch up or down alone (both options together: one job per entry with both sets of
variants; --knobs names which knobs and flags); with --foreign-shapes, each entry the runtime here
takes from another GPU's table, at a shape --table lacks, under the config of --table's entry
nearest that shape (the H200 ran the H100's 256x262144 softmax entry, which its own nearest config
beat by 4%; `apply` makes a winning nearest config --table's entry there). A job for a shape no
table holds yet (one just added to a suite) names the entry it starts from as "from_shape": that
entry's config is the job's "tuned" config, run at the new shape, and `apply` writes a winner as a
new entry. Each variant is the entry's config with the overrides, normalized by the kernel's
ConfigSpec (a variant that normalizes to a config already in the job is left out, with a note); its
outputs must match the tuned config's within the op's tolerance. --match keeps the jobs of entries
whose label contains its text. With --dtypes KEY the --flag-steps and --knob-steps jobs are of the
entries' variants for those argument dtypes (OpSpec.dtype_variants: `weight=float32`), run on such
inputs from the variant's config, and `apply` records a winner as the entry's `dtype_configs` for
KEY (tools/fit_dtype_variants.py keeps it where it fits). `jobs` writes the jobs those options make
to a file, less the variants left out so (normalized against shape-only inputs on the meta device,
so it takes seconds on any machine): a file whose variants can be compiled in parallel processes
before `time` runs it (scratch/gpu_run_probe_parallel_warm.sh). `jobs` also takes a jobs file to
filter, and --no-more-spills leaves out each variant under which ptxas spills more bytes in some
kernel than under the entry's config (cross-compiled for sm_90 by tools/register_snapshot.py, about
1 s a config, no GPU): the GPU's minutes are the scarce ones, and of the 152 variants the fiftieth
session wrote for the next sessions (RMSNorm backward steps and its `constexpr_conditions` flag), 16
spilled more, up to 10 KB a thread where a doubled row tile broke the allocation. All variants of an
entry are timed in alternating rounds by the report's timer (benchmarks.timing.Timer.device_rounds:
CUDA events, L2 flushed, the host's enqueue kept outside the timed region); a variant's time is the
median of its runs. (triton.testing.do_bench, used before 2026-11-26's fourteenth session, read the
persistent matmuls 5-14% slower than the report's timer and ranked their variants differently:
scratch/persistent_matmul_dsl_probe.py.) DIR/config_probe.json keeps every time, normalized config
and the device measured on. `apply` (no GPU needed) writes each entry's fastest matching variant
when it beat the tuned config by more than --min-gain (variant id recomputed, the probe's time) into
the table of the device the probe ran on: --table itself when it belongs to that device, else that
device's own table beside it (`<arch>-<device>.json`, made if absent), which the runtime prefers on
that device entry by entry; a winner that compiles reduction sizes in also records the fastest
probed config that does not as the entry's `dynamic_config`. `python -m build_tools generate` then
regenerates the modules. The searches of the tuner miss single steps at times (32 warps, split_k =
2: docs/STATUS.md, 2026-11-24); this measures such steps directly.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # register_snapshot, beside this file

import torch  # noqa: E402

from build_tools.autotune.table import (environment_header, key_of, load_table, merged_table, overrides_of,  # noqa: E402
                                        sibling_entries, table_path_for, with_config, write_table)
from build_tools.opspec import dtypes_from_key  # noqa: E402
from helion_kernels._variant import to_plain, twin_config  # noqa: E402

OTHER_DTYPE = {"bfloat16": "float16", "float16": "bfloat16"}
RESULT = "config_probe.json"


def _spec(op: str):
    import kernels_src
    return next(spec for spec in kernels_src.ALL_OPS if spec.name == op)


def _entry(table: dict, op: str, dtype: str, shape: dict) -> dict | None:
    return next((e for e in table["entries"] if (e["op"], e["dtype"], e["shape"]) == (op, dtype, shape)), None)


def tuned_config(entry: dict, dtypes: str) -> dict:
    """The config an entry's variant for the dtypes key `dtypes` runs: its config with its
    `dtype_configs` for that key (docs/CONTRACTS.md); its config for "" (the entry's own dtypes)."""
    return {**entry["config"], **entry.get("dtype_configs", {}).get(dtypes, {})} if dtypes else entry["config"]


def job_inputs(spec, job: dict, device: str) -> tuple:
    """The job's inputs on `device` (seed 0), in its "dtypes" where it names some."""
    args = tuple(spec.make_inputs(job["shape"], getattr(torch, job["dtype"]), device, 0))
    return spec.with_dtypes(args, dtypes_from_key(job.get("dtypes", "")))


def with_siblings(table_path: Path, table: dict, device: dict) -> dict:
    """`table` plus the entries it lacks from the other tables of its architecture beside it, as
    the runtime on `device` takes them (a device table refines its architecture's table)."""
    entries = {key_of(e): e for e in table["entries"]}
    for key, entry in sibling_entries(table_path, device["arch"], device["device_name"]).items():
        entries.setdefault(key, entry)
    return {**table, "entries": list(entries.values())}


def other_dtype_jobs(table: dict, ops: list[str]) -> list[dict]:
    """One job per entry of `ops` whose other dtype has a different config at the same shape."""
    jobs = []
    for entry in table["entries"]:
        if entry["op"] not in ops or entry["dtype"] not in OTHER_DTYPE:
            continue
        other = _entry(table, entry["op"], OTHER_DTYPE[entry["dtype"]], entry["shape"])
        if other is not None and other["config"] != entry["config"]:
            jobs.append({"op": entry["op"], "dtype": entry["dtype"], "shape": entry["shape"],
                         "variants": {f"{other['dtype']} config": other["config"]}})
    return jobs


def other_device_jobs(table_path: Path, table: dict, device: dict, ops: list[str]) -> list[dict]:
    """One job per entry of `ops` in the table the runtime takes on this device whose shape another
    table of the architecture holds with a different config (the other GPU's tuning)."""
    from build_tools.autotune.retune import hidden_entries

    others = {key_of(e): e for e in hidden_entries(table_path, device["arch"], device["device_name"])}
    jobs = []
    for entry in table["entries"]:
        other = others.get(key_of(entry))
        if entry["op"] in ops and other is not None and other["config"] != entry["config"]:
            jobs.append({"op": entry["op"], "dtype": entry["dtype"], "shape": entry["shape"],
                         "variants": {"other device's config": other["config"]}})
    return jobs


def foreign_shape_jobs(own: dict, table: dict, ops: list[str]) -> list[dict]:
    """One job per entry of `ops` that the runtime on this device takes from another GPU's table
    (`table`, with siblings, holds its shape and `own`, the device's table, does not), with a
    variant for the config of `own`'s entry the dispatcher would pick there without the other
    table (the nearest tuned shape of the same dtype and exact keys)."""
    from helion_kernels._dispatch import log_distance

    held = {key_of(e) for e in own["entries"]}
    jobs = []
    for entry in table["entries"]:
        if entry["op"] not in ops or key_of(entry) in held:
            continue
        spec = _spec(entry["op"])
        candidates = [e for e in own["entries"] if (e["op"], e["dtype"]) == (entry["op"], entry["dtype"])
                      and all(e["shape"].get(k) == entry["shape"].get(k) for k in spec.exact_keys)]
        if candidates:
            nearest = min(candidates, key=lambda e: log_distance(e["shape"], entry["shape"], spec.exact_keys,
                                                                 spec.key_weights))
            label = f"this device's nearest entry's config ({json.dumps(nearest['shape'])})"
            jobs.append({"op": entry["op"], "dtype": entry["dtype"], "shape": entry["shape"],
                         "variants": {label: nearest["config"]}})
    return jobs


def per_entry_jobs(table: dict, ops: list[str], variants_of, dtypes: str = "") -> list[dict]:
    """One job per entry of `ops` for which `variants_of(config)` gives variants; with `dtypes` (a
    dtypes key), of the entries whose op generates that dtype variant for their dtype, on the
    variant's config (`tuned_config`)."""
    from helion_kernels._variant import dtypes_key

    jobs = []
    for entry in table["entries"]:
        if entry["op"] not in ops:
            continue
        if dtypes and dtypes not in {dtypes_key(d) for d in _spec(entry["op"]).dtype_variants.get(
                getattr(torch, entry["dtype"]), ())}:
            continue
        variants = variants_of(tuned_config(entry, dtypes))
        if variants:
            jobs.append({"op": entry["op"], "dtype": entry["dtype"], "shape": entry["shape"], "variants": variants,
                         **({"dtypes": dtypes} if dtypes else {})})
    return jobs


def flag_step_jobs(table: dict, ops: list[str], dtypes: str = "", knobs: list[str] | None = None) -> list[dict]:
    """One job per entry of `ops`: a variant per per-loop flag of its config (lists of booleans:
    peeled tails, flattened or reversed loops, a Gluon kernel's flags) flipped alone, one per
    whole-kernel flag (a boolean: the kernel's own tunables such as the RMSNorm backward's
    `reload_rows`, `static_reduction_sizes`) flipped, and one per whole-kernel flag that normalized
    configs leave out where false (ConfigSpec.OPTIONAL_FLAGS: `constexpr_conditions`) flipped; a
    kernel that does not offer one normalizes its variant away (`distinct_jobs`, or a note at
    `time`); only the flags in `knobs` when given. The H100's RMSNorm backward of bf16 rows with a
    float32 weight ran 1.22-1.25x faster with `reload_rows` flipped (fifty-fifth session), a step
    these jobs left out before."""
    from build_tools.dsl.config_spec import ConfigSpec

    def flag_steps(config: dict) -> dict:
        steps = {f"{name}[{i}] {not flag}": {name: [not f if j == i else f for j, f in enumerate(flags)]}
                 for name, flags in sorted(config.items())
                 if isinstance(flags, list) and flags and all(isinstance(f, bool) for f in flags)
                 for i, flag in enumerate(flags)}
        steps.update({f"{name} {not flag}": {name: not flag}
                      for name, flag in sorted(config.items()) if isinstance(flag, bool)})
        for name in ConfigSpec.OPTIONAL_FLAGS:
            flipped = not config.get(name, False)
            steps[f"{name} {flipped}"] = {name: flipped}
        return {label: step for label, step in steps.items() if knobs is None or next(iter(step)) in knobs}

    return per_entry_jobs(table, ops, flag_steps, dtypes)


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _steps(value: int) -> list[int]:
    """One notch either way: a power of two halved and doubled (block sizes, warps, tiles a
    piece), any other count one down and one up (stages, unroll factors; 0 is the compiler's
    default where a knob has one)."""
    if value >= 1 and value & (value - 1) == 0:
        return [value // 2, value * 2] if value > 1 else [2]
    return [v for v in (value - 1, value + 1) if v >= 0]


def knob_step_jobs(table: dict, ops: list[str], knobs: list[str] | None = None, dtypes: str = "") -> list[dict]:
    """One job per entry of `ops`: a variant per integer knob (`num_warps`, an element of
    `block_sizes`, ...; only those in `knobs` when given) stepped one notch alone (`_steps`). What
    the kernel's ConfigSpec refuses or normalizes away is left out later (`distinct_jobs`). The
    H200's fp32 long-row softmax backward, run from the H100's table, was 1.10-1.13x faster one
    step away (two tiles a piece)."""
    def knob_steps(config: dict) -> dict:
        variants = {}
        for name, value in sorted(config.items()):
            if knobs is not None and name not in knobs:
                continue
            if _is_count(value):
                variants.update({f"{name} {v}": {name: v} for v in _steps(value)})
            elif isinstance(value, list) and value and all(_is_count(v) for v in value):
                variants.update({f"{name}[{i}] {v}": {name: [v if j == i else w for j, w in enumerate(value)]}
                                 for i, current in enumerate(value) for v in _steps(current)})
        return variants

    return per_entry_jobs(table, ops, knob_steps, dtypes)


def normalized_variants(bound, job: dict, config: dict, notes: dict) -> dict:
    """{label: normalized config} of `config` ("tuned") and of each of `job`'s variants on it, less
    the variants the kernel's ConfigSpec refuses or that normalize to a config before them (each
    gets a note in `notes`)."""
    from build_tools.dsl.config import Config

    configs = {"tuned": bound.config_spec.normalize(Config(config))}
    for label, overrides in job["variants"].items():
        try:
            configs[label] = bound.config_spec.normalize(Config({**config, **overrides}))
        except Exception as error:  # the spec refuses the combination
            notes[label] = f"rejected: {type(error).__name__}: {error}"
    return distinct_configs(configs, notes)


def distinct_jobs(table: dict, jobs: list[dict]) -> tuple[list[dict], dict]:
    """`jobs` without the variants `time` would leave out, bound to shape-only inputs on the meta
    device; ({job index: notes} of those left out). A job left with no variant is dropped."""
    kept, left_out = [], {}
    for index, job in enumerate(jobs):
        entry = _job_entry(table, job)
        spec = _spec(job["op"])
        spec.kernel.reset()
        bound = spec.kernel.bind(job_inputs(spec, job, "meta"))
        notes = {}
        config = tuned_config(entry, job.get("dtypes", ""))
        variants = {label: job["variants"][label]
                    for label in normalized_variants(bound, job, config, notes) if label != "tuned"}
        if notes:
            left_out[index] = notes
        if variants:
            kept.append({**job, "variants": variants})
    return kept, left_out


def _job_entry(table: dict, job: dict) -> dict:
    source = job.get("from_shape", job["shape"])
    entry = _entry(table, job["op"], job["dtype"], source)
    if entry is None:
        raise SystemExit(f"no {job['op']} {job['dtype']} {json.dumps(source)} entry in the table or beside it")
    return entry


def distinct_configs(configs: dict, notes: dict) -> dict:
    """`configs` ({label: normalized config}, "tuned" first) without those equal to an earlier one,
    each of which gets a note in `notes`."""
    kept = {}
    for label, config in configs.items():
        same = next((other for other, kept_config in kept.items() if kept_config == config), None)
        if same is None:
            kept[label] = config
        else:
            notes[label] = f"the same config as {same}'s"
    return kept


def spill_growth_left_out(table: dict, jobs: list[dict]) -> tuple[list[dict], list[str]]:
    """`jobs` less the variants under which ptxas (sm_90) spills more bytes (stores and loads) in
    some kernel than under the entry's config, or fails; (kept jobs, a line per variant left out,
    with every fact of its kernels that moved). A variant that compiles to another number of kernels
    (a split-column form, another dweight finish) is compared by its most-spilling kernel. A job
    whose own config fails to compile keeps its variants."""
    from register_snapshot import changes, kernel_facts

    def spilled(facts: list[dict]) -> list[int]:
        return [kernel["spill_stores"] + kernel["spill_loads"] for kernel in facts]

    kept, lines = [], []
    for job in jobs:
        config = tuned_config(_job_entry(table, job), job.get("dtypes", ""))
        tuned = kernel_facts({**job, "config": config})
        variants = {}
        for label, overrides in job["variants"].items():
            facts = kernel_facts({**job, "config": {**config, **overrides}})
            worse = not isinstance(tuned, str) and (
                isinstance(facts, str)
                or (max(spilled(facts)) > max(spilled(tuned)) if len(facts) != len(tuned)
                    else any(after > before for before, after in zip(spilled(tuned), spilled(facts)))))
            if worse:
                lines.append(f"{job_label(job)} {'; '.join(changes({label: tuned}, {label: facts})[0])}")
            else:
                variants[label] = overrides
        if variants:
            kept.append({**job, "variants": variants})
    return kept, lines


def _tensors(out) -> list:
    return [t for t in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(t, torch.Tensor)]


def time_job(job: dict, table: dict, rounds: int) -> dict:
    from benchmarks.timing import Timer

    entry = _job_entry(table, job)
    spec = _spec(job["op"])
    dtype = getattr(torch, job["dtype"])
    args = job_inputs(spec, job, "cuda")
    spec.kernel.reset()
    bound = spec.kernel.bind(args)
    notes = {}
    configs = normalized_variants(bound, job, tuned_config(entry, job.get("dtypes", "")), notes)
    rtol, atol = spec.tolerance(dtype)
    runs, reference = {}, None
    for label, config in configs.items():
        try:
            fn = bound.compile_config(config)
            outputs = _tensors(fn(*args))
        except Exception as error:  # compile or launch failure of one variant
            notes[label] = f"failed: {type(error).__name__}: {str(error)[-200:]}"
            continue
        if reference is None:
            reference = outputs
        elif not all(torch.allclose(a.float(), b.float(), rtol=rtol, atol=atol) for a, b in zip(outputs, reference)):
            notes[label] = "outputs differ from the tuned config's"
            continue
        runs[label] = fn
    timer = Timer(torch.device("cuda", torch.cuda.current_device()))
    times = timer.device_rounds({label: (lambda f: lambda: f(*args))(fn) for label, fn in runs.items()}, rounds=rounds)
    return {**{k: job[k] for k in ("op", "dtype", "shape", "dtypes", "from_shape") if k in job},
            "times": times, "notes": notes,
            "configs": {label: to_plain(dict(configs[label])) for label in runs}, "device": _device_header(),
            "specialization": to_plain(bound.specialization_key())}


def _device_header() -> dict:
    """The header of a table tuned on the current GPU."""
    from helion_kernels import _arch

    device = torch.device("cuda", torch.cuda.current_device())
    return environment_header(_arch.arch_key(device), torch.cuda.get_device_name(device))


def print_row(row: dict) -> None:
    best = {label: statistics.median(t) for label, t in row["times"].items()}
    print(job_label(row), flush=True)
    for label, us in sorted(best.items(), key=lambda item: item[1]):
        print(f"   {label:40s} {us:10.2f} us  {best.get('tuned', us) / us:6.3f}x", flush=True)
    for label, note in row["notes"].items():
        print(f"   {label:40s} {note}", flush=True)


def dynamic_config(row: dict, best: dict, label: str, previous: dict) -> dict | None:
    """What an entry taking `label` runs at other reduction sizes (helion_kernels._variant.twin_config):
    None unless that config compiles them in; then the fastest probed config that does not, else
    the entry's previous one."""
    if not row["configs"][label].get("static_reduction_sizes"):
        return None
    dynamic = [name for name in sorted(best, key=best.get)
               if not row["configs"][name].get("static_reduction_sizes")]
    return row["configs"][dynamic[0]] if dynamic else previous


def _new_entry(row: dict, table: dict) -> dict:
    """The entry a probe of a shape no table holds writes (see the module docstring): the entry its
    job started from ("from_shape", in `table`), at the new shape, its dtype variants' configs kept;
    for a result that does not name one, the row's tuned config and specialization. A dtype
    variant's winner needs the former: its row holds the variant's config, not the entry's."""
    source = row.get("from_shape")
    entry = _entry(table, row["op"], row["dtype"], source) if source is not None else None
    if entry is not None:
        return {**{k: v for k, v in entry.items() if k not in ("us", "baseline_us")}, "shape": row["shape"]}
    if source is not None or row.get("dtypes"):
        raise SystemExit(f"{job_label(row)}: no table holds the entry it started from "
                         f"({json.dumps(source) if source else 'the result names none'})")
    return {"op": row["op"], "dtype": row["dtype"], "shape": row["shape"], "specialization": row["specialization"],
            "config": row["configs"]["tuned"]}


def apply(result_path: Path, table_path: Path, min_gain: float) -> list[str]:
    """Write the winning variants of a probe result into the table of the device it ran on (see the
    module docstring); returns what changed."""
    table = json.loads(table_path.read_text())
    winners, written = {}, {}  # written: the entries changed so far, so that rows of one entry add up
    for row in json.loads(result_path.read_text()):
        best = {label: statistics.median(t) for label, t in row["times"].items()}
        if "tuned" not in best:
            continue
        label = min(best, key=best.get)
        if label == "tuned" or best["tuned"] / best[label] <= 1.0 + min_gain:
            continue
        destination = table_path_for(table_path.parent, row["device"]["arch"], row["device"]["device_name"])
        tables = with_siblings(table_path, table, row["device"])
        key = (destination, row["op"], row["dtype"], json.dumps(row["shape"], sort_keys=True))
        if key not in written:
            written[key] = dict(_entry(tables, row["op"], row["dtype"], row["shape"]) or _new_entry(row, tables))
        entry = written[key]
        if row.get("dtypes"):  # a dtype variant's winner: the entry's dtype_configs for its key
            overrides = overrides_of(row["configs"][label], entry["config"])
            entry["dtype_configs"] = {**entry.get("dtype_configs", {}), row["dtypes"]: overrides}
            if destination != table_path:
                entry.pop("baseline_us", None)
            winners.setdefault(destination, (row["device"], []))[1].append(
                (entry, f"{job_label(row)}: {label} {best['tuned']:.2f} -> {best[label]:.2f} us ({destination.name})"))
            continue
        dynamic = dynamic_config(row, best, label, twin_config(entry) or entry["config"])
        entry.pop("dynamic_config", None)
        if dynamic is not None:
            entry["dynamic_config"] = dynamic
        entry.update(with_config(entry, row["configs"][label]))
        entry["us"] = round(best[label], 3)
        if destination != table_path:
            entry.pop("baseline_us", None)  # the peers were timed on the other device
        winners.setdefault(destination, (row["device"], []))[1].append(
            (entry, f"{row['op']} {row['dtype']} {json.dumps(row['shape'])}: {label} "
                    f"{best['tuned']:.2f} -> {best[label]:.2f} us ({destination.name})"))
    changed = []
    for destination, (header, found) in winners.items():
        if destination == table_path:
            existing, header = table, {k: v for k, v in table.items() if k != "entries"}
        else:
            existing = load_table(destination)
        write_table(destination, merged_table(header, existing, [entry for entry, _ in found]))
        changed += [line for _, line in found]
    return changed


def _add_job_options(parser: argparse.ArgumentParser, verb: str) -> None:
    parser.add_argument("--other-dtype", help=f"ops whose entries are {verb} under the other dtype's config")
    parser.add_argument("--other-device", help=f"ops whose entries are {verb} under the config another table of "
                                               "the architecture (another GPU's) holds at the same shape")
    parser.add_argument("--flag-steps", help=f"ops whose entries are {verb} under each of their per-loop and "
                                             "whole-kernel flags flipped alone")
    parser.add_argument("--knob-steps", help=f"ops whose entries are {verb} under each of their integer knobs "
                                             "(warps, an element of the block sizes, ...) stepped one notch alone")
    parser.add_argument("--knobs", help="with --knob-steps or --flag-steps, only these knobs or flags "
                                        "(comma-separated)")
    parser.add_argument("--dtypes", help="with --flag-steps or --knob-steps, the entries' variants for these "
                                         "argument dtypes (a key such as weight=float32: OpSpec.dtype_variants)")
    parser.add_argument("--foreign-shapes", help=f"ops whose entries from another GPU's table, at shapes --table "
                                                 f"lacks, are {verb} under --table's nearest entry's config")
    parser.add_argument("--match", action="append", help="with the options above, only entries whose label "
                                                         "(op, dtype, shape as JSON) contains this text (repeatable)")
    parser.add_argument("--table", type=Path, default=Path("tuned_configs/sm_90.json"))


def job_label(job: dict) -> str:
    return f"{job['op']} {job['dtype']} {json.dumps(job['shape'])}" + (f" with {job['dtypes']}" if job.get("dtypes") else "")


def merged_jobs(jobs: list[dict]) -> list[dict]:
    """`jobs` with those of one entry (and argument dtypes) made one, its variants in order."""
    merged = {}
    for job in jobs:
        label = job_label(job)
        if label in merged:
            merged[label] = {**merged[label], "variants": {**merged[label]["variants"], **job["variants"]}}
        else:
            merged[label] = job
    return list(merged.values())


def _made_jobs(args, own: dict, table: dict, device: dict) -> list[dict] | None:
    """The jobs --other-dtype, --other-device, --flag-steps, --knob-steps or --foreign-shapes make;
    None when none is given."""
    if args.other_dtype:
        return other_dtype_jobs(table, args.other_dtype.split(","))
    if args.other_device:
        return other_device_jobs(args.table, table, device, args.other_device.split(","))
    if args.flag_steps or args.knob_steps:
        knobs, dtypes, steps = args.knobs.split(",") if args.knobs else None, args.dtypes or "", []
        if args.flag_steps:
            steps += flag_step_jobs(table, args.flag_steps.split(","), dtypes, knobs)
        if args.knob_steps:
            steps += knob_step_jobs(table, args.knob_steps.split(","), knobs, dtypes)
        return merged_jobs(steps)
    if args.foreign_shapes:
        return foreign_shape_jobs(own, table, args.foreign_shapes.split(","))
    return None


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    timing = sub.add_parser("time")
    timing.add_argument("jobs", nargs="?", type=Path)
    _add_job_options(timing, "timed")
    timing.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    timing.add_argument("--rounds", type=int, default=3)
    writing = sub.add_parser("jobs")
    writing.add_argument("jobs", nargs="?", type=Path, help="a jobs file to filter instead of making jobs")
    _add_job_options(writing, "written")
    writing.add_argument("--no-more-spills", action="store_true",
                         help="leave out the variants under which ptxas (sm_90) spills more in some kernel")
    writing.add_argument("--device-name", help="the GPU the jobs are for, as the runtime takes its tables "
                                               "(default: the one --table was tuned on)")
    writing.add_argument("--out", type=Path, required=True)
    applying = sub.add_parser("apply")
    applying.add_argument("result", type=Path)
    applying.add_argument("--min-gain", type=float, default=0.03)
    applying.add_argument("--table", type=Path, default=Path("tuned_configs/sm_90.json"))
    args = parser.parse_args(argv)
    if args.command == "apply":
        for line in apply(args.result, args.table, args.min_gain):
            print(line)
        return
    raw = json.loads(args.table.read_text())
    if args.command == "jobs":
        device = {"arch": raw["arch"], "device_name": args.device_name or raw["device_name"]}
    else:
        device = _device_header()
    table = with_siblings(args.table, raw, device)
    jobs = _made_jobs(args, raw, table, device)
    if jobs is None and args.jobs:
        jobs = json.loads(args.jobs.read_text())
    if jobs is not None and args.match:
        jobs = [job for job in jobs if any(text in job_label(job) for text in args.match)]
    if args.command == "jobs":
        if jobs is None:
            parser.error("give a jobs file, --other-dtype, --other-device, --flag-steps, --knob-steps or "
                         "--foreign-shapes")
        kept, left_out = distinct_jobs(table, jobs)
        dropped = sum(len(notes) for notes in left_out.values())
        if args.no_more_spills:
            variants = sum(len(job["variants"]) for job in kept)
            kept, spilling = spill_growth_left_out(table, kept)
            print("\n".join(f"left out: {line}" for line in spilling))
            dropped += variants - sum(len(job["variants"]) for job in kept)
        args.out.write_text(json.dumps(kept, indent=1) + "\n")
        print(f"{len(kept)} jobs, {sum(len(job['variants']) for job in kept)} variants ({dropped} left out) -> {args.out}")
        return
    if jobs is None:
        parser.error("give a jobs file, --other-dtype, --other-device, --flag-steps, --knob-steps or --foreign-shapes")
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for job in jobs:
        results.append(time_job(job, table, args.rounds))
        print_row(results[-1])
        (args.out / RESULT).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
