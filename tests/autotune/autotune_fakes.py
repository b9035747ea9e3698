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
