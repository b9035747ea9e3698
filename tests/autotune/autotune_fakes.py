"""Test doubles for the autotuner: a small ConfigSpec, a synthetic objective, clocks and timers."""
from __future__ import annotations

import math
from dataclasses import dataclass

from build_tools.autotune.search import Outcome


class FakeInvalidConfig(Exception):
    pass


@dataclass(frozen=True)
class FakeKnob:
    name: str
    index: int | None
    choices: list


class FakeConfigSpec:
    """Two block sizes, warps, stages and an indexing enum; big tiles are illegal."""

    KNOBS = [
        FakeKnob("block_sizes", 0, [16, 32, 64, 128, 256]),
        FakeKnob("block_sizes", 1, [16, 32, 64, 128]),
        FakeKnob("num_warps", None, [1, 2, 4, 8, 16]),
        FakeKnob("num_stages", None, [1, 2, 3, 4]),
        FakeKnob("indexing", None, ["pointer", "block_ptr", "tensor_descriptor"]),
    ]
    MAX_TILE = 8192

    def knobs(self):
        return list(self.KNOBS)

    def default_config(self):
        return {"block_sizes": [64, 32], "num_warps": 4, "num_stages": 2, "indexing": "pointer"}

    def flatten(self, config):
        return [
            config[k.name][k.index] if k.index is not None else config[k.name] for k in self.KNOBS
        ]

    def unflatten(self, values):
        config = {}
        for knob, value in zip(self.KNOBS, values):
            if knob.index is None:
                config[knob.name] = value
            else:
                config.setdefault(knob.name, []).append(value)
        return config

    def normalize(self, config):
        full = {**self.default_config(), **dict(config)}
        full["block_sizes"] = list(full["block_sizes"])
        if full["block_sizes"][0] * full["block_sizes"][1] > self.MAX_TILE:
            raise FakeInvalidConfig(f"tile too big: {full['block_sizes']}")
        return full

    def random_config(self, seed):
        import random

        rng = random.Random(seed)
        while True:
            try:
                return self.normalize(self.unflatten([rng.choice(k.choices) for k in self.KNOBS]))
            except FakeInvalidConfig:
                continue


class BowlObjective:
    """Time grows with the squared index distance to `optimum`; records every batch it sees."""

    def __init__(self, spec: FakeConfigSpec, optimum: dict, failing=lambda config: False):
        self.spec = spec
        self.optimum = spec.flatten(spec.normalize(optimum))
        self.failing = failing
        self.batches: list[list] = []

    def time_of(self, config) -> float:
        values = self.spec.flatten(config)
        distance = 0.0
        for knob, value, best in zip(self.spec.KNOBS, values, self.optimum):
            distance += (knob.choices.index(value) - knob.choices.index(best)) ** 2
        return 10.0 + distance

    def evaluate(self, configs):
        self.batches.append(list(configs))
        for config in configs:
            self.spec.normalize(config)  # the search must never hand over an illegal config
        return [
            Outcome(math.inf, "fake compile error") if self.failing(c) else Outcome(self.time_of(c))
            for c in configs
        ]


class StepClock:
    """A clock that advances by `step` seconds each time it is read."""

    def __init__(self, step: float = 0.0):
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


# ---- a fake op family: kernels that "run" on a virtual device clock ---------------------------

VIRTUAL_CLOCK = {"us": 0.0}


def bowl_cost(spec: FakeConfigSpec, config, optimum=(3, 1, 3, 2, 1)) -> float:
    values = spec.flatten(config)
    return 10.0 + sum(
        (knob.choices.index(v) - best) ** 2 for knob, v, best in zip(spec.KNOBS, values, optimum)
    )


class FakeBound:
    def __init__(self, kernel, args):
        self.kernel = kernel
        self.args = args
        self.config_spec = FakeConfigSpec()

    def specialization_key(self):
        return {"dtype": str(self.args[0].dtype).removeprefix("torch."), "rank": self.args[0].dim()}

    def compile_config(self, config):
        import os
        import time

        config = self.config_spec.normalize(config)
        hazard = self.kernel.hazard(config)
        cost = bowl_cost(self.config_spec, config)
        if hazard == "compile_error":
            raise RuntimeError("fake compile error")

        def run(x):
            if hazard == "hang":
                time.sleep(3600)
            if hazard == "crash":
                os._exit(7)
            if hazard == "raise":
                raise RuntimeError("fake launch failure")
            if hazard == "slow":
                time.sleep(0.05)
            VIRTUAL_CLOCK["us"] += cost
            return x * (3 if hazard == "wrong" else 2)

        return run


class FakeKernel:
    def __init__(self, hazard=lambda config: None):
        self.hazard = hazard

    def bind(self, args):
        return FakeBound(self, args)


class VirtualTimer:
    """Reads the virtual device clock that fake kernels advance: a fully deterministic timer."""

    def samples(self, fn, repeats):
        result = []
        for _ in range(repeats):
            before = VIRTUAL_CLOCK["us"]
            fn()
            result.append(VIRTUAL_CLOCK["us"] - before)
        return result

    def repeats_for(self, fn):
        return 3


def _make_inputs(shape, dtype, device, seed):
    import torch

    generator = torch.Generator().manual_seed(seed)
    if shape.get("N") == 13:
        raise RuntimeError("fake input generator refuses N=13")
    return (torch.randn(shape["N"], generator=generator, dtype=dtype, device=device),)


def _hazards(config):
    if config["num_stages"] == 4 and config["indexing"] == "tensor_descriptor":
        return "hang"
    if config["num_warps"] == 16 and config["block_sizes"][0] == 16:
        return "crash"
    if config["num_warps"] == 1 and config["indexing"] == "block_ptr":
        return "raise"
    if config["num_stages"] == 3 and config["block_sizes"][1] == 16:
        return "compile_error"
    if config["num_warps"] == 8 and config["indexing"] == "pointer":
        return "wrong"
    return None


def make_fake_op(name, hazard=lambda config: None, shapes=({"N": 64}, {"N": 256}, {"N": 1024})):
    import torch

    from build_tools.opspec import OpSpec

    return OpSpec(
        name=name,
        kernel=FakeKernel(hazard),
        make_inputs=_make_inputs,
        reference=lambda x: x.double() * 2,
        shapes=[dict(s) for s in shapes],
        dtypes=(torch.float32,),
        tolerance=lambda dtype: (1e-5, 1e-5),
        cost=lambda shape, dtype: (0.0, 0.0),
    )


FAKE_OPS = [
    make_fake_op("fake_scale"),
    make_fake_op("fake_hazards", hazard=_hazards, shapes=({"N": 64},)),
    make_fake_op("fake_broken_shape", shapes=({"N": 13}, {"N": 32})),
]
FAKE_OPS_SOURCE = "autotune_fakes:FAKE_OPS"
VIRTUAL_TIMER = "autotune_fakes:VirtualTimer"


class UnitTimer:
    """Every call takes "1 us": for integration runs where only the plumbing is under test."""

    def samples(self, fn, repeats):
        for _ in range(repeats):
            fn()
        return [1.0] * repeats

    def repeats_for(self, fn):
        return 1
