"""MVN-1 and MVN-6: conformance against OpenVINO (IR files written by ``save_model``, run
in both) and against the float64 oracle, nasty inputs, the pinned CPU-plugin deviations,
and one malformed-IR test per rule.

``make_ir`` (a hand-written-IR builder that needs no OpenVINO) is shared with
test_ops_batch_norm.py and test_ops_lrn.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from conftest import SAMPLES
from ovutil import HAVE_OPENVINO, assert_close, compare_with_openvino, ov_run, requires_openvino, save

import irnorm
from irnorm import reference as R

if HAVE_OPENVINO:
    import openvino as ov
    import openvino.opset1 as ops1
    import openvino.opset2 as ops2
    import openvino.opset6 as ops6

BF16 = np.dtype(ml_dtypes.bfloat16)
NP = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "bf16": BF16}
# irnorm vs the float64 oracle, per output dtype (atol scaled by max |expected|)
REF_TOL = {"float64": (1e-10, 1e-10), "float32": (2e-6, 2e-6), "float16": (1e-3, 1e-3), "bfloat16": (8e-3, 8e-3)}

# ---- hand-written IR (no OpenVINO needed) --------------------------------------------------

_PREC = {"f32": "FP32", "f16": "FP16", "bf16": "BF16", "f64": "FP64", "i64": "I64", "i32": "I32", "i8": "I8",
         "u8": "U8"}
_ET = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.float64): "f64", BF16: "bf16",
       np.dtype(np.int64): "i64", np.dtype(np.int32): "i32", np.dtype(np.int8): "i8", np.dtype(np.uint8): "u8"}


def _dims(shape) -> str:
    return "".join(f"<dim>{d}</dim>" for d in shape)


def make_ir(path: Path, op_type: str, version: str, attrs: dict[str, str], inputs: list, *,
            out_shape=None, out_type: str | None = None) -> Path:
    """Write Parameter/Const inputs -> one op -> Result as path (+ .bin) and return path.

    ``inputs`` items: ``("param", name, shape, element_type)`` (shape may hold -1) or a numpy
    array (a Const).  The output port is declared like the first Parameter unless given."""
    layers, edges, blob = [], [], b""
    first = next(i for i in inputs if isinstance(i, tuple))
    out_shape = first[2] if out_shape is None else out_shape
    out_type = first[3] if out_type is None else out_type
    n = len(inputs)
    in_ports = []
    for i, item in enumerate(inputs):
        if isinstance(item, tuple):
            _, name, shape, et = item
            shape_s = ",".join("?" if d == -1 else str(d) for d in shape)
            layers.append(f'<layer id="{i}" name="{name}" type="Parameter" version="opset1">'
                          f'<data shape="{shape_s}" element_type="{et}"/><output><port id="0" '
                          f'precision="{_PREC[et]}" names="{name}">{_dims(shape)}</port></output></layer>')
        else:
            arr = np.array(item, order="C")  # (ascontiguousarray would make a 0-D array 1-D)
            shape, et = arr.shape, _ET[arr.dtype]
            data = arr.tobytes()
            layers.append(f'<layer id="{i}" name="c{i}" type="Const" version="opset1"><data element_type="{et}" '
                          f'shape="{",".join(map(str, shape))}" offset="{len(blob)}" size="{len(data)}"/>'
                          f'<output><port id="0" precision="{_PREC[et]}">{_dims(shape)}</port></output></layer>')
            blob += data
        in_ports.append(f'<port id="{i}" precision="{_PREC[et]}">{_dims(shape)}</port>')
        edges.append(f'<edge from-layer="{i}" from-port="0" to-layer="{n}" to-port="{i}"/>')
    data = " ".join(f'{k}="{v}"' for k, v in attrs.items())
    layers.append(f'<layer id="{n}" name="op" type="{op_type}" version="{version}"><data {data}/>'
                  f'<input>{"".join(in_ports)}</input><output><port id="{n}" precision="{_PREC[out_type]}" '
                  f'names="y">{_dims(out_shape)}</port></output></layer>')
    layers.append(f'<layer id="{n + 1}" name="y/r" type="Result" version="opset1"><input><port id="0" '
                  f'precision="{_PREC[out_type]}">{_dims(out_shape)}</port></input></layer>')
    edges.append(f'<edge from-layer="{n}" from-port="{n}" to-layer="{n + 1}" to-port="0"/>')
    path = Path(path)
    path.write_text(f'<?xml version="1.0"?>\n<net name="t" version="11"><layers>{"".join(layers)}</layers>'
                    f'<edges>{"".join(edges)}</edges></net>\n')
    path.with_suffix(".bin").write_bytes(blob)
    return path


def errors_of(xml: Path) -> list:
    return [d for d in irnorm.check(xml) if d.severity == "error"]


def assert_diag(xml: Path, code: str, pattern: str) -> None:
    """Exactly one error, with this code and a message matching ``pattern``."""
    errs = errors_of(xml)
    assert len(errs) == 1, [str(e) for e in errs]
    assert errs[0].code == code, str(errs[0])
    assert re.search(pattern, errs[0].message), errs[0].message


def check_ref(got: np.ndarray, exp: np.ndarray, what: str = "") -> None:
    assert got.dtype == exp.dtype, f"{what}: dtype {got.dtype} vs {exp.dtype}"
    assert_close(got, exp, what, REF_TOL[exp.dtype.name])


def run1(xml: Path, x: np.ndarray) -> np.ndarray:
    m = irnorm.load(xml)
    return m.run([x])[m.outputs[0].name]


def _axes_const(axes, dtype=np.int64):
    if len(axes) == 0:  # opset1.constant refuses empty arrays
        return ov.op.Constant(ov.Type.i64 if dtype == np.int64 else ov.Type.i32, ov.Shape([0]), [])
    return ops1.constant(np.array(axes, dtype))


def _data(rng, shape, dtype) -> np.ndarray:
    """Well-conditioned random data (|mean| / std <= 20: the CPU plugin's f32 statistics are
    only that accurate; ill-conditioned data is in the nasty-input tests)."""
    scale = rng.choice([0.5, 1.0, 50.0])
    shift = rng.choice([0.0, 3.0, -10.0])
    return (rng.standard_normal(shape) * scale + shift).astype(dtype)


# ---- MVN-6 ----------------------------------------------------------------------------------


def _mvn6_model(shape, dtype, axes, normalize_variance, eps, eps_mode, axes_dtype=np.int64):
    p = ops1.parameter(shape, dtype, name="x")
    node = ops6.mvn(p, _axes_const(axes, axes_dtype), normalize_variance, eps, eps_mode)
    node.output(0).get_tensor().set_names({"y"})
    return ov.Model([node], [p], "mvn6")


@requires_openvino
def test_mvn6_random_vs_openvino_and_reference(tmp_path):
    rng = np.random.default_rng(6)
    for case in range(36):
        rank = int(rng.integers(1, 6))
        shape = [int(d) for d in rng.integers(1, 6, size=rank)]
        k = int(rng.integers(1, rank + 1))
        axes = [int(a) for a in rng.choice(rank, size=k, replace=False)]
        axes = [a - rank if rng.random() < 0.4 else a for a in axes]  # negative, unsorted
        if k < rank and rng.random() < 0.3:
            axes.append(axes[0])  # a repeat acts as a set (OpenVINO allows at most `rank` values)
        nv = bool(rng.random() < 0.8)
        mode = str(rng.choice(["inside_sqrt", "outside_sqrt"]))
        eps = float(rng.choice([1e-9, 1e-5, 1e-2]))
        et = "f16" if case % 3 == 2 else "f32"
        x = _data(rng, shape, NP[et])
        if et == "f16":
            x = (rng.standard_normal(shape) * 3 + 1).astype(np.float16)
        xml = save(_mvn6_model(shape, NP[et], axes, nv, eps, mode, np.int32 if case % 2 else np.int64),
                   tmp_path, f"m{case}")
        what = f"case {case}: shape={shape} axes={axes} nv={nv} {mode} eps={eps} {et}"
        got = compare_with_openvino(xml, {"x": x})["y"]
        exp = R.mvn6(x, axes, nv, float(np.float32(eps)), mode).astype(x.dtype)
        check_ref(got, exp, what)


@requires_openvino
@pytest.mark.parametrize("spelling", ["inside_sqrt", "INSIDE_SQRT", "Outside_Sqrt", "OUTSIDE_SQRT"])
def test_mvn6_eps_mode_any_case(tmp_path, spelling):
    shape = [2, 3, 8]
    xml = save(_mvn6_model(shape, np.float32, [2], True, 1e-2, "inside_sqrt"), tmp_path, "m")
    text = xml.read_text()
    assert 'eps_mode="INSIDE_SQRT"' in text  # the serializer writes upper case
    xml.write_text(text.replace('eps_mode="INSIDE_SQRT"', f'eps_mode="{spelling}"'))
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 0.1
    got = compare_with_openvino(xml, {"x": x})["y"]
    check_ref(got, R.mvn6(x, [2], True, float(np.float32(1e-2)), spelling).astype(np.float32))


@requires_openvino
def test_mvn6_nasty_inputs(tmp_path):
    rng = np.random.default_rng(7)
    shape = [2, 4, 16]
    xml = save(_mvn6_model(shape, np.float32, [-1], True, 1e-6, "inside_sqrt"), tmp_path, "m")
    xml_o = save(_mvn6_model(shape, np.float32, [-1], True, 1e-6, "outside_sqrt"), tmp_path, "o")
    xml_c = save(_mvn6_model(shape, np.float32, [-1], False, 1e-6, "inside_sqrt"), tmp_path, "c")
    x = rng.standard_normal(shape).astype(np.float32)
    x[0, 0] = 5.0  # constant slice: output 0
    x[0, 1] = 0.0  # all-zero slice
    x[1, 0] = (1e4 + rng.standard_normal(16) * 1e-2).astype(np.float32)  # mean 1e4, tiny variance
    x[1, 1] = -3e4 + rng.standard_normal(16).astype(np.float32)
    for path, nv, mode in ((xml, True, "inside_sqrt"), (xml_o, True, "outside_sqrt"), (xml_c, False, "inside_sqrt")):
        got = run1(path, x)
        exp = R.mvn6(x, [-1], nv, float(np.float32(1e-6)), mode)
        check_ref(got, exp.astype(np.float32), f"{path.name}")
        assert np.all(got[0, :2] == 0)
        cpu = ov_run(path, {"x": x})["y"]
        good = np.ones(shape[:2], bool)
        good[1, :2] = False
        assert_close(got[good], cpu[good], path.name)
        # the CPU plugin's f32 statistics lose the low bits of a 1e4 mean (error ~1e-2 of a unit
        # output at std 1e-2); irnorm stays at f32 rounding of the result
        cpu_err = np.abs(cpu[1, 0] - exp[1, 0]).max()
        assert np.abs(got[1, 0] - exp[1, 0]).max() < 1e-5 < cpu_err < 0.1 * max(np.abs(exp[1, 0]).max(), 1)


@requires_openvino
def test_mvn6_bf16(tmp_path):
    """bf16 data runs directly (f32 arithmetic, bf16 output) and through a Convert to f32."""
    rng = np.random.default_rng(8)
    shape = [2, 3, 8]
    x = (rng.standard_normal(shape) * 2 + 1).astype(BF16)
    p = ops1.parameter(shape, ov.Type.bf16, name="x")
    direct = ops6.mvn(p, ops1.constant(np.array([1, 2], np.int64)), True, 1e-5, "inside_sqrt")
    direct.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([direct], [p]), tmp_path, "direct")
    got = compare_with_openvino(xml, {"x": x})["y"]
    check_ref(got, R.mvn6(x, [1, 2], True, 1e-5, "inside_sqrt").astype(BF16))

    conv = ops1.convert(p, "f32")
    via = ops6.mvn(conv, ops1.constant(np.array([-1], np.int64)), True, 1e-5, "outside_sqrt")
    via.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([via], [p]), tmp_path, "via")
    got = compare_with_openvino(xml, {"x": x})["y"]
    check_ref(got, R.mvn6(x, [-1], True, float(np.float32(1e-5)), "outside_sqrt").astype(np.float32))


@requires_openvino
def test_mvn6_f64(tmp_path):
    x = np.random.default_rng(9).standard_normal((3, 5, 7))
    xml = save(_mvn6_model([3, 5, 7], np.float64, [0, 2], True, 1e-5, "inside_sqrt"), tmp_path, "m")
    got = compare_with_openvino(xml, {"x": x})["y"]
    check_ref(got, R.mvn6(x, [0, 2], True, float(np.float32(1e-5)), "inside_sqrt"))


@requires_openvino
def test_mvn6_dynamic_shape(tmp_path):
    p = ops1.parameter(ov.PartialShape([-1, 4, -1]), np.float32, name="x")
    node = ops6.mvn(p, ops1.constant(np.array([-1], np.int64)), True, 1e-5, "inside_sqrt")
    node.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([node], [p]), tmp_path, "dyn")
    m = irnorm.load(xml)
    assert m.inputs[0].shape == (-1, 4, -1)
    rng = np.random.default_rng(10)
    for shape in ([1, 4, 3], [5, 4, 17]):
        x = rng.standard_normal(shape).astype(np.float32)
        got = compare_with_openvino(xml, {"x": x})["y"]
        check_ref(got, R.mvn6(x, [-1], True, float(np.float32(1e-5)), "inside_sqrt").astype(np.float32))


@requires_openvino
def test_mvn6_empty_axes_reference_zeros_and_cpu_deviation(tmp_path):
    """irnorm follows OpenVINO's reference (zeros at every rank); the CPU plugin returns the
    input at rank 2 and wrong values at rank >= 6, and agrees elsewhere."""
    rng = np.random.default_rng(11)
    for rank in range(1, 7):
        shape = [3, 2, 4, 2, 2, 2][:rank]
        x = rng.standard_normal(shape).astype(np.float32)
        for nv in (True, False):
            xml = save(_mvn6_model(shape, np.float32, [], nv, 1e-5, "inside_sqrt"), tmp_path, f"e{rank}{nv}")
            assert 'shape="0"' in xml.read_text()  # an empty Const (save_model writes size="1")
            got = run1(xml, x)
            np.testing.assert_array_equal(got, np.zeros(shape, np.float32))
            check_ref(got, R.mvn6(x, [], nv, 1e-5, "inside_sqrt").astype(np.float32))
            cpu = ov_run(xml, {"x": x})["y"]
            if rank == 2:
                np.testing.assert_array_equal(cpu, x)  # CPU: identity
            elif rank >= 6:
                assert np.count_nonzero(cpu) > 0  # CPU: garbage
            else:
                np.testing.assert_array_equal(cpu, got)


@requires_openvino
def test_mvn6_eps_zero_constant_slice_is_nan(tmp_path):
    x = np.ones((2, 5), np.float32)
    x[1] = np.arange(5)
    xml = save(_mvn6_model([2, 5], np.float32, [1], True, 0.0, "inside_sqrt"), tmp_path, "m")
    got = run1(xml, x)
    assert np.isnan(got[0]).all() and np.isfinite(got[1]).all()
    check_ref(got, R.mvn6(x, [1], True, 0.0, "inside_sqrt").astype(np.float32))


def test_mvn6_handwritten_ir_and_repeated_axes(tmp_path):
    """No OpenVINO needed: [2, 2, -1] on rank 3 is the set {2}."""
    x = np.random.default_rng(12).standard_normal((2, 3, 6)).astype(np.float32)
    a = make_ir(tmp_path / "a.xml", "MVN", "opset6", {"eps": "1e-05", "normalize_variance": "true",
                                                       "eps_mode": "OUTSIDE_SQRT"},
                [("param", "x", [2, 3, 6], "f32"), np.array([2, 2, -1], np.int64)])
    b = make_ir(tmp_path / "b.xml", "MVN", "opset17", {"eps": "1e-05", "normalize_variance": "true",
                                                        "eps_mode": "outside_sqrt"},
                [("param", "x", [2, 3, 6], "f32"), np.array([2], np.int32)])
    ya, yb = run1(a, x), run1(b, x)
    np.testing.assert_array_equal(ya, yb)
    check_ref(ya, R.mvn6(x, [2], True, float(np.float32(1e-5)), "outside_sqrt").astype(np.float32))


# ---- MVN-1 ----------------------------------------------------------------------------------


def _mvn1_model(shape, dtype, across, nv, eps):
    p = ops1.parameter(shape, dtype, name="x")
    node = ops2.mvn(p, across_channels=across, normalize_variance=nv, eps=eps)
    node.output(0).get_tensor().set_names({"y"})
    return ov.Model([node], [p], "mvn1")


@requires_openvino
def test_mvn1_random_vs_openvino_and_reference(tmp_path):
    rng = np.random.default_rng(1)
    for case in range(24):
        rank = int(rng.integers(2, 6))
        shape = [int(d) for d in rng.integers(1, 6, size=rank)]
        across = bool(rng.random() < 0.5)
        nv = bool(rng.random() < 0.7)
        eps = float(rng.choice([1e-9, 1e-4, 0.1]))
        et = "f16" if case % 4 == 3 else "f32"
        x = (rng.standard_normal(shape) * 2 - 1).astype(NP[et]) if et == "f16" else _data(rng, shape, np.float32)
        xml = save(_mvn1_model(shape, NP[et], across, nv, eps), tmp_path, f"m{case}")
        text = xml.read_text()
        assert 'version="opset2"' in text and "reduction_axes=" in text and "across_channels=" in text
        if case % 2:  # the spec's form: across_channels alone
            xml.write_text(re.sub(r' reduction_axes="[^"]*"', "", text))
        got = compare_with_openvino(xml, {"x": x})["y"]
        check_ref(got, R.mvn1(x, across, None, nv, eps).astype(x.dtype), f"case {case} {shape} {across} {nv}")


@requires_openvino
@pytest.mark.parametrize("version", ["opset1", "opset2", "opset5"])
def test_mvn1_opset_versions(tmp_path, version):
    """opset1 has no MVN; OpenVINO (and irnorm) map it to MVN-1, like opset2..opset5."""
    xml = save(_mvn1_model([2, 3, 4], np.float32, True, True, 1e-6), tmp_path, "m")
    xml.write_text(xml.read_text().replace('version="opset2"', f'version="{version}"'))
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    got = compare_with_openvino(xml, {"x": x})["y"]
    check_ref(got, R.mvn1(x, True, None, True, 1e-6).astype(np.float32))


@requires_openvino
@pytest.mark.parametrize("axes_attr,reference_axes,cpu_axes", [
    ("3", [3], [2, 3]),
    ("0", [0], [2, 3]),
    ("0, 2", [0, 2], [2, 3]),
    ("1", [1], [1, 2, 3]),
    ("1, 2", [1, 2], [1, 2, 3]),
    ("2, 3", [2, 3], [2, 3]),
])
def test_mvn1_reduction_axes_win_and_cpu_deviation(tmp_path, axes_attr, reference_axes, cpu_axes):
    """A non-empty reduction_axes wins over across_channels (OpenVINO's reader and reference);
    the CPU plugin only looks at the recomputed across_channels (is axis 1 in the set)."""
    xml = save(_mvn1_model([2, 3, 4, 5], np.float32, True, True, 1e-9), tmp_path, "m")
    text = re.sub(r'reduction_axes="[^"]*"', f'reduction_axes="{axes_attr}"', xml.read_text())
    xml.write_text(text)
    x = (np.random.default_rng(3).standard_normal((2, 3, 4, 5)) * 3 + 1).astype(np.float32)
    got = run1(xml, x)
    check_ref(got, R.mvn1(x, True, reference_axes, True, 1e-9).astype(np.float32))
    cpu = ov_run(xml, {"x": x})["y"]
    assert_close(cpu, R.mvn6(x, cpu_axes, True, 1e-9, "inside_sqrt").astype(np.float32), "cpu")
    if sorted(reference_axes) != cpu_axes:
        assert not np.allclose(cpu, got, atol=1e-3)


@requires_openvino
@pytest.mark.parametrize("across", [True, False])
def test_mvn1_empty_reduction_axes_means_absent(tmp_path, across):
    """reduction_axes="" falls back to across_channels, as OpenVINO's reader does."""
    xml = save(_mvn1_model([2, 3, 4], np.float32, across, True, 1e-9), tmp_path, "m")
    xml.write_text(re.sub(r'reduction_axes="[^"]*"', 'reduction_axes=""', xml.read_text()))
    x = np.random.default_rng(4).standard_normal((2, 3, 4)).astype(np.float32)
    got = compare_with_openvino(xml, {"x": x})["y"]
    check_ref(got, R.mvn1(x, across, None, True, 1e-9).astype(np.float32))


@requires_openvino
def test_mvn1_rank2_not_across_is_zeros_and_defaults(tmp_path):
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    xml = save(_mvn1_model([3, 4], np.float32, False, True, 1e-9), tmp_path, "m")
    got = compare_with_openvino(xml, {"x": x})["y"]
    np.testing.assert_array_equal(got, np.zeros((3, 4), np.float32))
    # neither across_channels nor reduction_axes nor normalize_variance: [2..r-1], centering only
    x3 = np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float32)
    h = make_ir(tmp_path / "h.xml", "MVN", "opset2", {"eps": "1e-9"}, [("param", "x", [2, 3, 4], "f32")])
    check_ref(run1(h, x3), R.mvn1(x3, False, None, False, 1e-9).astype(np.float32))
    compare_with_openvino(h, {"x": x3})


