"""run(..., out=...): the explicit opt-in to reuse caller-owned output memory.

Without it every call returns arrays no later call touches; with it the given arrays are written
(directly by the kernel where it can -- checked through on_layer -- else by one copy at the end)
and returned as the results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from irbuilder import IRBuilder, Out
from threadutil import in_threads

import irnorm

SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "ir"


def _feed(m: irnorm.Model, seed: int = 0, dims: dict[int, int] | None = None) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for spec in m.inputs:
        shape = [d if d != -1 else (dims or {}).get(i, 3) for i, d in enumerate(spec.shape)]
        out.append((rng.standard_normal(shape) * 3 + 1).astype(spec.dtype))
    return out


@pytest.mark.parametrize("sample", ["group_norm", "group_norm_f16", "layer_norm_ext", "layer_norm_mvn",
                                    "scale_channel", "normalize_l2", "gn_l2_chain", "trt_instance_norm"])
def test_out_is_written_directly_and_returned(sample: str) -> None:
    m = irnorm.load(SAMPLES / f"{sample}.xml")
    feed = _feed(m)
    want = m.run(feed)

    def fresh():
        return [np.full(s.shape, np.nan, s.dtype) if s.dtype.kind == "f" else np.empty(s.shape, s.dtype)
                for s in m.outputs]

    plain = m.run(feed, out=fresh())  # the fused plan: bit-identical to a plain run
    for spec in m.outputs:
        np.testing.assert_array_equal(plain[spec.name], want[spec.name])
    # with a layer hook every layer runs on its own (the unfused plan): compare with that plan's result
    want = m.run(feed, on_layer=lambda *_: None)
    outs = fresh()
    producers = {}

    def hook(node, arrays, _s):
        for k, a in enumerate(arrays):
            producers[(node.index, k)] = a

    got = m.run(feed, out=outs, on_layer=hook)
    for k, (spec, o, src) in enumerate(zip(m.outputs, outs, m._plan.outputs, strict=True)):
        assert got[spec.name] is o
        np.testing.assert_array_equal(o, want[spec.name])  # bit-identical to a plain run
        if sample == "layer_norm_ext" and k > 0:
            continue  # the mean / inv_std outputs are float64 statistics converted once: copied in
        # the producing layer's kernel wrote into the caller's memory: no extra pass
        assert np.shares_memory(producers[src], o), f"{sample}: {spec.name} was copied, not written in place"


def test_out_by_name_and_alias_and_sequence_with_none(tmp_path: Path) -> None:
    m = irnorm.load(SAMPLES / "group_norm.xml")
    feed = _feed(m)
    want = m.run(feed)[m.outputs[0].name]
    spec = m.outputs[0]
    for key in spec.names:
        o = np.empty(spec.shape, spec.dtype)
        assert m.run(feed, out={key: o})[spec.name] is o
        np.testing.assert_array_equal(o, want)
    r = m.run(feed, out=[None])
    np.testing.assert_array_equal(r[spec.name], want)
    o = np.empty(spec.shape, spec.dtype)
    assert m.run(feed, out=o)[spec.name] is o  # a single array for a single-output model


def test_out_does_not_touch_earlier_results() -> None:
    m = irnorm.load(SAMPLES / "group_norm.xml")
    f1, f2 = _feed(m, 1), _feed(m, 2)
    r1 = m.run(f1)[m.outputs[0].name]
    keep = r1.copy()
    o = np.empty_like(r1)
    m.run(f2, out=[o])
    m.run(f2)
    np.testing.assert_array_equal(r1, keep)
    np.testing.assert_array_equal(o, m.run(f2)[m.outputs[0].name])


def test_out_overlapping_the_input_is_filled_after_the_run() -> None:
    """In place (out is the input): the result is still exact, because a later layer may read the
    input, the out array is written only once everything has run."""
    m = irnorm.load(SAMPLES / "gn_l2_chain.xml")
    (x,) = _feed(m)
    want = m.run([x])[m.outputs[0].name]
    assert want.shape == x.shape and want.dtype == x.dtype
    got = m.run([x], out=[x])
    assert got[m.outputs[0].name] is x
    np.testing.assert_array_equal(x, want)


def test_non_contiguous_out_gets_a_copy() -> None:
    m = irnorm.load(SAMPLES / "group_norm.xml")
    feed = _feed(m)
    spec = m.outputs[0]
    want = m.run(feed)[spec.name]
    f = np.asfortranarray(np.empty(spec.shape, spec.dtype))
    assert not f.flags.c_contiguous or f.ndim < 2
    assert m.run(feed, out=[f])[spec.name] is f
    np.testing.assert_array_equal(f, want)
    big = np.zeros((2,) + tuple(spec.shape), spec.dtype)
    view = big[1]
    m.run(feed, out=[view])
    np.testing.assert_array_equal(big[1], want)
    assert not big[0].any()


def test_out_for_a_constant_and_a_passthrough_output(tmp_path: Path) -> None:
    """Outputs that are no kernel's fresh array (a folded constant, the caller's own input) are copied
    into the out arrays, never aliased to irnorm's constants or to the input."""
    b = IRBuilder("consts")
    x = b.parameter("x", (2, 3))
    c = b.const(np.arange(6, dtype=np.float32).reshape(2, 3), "c")
    b.result(x, "x_out")
    b.result(c, "c_out")
    m = irnorm.load(b.save(tmp_path))
    xin = np.ones((2, 3), np.float32)
    o1, o2 = np.empty((2, 3), np.float32), np.empty((2, 3), np.float32)
    r = m.run([xin], out=[o1, o2])
    assert r[m.outputs[0].name] is o1 and r[m.outputs[1].name] is o2
    np.testing.assert_array_equal(o1, xin)
    np.testing.assert_array_equal(o2, np.arange(6, dtype=np.float32).reshape(2, 3))
    o2[:] = -1
    np.testing.assert_array_equal(m.run([xin])[m.outputs[1].name], np.arange(6, dtype=np.float32).reshape(2, 3))


