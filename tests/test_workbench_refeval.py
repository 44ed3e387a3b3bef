"""The float64 graph evaluator (irnorm/workbench/refeval.py): one table entry per registered op,
each plumbing reference checked against OpenVINO's CPU plugin layer by layer, and every sample
model agreeing with it."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SAMPLES, load_npz, sample_names
from ovutil import requires_openvino

import irnorm
from irnorm.ops.base import all_ops, lookup
from irnorm.workbench import refeval
from irnorm.workbench.compare import run_openvino
from irnorm.workbench.stats import error_stats

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")
ov15 = pytest.importorskip("openvino.opset15")


def test_every_registered_op_has_a_reference_entry():
    missing = [f"{c.type}-{c.version}" for c in all_ops() if refeval.reference_for(c.type, c.version) is None]
    assert not missing, (f"no float64 reference for {missing}: add a function and a line to REFERENCES in "
                         "irnorm/workbench/refeval.py (irnorm compare --against reference needs it)")


def test_versions_that_differ_in_meaning_are_told_apart():
    assert refeval.reference_for("MVN", 1) is not refeval.reference_for("MVN", 6)
    assert refeval.reference_for("BatchNormInference", 1) is not refeval.reference_for("BatchNormInference", 5)
    assert refeval.reference_for("MVN", 7) is None  # no silent fallback for an unknown version
    assert refeval.reference_for("normalizel2", 1) is refeval.reference_for("NormalizeL2", 1)


def _reference_values(m, feeds):
    """{(layer name, port): float64 reference value} for every executed layer."""
    runner = refeval.ReferenceRunner(m.graph)
    got, notes = {}, {}

    def hook(node, outs, _s):
        ref, note = runner.step(node, outs)
        if node.op.type != "Parameter":
            for k, v in enumerate(ref):
                got[(node.layer.name, k)] = v
            notes[node.layer.name] = note

    m.run(feeds, on_layer=hook)
    return got, notes


def _need(*type_opsets):
    for t, opset in type_opsets:
        if lookup(t, opset) is None:
            pytest.skip(f"{t} in {opset} is not registered in irnorm yet")


def _check_against_openvino(tmp_path, model, feeds, name="m", patch=None):
    xml = tmp_path / f"{name}.xml"
    ov.save_model(model, str(xml), compress_to_fp16=False)
    if patch is not None:
        xml.write_text(patch(xml.read_text()))
    m = irnorm.load(xml)
    ref, notes = _reference_values(m, feeds)
    assert not any(notes.values()), notes
    ov_vals, _ = run_openvino(m, feeds, "f32")
    checked = 0
    for key, exp in ov_vals.items():
        assert not isinstance(exp, str), (key, exp)
        got = ref[key]
        if exp.dtype.kind in "iub":
            np.testing.assert_array_equal(got, exp, err_msg=str(key))
        else:
            st = error_stats(got, exp, rtol=2e-5, atol=2e-6)
            assert st.passed, (key, st.summary())
        checked += 1
    assert checked == len(ref)
    return ref


def _param(shape, dtype=np.float32, name="x"):
    p = ops.parameter(shape, dtype, name=name)
    p.output(0).get_tensor().set_names({name})
    return p


def _named(node, name):
    node.set_friendly_name(name)
    return node


@requires_openvino
@pytest.mark.parametrize("broadcast", ["numpy", "none"])
def test_binary_elementwise_references_match_openvino(tmp_path, broadcast):
    kinds = ["Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum", "Power", "SquaredDifference"]
    _need(*[(k, "opset1") for k in kinds])
    a = _param([2, 3, 4], name="a")
    b = _param([3, 1] if broadcast == "numpy" else [2, 3, 4], name="b")
    pos = _named(ops.add(ops.abs(a), ops.constant(np.float32(0.5))), "pos")
    outs = []
    for k in kinds:
        fn = {"Add": ops.add, "Subtract": ops.subtract, "Multiply": ops.multiply, "Divide": ops.divide,
              "Maximum": ops.maximum, "Minimum": ops.minimum, "Power": ops.power,
              "SquaredDifference": ops.squared_difference}[k]
        lhs = pos if k == "Power" else a
        outs.append(ops.result(_named(fn(lhs, b, auto_broadcast=broadcast), k.lower())))
    rng = np.random.default_rng(0)
    feeds = {"a": rng.standard_normal([2, 3, 4]).astype(np.float32),
             "b": rng.uniform(0.5, 2.0, [3, 1] if broadcast == "numpy" else [2, 3, 4]).astype(np.float32)}
    _check_against_openvino(tmp_path, ov.Model(outs, [a, b]), feeds)


@requires_openvino
def test_integer_divide_truncating_matches_openvino(tmp_path):
    _need(("Divide", "opset1"))
    a, b = _param([8], np.int32, "a"), _param([8], np.int32, "b")
    d = _named(ops.divide(a, b), "div")

    def patch(text):  # the Python API cannot build m_pythondiv=false; the IR attribute can
        assert text.count('m_pythondiv="true"') == 1
        return text.replace('m_pythondiv="true"', 'm_pythondiv="false"')

    ref = _check_against_openvino(tmp_path, ov.Model([ops.result(d)], [a, b]), INT_DIV_FEEDS, patch=patch)
    assert ref[("div", 0)].tolist() == [3, -3, -3, 3, 0, 2, -2, 0]


INT_DIV_FEEDS = {"a": np.array([7, -7, 7, -7, 0, 9, -9, 1], np.int32),
                 "b": np.array([2, 2, -2, -2, 3, 4, 4, -3], np.int32)}


@requires_openvino
def test_integer_python_division_floors_but_the_cpu_plugin_truncates(tmp_path):
    """m_pythondiv="true" (the default) is floor division in OpenVINO's reference (its constant
    folding gives -4 for -7/2); the CPU plugin 2026.4 truncates (-3).  The reference follows the
    spec, and irnorm compare finds the CPU's deviation and names the layer."""
    _need(("Divide", "opset1"))
    a, b = _param([8], np.int32, "a"), _param([8], np.int32, "b")
    model = ov.Model([ops.result(_named(ops.divide(a, b), "div"))], [a, b])
    xml = tmp_path / "div.xml"
    ov.save_model(model, str(xml), compress_to_fp16=False)
    m = irnorm.load(xml)
    ref, _ = _reference_values(m, INT_DIV_FEEDS)
    floor = [3, -4, -4, 3, 0, 2, -3, -1]
    assert ref[("div", 0)].tolist() == floor
    folded = ov.Model([ops.result(ops.divide(ops.constant(INT_DIV_FEEDS["a"]), ops.constant(INT_DIV_FEEDS["b"])))], [])
    assert ov.Core().compile_model(folded, "CPU")({})[0].tolist() == floor  # OpenVINO's reference floors
    cpu, _ = run_openvino(m, INT_DIV_FEEDS)
    assert cpu[("div", 0)].tolist() == [3, -3, -3, 3, 0, 2, -2, 0]  # the CPU plugin truncates
    report = irnorm.compare(m, "openvino", INT_DIV_FEEDS)
    assert report.first_divergence is not None and report.first_divergence.name == "div"
    assert report.first_divergence.stats.mismatches == 4
    assert irnorm.compare(m, "reference", INT_DIV_FEEDS).ok