# ---- malformed IR -----------------------------------------------------------------------------

X3 = ("param", "x", [2, 3, 4], "f32")
GOOD6 = {"eps": "1e-05", "normalize_variance": "true", "eps_mode": "INSIDE_SQRT"}


def _mvn6_ir(tmp_path, attrs=None, axes=None, data=X3, version="opset6"):
    return make_ir(tmp_path / "bad.xml", "MVN", version, GOOD6 if attrs is None else attrs,
                   [data, np.array([2], np.int64) if axes is None else axes])


def test_malformed_mvn6_good_baseline(tmp_path):
    assert errors_of(_mvn6_ir(tmp_path)) == []


def test_malformed_mvn6_bad_eps_mode(tmp_path):
    assert_diag(_mvn6_ir(tmp_path, {**GOOD6, "eps_mode": "middle_sqrt"}), "IRN021",
                r"eps_mode=\"middle_sqrt\": 'middle_sqrt' is not one of inside_sqrt, outside_sqrt")


@pytest.mark.parametrize("missing", ["eps", "eps_mode", "normalize_variance"])
def test_malformed_mvn6_missing_attribute(tmp_path, missing):
    attrs = {k: v for k, v in GOOD6.items() if k != missing}
    assert_diag(_mvn6_ir(tmp_path, attrs), "IRN020", f"required attribute '{missing}' is missing")


