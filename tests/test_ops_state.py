"""ReadValue / Assign: stateful models.  Small models are built with OpenVINO's Python API (ReadValue-6 with and
without an initial value, static and dynamic variables) and run call after call in irnorm and in one OpenVINO
infer request, resets included; the real export (tests/stateful, tools/make_stateful.py) is a PyTorch decoder
block made stateful by OpenVINO's MakeStateful transformation, replayed against OpenVINO's stored outputs and a
live request.  Malformed files are OpenVINO-written ones edited."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import load_npz
from ovutil import save

import irnorm

ov = pytest.importorskip("openvino")
o13 = pytest.importorskip("openvino.opset13")
o6 = pytest.importorskip("openvino.opset6")
from openvino.op.util import Variable, VariableInfo  # noqa: E402

STATEFUL = Path(__file__).resolve().parent / "stateful"
# the CPU plugin keeps a fused attention's key/value cache in u8 unless told otherwise (docs/ir-format.md)
CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32"}


def _variable(name, shape, t=np.float32):
    info = VariableInfo()
    info.data_shape, info.data_type, info.variable_id = ov.PartialShape(shape), ov.Type(t), name
    return Variable(info)


def _accumulator(tmp_path, init: bool, dynamic: bool):
    """y = state + x (static [2, 3]) -- or, dynamic, a cache: y = concat(state, x) along axis 1 with x [1, ?, 3] --
    and Assign(y): the state after n calls is the sum (or the concatenation) of the inputs."""
    x = o13.parameter([1, -1, 3] if dynamic else [2, 3], np.float32, name="x")
    var = _variable("acc", [1, -1, 3] if dynamic else [2, 3])
    if init:  # the initial value computed from the input at every call (only the first one uses it)
        start = (o13.broadcast(o13.constant(np.float32(0.5)), o13.constant(np.array([1, 1, 3], np.int64))) if dynamic
                 else o13.multiply(x, o13.constant(np.float32(-1))))
        read = o6.read_value(start, var)
    else:  # zeros of the variable's shape, a dynamic dim 0
        read = o6.read_value(var)
    y = o13.concat([read, x], 1) if dynamic else o13.add(read, x)
    assign = o6.assign(y, var)
    y.output(0).get_tensor().set_names({"y"})
    return save(ov.Model([o13.result(y)], [assign], [x], "acc"), tmp_path, f"acc_{int(init)}{int(dynamic)}")


@pytest.mark.parametrize("init", [False, True], ids=["zeros", "init"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_calls_and_resets_match_openvino(tmp_path, init, dynamic):
    xml = _accumulator(tmp_path, init, dynamic)
    m = irnorm.load(xml)
    assert m.variables == ["acc"] and m.state == {}
    req = ov.Core().compile_model(str(xml), "CPU", CONFIG).create_infer_request()
    rng = np.random.default_rng(int(init) + 2 * int(dynamic))
    for call in range(7):
        if call == 4:
            m.reset_state()
            req.reset_state()
            assert m.state == {}
        x = rng.standard_normal((1, call % 3 + 1, 3) if dynamic else (2, 3)).astype(np.float32)
        got, want = m.run({"x": x})["y"], req.infer({"x": x})[0]
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        (state,) = req.query_state()
        np.testing.assert_array_equal(m.state["acc"], state.state.data)
    m.state["acc"][...] = 99  # a copy: the model's state is not the caller's
    assert not (m.state["acc"] == 99).any()


def test_a_real_stateful_export_replays_openvinos_calls():
    """tests/stateful/decoder_block: a PyTorch decoder block made stateful as optimum-intel makes its LLM exports
    (beam_idx Gather of the cache, OpenVINO's MakeStateful, an initial value from the input's batch). The stored
    sequence -- a prompt for two beams, single tokens, a beam swap, a reset, one beam -- gives OpenVINO's outputs
    within f32 rounding, and the cache grows as OpenVINO's did, although calls repeat the same input shapes."""
    calls = load_npz(STATEFUL / "decoder_block.calls.npz")
    m = irnorm.load(STATEFUL / "decoder_block.xml")
    assert sorted(m.variables) == ["past_kpresent_k", "past_vpresent_v"]
    assert [s.name for s in m.inputs] == ["x", "beam_idx"] and [s.name for s in m.outputs] == ["y"]
    resets = set(calls["reset_before"].tolist())
    i = 0
    while f"x_{i}" in calls:
        if i in resets:
            m.reset_state()
        y = m.run({"x": calls[f"x_{i}"], "beam_idx": calls[f"beam_idx_{i}"]})["y"]
        np.testing.assert_allclose(y, calls[f"y_{i}"], rtol=1e-5, atol=1e-5)
        assert {v.shape[2] for v in m.state.values()} == {int(calls[f"len_{i}"])}
        assert {v.shape[0] for v in m.state.values()} == {calls[f"x_{i}"].shape[0]}
        i += 1
    assert i >= 6 and any((calls[f"beam_idx_{k}"] != np.arange(calls[f"beam_idx_{k}"].size)).any() for k in range(i))
    for name, value in m.state.items():
        np.testing.assert_allclose(value, calls[f"state_{name}"], rtol=1e-5, atol=1e-5)
    # and a live request, call by call, with compare's view of one call
    req = ov.Core().compile_model(str(STATEFUL / "decoder_block.xml"), "CPU", CONFIG).create_infer_request()
    m.reset_state()
    for t, beams in ((4, [0, 1, 2]), (1, [2, 0, 1]), (1, [0, 0, 1]), (3, [0, 1, 2])):
        feeds = {"x": np.random.default_rng(t).standard_normal((3, t, 32)).astype(np.float32),
                 "beam_idx": np.array(beams, np.int32)}
        np.testing.assert_allclose(m.run(feeds)["y"], req.infer(feeds)["y"], rtol=1e-5, atol=1e-5)
    first = {"x": calls["x_0"], "beam_idx": calls["beam_idx_0"]}
    report = irnorm.compare(m, "openvino", first)
    assert report.ok, report.table()
    assert any("variables" in n and "reset" in n for n in report.notes)
    assert report.openvino_runs == 1  # the Assigns are not asked of OpenVINO
    assert all(r.status == "skipped" and "Assign" in r.note for r in report.layers if r.type == "Assign")
    assert irnorm.compare(m, "reference", first).ok


