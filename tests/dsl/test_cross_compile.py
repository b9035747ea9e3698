"""Cross-compiles corpus kernels for sm_90 (Triton's NVIDIA backend and ptxas, no GPU needed), under
configs that once tripped Triton 3.6 compiler assertions, and checks the code shapes that avoid them.
Also kernels whose generated code only real Triton rejects: a value defined inside a loop or branch
is gone after it in Triton (the interpreter runs the code as Python, where it is not)."""
import json
import re

import pytest
import torch
import triton

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import check_kernel, randn, results_without_interpreter
from .test_compat import matmul_with_epilogue, softmax_two_pass
from .test_compat_names import activations, scans_and_reductions, segment_sums
from .test_control_flow import (column_tile_sums, last_row, matmul_bias_on_first_k, row_sums_and_shifted_rows,
                                rows_kept_or_marked)
from .test_host_reads import scaled_by_kept
from .test_merged_row_descriptors import WARP_SPECIALIZED, batched_matmul
from .test_loops import grid_cell_count
from .test_matmul import broadcast_products
from .test_inner_tile_ends import lower_triangular_product
from .test_dropout import dropped
from .test_elementary import inverse_error_function
from .test_einsum import batched, einsums, ellipses_and_diagonals
from .test_ordering import gathered_rows
from .test_reductions import online_softmax, row_extremes, running_log_sums
from .test_block_size_products import int4_matmul_widened
from .test_jagged_tiles import jagged_row_sums
from .test_nested_tensors import nested, ragged_sums
from .test_slicing import diagonals, functions, repeats, subscripts, tile_diagonals
from .test_split_join import complex_mul, pair_sums, swap_pairs
from .test_stack_and_merged_dims import cat_of_mixed_dtypes, int4_matmul, pack_int4, partial_rotary, stacked
from kernels_src.attention import attention_fwd


TWO_PASS_SOFTMAX = {
    "block_sizes": [1, 2], "indexing": ["block_ptr", "tensor_descriptor", "block_ptr"], "num_warps": 1,
    "num_stages": 1, "pid_type": "xyz", "range_unroll_factors": [0, 2], "range_num_stages": [2, 2],
}
ONLINE_SOFTMAX_NARROW = {
    "block_sizes": [1, 2, 16], "indexing": ["block_ptr", "block_ptr", "tensor_descriptor"], "num_warps": 1,
    "num_stages": 4, "range_unroll_factors": [0, 4], "range_num_stages": [3, 3],
}
ONLINE_SOFTMAX_WIDE = {
    "block_sizes": [2, 4, 64], "indexing": ["pointer", "block_ptr", "block_ptr"], "num_warps": 16,
    "range_unroll_factors": [0, 2], "range_num_stages": [0, 4],
}
MATMUL_UNROLLED = {
    "block_sizes": [32, 32, 16], "indexing": ["pointer"] * 4, "range_unroll_factors": [2],
}
NEGATED_SUMS = {"block_sizes": [16, 256], "num_warps": 4}
WARP_SPECIALIZED_WGMMA = {**WARP_SPECIALIZED, "block_sizes": [128, 128, 64]}  # tiles for Hopper's wgmma
CAUSAL_WARP_SPECIALIZED = {"block_sizes": [128, 128], "indexing": ["tensor_descriptor"] * 7, "num_warps": 4,
                           "num_stages": 1, "range_warp_specializes": [True, None], "range_peel_tails": [False, False]}
ONE_LOOP_WARP_SPECIALIZED = {"block_sizes": [64, 64], "indexing": ["tensor_descriptor"] * 3, "num_warps": 4,
                             "range_warp_specializes": [True], "range_peel_tails": [False]}