def test_malformed_mvn6_unknown_attribute(tmp_path):
    assert_diag(_mvn6_ir(tmp_path, {**GOOD6, "across_channels": "true"}), "IRN022",
                r"unknown attribute 'across_channels' \(allowed: eps, eps_mode, normalize_variance\)")


def test_malformed_mvn6_negative_eps_and_bad_bool(tmp_path):
    assert_diag(_mvn6_ir(tmp_path, {**GOOD6, "eps": "-1e-5"}), "IRN023", r"eps=\"-1e-5\": must be non-negative")
    assert_diag(_mvn6_ir(tmp_path, {**GOOD6, "normalize_variance": "yes"}), "IRN021",
                r"normalize_variance=\"yes\": 'yes' is not a bool")


@pytest.mark.parametrize("axes,pattern", [
    ([3], r"axes value 3 is out of range \[-3, 2\] for rank 3"),
    ([0, -4], r"axes value -4 is out of range \[-3, 2\] for rank 3"),
])
def test_malformed_mvn6_axes_out_of_range(tmp_path, axes, pattern):
    assert_diag(_mvn6_ir(tmp_path, axes=np.array(axes, np.int64)), "IRN032", pattern)


def test_malformed_mvn6_axes_not_1d(tmp_path):
    assert_diag(_mvn6_ir(tmp_path, axes=np.array(2, np.int64)), "IRN032", r"axes \(input 1\) must be 1-D, got \[\]")
    assert_diag(_mvn6_ir(tmp_path, axes=np.array([[2]], np.int64)), "IRN032",
                r"axes \(input 1\) must be 1-D, got \[1,1\]")