@requires_openvino
def test_unary_references_match_openvino(tmp_path):
    kinds = {"Sqrt": ops.sqrt, "Abs": ops.abs, "Negative": ops.negative, "Exp": ops.exp, "Log": ops.log,
             "Erf": ops.erf, "Sigmoid": ops.sigmoid, "Tanh": ops.tanh}
    _need(*[(k, "opset1") for k in kinds])
    x = _param([3, 5])
    pos = _named(ops.add(ops.abs(x), ops.constant(np.float32(0.1))), "pos")
    outs = [ops.result(_named(fn(pos if k in ("Sqrt", "Log") else x), k.lower())) for k, fn in kinds.items()]
    feeds = {"x": np.random.default_rng(1).standard_normal([3, 5]).astype(np.float32)}
    _check_against_openvino(tmp_path, ov.Model(outs, [x]), feeds)


@requires_openvino
@pytest.mark.parametrize("keep", [False, True])
def test_reduction_references_match_openvino(tmp_path, keep):
    kinds = {"ReduceMean": ops.reduce_mean, "ReduceSum": ops.reduce_sum, "ReduceMax": ops.reduce_max,
             "ReduceL2": ops.reduce_l2}
    _need(*[(k, "opset4") for k in kinds])
    x = _param([2, 3, 4])
    outs = []
    for i, axes in enumerate(([1], [-1, 0], [0, 1, 2])):
        for k, fn in kinds.items():
            outs.append(ops.result(_named(fn(x, ops.constant(np.array(axes, np.int64)), keep), f"{k}_{i}")))
    feeds = {"x": np.random.default_rng(2).standard_normal([2, 3, 4]).astype(np.float32)}
    _check_against_openvino(tmp_path, ov.Model(outs, [x]), feeds)


