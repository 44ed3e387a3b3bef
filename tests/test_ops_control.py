"""If-8: sub-graphs read, checked and run.  Models are built with OpenVINO's Python API, written by
``openvino.save_model`` and compared with OpenVINO's CPU plugin for both values of the condition; malformed
files are OpenVINO-written ones edited.  The real export (torchvision's batched_nms, an If around
NonMaxSuppression) is tests/networks/nms_head_*, covered with the other networks and at 0 boxes below."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from ovutil import compare_with_openvino, ov_run, save

import irnorm
from irnorm.workbench.compare import compare

ov = pytest.importorskip("openvino")
o8 = pytest.importorskip("openvino.opset8")

NETWORKS = Path(__file__).resolve().parent / "networks"


def _if(cond, then_fn, else_fn, inputs):
    """An If on `cond` whose bodies get one Parameter per input (same shape and type) and return the
    lists then_fn(params) / else_fn(params); returns the If's outputs."""
    bodies = []
    for fn in (then_fn, else_fn):
        params = [o8.parameter(i.get_partial_shape(), i.get_element_type()) for i in inputs]
        results = [o8.result(r) for r in fn(params)]
        bodies.append((params, results, ov.Model(results, params)))
    node = o8.if_op(cond)
    node.set_then_body(bodies[0][2])
    node.set_else_body(bodies[1][2])
    for k, i in enumerate(inputs):
        node.set_input(i, bodies[0][0][k], bodies[1][0][k])
    return [node.set_output(t, e) for t, e in zip(bodies[0][1], bodies[1][1], strict=True)]


def _model(outputs, params, names=None):
    for k, o in enumerate(outputs):
        o.get_tensor().set_names({(names or [f"y{j}" for j in range(len(outputs))])[k]})
    return ov.Model([o8.result(o) for o in outputs], params)


def _data_dependent_if(tmp_path):
    """cond = sum(x) > 0; then: (x * 2, x[:1] + y); else: (x - 1, concat(y, y)) -- the second output's
    leading dim differs between the branches, so the model declares it dynamic."""
    x = o8.parameter([-1, 4], np.float32, name="x")
    y = o8.parameter([1, 4], np.float32, name="y")
    cond = o8.greater(o8.reduce_sum(x, o8.constant(np.array([0, 1], np.int64)), False),
                      o8.constant(np.float32(0)))

    def then_fn(p):
        head = o8.slice(p[0], o8.constant(np.array([0], np.int64)), o8.constant(np.array([1], np.int64)),
                        o8.constant(np.array([1], np.int64)))
        return [o8.multiply(p[0], o8.constant(np.float32(2))), o8.add(head, p[1])]

    def else_fn(p):
        return [o8.subtract(p[0], o8.constant(np.float32(1))), o8.concat([p[1], p[1]], 0)]

    outs = _if(cond.output(0), then_fn, else_fn, [x.output(0), y.output(0)])
    return save(_model(outs, [x, y]), tmp_path, "ifdd")


def test_both_branches_match_openvino(tmp_path):
    xml = _data_dependent_if(tmp_path)
    m = irnorm.load(xml)
    assert [o.shape for o in m.outputs] == [(-1, 4), (-1, 4)]
    rng = np.random.default_rng(0)
    y = rng.standard_normal((1, 4)).astype(np.float32)
    for x in (np.abs(rng.standard_normal((3, 4))).astype(np.float32), -np.abs(rng.standard_normal((5, 4)))
              .astype(np.float32)):
        got = compare_with_openvino(xml, {"x": x, "y": y}, tol=(0, 0))
        positive = x.sum() > 0
        assert np.array_equal(got["y0"], x * 2 if positive else x - 1)
        assert got["y1"].shape == ((1, 4) if positive else (2, 4))


def test_the_float64_reference_and_compare_see_the_if(tmp_path):
    xml = _data_dependent_if(tmp_path)
    m = irnorm.load(xml)
    feeds = {"x": -np.ones((2, 4), np.float32), "y": np.arange(4, dtype=np.float32)[None]}
    for against in ("openvino", "reference"):
        report = compare(m, against, feeds)
        assert report.ok, report.table()
        assert any(r.type == "If" and r.status == "ok" and r.stats is not None for r in report.layers), report.table()