def test_malformed_mvn6_float_axes(tmp_path):
    assert_diag(_mvn6_ir(tmp_path, axes=np.array([2.0], np.float32)), "IRN033",
                r"axes \(input 1\) must be an integer tensor, got f32")


def test_malformed_mvn6_non_constant_axes(tmp_path):
    xml = make_ir(tmp_path / "bad.xml", "MVN", "opset6", GOOD6, [X3, ("param", "axes", [1], "i64")])
    assert_diag(xml, "IRN034", r"input 1 \(axes\) must be a constant")


def test_malformed_mvn_integer_data(tmp_path):
    data = ("param", "x", [2, 3, 4], "i32")
    assert_diag(_mvn6_ir(tmp_path, data=data), "IRN033", r"data must be a floating-point tensor, got i32")
    xml = make_ir(tmp_path / "b1.xml", "MVN", "opset2", {"eps": "1e-9"}, [data])
    assert_diag(xml, "IRN033", r"data must be a floating-point tensor, got i32")


def test_malformed_mvn6_wrong_arity(tmp_path):
    xml = make_ir(tmp_path / "bad.xml", "MVN", "opset6", GOOD6, [X3])
    assert_diag(xml, "IRN017", r"has 1 input ports, MVN-6 takes 2")
    xml = make_ir(tmp_path / "bad1.xml", "MVN", "opset5", {"eps": "1e-9"}, [X3, np.array([2], np.int64)])
    assert_diag(xml, "IRN017", r"has 2 input ports, MVN-1 takes 1")


