"""Kernel API: decorator forms, ignored Helion keywords, static_shapes and bind caching, helion.Config as a
Mapping with JSON round trip, to_triton_code / generate output, HELION_PRINT_OUTPUT_CODE, compile
caching, and which config a plain call uses."""
import ast
import collections.abc
import importlib.util
import inspect
import json
import re
import sys
import warnings

import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import check_kernel, randn


def doubled_plus_one(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] * 2.0 + 1.0
    return out


@helion.kernel
def bare_decorated(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] * 2.0 + 1.0
    return out


@helion.kernel()
def called_decorator(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] * 2.0 + 1.0
    return out


@helion.kernel(config=helion.Config(block_sizes=[16], num_warps=2))
def with_config(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] * 2.0 + 1.0
    return out


@helion.kernel(configs=[helion.Config(block_sizes=[32]), helion.Config(block_sizes=[64])])
def with_configs(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] * 2.0 + 1.0
    return out


@helion.kernel(static_shapes=True)
def static_kernel(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile_m, tile_n in hl.tile(x.size()):
        out[tile_m, tile_n] = x[tile_m, tile_n] - 0.5
    return out


@helion.kernel(static_shapes=False)
def dynamic_kernel(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile_m, tile_n in hl.tile(x.size()):
        out[tile_m, tile_n] = x[tile_m, tile_n] - 0.5
    return out


DECORATED = {
    "bare": bare_decorated,
    "called": called_decorator,
    "config": with_config,
    "configs": with_configs,
    "function_call": helion.kernel(doubled_plus_one),
}


@pytest.mark.parametrize("form", sorted(DECORATED))
@pytest.mark.parametrize("n", [1, 100])
def test_decorator_forms(form, n, device):
    kernel = DECORATED[form]
    x = randn(n, device=device)
    check_kernel(kernel, (x,), lambda x: x * 2.0 + 1.0)
    torch.testing.assert_close(kernel(x).double().cpu(), x.double().cpu() * 2.0 + 1.0)


def test_ignored_helion_keywords_warn_once():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = helion.kernel(autotune_effort="none", ignore_warnings=[], autotune_precompile=False)(
            doubled_plus_one)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    for keyword in ("autotune_effort", "ignore_warnings", "autotune_precompile"):
        assert keyword in messages[0]
    x = randn(40)
    torch.testing.assert_close(kernel(x), x * 2.0 + 1.0)


def test_known_keywords_do_not_warn():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        helion.kernel(static_shapes=False, config=helion.Config(block_sizes=[16]))(doubled_plus_one)
        helion.kernel(doubled_plus_one)
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize("kernel", [static_kernel, dynamic_kernel], ids=["static", "dynamic"])
@pytest.mark.parametrize("shape", [(1, 1), (5, 19)])
def test_static_shapes_both_ways(kernel, shape, device):
    check_kernel(kernel, (randn(*shape, device=device),), lambda x: x - 0.5)


def test_bind_cache_per_specialization(device):
    a, b = randn(10, 20, device=device), randn(30, 7, device=device)
    assert dynamic_kernel.bind((a,)) is dynamic_kernel.bind((b,))
    assert static_kernel.bind((a,)) is static_kernel.bind((a.clone(),))
    assert static_kernel.bind((a,)) is not static_kernel.bind((b,))
    assert dynamic_kernel.bind((a,)) is not dynamic_kernel.bind((a.half(),))
    assert static_kernel.bind((a,)).specialization_key() != static_kernel.bind((b,)).specialization_key()


def test_specialization_key_is_json(device):
    key = dynamic_kernel.bind((randn(4, 4, device=device),)).specialization_key()
    assert isinstance(key, dict)
    assert json.loads(json.dumps(key)) == key
    other = dynamic_kernel.bind((randn(4, 4, dtype=torch.float16, device=device),)).specialization_key()
    assert other != key


def test_config_is_a_mapping_with_json_round_trip():
    config = helion.Config(block_sizes=[32, 16], num_warps=4, pid_type="persistent_blocked",
                           indexing=["pointer", "block_ptr"], reduction_loops=[None])
    assert isinstance(config, collections.abc.Mapping)
    assert list(config["block_sizes"]) == [32, 16] and config["num_warps"] == 4
    assert "pid_type" in config and "num_stages" not in config
    assert set(config) == {"block_sizes", "num_warps", "pid_type", "indexing", "reduction_loops"}
    assert len(config) == 5
    assert config.get("num_stages", 7) == 7
    text = config.to_json()
    assert json.loads(text)["reduction_loops"] == [None]
    restored = helion.Config.from_json(text)
    assert dict(restored) == dict(config)
    assert restored.to_json() == text


def test_helpers_cdiv_and_next_power_of_2():
    assert [helion.cdiv(a, b) for a, b in [(7, 2), (8, 2), (1, 16), (0, 3)]] == [4, 4, 1, 0]
    assert [helion.next_power_of_2(v) for v in (1, 5, 16, 17, 300000)] == [1, 8, 16, 32, 524288]


@helion.kernel()
def pairwise_halves(x: torch.Tensor) -> torch.Tensor:
    pairs = helion.cdiv(x.size(0), 2)
    out = torch.empty([pairs], dtype=x.dtype, device=x.device)
    for tile in hl.tile(pairs):
        first = x[tile.index * 2]
        second = hl.load(x, [tile.index * 2 + 1], extra_mask=tile.index * 2 + 1 < x.size(0))
        out[tile] = first + second
    return out


@pytest.mark.parametrize("n", [1, 2, 51])
def test_cdiv_in_host_code(n, device):
    def reference(x):
        padded = torch.cat([x, torch.zeros(n % 2, dtype=x.dtype)])
        return padded[0::2] + padded[1::2]

    check_kernel(pairwise_halves, (randn(n, device=device),), reference)


def _import_module_from_source(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_to_triton_code_is_standalone(tmp_path, device):
    x = randn(70, device=device)
    bound = called_decorator.bind((x,))
    code = bound.to_triton_code(bound.config_spec.default_config())
    tree = ast.parse(code)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert all(name in ("torch", "triton") or name in sys.stdlib_module_names for name in imported), imported
    assert "@_jit_on_first_launch" in code
    module = _import_module_from_source(tmp_path, "generated_called_decorator", code)
    host = module.called_decorator
    assert list(inspect.signature(host).parameters) == ["x"]
    torch.testing.assert_close(host(x).double().cpu(), x.double().cpu() * 2.0 + 1.0)


def test_generate_returns_kernels_and_launcher(device):
    x = randn(70, device=device)
    bound = called_decorator.bind((x,))
    default = bound.config_spec.default_config()
    generated = bound.generate(default, "double_op__v1")
    assert generated.kernels and all("@_jit_on_first_launch" in src for src in generated.kernels.values())
    assert re.search(r"^def double_op__v1\(x\b", generated.launcher, re.MULTILINE), generated.launcher
    again = bound.generate(helion.Config(**{**dict(default), "num_warps": 8}), "double_op__v2")
    assert again.kernels == generated.kernels


def test_print_output_code_env(monkeypatch, capfd, device):
    monkeypatch.setenv("HELION_PRINT_OUTPUT_CODE", "1")
    kernel = helion.kernel(doubled_plus_one)
    x = randn(33, device=device)
    kernel(x)
    captured = capfd.readouterr()
    assert "@_jit_on_first_launch" in captured.out + captured.err


def test_compile_cache_per_kernel_specialization_and_config(monkeypatch, capfd, device):
    monkeypatch.setenv("HELION_PRINT_OUTPUT_CODE", "1")

    def cached_triple(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        for tile in hl.tile(x.size(0)):
            out[tile] = x[tile] * 3.0
        return out

    kernel = helion.kernel(cached_triple)
    x = randn(33, device=device)
    bound = kernel.bind((x,))
    config = helion.Config(block_sizes=[16])
    first = bound.compile_config(config)
    first(x)
    same = bound.compile_config(helion.Config.from_json(config.to_json()))
    same(x)
    assert same is first
    captured = capfd.readouterr()
    assert (captured.out + captured.err).count("def cached_triple(") == 1
    other = bound.compile_config(helion.Config(block_sizes=[32]))
    assert other is not first
    half_bound = kernel.bind((x.half(),))
    assert half_bound.compile_config(config) is not first


@helion.kernel()
def tunable_factor(x: torch.Tensor) -> torch.Tensor:
    factor = hl.register_tunable("factor", helion.IntegerFragment(1, 9))
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] * factor
    return out


@helion.kernel(config=helion.Config(factor=3))
def tunable_factor_config(x: torch.Tensor) -> torch.Tensor:
    factor = hl.register_tunable("factor", helion.IntegerFragment(1, 9))
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] * factor
    return out


@helion.kernel(configs=[helion.Config(factor=7), helion.Config(factor=2)])
def tunable_factor_configs(x: torch.Tensor) -> torch.Tensor:
    factor = hl.register_tunable("factor", helion.IntegerFragment(1, 9))
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] * factor
    return out


def test_call_uses_default_config(device):
    x = randn(50, device=device)
    factor = tunable_factor.bind((x,)).config_spec.default_config()["factor"]
    torch.testing.assert_close(tunable_factor(x), x * factor)
    torch.testing.assert_close(tunable_factor.bind((x,))(x), x * factor)


def test_call_uses_kernel_config(device):
    x = randn(50, device=device)
    torch.testing.assert_close(tunable_factor_config(x), x * 3)


def test_call_uses_first_of_configs_without_autotuning(monkeypatch, capfd, device):
    monkeypatch.setenv("HELION_PRINT_OUTPUT_CODE", "1")
    x = randn(50, device=device)
    torch.testing.assert_close(tunable_factor_configs(x), x * 7)
    torch.testing.assert_close(tunable_factor_configs.bind((x,))(x), x * 7)
    captured = capfd.readouterr()
    assert (captured.out + captured.err).count("def tunable_factor_configs(") == 1


@helion.kernel()
def shifted(x: torch.Tensor, shift: float = 1.5, *, scale: float = 2.0) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] * scale + shift
    return out


