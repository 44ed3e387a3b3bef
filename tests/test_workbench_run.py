"""Model.run(capture=..., profile=..., on_layer=...): one execution loop with a per-layer hook."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SAMPLES, load_npz
from threadutil import in_threads

import irnorm
from irnorm.runtime.model import RunResult

CHAIN = SAMPLES / "ir" / "gn_l2_chain.xml"  # input_image -> GroupNorm (gn_out) -> NormalizeL2 (l2_out)


@pytest.fixture(scope="module")
def chain():
    m = irnorm.load(CHAIN)
    feeds = load_npz(SAMPLES / "data" / "gn_l2_chain.inputs.npz")
    return m, feeds


def test_default_run_still_returns_a_plain_dict(chain):
    m, feeds = chain
    out = m.run(feeds)
    assert type(out) is dict and list(out) == ["l2_out", "gn_out"]


def test_capture_all_returns_every_executed_layer_in_order(chain):
    m, feeds = chain
    plain = m.run(feeds)
    res = m.run(feeds, capture=True)
    assert isinstance(res, RunResult) and isinstance(res, dict)
    assert list(res) == list(plain) and all(np.array_equal(res[k], plain[k]) for k in plain)
    names = [(c.name, c.type, c.port) for c in res.captures]
    assert names == [("input_image", "Parameter", 0), ("group_norm", "GroupNormalization", 0),
                     ("normalize_l2", "NormalizeL2", 0)]
    idx = [c.index for c in res.captures]
    assert idx == sorted(idx)
    gn = res.captures[1]
    assert gn.layer_id == "5" and gn.version == "opset12" and gn.line == 63 and gn.port_id == 3
    assert gn.shape == (1, 12, 6, 6) and gn.dtype == np.float32
    np.testing.assert_array_equal(gn.array, plain["gn_out"])
    np.testing.assert_array_equal(res.captures[2].array, plain["l2_out"])
    # the input capture is a copy of the caller's array
    (key,) = feeds
    np.testing.assert_array_equal(res.captures[0].array, feeds[key])
    assert not np.shares_memory(res.captures[0].array, feeds[key])
    assert res.profile == [] and res.seconds > 0


def test_captures_are_copies(chain):
    m, feeds = chain
    res = m.run(feeds, capture=True)
    for c in res.captures[1:]:
        assert not any(np.shares_memory(c.array, v) for v in res.values())


def test_capture_by_name_and_id_including_a_folded_constant(chain):
    m, feeds = chain
    res = m.run(feeds, capture=["normalize_l2", "5", "gn_scale"])  # name, id, folded Convert(decompression)
    got = [(c.name, c.type) for c in res.captures]
    assert got == [("gn_scale", "Convert"), ("group_norm", "GroupNormalization"), ("normalize_l2", "NormalizeL2")]
    assert res.captures[0].array.dtype == np.float32 and res.captures[0].shape == (12,)
    assert m.run(feeds, capture="group_norm").captures[0].name == "group_norm"


def test_capture_errors_name_what_exists(chain):
    m, feeds = chain
    with pytest.raises(irnorm.InputError, match=r"no layer named \(or with id\) 'group_nrom'.*did you mean "
                                                 r"'group_norm'") as e:
        m.run(feeds, capture=["group_nrom"])
    assert e.value.code == "IRN066"
    with pytest.raises(irnorm.InputError, match="is a Result and has no output; capture its producer 'normalize_l2'"):
        m.run(feeds, capture=["l2_out/result"])


def test_profile_times_every_executed_layer(chain):
    m, feeds = chain
    res = m.run(feeds, profile=True)
    assert isinstance(res, RunResult) and res.captures == []
    assert [(p.name, p.type) for p in res.profile] == [("group_norm", "GroupNormalization"),
                                                       ("normalize_l2", "NormalizeL2")]
    assert all(p.seconds >= 0 for p in res.profile)
    assert sum(p.seconds for p in res.profile) <= res.seconds


def test_on_layer_sees_layers_as_they_are_produced(chain):
    m, feeds = chain
    seen = []

    def hook(node, outs, seconds):
        seen.append((node.layer.name, [o.shape for o in outs], seconds >= 0))

    out = m.run(feeds, on_layer=hook)
    assert type(out) is dict
    assert seen == [("input_image", [(1, 12, 6, 6)], True), ("group_norm", [(1, 12, 6, 6)], True),
                    ("normalize_l2", [(1, 12, 6, 6)], True)]


def test_capture_profile_and_hook_together(chain):
    m, feeds = chain
    calls = []
    res = m.run(feeds, capture=["normalize_l2"], profile=True, on_layer=lambda n, o, s: calls.append(n.layer.name))
    assert [c.name for c in res.captures] == ["normalize_l2"]
    assert len(res.profile) == 2 and len(calls) == 3


def test_capture_on_a_dynamic_model():
    m = irnorm.load(SAMPLES / "ir" / "group_norm_dynamic.xml")
    spec = m.inputs[0]
    for n in (1, 3):
        shape = [n if d == -1 else d for d in spec.shape]
        x = np.random.default_rng(n).standard_normal(shape).astype(spec.dtype)
        res = m.run({spec.name: x}, capture=True)
        assert res.captures[-1].shape == tuple(shape)


def test_hooked_runs_from_several_threads(chain):
    m, feeds = chain
    ref = m.run(feeds)

    def work(_i: int) -> None:
        for _ in range(5):
            res = m.run(feeds, capture=True, profile=True)
            assert len(res.captures) == 3 and len(res.profile) == 2
            assert all(np.array_equal(res[k], ref[k]) for k in ref)

    assert in_threads(work, 4) == []