def _mvn1_ir(tmp_path, **attrs):
    return make_ir(tmp_path / "bad.xml", "MVN", "opset2", {"eps": "1e-9", **attrs}, [("param", "x", [2, 3, 4, 5],
                                                                                         "f32")])


@pytest.mark.parametrize("axes,pattern", [
    ("4", r"reduction_axes value 4 is out of range \[0, 3\] for rank 4 \(MVN-1 axes are unsigned\)"),
    ("-1", r"reduction_axes value -1 is out of range \[0, 3\] for rank 4"),
])
def test_malformed_mvn1_reduction_axes_out_of_range(tmp_path, axes, pattern):
    assert_diag(_mvn1_ir(tmp_path, reduction_axes=axes), "IRN023", pattern)


def test_malformed_mvn1_repeated_reduction_axes(tmp_path):
    assert_diag(_mvn1_ir(tmp_path, reduction_axes="2, 3, 2"), "IRN023", r"reduction_axes \[2, 3, 2\] has repeated axes")


def test_malformed_mvn1_attributes(tmp_path):
    xml = make_ir(tmp_path / "bad.xml", "MVN", "opset2", {"across_channels": "true"}, [X3])
    assert_diag(xml, "IRN020", r"required attribute 'eps' is missing")
    assert_diag(_mvn1_ir(tmp_path, reduction_axes="2,,3"), "IRN021", r"reduction_axes=\"2,,3\": '' is not an integer")
    assert_diag(_mvn1_ir(tmp_path, eps_mode="INSIDE_SQRT"), "IRN022", r"unknown attribute 'eps_mode'")
    assert_diag(_mvn1_ir(tmp_path, across_channels="maybe"), "IRN021", r"'maybe' is not a bool")


# ---- samples --------------------------------------------------------------------------------


def test_layer_norm_mvn_sample_mvn_layer_validates():
    """samples/ir/layer_norm_mvn.xml: the MVN-6 layer passes; any remaining error can only be
    a not-yet-registered elementwise op (Multiply/Add)."""
    diags = irnorm.check(SAMPLES / "ir" / "layer_norm_mvn.xml")
    errs = [d for d in diags if d.severity == "error"]
    assert all(d.code == "IRN012" and d.layer_type in ("Multiply", "Add") for d in errs), [str(d) for d in errs]
    assert not [d for d in diags if d.layer_type == "MVN"]


def test_malformed_mvn6_more_axes_than_rank(tmp_path):
    """OpenVINO rejects more axes values than the data's rank, even when repeats collapse."""
    assert_diag(_mvn6_ir(tmp_path, axes=np.array([0, 1, 2, 2], np.int64)), "IRN032",
                r"axes has 4 values but data has rank 3")
