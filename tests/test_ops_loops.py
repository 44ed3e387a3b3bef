"""TensorIterator-1 and Loop-5: bodies read, checked and run.  Models are built with OpenVINO's Python API,
written by ``openvino.save_model`` and compared with OpenVINO's CPU plugin (and irnorm's float64 reference);
malformed files are OpenVINO-written ones edited."""

from __future__ import annotations

import re

import numpy as np
import pytest
from ovutil import compare_with_openvino, ov_run, save

import irnorm
from irnorm.workbench.compare import compare

ov = pytest.importorskip("openvino")
o8 = pytest.importorskip("openvino.opset8")

RNG = np.random.default_rng(5)
W = RNG.standard_normal((3, 4)).astype(np.float32) * 0.5
U = RNG.standard_normal((4, 4)).astype(np.float32) * 0.5
B = RNG.standard_normal(4).astype(np.float32) * 0.1


def _i64(v):
    return o8.constant(np.array(v, np.int64))


def _true():
    """A body Result that is always true (OpenVINO's Python API needs a body condition to infer a Loop's shapes)."""
    return o8.result(o8.constant(np.array(True)))


def _named(outputs, params):
    for k, o in enumerate(outputs):
        o.get_tensor().set_names({f"y{k}"})
    return ov.Model([o8.result(o) for o in outputs], params)