def test_call_with_keywords_and_defaults(device):
    x = randn(45, device=device)
    expected = x.double().cpu()
    torch.testing.assert_close(shifted(x).double().cpu(), expected * 2.0 + 1.5)
    torch.testing.assert_close(shifted(x, shift=-1.0).double().cpu(), expected * 2.0 - 1.0)
    torch.testing.assert_close(shifted(x, 0.25, scale=-3.0).double().cpu(), expected * -3.0 + 0.25)


@helion.kernel(static_shapes=True)
def add_scalars_static(x: torch.Tensor, shift: float, offset: int) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] + shift + offset
    return out


@helion.kernel(static_shapes=False)
def add_scalars_dynamic(x: torch.Tensor, shift: float, offset: int) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = x[tile] + shift + offset
    return out


@pytest.mark.parametrize("kernel", [
    pytest.param(add_scalars_static, id="static"),
    pytest.param(add_scalars_dynamic, id="dynamic"),
])
def test_scalar_arguments_are_not_baked_in(kernel, device):
    x = randn(20, device=device)
    compiled = kernel.bind((x, 1.5, 1)).compile_config(helion.Config(block_sizes=[8]))
    for shift, offset in [(1.5, 1), (-1.0, 1), (1.5, 5), (0.25, -7)]:
        expected = x.double().cpu() + shift + offset
        torch.testing.assert_close(kernel(x, shift, offset).double().cpu(), expected)
        torch.testing.assert_close(compiled(x, shift, offset).double().cpu(), expected)