@requires_openvino
def test_shape_op_references_match_openvino(tmp_path):
    _need(("Reshape", "opset1"), ("Squeeze", "opset1"), ("Squeeze", "opset15"), ("Unsqueeze", "opset1"),
          ("ShapeOf", "opset3"), ("Gather", "opset8"), ("Broadcast", "opset3"), ("Convert", "opset1"))
    x = _param(ov.PartialShape([-1, 1, 3, 4]))  # dynamic batch: ShapeOf runs instead of folding
    y = _param([2, 1, 3, 4], name="y")  # static: a Squeeze without axes needs a static rank on CPU
    outs = [
        _named(ops.reshape(x, ops.constant(np.array([0, -1], np.int64)), True), "reshape_zero"),
        _named(ops.reshape(x, ops.constant(np.array([6, 4], np.int64)), False), "reshape_plain"),
        _named(ops.squeeze(x, ops.constant(np.array([1], np.int64))), "squeeze_axes"),
        _named(ov15.squeeze(y), "squeeze_all"),
        _named(ops.unsqueeze(x, ops.constant(np.array([0, -1], np.int64))), "unsqueeze"),
        _named(ops.shape_of(x, "i32"), "shape_of"),
        _named(ops.gather(x, ops.constant(np.array([-1, 0, 2, 0], np.int64)), ops.constant(np.int64(2))), "gather"),
        _named(ops.gather(ov15.squeeze(y), ops.constant(np.array([[2, 0], [1, 1]], np.int64)),
                          ops.constant(np.int64(1)), 1), "gather_batch"),
        _named(ops.broadcast(ops.constant(np.arange(4, dtype=np.float32)), ops.constant(np.array([2, 3, 4]))),
               "bcast_numpy"),
        _named(ops.broadcast(ops.constant(np.arange(3, dtype=np.float32).reshape(3, 1)),
                             ops.constant(np.array([2, 1, 4])), broadcast_spec="BIDIRECTIONAL"), "bcast_bidir"),
        _named(ops.broadcast(ops.constant(np.arange(3, dtype=np.float32)), ops.constant(np.array([3, 4])),
                             ops.constant(np.array([0])), broadcast_spec="EXPLICIT"), "bcast_explicit"),
        _named(ops.convert(ops.multiply(x, ops.constant(np.float32(3.0))), "i32"), "to_i32"),
        _named(ops.convert(x, "boolean"), "to_bool"),
    ]
    # the constant-only Broadcasts fold at load time; add x so they are executed and compared
    outs = [ops.add(o, y) if o.get_friendly_name().startswith("bcast") else o for o in outs]
    for o in outs:
        if o.get_friendly_name().startswith("Add"):
            o.set_friendly_name("plus_" + o.input_value(0).get_node().get_friendly_name())
    x_val = np.random.default_rng(3).standard_normal([2, 1, 3, 4]).astype(np.float32)
    x_val[0, 0, 0, :2] = 0.0
    model = ov.Model([ops.result(o) for o in outs], [x, y])
    ref = _check_against_openvino(tmp_path, model, {"x": x_val, "y": x_val[::-1].copy()})
    assert ref[("shape_of", 0)].dtype == np.int32 and list(ref[("shape_of", 0)]) == [2, 1, 3, 4]
    assert ref[("to_bool", 0)].dtype == np.bool_


@pytest.mark.parametrize("name", sample_names())
def test_every_sample_agrees_with_the_float64_reference(name):
    """irnorm vs its own oracle on every sample (extension ops included): no divergence, no gaps."""
    m = irnorm.load(SAMPLES / "ir" / f"{name}.xml")
    feeds = load_npz(SAMPLES / "data" / f"{name}.inputs.npz")
    for spec in m.inputs:
        for k in spec.names:
            if k in feeds and feeds[k].dtype.kind == "V":  # bf16 stored by np.savez as 2-byte voids
                feeds[k] = feeds[k].view(spec.dtype)
    report = irnorm.compare(m, "reference", feeds)
    assert report.skipped == [], [(r.name, r.note) for r in report.skipped]
    assert report.ok, report.summary()
    assert len(report.layers) >= 1


def test_reference_runner_drops_values_after_their_last_use():
    m = irnorm.load(SAMPLES / "ir" / "gn_l2_chain.xml")
    feeds = load_npz(SAMPLES / "data" / "gn_l2_chain.inputs.npz")
    runner = refeval.ReferenceRunner(m.graph)
    live = []
    m.run(feeds, on_layer=lambda n, o, s: (runner.step(n, o), live.append(len(runner.values))))
    # parameter; GN (consumes the parameter: dropped); L2 (GN's output is still read by a Result)
    assert max(live) <= 3
    assert ("input_image" not in {m.graph.nodes[k[0]].layer.name for k in runner.values})


def test_correct_f16_overflow_is_not_a_divergence(tmp_path):
    """x (f16) * 1000 overflows f16 for |x| > 65.5: irnorm gives +-inf, as rounding to f16 must; the
    float64 reference saturates to the declared type's range too, so the layer and the one after it
    (inf - inf = NaN on both sides) agree, and a wrong finite answer would still diverge."""
    from irbuilder import IRBuilder

    b = IRBuilder("ovf")
    x = b.parameter("x", (1, 6), "f16")
    k = b.const(np.array([1000.0], np.float16), "k")
    (y,) = b.layer("Multiply", [x, k], [((1, 6), "f16")], None, version="opset1", names=["y"])
    (z,) = b.layer("Subtract", [y, y], [((1, 6), "f16")], None, version="opset1", names=["z"])
    b.result(y)
    b.result(z)
    xml = b.save(tmp_path)
    feed = {"x": np.array([[-100, -60, 0.5, 60, 65.5, 100]], np.float16)}
    rep = irnorm.compare(str(xml), against="reference", inputs=feed)
    assert rep.ok, rep.table()
    got = irnorm.load(xml).run(feed)
    assert np.isinf(got["y"][0, [0, 5]]).all() and np.isfinite(got["y"][0, 1:4]).all()
    assert np.isnan(got["z"][0, [0, 5]]).all()