def _rnn_ti(tmp_path, name, dims=(2, 5, 3), reverse=False, out_reverse=False):
    """h_t = tanh(x_t W + h_{t-1} U + b) over axis 1 of x: the last h and every h concatenated along axis 1."""
    x = o8.parameter(list(dims), np.float32, name="x")
    h0 = o8.parameter([dims[0], 4], np.float32, name="h0")
    xi = o8.parameter([dims[0], 1, 3], np.float32)
    hi = o8.parameter([dims[0], 4], np.float32)
    pre = o8.add(o8.add(o8.matmul(o8.squeeze(xi, _i64([1])), o8.constant(W), False, False),
                        o8.matmul(hi, o8.constant(U), False, False)), o8.constant(B))
    h = o8.tanh(pre)
    rh = o8.result(h)
    rseq = o8.result(o8.unsqueeze(h, _i64([1])))
    ti = o8.tensor_iterator()
    ti.set_body(ov.Model([rh, rseq], [xi, hi]))
    if reverse:
        ti.set_sliced_input(xi, x.output(0), -1, -1, 1, 0, 1)
    else:
        ti.set_sliced_input(xi, x.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(hi, h0.output(0), rh.output(0))
    last = ti.get_iter_value(rh.output(0), -1)
    seq = ti.get_concatenated_slices(rseq.output(0), *((-1, -1, 1, 0) if out_reverse else (0, 1, 1, -1)), 1)
    return save(_named([last, seq], [x, h0]), tmp_path, name)


def _rnn_numpy(x, h, reverse=False):
    hs = []
    steps = range(x.shape[1])
    for t in (reversed(steps) if reverse else steps):
        h = np.tanh(x[:, t] @ W + h @ U + B)
        hs.append(h)
    return h, np.stack(hs, axis=1)


def test_rnn_cell_tensor_iterator_matches_openvino(tmp_path):
    """The pattern older exports and OpenVINO's LowLatency transformations leave: MatMul + Add + Tanh over time."""
    xml = _rnn_ti(tmp_path, "rnn")
    m = irnorm.load(xml)
    assert [o.shape for o in m.outputs] == [(2, 4), (2, 5, 4)]
    x = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    h0 = RNG.standard_normal((2, 4)).astype(np.float32)
    got = compare_with_openvino(xml, {"x": x, "h0": h0}, tol=(1e-5, 1e-6))
    last, seq = _rnn_numpy(x, h0)
    assert np.allclose(got["y0"], last, atol=1e-5) and np.allclose(got["y1"], seq, atol=1e-5)
    report = compare(m, "reference", {"x": x, "h0": h0})
    assert report.ok, report.table()
    assert any(r.type == "TensorIterator" and r.status == "ok" for r in report.layers), report.table()


@pytest.mark.parametrize("reverse,out_reverse", [(True, False), (True, True), (False, True)])
def test_reversed_iteration_matches_openvino(tmp_path, reverse, out_reverse):
    xml = _rnn_ti(tmp_path, "rev", reverse=reverse, out_reverse=out_reverse)
    x = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    h0 = RNG.standard_normal((2, 4)).astype(np.float32)
    got = compare_with_openvino(xml, {"x": x, "h0": h0}, tol=(1e-5, 1e-6))
    last, seq = _rnn_numpy(x, h0, reverse)
    assert np.allclose(got["y0"], last, atol=1e-5)
    assert np.allclose(got["y1"], seq[:, ::-1] if out_reverse else seq, atol=1e-5)


def test_tensor_iterator_with_dynamic_dims(tmp_path):
    """Batch and time dynamic: the number of iterations and the concatenated dim come from the run's input."""
    xml = _rnn_ti(tmp_path, "rnn_dyn", dims=(-1, -1, 3))
    m = irnorm.load(xml)
    assert [o.shape for o in m.outputs] == [(-1, 4), (-1, -1, 4)]
    for b, t in ((1, 1), (3, 7), (2, 2)):
        x = RNG.standard_normal((b, t, 3)).astype(np.float32)
        h0 = RNG.standard_normal((b, 4)).astype(np.float32)
        got = compare_with_openvino(xml, {"x": x, "h0": h0}, tol=(1e-5, 1e-6))
        assert got["y1"].shape == (b, t, 4)


def _running_sum_loop(tmp_path, name, trip=None, limit=10.0):
    """acc += x while sum(acc) < limit, at most trip_count times; outputs: the last acc, every acc
    concatenated (a dynamic dim), the last iteration's index (as f32)."""
    x = o8.parameter([3], np.float32, name="x")
    params = [x]
    if trip is None:
        tc = o8.parameter([], np.int64, name="tc")
        params.append(tc)
    else:
        tc = o8.constant(np.int64(trip))
    it = o8.parameter([1], np.int64)
    acc = o8.parameter([3], np.float32)
    xi = o8.parameter([3], np.float32)
    nacc = o8.add(acc, xi)
    cond = o8.less(o8.reduce_sum(nacc, _i64([0]), False), o8.constant(np.float32(limit)))
    r_acc, r_c = o8.result(nacc), o8.result(cond)
    r_row = o8.result(o8.unsqueeze(nacc, _i64([0])))
    r_it = o8.result(o8.convert(it, "f32"))
    lp = o8.loop(tc, o8.constant(np.array(True)))
    lp.set_function(ov.Model([r_c, r_acc, r_row, r_it], [it, acc, xi]))
    lp.set_special_body_ports([0, 0])
    lp.set_merged_input(acc, x.output(0), r_acc.output(0))
    lp.set_invariant_input(xi, x.output(0))
    outs = [lp.get_iter_value(r_acc.output(0), -1), lp.get_concatenated_slices(r_row.output(0), 0, 1, 1, -1, 0),
            lp.get_iter_value(r_it.output(0), -1)]
    return save(_named(outs, params), tmp_path, name)


def test_loop_running_sum_with_a_data_dependent_stop(tmp_path):
    xml = _running_sum_loop(tmp_path, "sum")
    m = irnorm.load(xml)
    assert [o.shape for o in m.outputs] == [(3,), (-1, 3), (1,)]
    for xv, tc, rows in (([1, 2, 0.5], 100, 2), ([1, 2, 0.5], 1, 1), ([-1, 2, 0.5], -1, 6),
                         ([0.25, 0.25, 0.5], -1, 9), ([1, 2, 0.5], 3, 2)):
        feeds = {"x": np.array(xv, np.float32), "tc": np.array(tc)}
        got = compare_with_openvino(xml, feeds, tol=(0, 0))
        assert got["y1"].shape == (rows, 3) and got["y2"][0] == rows - 1
        report = compare(m, "reference", feeds)
        assert report.ok, report.table()


def test_loop_with_a_constant_trip_count(tmp_path):
    """trip_count 4 and a condition that stays true: OpenVINO and irnorm both know the concatenated dim."""
    xml = _running_sum_loop(tmp_path, "const4", trip=4, limit=1e9)
    m = irnorm.load(xml)
    assert m.outputs[1].shape == (-1, 3)  # (the body condition is data-dependent: OpenVINO declares it so too)
    got = compare_with_openvino(xml, {"x": np.array([1, 2, 3], np.float32)}, tol=(0, 0))
    assert np.array_equal(got["y1"], np.arange(2, 6, dtype=np.float32)[:, None] * [1, 2, 3])
    # a data-dependent stop with a constant trip count
    xml = _running_sum_loop(tmp_path, "const50", trip=50, limit=30.0)
    got = compare_with_openvino(xml, {"x": np.array([1, 2, 3], np.float32)}, tol=(0, 0))
    assert got["y1"].shape == (4, 3)


def test_loop_with_a_constant_trip_count_and_a_constant_condition_has_static_outputs(tmp_path):
    """A constant body condition, trip_count 3, a sliced input and the current iteration: every shape is known."""
    x = o8.parameter([3, 2], np.float32, name="x")
    it = o8.parameter([], np.int32)
    xi = o8.parameter([1, 2], np.float32)
    acc = o8.parameter([1, 2], np.float32)
    nacc = o8.add(o8.multiply(acc, o8.constant(np.float32(2))), o8.multiply(xi, o8.convert(it, "f32")))
    r_acc = o8.result(nacc)
    r_seq = o8.result(o8.add(nacc, xi))
    lp = o8.loop(o8.constant(np.int64(3)), o8.constant(np.array(True)))
    lp.set_function(ov.Model([r_acc, r_seq, _true()], [it, xi, acc]))
    lp.set_special_body_ports([0, 2])
    lp.set_sliced_input(xi, x.output(0), 0, 1, 1, -1, 0)
    lp.set_merged_input(acc, o8.constant(np.ones((1, 2), np.float32)).output(0), r_acc.output(0))
    outs = [lp.get_iter_value(r_acc.output(0), -1), lp.get_concatenated_slices(r_seq.output(0), 0, 1, 1, -1, 0)]
    xml = save(_named(outs, [x]), tmp_path, "static_loop")
    m = irnorm.load(xml)
    assert [o.shape for o in m.outputs] == [(1, 2), (3, 2)]
    compare_with_openvino(xml, {"x": RNG.standard_normal((3, 2)).astype(np.float32)}, tol=(1e-6, 1e-6))


def test_a_merged_value_that_grows(tmp_path):
    """The body concatenates a row to its merged value each iteration: its Parameter is dynamic in that dim, and
    the body's shape rules are checked again at each new size."""
    x = o8.parameter([1, 3], np.float32, name="x")
    tc = o8.parameter([], np.int64, name="tc")
    acc = o8.parameter([-1, 3], np.float32)
    xi = o8.parameter([1, 3], np.float32)
    grown = o8.concat([acc, o8.multiply(xi, o8.constant(np.float32(2)))], 0)
    r = o8.result(grown)
    r_sum = o8.result(o8.reduce_sum(grown, _i64([0, 1]), False))
    lp = o8.loop(tc, o8.constant(np.array(True)))
    lp.set_function(ov.Model([r, r_sum, _true()], [acc, xi]))
    lp.set_special_body_ports([-1, 2])
    lp.set_merged_input(acc, x.output(0), r.output(0))
    lp.set_invariant_input(xi, x.output(0))
    outs = [lp.get_iter_value(r.output(0), -1), lp.get_concatenated_slices(r_sum.output(0), 0, 1, 1, -1, 0)]
    xml = save(_named(outs, [x, tc]), tmp_path, "grow")
    for n in (1, 4):
        got = compare_with_openvino(xml, {"x": np.array([[1, 2, 3]], np.float32), "tc": np.array(n)}, tol=(0, 0))
        assert got["y0"].shape == (n + 1, 3) and got["y1"].shape == (n,)


def test_zero_iterations(tmp_path):
    """trip_count 0: the merged value keeps its initial value and the concatenation is empty, as on OpenVINO;
    an output that only the body computes has no value (OpenVINO returns its buffer's content): IRN064."""
    xml = _running_sum_loop(tmp_path, "zero")
    m = irnorm.load(xml)
    x = np.array([1, 2, 0.5], np.float32)
    expected = ov_run(xml, {"x": x, "tc": np.array(0)})
    with pytest.raises(irnorm.InputError) as e:
        m.run({"x": x, "tc": np.array(0)})
    assert e.value.diagnostics[0].code == "IRN064" and "ran no iteration" in str(e.value)
    assert np.array_equal(expected["y0"], x) and expected["y1"].shape == (0, 3)


def test_the_iteration_ceiling(tmp_path, monkeypatch):
    """trip_count -1 and a condition that never turns false: IRN064 at the ceiling, which the user sets."""
    xml = _running_sum_loop(tmp_path, "forever", limit=np.inf)
    m = irnorm.load(xml)
    feeds = {"x": np.array([1, 2, 0.5], np.float32), "tc": np.array(-1)}
    monkeypatch.setenv("IRNORM_MAX_LOOP_ITERATIONS", "50")
    with pytest.raises(irnorm.InputError) as e:
        m.run(feeds)
    assert e.value.diagnostics[0].code == "IRN064"
    assert "reached 50 iterations" in str(e.value) and "IRNORM_MAX_LOOP_ITERATIONS" in str(e.value)
    assert m.run({**feeds, "tc": np.array(50)})["y1"].shape == (50, 3)  # exactly the ceiling: fine
    monkeypatch.setenv("IRNORM_MAX_LOOP_ITERATIONS", "zero")
    with pytest.raises(irnorm.ArgumentError):
        m.run(feeds)


def test_concatenated_outputs_count_against_the_memory_limit(tmp_path, monkeypatch):
    x = o8.parameter([1 << 14], np.float32, name="x")
    tc = o8.parameter([], np.int64, name="tc")
    xi = o8.parameter([1 << 14], np.float32)
    r = o8.result(o8.unsqueeze(o8.negative(xi), _i64([0])))
    lp = o8.loop(tc, o8.constant(np.array(True)))
    lp.set_function(ov.Model([r, _true()], [xi]))
    lp.set_special_body_ports([-1, 1])
    lp.set_invariant_input(xi, x.output(0))
    xml = save(_named([lp.get_concatenated_slices(r.output(0), 0, 1, 1, -1, 0)], [x, tc]), tmp_path, "mem")
    m = irnorm.load(xml, max_memory=8 << 20)
    assert m.run({"x": np.ones(1 << 14, np.float32), "tc": np.array(10)})["y0"].shape == (10, 1 << 14)
    with pytest.raises(irnorm.ResourceLimitError) as e:
        m.run({"x": np.ones(1 << 14, np.float32), "tc": np.array(-1)})  # 64 KiB an iteration, no end
    assert e.value.diagnostics[0].code == "IRN051"


def test_a_loop_past_its_sliced_input_is_refused(tmp_path):
    """OpenVINO's CPU plugin fails too (an assertion in its TensorIterator node)."""
    x = o8.parameter([4, 3], np.float32, name="x")
    tc = o8.parameter([], np.int64, name="tc")
    xi = o8.parameter([1, 3], np.float32)
    acc = o8.parameter([1, 3], np.float32)
    r = o8.result(o8.add(acc, xi))
    lp = o8.loop(tc, o8.constant(np.array(True)))
    lp.set_function(ov.Model([r, _true()], [xi, acc]))
    lp.set_special_body_ports([-1, 1])
    lp.set_sliced_input(xi, x.output(0), 0, 1, 1, -1, 0)
    lp.set_merged_input(acc, o8.constant(np.zeros((1, 3), np.float32)).output(0), r.output(0))
    xml = save(_named([lp.get_iter_value(r.output(0), -1)], [x, tc]), tmp_path, "past")
    xv = np.arange(12, dtype=np.float32).reshape(4, 3)
    for n in (2, 4):
        compare_with_openvino(xml, {"x": xv, "tc": np.array(n)}, tol=(0, 0))
    with pytest.raises(irnorm.InputError) as e:
        irnorm.load(xml).run({"x": xv, "tc": np.array(-1)})
    assert e.value.diagnostics[0].code == "IRN064" and "past its sliced inputs' 4 parts" in str(e.value)


def test_nested_loops(tmp_path):
    """A TensorIterator inside a Loop's body: the outer body loads the inner one through the same loader."""
    x = o8.parameter([2, 5, 3], np.float32, name="x")
    h0 = o8.parameter([2, 4], np.float32, name="h0")
    hp = o8.parameter([2, 4], np.float32)
    xp = o8.parameter([2, 5, 3], np.float32)
    xi = o8.parameter([2, 1, 3], np.float32)
    hi = o8.parameter([2, 4], np.float32)
    h = o8.tanh(o8.add(o8.matmul(o8.squeeze(xi, _i64([1])), o8.constant(W), False, False),
                       o8.matmul(hi, o8.constant(U), False, False)))
    rh = o8.result(h)
    ti = o8.tensor_iterator()
    ti.set_body(ov.Model([rh], [xi, hi]))
    ti.set_sliced_input(xi, xp.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(hi, hp.output(0), rh.output(0))
    r_outer = o8.result(ti.get_iter_value(rh.output(0), -1))
    lp = o8.loop(o8.constant(np.int64(3)), o8.constant(np.array(True)))
    lp.set_function(ov.Model([r_outer, _true()], [hp, xp]))
    lp.set_special_body_ports([-1, 1])
    lp.set_merged_input(hp, h0.output(0), r_outer.output(0))
    lp.set_invariant_input(xp, x.output(0))
    xml = save(_named([lp.get_iter_value(r_outer.output(0), -1)], [x, h0]), tmp_path, "nested")
    compare_with_openvino(xml, {"x": RNG.standard_normal((2, 5, 3)).astype(np.float32),
                                "h0": np.zeros((2, 4), np.float32)}, tol=(1e-5, 1e-6))


# ---- malformed files ------------------------------------------------------------------------------------


@pytest.fixture
def rnn(tmp_path):
    return _rnn_ti(tmp_path, "src")


@pytest.fixture
def loop(tmp_path):
    return _running_sum_loop(tmp_path, "loopsrc")


def _edited(src, name, old, new, count=1):
    text = src.read_text(encoding="utf-8")
    assert re.search(old, text), old
    out = src.parent / f"{name}.xml"
    out.write_text(re.sub(old, new, text, count=count), encoding="utf-8")
    out.with_suffix(".bin").write_bytes(src.with_suffix(".bin").read_bytes())
    return out


def _codes(xml):
    errs = [d for d in irnorm.check(xml) if d.severity == "error"]
    with pytest.raises(irnorm.IrnormError):
        irnorm.load(xml)
    return [(d.code, d.message) for d in errs]


@pytest.mark.parametrize("old,new,code,fragment", [
    (r'(<input axis="1" external_port_id="0" internal_layer_id=)"0"', r'\1"77"', "IRN013", "has no layer 77"),
    (r'<input external_port_id="1" internal_layer_id="1"', '<input external_port_id="9" internal_layer_id="1"',
     "IRN013", "input port 9 is not a data input"),
    (r'<input axis="1" external_port_id="0" internal_layer_id="0"', '<input axis="7" external_port_id="0" '
     'internal_layer_id="0"', "IRN023", "sliced on axis 7, out of range"),
    (r'<input axis="1" (external_port_id="0" internal_layer_id="0") start="0" end="-1" stride="1" part_size="1"',
     r'<input axis="1" \1 start="0" end="-1" stride="2" part_size="2"', "IRN032", "whole parts of 2"),
    (r'stride="1" part_size="1"', 'stride="2" part_size="1"', "IRN023", "part_size = |stride|"),
    (r'start="0" end="-1"', 'start="1" end="-1"', "IRN023", "where OpenVINO's spec and its CPU plugin agree"),
    (r'stride="1" part_size="1"', 'stride="one" part_size="1"', "IRN021", "is not an integer"),
    (r'<back_edges>\s*<edge from-layer="(\d+)" to-layer="1"', r'<back_edges><edge from-layer="\1" to-layer="3"',
     "IRN013", "to-layer 3 of the body is not a Parameter"),
    (r'<back_edges>\s*<edge from-layer="\d+"', '<back_edges><edge from-layer="2"', "IRN013",
     "from-layer 2 of the body is not a Result"),
    (r'<back_edges>\s*<edge from-layer="\d+"', '<back_edges><edge from-layer="99"', "IRN013", "has no layer 99"),
    (r'<back_edges>\s*<edge from-layer="(\d+)" to-layer="1"', r'<back_edges><edge from-layer="\1" to-layer="0"',
     "IRN013", "it is a sliced input"),
    (r'<output external_port_id="2"', '<output external_port_id="5"', "IRN013", "has no output port 5"),
])
def test_broken_tensor_iterators_are_refused(rnn, old, new, code, fragment):
    got = _codes(_edited(rnn, "bad", old, new))
    assert any(c == code and fragment in m for c, m in got), got


def test_missing_body_and_stray_back_edges(rnn, loop):
    text = rnn.read_text(encoding="utf-8")
    body = re.search(r"\s*<body>.*?</body>", text, flags=re.S).group(0)
    got = _codes(_edited(rnn, "nobody", re.escape(body), ""))
    assert any(c == "IRN010" and "needs <body>" in m for c, m in got), got
    edges = re.search(r"\s*<back_edges>.*?</back_edges>", text, flags=re.S).group(0)
    out = _edited(rnn, "stray", r'(<layer id="\d+" name="Result_\w+" type="Result" version="opset1"[^>]*>)',
                  r"\1" + edges.replace("\\", "\\\\"))
    got = _codes(out)
    assert any(c == "IRN006" and "cannot have a <back_edges>" in m for c, m in got), got


@pytest.mark.parametrize("old,new,code,fragment", [
    (r'purpose="current_iteration"', 'purpose="sideways"', "IRN013", "purpose='sideways'"),
    (r'<input external_port_id="2"', '<input external_port_id="0"', "IRN013", "never mapped"),
    (r'(name="tc" type="Parameter" version="opset1">\s*<data shape="" element_type=)"i64"(\s*/>\s*<output>\s*'
     r'<port id="0" precision=)"I64"', r'\1"f32"\2"FP32"', "IRN033", "trip_count (input 0) must be i32 or i64"),
])
def test_broken_loops_are_refused(loop, old, new, code, fragment):
    xml = _edited(loop, "bad", old, new)
    if code == "IRN033":  # the Loop's input port too
        xml.write_text(xml.read_text(encoding="utf-8").replace('<port id="0" precision="I64" />',
                                                               '<port id="0" precision="FP32" />'), encoding="utf-8")
    got = _codes(xml)
    assert any(c == code and fragment in m for c, m in got), got
