"""SearchSpace: index points <-> configs of a ConfigSpec."""
import random

from autotune_fakes import FakeConfigSpec

from build_tools.autotune.space import SearchSpace, config_key


def test_encode_decode_round_trip():
    spec = FakeConfigSpec()
    space = SearchSpace(spec)
    config = {"block_sizes": [128, 16], "num_warps": 8, "num_stages": 3, "indexing": "block_ptr"}
    point = space.encode(config)
    assert point == (3, 0, 3, 2, 1)
    assert config_key(space.decode(point)) == config_key(spec.normalize(config))


def test_encode_snaps_values_outside_the_choices_to_the_nearest():
    space = SearchSpace(FakeConfigSpec())
    point = space.encode({"block_sizes": [100, 16], "num_warps": 5})
    assert point[0] == 3  # 100 is nearest to 128
    assert point[2] == 2  # 5 is nearest to 4


def test_illegal_points_decode_to_none():
    space = SearchSpace(FakeConfigSpec())
    assert space.decode((4, 3, 0, 0, 0)) is None  # 256 * 128 tile


def test_neighbours_stay_inside_the_space_and_differ_in_one_knob():
    space = SearchSpace(FakeConfigSpec())
    corner = (0, 0, 0, 0, 0)
    neighbours = space.neighbours(corner)
    assert len(neighbours) == space.dimensions
    for p in neighbours:
        assert sum(a != b for a, b in zip(p, corner)) == 1
        assert all(0 <= i < n for i, n in zip(p, space.sizes))


def test_clip_and_random_points_are_legal_indices():
    space = SearchSpace(FakeConfigSpec())
    assert space.clip([-3.2, 1.6, 99, 2.4, 0.5]) == (0, 2, 4, 2, 0)
    rng = random.Random(3)
    for _ in range(50):
        p = space.random_point(rng)
        assert all(0 <= i < n for i, n in zip(p, space.sizes))