def test_nested_if_and_unused_inputs(tmp_path):
    """An If inside the then_body; the else_body ignores one of the inputs."""
    x = o8.parameter([2, 3], np.float32, name="x")
    a = o8.parameter([], np.bool_, name="a")
    b = o8.parameter([1], np.bool_, name="b")

    def outer_then(p):
        inner = _if(p[1].output(0), lambda q: [o8.relu(q[0])], lambda q: [o8.negative(q[0])], [p[0].output(0)])
        return [inner[0]]

    outs = _if(a.output(0), outer_then, lambda p: [o8.abs(p[0])], [x.output(0), b.output(0)])
    xml = save(_model(outs, [x, a, b]), tmp_path, "nested")
    data = np.array([[-1.5, 0.0, 2.0], [3.0, -4.0, 0.5]], np.float32)
    seen = set()
    for av in (True, False):
        for bv in (True, False):
            got = compare_with_openvino(xml, {"x": data, "a": np.array(av), "b": np.array([bv])}, tol=(0, 0))
            seen.add(got["y0"].tobytes())
    assert len(seen) == 3  # relu, negative, abs


def test_a_condition_known_at_load_time_picks_its_branch_shape(tmp_path):
    """A constant condition: the output takes the chosen body's shape, not the merge of both."""
    x = o8.parameter([4, 6], np.float32, name="x")
    shape = o8.shape_of(x)  # static: folded at load, so the Equal below is a constant
    cond = o8.equal(o8.gather(shape, o8.constant(np.int64(0)), o8.constant(np.int64(0))), o8.constant(np.int64(4)))
    outs = _if(cond.output(0), lambda p: [o8.reduce_sum(p[0], o8.constant(np.array([1], np.int64)), False)],
               lambda p: [o8.reshape(p[0], o8.constant(np.array([-1], np.int64)), False)], [x.output(0)])
    xml = save(_model(outs, [x]), tmp_path, "constcond")
    m = irnorm.load(xml)
    assert m.outputs[0].shape == (4,)
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    got = m.run({"x": x})["y0"]
    # (OpenVINO folds this If when it reads the file and names the output after the body's Result)
    expected = list(ov_run(xml, {"x": x}).values())[0]
    assert got.shape == (4,) and np.array_equal(got, expected) and np.array_equal(got, x.sum(axis=1))


def test_a_body_runs_under_the_models_memory_limit(tmp_path):
    """A body is a model of its own but not a way around max_memory: a static body's plan is checked
    against the enclosing model's limit when the model loads, a dynamic one's at every run, before its
    layers allocate (IRN051), and the branch not taken costs nothing."""
    def build(dims, name):
        x = o8.parameter(dims, np.float32, name="x")
        flag = o8.parameter([], np.bool_, name="flag")

        def then_fn(p):  # x tiled 2**18 times: 1 MiB per element of x, inside the then-body only
            tiled = o8.tile(p[0], o8.constant(np.array([1 << 18], np.int64)))
            return [o8.reduce_sum(tiled, o8.constant(np.array([0], np.int64)), False)]

        outs = _if(flag.output(0), then_fn,
                   lambda p: [o8.reduce_sum(p[0], o8.constant(np.array([0], np.int64)), False)], [x.output(0)])
        return save(_model(outs, [x, flag]), tmp_path, name)

    static = build([4], "static_body")
    with pytest.raises(irnorm.ResourceLimitError) as e:
        irnorm.load(static, max_memory=3 << 20)
    assert e.value.diagnostics[0].code == "IRN051"
    assert re.search(r"in the then_body of layer \d+ 'If\w*': running this model needs about 4\.0 MiB",
                     str(e.value)), str(e.value)
    assert e.value.line is not None and e.value.file == str(static)
    yes, no = np.array(True), np.array(False)
    assert irnorm.load(static, max_memory=16 << 20).run({"x": np.ones(4, np.float32), "flag": yes})["y0"] == 1 << 20

    m = irnorm.load(build([-1], "dynamic_body"), max_memory=3 << 20)
    assert m.run({"x": np.ones(2, np.float32), "flag": yes})["y0"] == 1 << 19  # 2 MiB in the body: fits
    with pytest.raises(irnorm.ResourceLimitError) as e:
        m.run({"x": np.ones(4, np.float32), "flag": yes})  # 4 MiB
    assert e.value.diagnostics[0].code == "IRN051" and "in the then_body of layer" in str(e.value)
    assert m.run({"x": np.ones(4, np.float32), "flag": no})["y0"] == 4  # the small branch still runs