def test_out_dynamic_model_checks_the_concrete_shape() -> None:
    m = irnorm.load(SAMPLES / "group_norm_dynamic.xml")
    assert m.inputs[0].is_dynamic
    feed = _feed(m, dims={0: 2, 2: 5, 3: 4})
    want = m.run(feed)[m.outputs[0].name]
    o = np.empty(want.shape, want.dtype)
    assert m.run(feed, out=[o])[m.outputs[0].name] is o
    np.testing.assert_array_equal(o, want)
    wrong = np.empty((want.shape[0] + 1,) + want.shape[1:], want.dtype)
    with pytest.raises(irnorm.InputError) as e:
        m.run(feed, out=[wrong])
    assert e.value.diagnostics[0].code == "IRN065"
    assert "shape" in str(e.value)


@pytest.mark.parametrize("bad, fragment", [
    (lambda s: {"nope": np.empty(s.shape, s.dtype)}, "unknown output 'nope'"),
    (lambda s: [np.empty(s.shape[:-1], s.dtype)], "has shape"),
    (lambda s: [np.empty(s.shape, np.float64)], "has dtype float64"),
    (lambda s: [np.empty(s.shape, s.dtype).tolist()], "must be a numpy array"),
    (lambda s: [np.empty(s.shape, s.dtype), np.empty(s.shape, s.dtype)], "the model has 1 outputs"),
    (lambda s: 7, "out= must be a dict"),
])
def test_bad_out_is_a_diagnostic(bad, fragment: str) -> None:
    m = irnorm.load(SAMPLES / "group_norm.xml")
    with pytest.raises(irnorm.InputError) as e:
        m.run(_feed(m), out=bad(m.outputs[0]))
    assert all(d.code == "IRN065" for d in e.value.diagnostics)
    assert fragment in str(e.value)


def _relu_two_results(tmp_path: Path) -> irnorm.Model:
    """x -> Abs (tensor names y, y_alias) -> two Results of that one tensor."""
    b = IRBuilder("relu2")
    x = b.parameter("x", (2, 8))
    (y,) = b.layer("Abs", [x], [((2, 8), "f32")], None, version="opset1", names=["y"])
    lay = b.layers[y.layer]
    lay.outputs[0] = (y.port, y.shape, y.et, ("y", "y_alias"))
    y = Out(y.layer, y.port, y.shape, y.et, ("y", "y_alias"))
    b.result(y, "r1")
    b.result(y, "r2")
    return irnorm.load(b.save(tmp_path))