def test_dynamic_variant_serves_every_size(tmp_path, device):
    x = randn(8, 20, device=device)
    bound = dynamic_kernel.bind((x,))
    config = bound.config_spec.default_config()
    compiled = bound.compile_config(config)
    module = _import_module_from_source(tmp_path, "generated_dynamic_kernel", bound.to_triton_code(config))
    for shape in [(8, 20), (1, 1), (3, 5), (40, 70), (2, 129)]:
        y = randn(*shape, device=device)
        expected = y.double().cpu() - 0.5
        torch.testing.assert_close(compiled(y).double().cpu(), expected)
        torch.testing.assert_close(module.dynamic_kernel(y).double().cpu(), expected)


@pytest.mark.parametrize("kernel", [static_kernel, dynamic_kernel], ids=["static", "dynamic"])
def test_calls_with_changing_sizes(kernel, device):
    for shape in [(8, 20), (1, 1), (3, 5), (8, 20), (33, 2)]:
        y = randn(*shape, device=device)
        torch.testing.assert_close(kernel(y).double().cpu(), y.double().cpu() - 0.5)


def test_same_function_wrapped_static_and_dynamic(device):
    static = helion.kernel(static_shapes=True)(doubled_plus_one)
    dynamic = helion.kernel(static_shapes=False)(doubled_plus_one)
    config = helion.Config(block_sizes=[16])
    first = randn(40, device=device)
    static.bind((first,)).compile_config(config)(first)
    compiled = dynamic.bind((first,)).compile_config(config)
    for n in (40, 7, 100):
        y = randn(n, device=device)
        torch.testing.assert_close(compiled(y).double().cpu(), y.double().cpu() * 2.0 + 1.0)


def test_generated_host_function_keeps_the_signature(tmp_path, device):
    x = randn(16, device=device)
    bound = shifted.bind((x,))
    config = bound.config_spec.default_config()
    module = _import_module_from_source(tmp_path, "generated_shifted", bound.to_triton_code(config))
    generated = bound.generate(config, "shifted__variant")
    parameters = [(p.name, p.kind, p.default) for p in inspect.signature(module.shifted).parameters.values()]
    assert parameters == [("x", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
                          ("shift", inspect.Parameter.POSITIONAL_OR_KEYWORD, 1.5),
                          ("scale", inspect.Parameter.KEYWORD_ONLY, 2.0)]
    launcher_header = generated.launcher[generated.launcher.index("def shifted__variant("):].splitlines()[0]
    launcher_namespace = {}
    exec(launcher_header + "\n    pass", launcher_namespace)
    launcher_parameters = inspect.signature(launcher_namespace["shifted__variant"]).parameters.values()
    assert [(p.name, p.kind, p.default) for p in launcher_parameters] == parameters