def test_torchvision_batched_nms_with_no_boxes():
    """The real export's then-branch (``boxes.numel() == 0``): 0 boxes in, 0 out, as in OpenVINO; and a
    count other than the stored inputs' through the NonMaxSuppression branch."""
    xml = NETWORKS / "nms_head_dynamic.xml"
    assert len(re.findall(r'type="If" version="opset8"', xml.read_text(encoding="utf-8"))) == 1
    m = irnorm.load(xml)
    rng = np.random.default_rng(11)
    for n in (0, 1, 200):
        x = rng.standard_normal((n, 6)).astype(np.float32)
        got = m.run({"x": x})
        expected = ov_run(xml, {"x": x})
        assert [g.shape for g in got.values()] == [e.shape for e in expected.values()]
        for g, e in zip(got.values(), expected.values(), strict=True):
            assert g.dtype == e.dtype and np.allclose(g, e, rtol=1e-6, atol=1e-6)
        if n == 200:
            assert 0 < len(got["output1"]) < 200  # some boxes suppressed, some kept


# ---- malformed sub-graphs -------------------------------------------------------------------------------


@pytest.fixture
def source(tmp_path):
    """One OpenVINO-written If model (its generated names differ from one build to the next)."""
    return _data_dependent_if(tmp_path)


def _edited(src, name, old, new, count=1):
    text = src.read_text(encoding="utf-8")
    assert old in text, old
    out = src.parent / f"{name}.xml"
    out.write_text(text.replace(old, new, count), encoding="utf-8")
    out.with_suffix(".bin").write_bytes(src.with_suffix(".bin").read_bytes())
    return out


def _errors(xml):
    return [d for d in irnorm.check(xml) if d.severity == "error"]


def _section(text, tag):
    return re.search(rf"\s*<{tag}>.*?</{tag}>", text, flags=re.S).group(0)


def test_missing_else_body_is_refused(source):
    text = source.read_text(encoding="utf-8")
    xml = _edited(source, "noelse", _section(text, "else_body"), "")
    errs = _errors(xml)
    assert any(d.code == "IRN010" and "<else_body>" in d.message and d.layer_type == "If" for d in errs), errs


@pytest.mark.parametrize("old,new,fragment", [
    ('<output external_port_id="3" internal_layer_id="', '<output external_port_id="9" internal_layer_id="',
     "no output port 9"),
    ('<input external_port_id="1" internal_layer_id="0"', '<input external_port_id="1" internal_layer_id="77"',
     "has no layer 77"),
    ('<input external_port_id="1" internal_layer_id="0" />', "", "fed by no input of the If"),
    ('<input external_port_id="1" internal_layer_id="0"', '<input external_port_id="0" internal_layer_id="0"',
     "port 0, the condition, is never mapped"),
])
def test_broken_port_maps_are_refused(source, old, new, fragment):
    xml = _edited(source, "pm", old, new)
    errs = _errors(xml)
    assert any(d.code == "IRN013" and fragment in d.message for d in errs), [(d.code, d.message) for d in errs]
    with pytest.raises(irnorm.ValidationError):
        irnorm.load(xml)


def test_an_error_inside_a_body_names_the_body_and_its_line(source):
    text = source.read_text(encoding="utf-8")
    body = _section(text, "then_body")
    bad = body.replace('type="Multiply" version="opset1"', 'type="Multiply" version="opset1" ', 1).replace(
        '<data auto_broadcast="numpy" />', '<data auto_broadcast="sideways" />', 1)
    xml = _edited(source, "badbody", body, bad)
    errs = _errors(xml)
    hit = [d for d in errs if d.code == "IRN021" and d.message.startswith("in the then_body of layer")]
    assert hit, [(d.code, d.message) for d in errs]
    lines = xml.read_text(encoding="utf-8").splitlines()
    assert "sideways" in lines[hit[0].line - 1] or "Multiply" in lines[hit[0].line - 1]


def test_a_non_boolean_condition_is_refused(source):
    xml = _edited(source, "cond", 'type="Greater" version="opset1"', 'type="Add" version="opset1"')
    errs = _errors(xml)
    assert any(d.code == "IRN033" and d.layer_type == "If" and "must be boolean" in d.message for d in errs), \
        [(d.code, d.message) for d in errs]


def test_sub_graphs_on_other_layers_stay_refused(source):
    """A <then_body> on a layer that is not an If (here the Greater), and TensorIterator / Loop bodies (<body>,
    <port_map>): IRN006."""
    text = source.read_text(encoding="utf-8")
    body = _section(text, "then_body")
    data = '<data auto_broadcast="numpy" />\n'
    xml = _edited(source, "greater", data, data + body + "\n")
    errs = _errors(xml)
    assert any(d.code == "IRN006" and d.layer_type == "Greater" and "cannot have a <then_body>" in d.message
               for d in errs), errs
    loop = _edited(source, "loop", "<then_body>", "<body>", 1)
    loop.write_text(loop.read_text(encoding="utf-8").replace("</then_body>", "</body>", 1), encoding="utf-8")
    errs = _errors(loop)
    assert any(d.code == "IRN006" and "<body>" in d.message for d in errs), errs