def test_read_only_overlapping_and_twice_given_outs_are_refused(tmp_path: Path) -> None:
    m = irnorm.load(SAMPLES / "group_norm.xml")
    spec = m.outputs[0]
    ro = np.empty(spec.shape, spec.dtype)
    ro.flags.writeable = False
    with pytest.raises(irnorm.InputError, match="read-only"):
        m.run(_feed(m), out=[ro])
    m2 = _relu_two_results(tmp_path)
    assert len(m2.outputs) == 2
    x = np.ones((2, 8), np.float32)
    buf = np.empty((2, 8), np.float32)
    with pytest.raises(irnorm.InputError, match="overlaps"):
        m2.run([x], out=[buf, buf])
    name = m2.outputs[0].name
    alias = next(n for n in m2.outputs[0].names if n != name)
    with pytest.raises(irnorm.InputError, match="given twice"):
        m2.run([x], out={name: buf, alias: np.empty_like(buf)})


def test_two_results_of_one_tensor_both_filled(tmp_path: Path) -> None:
    m = _relu_two_results(tmp_path)
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
    o1, o2 = np.empty((2, 8), np.float32), np.empty((2, 8), np.float32)
    r = m.run([x], out=[o1, o2])
    assert r[m.outputs[0].name] is o1 and r[m.outputs[1].name] is o2
    np.testing.assert_array_equal(o1, np.abs(x))
    np.testing.assert_array_equal(o2, np.abs(x))


def test_out_from_several_threads() -> None:
    """provide() is per thread: concurrent runs with their own out arrays never swap buffers."""
    m = irnorm.load(SAMPLES / "group_norm.xml")
    spec = m.outputs[0]
    feeds = [_feed(m, s) for s in range(4)]
    wants = [m.run(f)[spec.name] for f in feeds]

    def worker(i: int) -> None:
        o = np.empty(spec.shape, spec.dtype)
        for _ in range(30):
            r = m.run(feeds[i], out=[o])
            assert r[spec.name] is o and np.array_equal(o, wants[i]), "wrong result"

    assert in_threads(worker, 4, timeout=60) == []


def test_idle_pooled_buffers_count_against_max_memory(tmp_path: Path) -> None:
    """The output pool keeps released buffers for reuse; a run trims them so that the pool's idle
    buffers plus the run's planned peak stay within the model's max_memory."""
    from irnorm.kernels.pool import OUTPUTS

    def abs_model(name: str, shape: tuple[int, ...], **kw) -> irnorm.Model:
        b = IRBuilder(name)
        x = b.parameter("x", shape)
        (y,) = b.layer("Abs", [x], [(shape, "f32")], None, version="opset1", names=["y"])
        b.result(y)
        return irnorm.load(b.save(tmp_path / name), **kw)

    OUTPUTS.clear()
    big = abs_model("big", (512, 1024))  # 2 MiB output: pooled
    big.run([np.ones((512, 1024), np.float32)])  # result dropped: its buffer is idle in the pool
    assert OUTPUTS.tracked_bytes() == 2 << 20
    roomy = abs_model("roomy", (4, 4))
    roomy.run([np.ones((4, 4), np.float32)])
    assert OUTPUTS.tracked_bytes() == 2 << 20, "within the default limit the buffer is kept for reuse"
    tight = abs_model("tight", (4, 4), max_memory=1 << 20)
    np.testing.assert_array_equal(tight.run([-np.ones((4, 4), np.float32)])["y"], np.ones((4, 4)))
    assert OUTPUTS.tracked_bytes() == 0, "a 1 MiB limit leaves no room for an idle 2 MiB buffer"
    held = big.run([np.ones((512, 1024), np.float32)])["y"]
    tight.run([np.ones((4, 4), np.float32)])
    assert OUTPUTS.tracked_bytes() == 2 << 20, "a buffer the caller still holds is not the pool's to free"
    np.testing.assert_array_equal(held, 1.0)
