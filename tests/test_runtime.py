"""Planning and execution details: folded shape subgraphs never run; data-dependent runtime
errors name the file and layer."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import ROOT
from irbuilder import IRBuilder

import irnorm

EXPORTS = ROOT / "tests" / "exports"


def test_folded_shape_subgraph_is_not_executed():
    """ONNX GroupNormalization-18's dynamic export computes its scale shape with ShapeOf/Gather/...;
    all of it folds at load time, so only the GroupNormalization runs."""
    m = irnorm.load(EXPORTS / "onnx_groupnorm18_dynamic_f32w.xml")
    assert [n.layer.type for n in m.layers_run] == ["GroupNormalization"]


def test_runtime_error_names_file_and_layer(tmp_path):
    b = IRBuilder("div")
    a = b.parameter("a", (3,), "i32")
    d = b.parameter("d", (3,), "i32")
    (q,) = b.layer("Divide", [a, d], [((3,), "i32")], {"auto_broadcast": "numpy", "m_pythondiv": True},
                   version="opset1", names=["q"])
    b.result(q)
    xml = b.save(tmp_path)
    m = irnorm.load(xml)
    ok = m.run({"a": np.array([7, -7, 6], np.int32), "d": np.array([2, 2, 3], np.int32)})["q"]
    np.testing.assert_array_equal(ok, [3, -4, 2])  # python division floors, as OpenVINO's reference
    with pytest.raises(irnorm.InputError) as ei:
        m.run({"a": np.array([1, 2, 3], np.int32), "d": np.array([1, 0, 1], np.int32)})
    d0 = ei.value.diagnostics[0]
    assert d0.code == "IRN064" and d0.file == str(xml) and d0.layer_type == "Divide"


def test_ctrl_c_during_a_long_kernel_exits_promptly(tmp_path):
    """SIGINT while a Numba kernel runs: the kernels release the GIL and `irnorm run` executes the
    model in a worker thread, so the process ends with 130 within a second, leaving no output file."""
    import signal
    import subprocess
    import sys
    import time

    b = IRBuilder("slow")
    x = b.parameter("x", (8, 1024, 1024), "f32")
    axes = b.const(np.array([1, 2], np.int64), "axes")
    y = x
    for k in range(4):  # about a second each on a fast AVX-512 core: the run is still going when SIGINT comes
        (y,) = b.layer("LRN", [y, axes], [((8, 1024, 1024), "f32")],
                       {"alpha": 1e-4, "beta": 0.75, "bias": 1.0, "size": 61}, version="opset1",
                       names=["y" if k == 3 else f"lrn{k}"])
    b.result(y)
    xml = b.save(tmp_path)
    out = tmp_path / "out.npz"
    # SIGINT's default action in the child even when this process runs with it ignored (a background job)
    proc = subprocess.Popen([sys.executable, "-m", "irnorm", "run", str(xml), "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = proc.stderr.readline()  # printed right before the run starts
        assert "random inputs" in line, line
        time.sleep(1.0)
        assert proc.poll() is None, "the run finished before it could be interrupted"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        waited = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert waited < 2.0, f"took {waited:.2f} s to stop"
    assert not out.exists() and not list(tmp_path.glob(".irnorm-*"))


def _chain(tmp_path, n_layers: int = 3):
    """x -> Exp -> Add(x) -> Sqrt ... : a small model whose intermediates die one after another."""
    b = IRBuilder("chain")
    x = b.parameter("x", (4,), "f32")
    v = x
    for i in range(n_layers):
        (v,) = b.layer("Exp" if i % 2 == 0 else "Sqrt", [v], [((4,), "f32")], {}, version="opset1", names=[f"v{i}"])
    (y,) = b.layer("Add", [v, x], [((4,), "f32")], {"auto_broadcast": "numpy"}, version="opset1", names=["y"])
    b.result(y)
    b.result(v)
    return b.save(tmp_path)


def test_plain_runner_is_one_line_per_step_and_drops_dead_values(tmp_path):
    """The plan runs as generated straight-line code: one kernel call per step, in order (the last, a small
    Add on static shapes, as numpy's ufunc itself), each intermediate dropped after its last reader; results
    equal the debugging (hooked) path's."""
    m = irnorm.load(_chain(tmp_path))
    plan = m._plan
    src = plan.source
    calls = [ln for ln in src.splitlines() if "= kernel" in ln or "= every" in ln]
    assert len(calls) == len(plan.steps) == 4
    assert [int(re.search(r"= (?:kernel|every)(\d+)\(", ln).group(1)) for ln in calls] == [0, 1, 2, 3]
    assert "= every3(" in calls[3]
    first = plan.slot_of[(plan.steps[0].node.index, 0)]  # v0: read only by the next step -> dropped
    assert f"v{first} = None" in src
    x = np.array([0.1, 0.5, 1.0, 2.0], np.float32)
    got = m.run({"x": x})
    hooked = m.run({"x": x}, profile=True)
    for k in got:
        np.testing.assert_array_equal(got[k], hooked[k])
    e0 = np.sqrt(np.exp(x)).astype(np.float32)
    np.testing.assert_allclose(got["y"], np.exp(e0) + x, rtol=1e-6)


def test_plain_runner_follows_a_replaced_kernel_and_locates_its_errors(tmp_path):
    """assign_slots regenerates the runner from the steps' current kernels, and an irnorm error raised
    inside a step names that step's layer (not the first or last one)."""
    m = irnorm.load(_chain(tmp_path))
    plan = m._plan
    st = plan.steps[1]
    original = st.kernel

    def failing(ins):
        raise irnorm.errors.RuleError("IRN064", "broken on purpose")

    st.kernel = failing
    plan.assign_slots()
    with pytest.raises(irnorm.InputError) as ei:
        m.run({"x": np.ones(4, np.float32)})
    d0 = ei.value.diagnostics[0]
    assert d0.layer_name == st.node.layer.name and d0.file == str(m.path)
    st.kernel = original
    plan.assign_slots()
    assert np.isfinite(m.run({"x": np.ones(4, np.float32)})["y"]).all()


@pytest.mark.parametrize("type_, second, out_shape", [
    ("Reshape", np.array([6, -1], np.int64), (6, 4)),
    ("Unsqueeze", np.array([0], np.int64), (1, 2, 3, 4)),
    ("Squeeze", None, (2, 3, 4)),
    ("Transpose", np.array([1, 0, 2], np.int64), (3, 2, 4)),
    ("Transpose", np.array([0, 1, 2], np.int64), (2, 3, 4)),  # identity: still a copy, never the input
])
def test_static_reshapes_run_inline_never_handing_out_the_input(tmp_path, type_, second, out_shape):
    """On a static model a Reshape/Squeeze/Unsqueeze whose output shape is fixed at load time (a view of
    its data) and a Transpose with a constant order (a copy) run as the expression written into the plan's
    straight-line runner (no kernel call); the model's output is never the caller's input nor a view of
    it (also for an identity order), and a dynamic model keeps the call."""
    from irbuilder import single_op_model

    in_shape = (1, 2, 3, 4) if type_ == "Squeeze" else (2, 3, 4)
    attrs = {"special_zero": False} if type_ == "Reshape" else None
    x = np.arange(24, dtype=np.float32).reshape(in_shape)
    want = x.transpose(second) if type_ == "Transpose" else x.reshape(out_shape)
    for dims, inline in ((in_shape, True), ((-1,) + in_shape[1:], False)):
        inputs = [("param:x", (dims, "f32"))] + ([("s", second)] if second is not None else [])
        out_dims = ((-1,) * len(out_shape)) if not inline else out_shape
        b = single_op_model(type_, inputs, [(out_dims, "f32")], attrs, version="opset1")
        m = irnorm.load(b.save(tmp_path / f"{type_}{inline}"))
        written = (".transpose(" if type_ == "Transpose" else f".reshape({out_shape!r})") in m._plan.source
        assert written is inline
        for _ in range(2):
            y = m.run({"x": x})["y"]
            np.testing.assert_array_equal(y, want)
            assert not np.shares_memory(y, x) and y.flags.c_contiguous and y.flags.writeable
            y[...] = -1  # the caller's to change: the next run is not affected
        y = m.run({"x": x}, profile=True)["y"]  # the kernel itself
        np.testing.assert_array_equal(y, want)
        assert not np.shares_memory(y, x)


def test_reshape_views_never_reach_the_caller_shared(tmp_path):
    """A Reshape of computed data is a view of it (no copy); the run still hands out outputs that share
    no memory with each other or with the caller's input, and a Reshape of a load-time constant (its shape
    given at run time) is a copy: writing to any output changes neither the next run nor the model."""
    from irbuilder import IRBuilder

    b = IRBuilder("views")
    x = b.parameter("x", (2, 6), "f32")
    shape = b.parameter("shape", (2,), "i64")
    (r,) = b.layer("Relu", [x], [((2, 6), "f32")], version="opset1", names=["r"])
    (v,) = b.layer("Reshape", [r, b.const(np.array([3, 4], np.int64))], [((3, 4), "f32")],
                   {"special_zero": False}, version="opset1", names=["v"])
    w = b.const(np.arange(12, dtype=np.float32), "w")
    (c,) = b.layer("Reshape", [w, shape], [((-1, -1), "f32")], {"special_zero": False}, version="opset1",
                   names=["c"])
    (xv,) = b.layer("Reshape", [x, b.const(np.array([12], np.int64))], [((12,), "f32")],
                    {"special_zero": False}, version="opset1", names=["xv"])
    for out in (r, v, c, xv):
        b.result(out)
    m = irnorm.load(b.save(tmp_path))
    assert "kernel" not in [ln for ln in m._plan.source.splitlines() if ".reshape((3, 4))" in ln][0]
    feed = {"x": np.arange(-6, 6, dtype=np.float32).reshape(2, 6), "shape": np.array([4, 3], np.int64)}
    for _ in range(2):
        got = m.run(feed)
        want = {"r": np.maximum(feed["x"], 0), "c": np.arange(12, dtype=np.float32).reshape(4, 3)}
        want["v"], want["xv"] = want["r"].reshape(3, 4), feed["x"].reshape(12)
        for k, y in got.items():
            np.testing.assert_array_equal(y, want[k])
            assert not np.shares_memory(y, feed["x"]), k
            assert not any(np.shares_memory(y, o) for j, o in got.items() if j != k), k
        for y in got.values():
            y[...] = -9  # the caller's: the model and the next run are not affected
    np.testing.assert_array_equal(m.run(feed)["c"], np.arange(12, dtype=np.float32).reshape(4, 3))


def test_outputs_never_view_the_callers_input(tmp_path):
    """A layer may return a view of its input (a Split along the first axis is one); when that view is a
    model output and the input is the caller's array, the caller gets a copy: writing to an output never
    changes an input."""
    from irbuilder import single_op_model

    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    models = {
        "split": single_op_model("Split", [("param:x", ((4, 6), "f32")), ("ax", np.array(0, np.int64))],
                                 [((2, 6), "f32"), ((2, 6), "f32")], {"num_splits": 2}, version="opset1"),
        "variadic": single_op_model("VariadicSplit", [("param:x", ((4, 6), "f32")), ("ax", np.array(0, np.int64)),
                                                      ("len", np.array([1, 3], np.int64))],
                                    [((1, 6), "f32"), ((3, 6), "f32")], None, version="opset1"),
    }
    for name, b in models.items():
        m = irnorm.load(b.save(tmp_path / name))
        got = m.run({"x": x})
        parts = np.split(x, 2) if name == "split" else np.split(x, [1])
        for y, want in zip(got.values(), parts, strict=True):
            np.testing.assert_array_equal(y, want)
            assert not np.shares_memory(y, x), name
            y[...] = -7
        np.testing.assert_array_equal(x, np.arange(24, dtype=np.float32).reshape(4, 6))


def test_dynamic_models_keep_shape_rule_results_per_input_shapes(monkeypatch):
    """A dynamic model runs every layer's shape rule for input shapes it has not seen, and reuses the result
    for shapes it has (the rules read shapes only): the same outputs as a fresh model's, IRN064 for shapes
    that do not fit every time, IRN051 at a seen shape once the memory limit is lowered, and a model fed
    ever new shapes keeps at most SHAPES_KEPT of them."""
    from irnorm.runtime import model as model_mod

    xml = ROOT / "tests" / "networks" / "bert_dynamic.xml"
    m = irnorm.load(xml)
    calls = []
    real = m._plan.reinfer
    monkeypatch.setattr(m._plan, "reinfer", lambda arrays, variables=None: calls.append(1) or real(arrays, variables))
    rng = np.random.default_rng(0)

    def feeds(b, s):
        return {"input_ids": rng.integers(0, 100, (b, s)).astype(np.int64), "attention_mask": np.ones((b, s), np.int64)}

    a, b2 = feeds(2, 5), feeds(1, 9)
    first = m.run(a)
    m.run(b2)
    again = m.run(a)
    assert len(calls) == 2  # the third run's shapes were seen
    fresh = irnorm.load(xml).run(a)
    for k in first:
        assert again[k].tobytes() == first[k].tobytes() == fresh[k].tobytes()
    bad = {"input_ids": a["input_ids"], "attention_mask": np.ones((2, 6), np.int64)}
    for _ in range(2):
        with pytest.raises(irnorm.InputError) as ei:
            m.run(bad)
        assert ei.value.diagnostics[0].code == "IRN064"
    m.max_memory = 1024
    with pytest.raises(irnorm.ResourceLimitError) as ei:
        m.run(a)
    assert ei.value.diagnostics[0].code == "IRN051"
    m.max_memory = 1 << 30
    monkeypatch.setattr(model_mod, "SHAPES_KEPT", 3)
    for s in range(2, 9):
        m.run(feeds(1, s))
        assert len(m._shapes_seen) <= 3


@pytest.mark.parametrize("net, replays", [("bert", True), ("t5", True), ("swin", False)])
def test_shape_steps_are_replayed_per_input_shapes(net, replays):
    """A dynamic export's shape subgraphs (ShapeOf and what is computed from shapes alone: Reshape targets,
    ranges, masks, T5's position buckets) run on the first call at given input shapes and are taken from
    then on from that call: every output bit-identical to the step-by-step loop's (a profiled run computes
    every step), at two shapes in turn; no model output is ever a cached value, so a caller writing into an
    output changes nothing later. Swin's ShapeOf layers read tensors reshaped to computed targets, whose
    shapes the shape rules leave unknown (-1), so its shape steps run every time."""
    xml = ROOT / "tests" / "networks" / f"{net}_dynamic.xml"
    m = irnorm.load(xml)
    plan = m._plan
    assert plan.shape_steps and plan.run_replay is not None
    assert all((st.node.index, k) not in plan.outputs for j in plan.shape_steps
               for st in [plan.steps[j]] for k in range(len(st.node.outputs)))
    with np.load(xml.with_suffix(".inputs.npz")) as z:
        feeds = {k: z[k] for k in z.files}
    rng = np.random.default_rng(1)
    other = {}
    for k, v in feeds.items():
        shape = (1,) + v.shape[1:-1] + (v.shape[-1] - 2,) if v.ndim == 2 else (1,) + v.shape[1:2] + \
            tuple(d - 16 for d in v.shape[2:])
        other[k] = (rng.integers(0, 50, shape).astype(v.dtype) if v.dtype.kind == "i"
                    else rng.standard_normal(shape).astype(v.dtype))
    if "attention_mask" in other:
        other["attention_mask"][:] = 1
    for f in (feeds, other, feeds, other):
        want = m.run(f, profile=True)
        got = m.run(f)
        assert len(plan.shape_cache) <= 2
        for k in want:
            assert got[k].tobytes() == want[k].tobytes(), (net, k)
            got[k][...] = 0  # the caller's array: later runs must not see it
    assert len(plan.shape_cache) == (2 if replays else 0)
    assert list(plan.replay_ok.values()) == [replays] * 2


def test_shape_steps_after_a_data_dependent_shape_run_every_time(tmp_path):
    """ShapeOf of a NonZero's output reads a shape that depends on the data, not on the input shapes: the
    steps computed from it are never replayed (two inputs of one shape, different counts of non-zeros)."""
    b = IRBuilder("nz")
    x = b.parameter("x", (-1, 4), "f32")
    (nz,) = b.layer("NonZero", [x], [((2, -1), "i64")], {"output_type": "i64"}, version="opset3")
    (shape,) = b.layer("ShapeOf", [nz], [((2,), "i64")], {"output_type": "i64"}, version="opset3")
    one = b.const(np.float32(1.5), "one")
    (ones,) = b.layer("Broadcast", [one, shape], [((2, -1), "f32")], {"mode": "numpy"}, version="opset3")
    two = b.const(np.float32(2.0), "two")
    (y,) = b.layer("Multiply", [ones, two], [((2, -1), "f32")], {"auto_broadcast": "numpy"}, version="opset1",
                   names=["y"])
    b.result(y)
    m = irnorm.load(b.save(tmp_path))
    assert m._plan.shape_steps  # ShapeOf and the Broadcast
    for count in (3, 5, 1, 3):
        data = np.zeros((2, 4), np.float32)
        data.reshape(-1)[:count] = 1.0
        got = m.run({"x": data})["y"]
        assert got.shape == (2, count) and np.all(got == 3.0)
    assert m._plan.shape_cache == {} and list(m._plan.replay_ok.values()) == [False]