@helion.kernel()
def negated_row_sums(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        acc = hl.full([tile_m], 1.5, dtype=torch.float32)
        for tile_n in hl.tile(n):
            acc = acc - x[tile_m, tile_n].sum(1)
        out[tile_m] = acc * acc + acc
    return out


@helion.kernel()
def fp8_round_trip(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile].to(torch.float8_e4m3fn).to(torch.float32) + x[tile].to(torch.float8_e5m2).to(torch.float32)
    return out


CASES = {
    "two_pass_softmax": (softmax_two_pass, lambda: (torch.randn(20, 300),), TWO_PASS_SOFTMAX),
    "online_softmax_narrow": (online_softmax, lambda: (torch.randn(3, 130),), ONLINE_SOFTMAX_NARROW),
    "online_softmax_wide": (online_softmax, lambda: (torch.randn(2, 700),), ONLINE_SOFTMAX_WIDE),
    "if_in_unrolled_k_loop": (matmul_bias_on_first_k,
                              lambda: (torch.randn(20, 70), torch.randn(70, 18), torch.randn(18)), MATMUL_UNROLLED),
    "negated_row_sums": (negated_row_sums, lambda: (torch.randn(64, 512),), NEGATED_SUMS),
    # `maxnreg`: ptxas allocates at most that many registers per thread
    "register_capped": (negated_row_sums, lambda: (torch.randn(64, 512),), {**NEGATED_SUMS, "maxnreg": 32}),
    "name_reused_after_a_loop": (row_sums_and_shifted_rows, lambda: (torch.randn(5, 300), 2), None),
    # a persistent loop asked to flatten, whose branch holds loops after an unrolled loop of a
    # constant trip count: Triton's FuseNestedLoops built an invalid scf.if, so it is not flattened
    # a persistent loop asked to flatten around a loop with no memory access (a count): Triton's
    # FuseNestedLoops crashed on it, so it is not flattened
    "memoryless_loop_in_a_flattened_loop": (grid_cell_count, lambda: (torch.randn(7), 2, 5), {
        "block_sizes": [2], "pid_type": "persistent_blocked", "persistent_flattens": [True], "flatten_loops": [True],
        "num_warps": 1}),
    "loops_in_a_branch_of_a_flattened_loop": (row_sums_and_shifted_rows, lambda: (torch.randn(5, 300), 2), {
        "block_sizes": [64, 64, 64], "pid_type": "persistent_interleaved", "persistent_flattens": [True],
        "range_unroll_factors": [2, 1, 4], "range_num_stages": [2, 3, 4], "num_warps": 1}),
    "value_read_after_its_loop": (last_row, lambda: (torch.randn(6, 70),), None),
    # Hopper warp specialization: taken where every load uses a descriptor (k = 64: 16-byte rows),
    # off where one cannot (k = 37), which Triton 3.6 would abort compiling
    "warp_specialized_loop": (batched_matmul, lambda: (torch.randn(2, 128, 64).half(), torch.randn(2, 64, 128).half()),
                              WARP_SPECIALIZED_WGMMA),
    "warp_specialization_off": (batched_matmul, lambda: (torch.randn(2, 128, 37).half(), torch.randn(2, 37, 128).half()),
                                WARP_SPECIALIZED_WGMMA),
    # a loop ending inside its tensors (`min(tile_m.end, n)`) loads through descriptors and, alone in
    # its kernel, specializes; the causal attention forward's two loops (unmasked, then the
    # diagonal, descriptors in both) must not, or Triton 3.6 aborts on the loop after the first
    "one_loop_ending_inside": (lower_triangular_product, lambda: (torch.randn(256, 256).half(), torch.randn(256, 64).half()),
                               ONE_LOOP_WARP_SPECIALIZED),
    # combine functions become `@triton.jit` helpers beside the kernel; lambdas are inlined;
    # fp8 values (the interpreter cannot cast to them)
    "combine_functions": (scans_and_reductions, lambda: (torch.randn(6, 37),), None),
    "segmented_scan": (segment_sums, lambda: (torch.arange(37) // 5, torch.randn(37, 5)), None),
    "activations_bf16": (activations, lambda: (torch.randn(5, 37).bfloat16(), torch.randn(37).bfloat16(), 0.25), None),
    "inlined_epilogue": (matmul_with_epilogue, lambda: (torch.randn(64, 32).half(), torch.randn(32, 48).half(),
                                                        lambda acc, tile: torch.relu(acc)), None),
    "fp8_round_trip": (fp8_round_trip, lambda: (torch.randn(300),), None),
    # `continue` folded into branches; a one-lane `if` (one-row tiles); a count read on the host
    "continue_on_one_lane_condition": (rows_kept_or_marked, lambda: (torch.randn(9, 70), torch.randint(0, 2, (9,))), None),
    "continue_in_nested_branches": (column_tile_sums, lambda: (torch.randn(6, 150),), None),
    "host_read_count": (scaled_by_kept, lambda: (torch.randn(7, 33), torch.randint(-100, 50, (7,))), None),
    # torch.stack (tl.join), a view merging [tile, 2] into one dim, a slice at a device start
    "int4_matmul_bf16": (int4_matmul, lambda: (torch.randn(64, 256).bfloat16(),
                                               pack_int4(torch.randint(-8, 8, (256, 96), dtype=torch.int8))), None),
    "stack_of_four": (stacked, lambda: tuple(torch.randn(300) for _ in range(4)), None),
    # hl.split / hl.join (tl.split / tl.join), a tile split into half blocks and merged back, a
    # reduction over the parts of a masked tile (the mask reshaped over both)
    "complex_mul": (complex_mul, lambda: (torch.randn(300, 2), torch.randn(300, 2)), None),
    "swap_pairs": (swap_pairs, lambda: (torch.randn(33, 301),), None),
    "pair_sums": (pair_sums, lambda: (torch.randn(301),), None),
    # hl.jagged_tile: a loop to the longest lane's end, loads masked per lane
    "jagged_row_sums": (jagged_row_sums, lambda: (torch.randn(60, 21), torch.tensor([0, 5, 5, 22, 60])), None),
    # a NestedTensor argument: its values and offsets, loads masked past each component's end
    "nested_ragged_sums": (ragged_sums, lambda: (nested([5, 0, 17, 8], 7),), None),
    # a slice as long as a registered block times two; int32 nibbles to bfloat16 through float32
    "int4_matmul_widened": (int4_matmul_widened, lambda: (torch.randn(37, 90).bfloat16(),
                                                          pack_int4(torch.randint(-8, 8, (90, 50), dtype=torch.int8))), None),
    # torch.gather of more positions than the row holds (Triton 3.6 asserts on a gather longer than
    # its source: they gather in chunks), and of fewer; NaN-propagating max reductions and argmax
    "gather_longer_than_source": (gathered_rows, lambda: (torch.randn(9, 16).bfloat16(), torch.randint(0, 16, (9, 50)),
                                                          torch.randint(0, 2, (9, 16)).bool()), None),
    "gather_shorter_than_source": (gathered_rows, lambda: (torch.randn(5, 37), torch.randint(0, 37, (5, 20)),
                                                           torch.randint(0, 2, (5, 37)).bool()), None),
    "row_extremes_with_indices": (row_extremes, lambda: (torch.randn(6, 129).bfloat16(),), None),
    "running_log_sums": (running_log_sums, lambda: (torch.randn(6, 129).bfloat16(),), None),
    # parts, repeats and joins of device values by lanes (tl.gather of a whole dim into another)
    "value_subscripts": (subscripts, lambda: (torch.randn(45, 13).bfloat16(),), None),
    "value_parts_and_glu": (functions, lambda: (torch.randn(37, 12),), None),
    "value_repeats": (repeats, lambda: (torch.randn(45, 13),), None),
    "diagonals": (diagonals, lambda: (torch.randn(23, 11), torch.randn(5, 3, 5)), None),
    "tile_diagonals": (tile_diagonals, lambda: (torch.randn(37, 37), torch.randn(3, 37, 37)), None),
    "cat_of_mixed_dtypes": (cat_of_mixed_dtypes, lambda: (torch.randn(37, 13).bfloat16(), torch.randn(37, 5)), None),
    "cat_of_a_partial_rotary_row": (partial_rotary, lambda: (torch.randn(19, 64), 24), None),
    # torch.matmul's broadcasting: tl.dot takes equal batch dims (a unit one failed to compile)
    "matmul_broadcasts": (broadcast_products, lambda: (torch.randn(5, 19, 33).bfloat16(), torch.randn(33, 17).bfloat16(),
                                                      torch.randn(33).bfloat16()), None),
    # torch.einsum: matrix products through tl.dot (also batched), the rest as summed products
    "einsum_equations": (einsums, lambda: (torch.randn(37, 16).bfloat16(), torch.randn(16, 16).bfloat16()), None),
    "einsum_batched": (batched, lambda: (torch.randn(5, 16, 32), torch.randn(5, 32, 16)), None),
    "einsum_ellipses_and_diagonals": (ellipses_and_diagonals, lambda: (torch.randn(19, 5, 7), torch.randn(7, 7)), None),
    # float64 erfinv: Newton steps on libdevice's float64 erf
    "erfinv_float64": (inverse_error_function, lambda: (torch.rand(1000, dtype=torch.float64) * 2 - 1,), None),
    # F.dropout: Philox uniforms against p, a host scalar
    "dropout": (dropped, lambda: (torch.randn(97, 301).bfloat16(), 0.3), None),
    "causal_attention_two_loops": (attention_fwd, lambda: (*(torch.randn(1, 2, 256, 64).half() for _ in range(3)), True, 0.125),
                                   CAUSAL_WARP_SPECIALIZED),
}


def cross_compile_cases() -> dict:
    """Runs in a process without TRITON_INTERPRET: compiles every case for sm_90, reports facts."""
    from build_tools.cross_compile import CrossCompileError, cross_compile

    results = {}
    for name, (kernel, make_args, config) in CASES.items():
        args = make_args()
        try:
            compiled = cross_compile(kernel.bind(args), args, config)
        except CrossCompileError as err:
            results[name] = {"error": str(err)}
            continue
        results[name] = {
            "kernels": len(compiled),
            "thread_locality_rewrite": any("efficient_layout" in c.asm["ttgir"] for c in compiled),
            "fma_in_llvm_ir": any("llvm.fma" in c.asm["llir"] for c in compiled),
            "warp_specialized": any("ttg.warp_specialize" in c.asm["ttgir"] for c in compiled),
            "maxnreg": sorted({int(n) for c in compiled for n in re.findall(r"\.maxnreg (\d+)", c.asm["ptx"])}),
        }
    results["gluon_tile_product"] = gluon_case()
    return results


def gluon_case() -> dict:
    """A warp-specialized Gluon kernel (tests/dsl/_gluon_tile.py) through `compile_launch`."""
    from build_tools.cross_compile import CrossCompileError, compile_launch
    from ._gluon_tile import launch, tile_product

    args, kwargs = launch()
    try:
        compiled = compile_launch(tile_product, args, kwargs)
    except CrossCompileError as err:
        return {"error": str(err)}
    return {"kernels": 1, **compiled.features(), **compiled.ptxas_info()}


@pytest.mark.skipif("nvidia" not in triton.backends.backends, reason="Triton's NVIDIA backend is not installed")
def test_cases_compile_for_sm90():
    results = results_without_interpreter("tests.dsl.test_cross_compile", timeout=900)
    failed = {name: r["error"] for name, r in results.items() if "error" in r}
    assert not failed, "\n".join(f"{name}: {error}" for name, error in failed.items())
    assert all(r["kernels"] == 1 for r in results.values())
    # Triton 3.6 rewrites `acc = acc - reduce(load)` loops thread-locally and then adds the sums;
    # the emitted identity keeps that pass off, and LLVM removes the identity.
    assert not results["negated_row_sums"]["thread_locality_rewrite"]
    assert not results["negated_row_sums"]["fma_in_llvm_ir"]
    assert results["warp_specialized_loop"]["warp_specialized"]
    assert not results["warp_specialization_off"]["warp_specialized"]
    assert results["one_loop_ending_inside"]["warp_specialized"]
    assert not results["causal_attention_two_loops"]["warp_specialized"]
    assert results["register_capped"]["maxnreg"] == [32] and results["negated_row_sums"]["maxnreg"] == []
    # Gluon: the loader partition is shrunk to its 24 registers, the product is one async wgmma
    gluon = results["gluon_tile_product"]
    assert gluon["wgmma"] and gluon["warp_specialize"] and 24 in gluon["setmaxnreg"]
    assert gluon["spill_stores"] == 0


def test_reductions_of_loads_in_loops_read_through_an_identity():
    source = negated_row_sums.bind((torch.randn(64, 512),)).to_triton_code(NEGATED_SUMS)
    assert "tl.sum(tl.fma(" in source


@pytest.mark.parametrize("shape", [(4, 128), (5, 70)])
def test_negated_row_sums(shape, device):
    def reference(x):
        acc = 1.5 - x.sum(1)
        return acc * acc + acc

    check_kernel(negated_row_sums, (randn(*shape, device=device),), reference,
                 extra_configs=[helion.Config(block_sizes=[4, 32])])


def test_loops_with_a_runtime_branch_are_not_unrolled():
    args = (torch.randn(20, 70), torch.randn(70, 18), torch.randn(18))
    spec = matmul_bias_on_first_k.bind(args).config_spec
    (unroll,) = [k for k in spec.knobs() if k.name == "range_unroll_factors"]
    assert unroll.choices == (0,)
    assert list(spec.normalize(MATMUL_UNROLLED)["range_unroll_factors"]) == [0]


if __name__ == "__main__":
    print(json.dumps(cross_compile_cases()))


@pytest.mark.skipif("nvidia" not in triton.backends.backends, reason="Triton's NVIDIA backend is not installed")
@pytest.mark.parametrize("warning, serialized", [
    ("(C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient "
     "register resources for the wgmma pipeline in the function 'k'", True),
    ("(C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma "
     "instructions reading accumulator registers of  a wgmma between start and end of the pipeline stage in "
     "the function 'k'", True),
    ("", False)])
def test_ptxas_info_reads_every_serialization_warning(monkeypatch, warning, serialized):
    """ptxas_info's `wgmma_serialized` is true for each of ptxas's serialization warnings (a Gluon
    kernel whose first step branched on a run-time flag drew C7514, 2026-11-28), false without."""
    import subprocess

    from build_tools import cross_compile

    log = f"ptxas info    : Used 168 registers\nptxas info    : 8 bytes spill stores\n{warning}\n"
    run = subprocess.run

    def ptxas(argv, *args, **kwargs):  # only the ptxas -v call answers with the log
        if "-v" in argv:
            return subprocess.CompletedProcess(argv, 0, "", log)
        return run(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", ptxas)
    compiled = cross_compile.CrossCompiled("k", cross_compile.H100, {"ptx": ""}, 0)
    info = compiled.ptxas_info()
    assert info["wgmma_serialized"] is serialized
    assert info["registers"] == 168 and info["spill_stores"] == 8