def test_a_failed_run_leaves_the_state_as_it_was(tmp_path):
    """The Assigns' values become the state only when the whole run succeeds."""
    x = o13.parameter([1, 4], np.float32, name="x")
    shape = o13.parameter([2], np.int64, name="shape")
    var = _variable("acc", [1, 4])
    y = o13.add(o6.read_value(var), x)
    assign = o6.assign(y, var)
    reshaped = o13.reshape(y, shape, False)  # fails at run time for a shape that does not fit
    reshaped.output(0).get_tensor().set_names({"r"})
    m = irnorm.load(save(ov.Model([o13.result(reshaped)], [assign], [x, shape]), tmp_path, "fails"))
    ones = np.ones((1, 4), np.float32)
    m.run({"x": ones, "shape": np.array([2, 2])})
    before = m.state["acc"].copy()
    with pytest.raises(irnorm.InputError):
        m.run({"x": ones, "shape": np.array([3, 3])})
    np.testing.assert_array_equal(m.state["acc"], before)
    assert m.run({"x": ones, "shape": np.array([4, 1])})["r"].reshape(-1).tolist() == [2.0] * 4


def test_runs_from_threads_take_turns():
    """A stateful model's runs are serialized: from two threads, every call's Assign lands."""
    m = irnorm.load(STATEFUL / "decoder_block.xml")
    feeds = {"x": np.zeros((1, 1, 32), np.float32), "beam_idx": np.zeros(1, np.int32)}

    def calls():
        for _ in range(20):
            m.run(feeds)

    threads = [threading.Thread(target=calls) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {v.shape[2] for v in m.state.values()} == {40}


def _edited(tmp_path, name, pattern, repl):
    src = _accumulator(tmp_path, init=False, dynamic=False)
    text = Path(src).read_text()
    edited, n = re.subn(pattern, repl, text)
    assert n >= 1, pattern
    out = tmp_path / f"{name}.xml"
    out.write_text(edited)
    out.with_suffix(".bin").write_bytes(Path(src).with_suffix(".bin").read_bytes())
    return out


def test_malformed_variables_are_refused_with_the_rule(tmp_path):
    # an Assign of a variable no ReadValue declares (OpenVINO's reader fails with 'map::at')
    bad = _edited(tmp_path, "undeclared", r'(type="Assign" version="opset6">\s*<data variable_id=")acc"', r'\1other"')
    with pytest.raises(irnorm.ValidationError) as e:
        irnorm.load(bad)
    d = next(d for d in e.value.diagnostics if d.code == "IRN035")
    assert "'other'" in d.message and "no ReadValue declares" in d.message and d.layer_name.startswith("Assign")
    # a variable declared [1, 3] that the Assign writes [2, 3] into (the ReadValue's port edited to agree)
    port = r'variable_shape="2,3" />\s*<output>\s*<port id="0" precision="FP32">\s*<dim>2</dim>'
    bad = _edited(tmp_path, "shape", port, lambda mo: mo.group(0).replace('shape="2,3"', 'shape="1,3"')
                  .replace("<dim>2</dim>", "<dim>1</dim>"))
    diags = irnorm.check(bad)
    assert any(d.code == "IRN035" and "[2,3]" in d.message.replace(" ", "") for d in diags), diags
    # a ReadValue whose variable_type is missing and that has no initial value
    bad = _edited(tmp_path, "notype", r' variable_type="f32"', "")
    assert any(d.code == "IRN020" and "variable_type" in d.message for d in irnorm.check(bad))
    # a variable_shape that is not a shape
    bad = _edited(tmp_path, "badshape", r'variable_shape="2,3"', 'variable_shape="2,x"')
    assert any(d.code == "IRN021" for d in irnorm.check(bad))


def test_validate_info_and_the_cli_see_the_variables(tmp_path):
    from click.testing import CliRunner

    from irnorm.cli import cli

    xml = str(STATEFUL / "decoder_block.xml")
    assert not [d for d in irnorm.check(xml) if d.severity == "error"]
    res = CliRunner().invoke(cli, ["run", xml, "--shape", "x=1,3,32", "--shape", "beam_idx=1",
                                   "--value-range", "beam_idx=0,0"])  # one call from the initial state
    assert res.exit_code == 0, res.output
    assert re.search(r"^y: shape \[1, 3, 32\] f32", res.output, re.M), res.output
    res = CliRunner().invoke(cli, ["info", xml])
    assert re.search(r"^variables\n  past_\w+ +\[\?,2,\?,16\] +f32\n  past_\w+ +\[\?,2,\?,16\] +f32$", res.output,
                     re.M), res.output
    res = CliRunner().invoke(cli, ["info", "--json", xml])
    import json

    got = json.loads(res.output)["variables"]
    assert sorted(v["id"] for v in got) == ["past_kpresent_k", "past_vpresent_v"]
    assert all(v["shape"] == [-1, 2, -1, 16] and v["dtype"] == "f32" for v in got)
    assert json.loads(CliRunner().invoke(cli, ["info", "--json", str(Path(__file__).parent.parent / "samples" / "ir" /
                                                                     "group_norm.xml")]).output)["variables"] == []


def test_dask_refuses_a_stateful_model(tmp_path):
    """Chunks run as separate calls would each read the state another chunk wrote: IRN070 at the ReadValue."""
    from irnorm import dask as irnorm_dask

    m = irnorm.load(_accumulator(tmp_path, init=True, dynamic=False))
    with pytest.raises(irnorm.ValidationError) as e:
        irnorm_dask.analyze(m.graph)
    d = e.value.diagnostics[0]
    assert d.code == "IRN070" and d.layer_type == "ReadValue" and "'acc'" in d.message


def test_a_dynamic_batch_without_an_initial_value_breaks_concats_rule(tmp_path):
    """MakeStateful alone on a dynamic batch: the variable starts [0, 0, 3] (as OpenVINO's query_state() says), and
    Concat with the first call's [1, t, 3] along axis 1 breaks Concat's rule. irnorm refuses it at the Concat
    (OpenVINO's CPU plugin runs it only inside its fused attention node; docs/ir-format.md); the state is
    untouched, and a variable with the batch's initial value (optimum-intel's) runs."""
    x = o13.parameter([-1, -1, 3], np.float32, name="x")
    var = _variable("cache", [-1, -1, 3])
    cat = o13.concat([o6.read_value(var), x], 1)
    cat.set_friendly_name("cache_concat")
    assign = o6.assign(cat, var)
    cat.output(0).get_tensor().set_names({"y"})
    m = irnorm.load(save(ov.Model([o13.result(cat)], [assign], [x]), tmp_path, "nobatch"))
    with pytest.raises(irnorm.InputError) as e:
        m.run({"x": np.ones((1, 2, 3), np.float32)})
    d = e.value.diagnostics[0]
    assert d.code == "IRN064" and d.layer_name == "cache_concat" and "dim 0" in d.message, d.format()
    assert m.state == {}
    m = irnorm.load(_accumulator(tmp_path, init=True, dynamic=True))
    assert m.run({"x": np.ones((1, 2, 3), np.float32)})["y"].shape == (1, 3, 3)


def test_bench_runs_each_call_from_the_initial_values():
    """irnorm bench resets a stateful model's variables before every run (else each run would be one more step of
    an ever longer sequence), says so, and refuses --concurrency (the runs take turns)."""
    from click.testing import CliRunner

    from irnorm.cli import cli
    from irnorm.workbench.bench import bench

    m = irnorm.load(STATEFUL / "decoder_block.xml")
    feeds = {"x": np.zeros((1, 2, 32), np.float32), "beam_idx": np.zeros(1, np.int32)}
    res = bench(m, feeds, runs=7, warmup=2)
    assert res.stateful and res.runs == 7
    assert {v.shape[2] for v in m.state.values()} == {2}  # the last run started from the initial values too
    with pytest.raises(irnorm.ArgumentError):
        bench(m, feeds, runs=2, concurrency=2)
    args = ["bench", str(STATEFUL / "decoder_block.xml"), "--shape", "x=1,2,32", "--shape", "beam_idx=1",
            "--value-range", "beam_idx=0,0", "-n", "3"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0 and "each from the variables' initial values" in res.output, res.output
    res = CliRunner().invoke(cli, args + ["--concurrency", "2"])
    assert res.exit_code == 2 and "--concurrency" in res.output and "stateful" in res.output, res.output
    assert bench(irnorm.load(STATEFUL.parent.parent / "samples" / "ir" / "group_norm.xml"),
                 {"x": np.zeros((2, 8, 5, 5), np.float32)}, runs=1).stateful is False


@pytest.mark.parametrize("case", ["add", "matmul", "attention", "convolution"])
def test_state_that_does_not_fit_is_a_located_error_before_anything_runs(tmp_path, case):
    """A variable whose shape the file leaves open: every run checks the shape rules with the values it will read
    (as a dynamic model's runs do with their inputs'), so a state that does not fit the layers it feeds is IRN064 at
    the layer -- not an exception from inside a kernel -- and the state is left as it was. Here the variable
    starts empty ([0, 4], no initial value) and grows by two rows a call."""
    x = o13.parameter([2, 4], np.float32, name="x")
    var = _variable("s", [-1, 4])
    read = o6.read_value(var)
    build = {
        "add": lambda: o13.add(read, x),
        "matmul": lambda: o13.matmul(x, read, False, False),  # [2, 4] x [n, 4]: inner dims 4 and n
        "attention": lambda: o13.scaled_dot_product_attention(*(o13.unsqueeze(t, o13.constant(np.int64(0)))
                                                               for t in (x, x, read)), causal=False),
        "convolution": lambda: o13.convolution(o13.reshape(x, o13.constant(np.array([1, 2, 2, 2], np.int64)), False),
                                               o13.reshape(read, o13.constant(np.array([-1, 2, 1, 1], np.int64)),
                                                           False), [1, 1], [0, 0], [0, 0], [1, 1]),
    }[case]
    y = build()
    y.set_friendly_name("uses_state")
    y.output(0).get_tensor().set_names({"y"})
    assign = o6.assign(o13.concat([read, x], 0), var)
    m = irnorm.load(save(ov.Model([o13.result(y)], [assign], [x]), tmp_path, case))
    ones = np.ones((2, 4), np.float32)
    rows = []
    for _ in range(3):
        try:
            m.run({"x": ones})
        except irnorm.InputError as e:
            d = e.diagnostics[0]
            assert d.code == "IRN064" and d.layer_name == "uses_state", d.format()
        rows.append(m.state.get("s", np.zeros((0, 4))).shape[0])
    if case == "convolution":  # [0, 2, 1, 1] weights: no output channels, which runs; then 4 and 8 channels
        assert rows == [2, 4, 6]
    else:  # a failed run commits nothing: the state never grows past what fits
        assert rows == {"add": [0, 0, 0], "matmul": [0, 0, 0], "attention": [0, 0, 0]}[case]


def test_a_decode_loop_rechecks_only_the_layers_the_variables_reach(monkeypatch):
    """Calls at input shapes seen before but with a longer cache re-run the shape rules of the layers the
    variables reach only (the others' results do not depend on the state); the outputs are OpenVINO's, and a cache
    that does not fit new inputs is still IRN064 at the layer."""
    m = irnorm.load(STATEFUL / "decoder_block.xml")
    reached = m._reached
    assert 0 < len(reached) < len(m.graph.nodes)
    assert all(n.index in reached for n in m.graph.nodes if n.op_type in ("ReadValue", "Assign"))
    assert not any(n.index in reached for n in m.graph.nodes if n.op_type == "Parameter")
    calls = []
    real = m._plan.reinfer_reached
    monkeypatch.setattr(m._plan, "reinfer_reached", lambda *a: calls.append(1) or real(*a))
    feeds = {"x": np.ones((1, 1, 32), np.float32), "beam_idx": np.zeros(1, np.int32)}
    outs = [m.run(feeds)["y"] for _ in range(4)]
    assert len(calls) == 3  # the first call at these input shapes ran every rule
    req = ov.Core().compile_model(str(STATEFUL / "decoder_block.xml"), "CPU", CONFIG).create_infer_request()
    for y in outs:
        np.testing.assert_allclose(y, req.infer(feeds)["y"], rtol=1e-5, atol=1e-5)
    with pytest.raises(irnorm.InputError) as e:  # new input shapes, a cache of batch 1 against x's 2: at the Concat
        m.run({"x": np.ones((2, 1, 32), np.float32), "beam_idx": np.zeros(1, np.int32)})
    assert e.value.diagnostics[0].code == "IRN064" and e.value.diagnostics[0].layer_type == "Concat"
