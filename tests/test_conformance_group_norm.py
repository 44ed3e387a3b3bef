"""Conformance of GroupNormalization-12: OpenVINO-written IR files run in OpenVINO's CPU plugin
(f32 inference precision) and in irnorm, and irnorm against the float64 oracle
(irnorm/reference.py) with tighter tolerances on nasty inputs.

The generator below builds each model with OpenVINO's Python API (opset12.group_normalization),
writes it with ``openvino.save_model`` with and without fp16 weight compression (tests/ovutil.save),
and compares on random shapes (rank 2..6), group counts (1, C, in between), eps values and model
types (f32, f16, f64; bf16 as a Parameter bf16 -> Convert f32: whether the CPU plugin runs a bf16
GroupNormalization depends on the CPU's instruction set, so all-bf16 models are checked against the
float64 oracle only).  Everything uses fixed seeds.

Where OpenVINO's CPU plugin is no exact oracle, irnorm is held to the float64 oracle instead (the
tests assert irnorm's results, never what the plugin can or cannot do on this CPU):
* at mean 1e4 with std 1e-2 (f32) irnorm stays within 1e-3 std of the float64 oracle;
* a constant (zero-variance) group gives exactly the bias in irnorm; the CPU plugin is only close
  (its float32 mean is off by about an ulp of the level, which 1/sqrt(eps) amplifies).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

import ml_dtypes  # noqa: E402
import openvino.opset1 as ops1  # noqa: E402
import openvino.opset12 as ops12  # noqa: E402
from ovutil import assert_close, compare_with_openvino, ov_run, save  # noqa: E402

import irnorm  # noqa: E402
from irnorm import reference  # noqa: E402

pytestmark = pytest.mark.openvino

BF16 = np.dtype(ml_dtypes.bfloat16)

# irnorm vs the float64 oracle, fed exactly the values irnorm sees (inputs and weights already
# rounded to the model's types), as (rtol, atol); atol is scaled by max(|expected|, 1).
#  f64: the kernel is float64 end to end; only reassociation of sums differs -> 1e-12.
#  f32: moments are accumulated in float64, then (x - mean) * mult * scale + bias runs in float32:
#       a handful of float32 roundings (2^-24 = 6e-8 each) on O(1) values -> 2e-6.
#  f16: computed in float32 and rounded once to float16 (half an ulp = 4.9e-4 relative) -> 1e-3.
#  bf16: computed in float32 and rounded once to bfloat16 (half an ulp = 2^-9 = 2e-3) -> 4e-3.
REF_TOL = {
    "float64": (1e-12, 1e-12),
    "float32": (2e-6, 2e-6),
    "float16": (1e-3, 1e-3),
    "bfloat16": (4e-3, 4e-3),
}

# model type name -> (Parameter element type, GroupNormalization element type, numpy dtype of the input)
TYPES = {
    "f32": (ov.Type.f32, ov.Type.f32, np.dtype(np.float32)),
    "f16": (ov.Type.f16, ov.Type.f16, np.dtype(np.float16)),
    "f64": (ov.Type.f64, ov.Type.f64, np.dtype(np.float64)),
    "bf16in": (ov.Type.bf16, ov.Type.f32, BF16),  # Parameter bf16 -> Convert f32 -> GroupNormalization f32
    "bf16": (ov.Type.bf16, ov.Type.bf16, BF16),  # all bf16 (irnorm only: the CPU plugin cannot run it)
}


@dataclass(frozen=True)
class Case:
    name: str
    shape: tuple[int, ...]
    groups: int
    eps: float
    et: str
    seed: int
    loc: float = 0.0
    std: float = 1.0
    constant_group: bool = False  # make the first (n=0, g=0) group constant (zero variance)

    @property
    def channels(self) -> int:
        return self.shape[1]


def _shape_id(shape) -> str:
    return "x".join(str(d) for d in shape)


def _make_cases() -> list[Case]:
    """~40 random cases: rank cycles 2..6 and type cycles over 4 kinds, so all 20 pairs appear twice."""
    rng = np.random.default_rng(20240612)
    kinds = ["f32", "f16", "f64", "bf16in"]
    cases = []
    for i in range(40):
        rank = 2 + i % 5
        et = kinds[i % 4]
        g = int(rng.choice([1, 1, 2, 3, 4, 8]))
        per = int(rng.choice([1, 1, 2, 3, 4]))  # channels per group; 1 gives instance norm (G == C)
        if i % 6 == 0:
            g, per = int(rng.integers(2, 7)), 1  # G == C
        c = g * per
        n = int(rng.integers(1, 4))
        hi = 6 if rank <= 4 else 4
        spatial = tuple(int(d) for d in rng.integers(1, hi, rank - 2))
        shape = (n, c, *spatial)
        eps = float(rng.choice([1e-5, 1e-6, 1e-3, 1e-12, 0.1, 1.0]))
        loc = float(rng.uniform(-2.0, 2.0))
        std = float(rng.uniform(0.5, 3.0))
        name = f"gn{i:02d}-{et}-{_shape_id(shape)}-G{g}-eps{eps:g}"
        cases.append(Case(name, shape, g, eps, et, 1000 + i, loc, std, constant_group=i % 7 == 3))
    return cases


CASES = _make_cases()


def _weights(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """scale and bias as float32 values (converted to the model type by the builder)."""
    rng = np.random.default_rng(case.seed + 500_000)
    c = case.channels
    return (rng.standard_normal(c) * 0.5 + 1.0).astype(np.float32), (rng.standard_normal(c) * 0.5).astype(np.float32)


def _const(values: np.ndarray, et: ov.Type, name: str):
    """A Const of element type `et`; bf16 goes through a Const f32 -> Convert (numpy has no bf16 for OpenVINO)."""
    if et == ov.Type.bf16:
        return ops1.convert(ops1.constant(values.astype(np.float32), name=name + "_f32"), "bf16", name=name)
    return ops1.constant(values.astype(et.to_dtype()), name=name)


def build_model(case: Case, shape=None):
    """Parameter x -> [Convert f32] -> GroupNormalization 'gn' -> Result (output tensor 'y')."""
    pet, get, _ = TYPES[case.et]
    x = ops1.parameter(case.shape if shape is None else shape, pet, name="x")
    x.output(0).get_tensor().set_names({"x"})
    src = ops1.convert(x, "f32", name="x_to_f32") if pet != get else x
    scale, bias = _weights(case)
    gn = ops12.group_normalization(src, _const(scale, get, "gn_scale"), _const(bias, get, "gn_bias"),
                                   case.groups, case.eps, name="gn")
    gn.output(0).get_tensor().set_names({"y"})
    return ov.Model([ops1.result(gn, name="y/result")], [x], "group_norm")


def stored_compressed(xml) -> tuple[bool, bool]:
    """Which of gn_scale / gn_bias did save_model store as an f16 Const + Convert?  Decided per
    Const by OpenVINO (observed: never behind a bf16 Parameter, and sometimes not for one of the two
    Consts of a C=1 model), so the oracle reads it from the written file instead of assuming."""
    text = xml.read_text()
    return 'name="gn_scale_compressed"' in text, 'name="gn_bias_compressed"' in text


def effective_weights(case: Case, xml) -> tuple[np.ndarray, np.ndarray]:
    """The scale/bias values the written IR really holds, as float64 (for the oracle)."""
    _, get, _ = TYPES[case.et]
    out = []
    for w, compressed in zip(_weights(case), stored_compressed(xml), strict=True):
        w = w.astype(BF16) if get == ov.Type.bf16 else w.astype(get.to_dtype())
        if compressed:
            w = w.astype(np.float16)
        out.append(w.astype(np.float64))
    return out[0], out[1]


def make_input(case: Case, shape=None, seed: int | None = None) -> np.ndarray:
    """Random data of the case's mean and std (and constant group), in the Parameter's dtype."""
    shape = case.shape if shape is None else shape
    rng = np.random.default_rng(case.seed if seed is None else seed)
    x = rng.standard_normal(shape) * case.std + case.loc
    if case.constant_group and x.size:
        per = case.channels // case.groups
        x[0, :per] = np.round(case.loc * 8) / 8  # a short dyadic level: exact in every float type
    return x.astype(TYPES[case.et][2])


def oracle(case: Case, x: np.ndarray, xml) -> np.ndarray:
    scale, bias = effective_weights(case, xml)
    return reference.group_normalization(x.astype(np.float64), scale, bias, case.groups, case.eps)


def check_reference(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert_close(got, np.asarray(expected, np.float64), what, tol=REF_TOL[got.dtype.name])


# ---------------------------------------------------------------------------------------------
# the generated conformance cases


@pytest.mark.parametrize("compress", [False, True], ids=["w32", "w16"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_conformance(case: Case, compress: bool, tmp_path) -> None:
    xml = save(build_model(case), tmp_path, "gn", compress_to_fp16=compress)
    x = make_input(case)
    got = compare_with_openvino(xml, {"x": x})["y"]
    assert got.dtype == (np.float32 if case.et == "bf16in" else TYPES[case.et][2])
    check_reference(got, oracle(case, x, xml), case.name)


def test_cases_cover_the_space() -> None:
    """The generator really spans what the issue asks for."""
    assert {len(c.shape) for c in CASES} == {2, 3, 4, 5, 6}
    assert {c.et for c in CASES} == {"f32", "f16", "f64", "bf16in"}
    assert any(c.groups == 1 for c in CASES) and any(c.groups == c.channels > 1 for c in CASES)
    assert any(1 < c.groups < c.channels for c in CASES)
    assert len({c.eps for c in CASES}) >= 5
    assert any(c.constant_group for c in CASES)


def test_compression_really_changes_the_weights(tmp_path) -> None:
    """compress_to_fp16=True writes f16 Consts + Convert, and irnorm uses those f16 values."""
    case = Case("w", (2, 6, 5), 3, 1e-5, "f32", 7)
    x = make_input(case)
    outs = {}
    for compress in (False, True):
        xml = save(build_model(case), tmp_path, f"gn{int(compress)}", compress_to_fp16=compress)
        text = xml.read_text()
        assert ('element_type="f16"' in text) == compress
        outs[compress] = irnorm.load(xml).run({"x": x})["y"]
        check_reference(outs[compress], oracle(case, x, xml), f"compress={compress}")
    assert not np.array_equal(outs[False], outs[True])


# ---------------------------------------------------------------------------------------------
# nasty inputs, against the float64 oracle (and OpenVINO where it agrees)


@pytest.mark.parametrize("et", ["f32", "f16", "f64", "bf16in"])
@pytest.mark.parametrize("shape,groups", [((2, 6, 4, 3), 3), ((1, 4), 2), ((3, 8, 2, 1, 3), 8)],
                         ids=["r4", "r2", "r5"])
def test_zero_variance_groups_give_bias(et: str, shape, groups: int, tmp_path) -> None:
    """Every (n, group) block constant (a different constant per block): (x - mean) is exactly 0,
    so the output is the bias exactly (in the output type), whatever eps."""
    case = Case("const", shape, groups, 1e-5, et, 11)
    n, c = shape[:2]
    levels = np.random.default_rng(3).uniform(-50, 50, (n, groups))
    x = np.broadcast_to(np.repeat(levels, c // groups, axis=1).reshape((n, c) + (1,) * (len(shape) - 2)), shape)
    x = np.ascontiguousarray(x).astype(TYPES[et][2])
    xml = save(build_model(case), tmp_path, "gn", compress_to_fp16=False)
    got = irnorm.load(xml).run({"x": x})["y"]
    _, bias = effective_weights(case, xml)
    want = np.broadcast_to(bias.reshape((1, c) + (1,) * (len(shape) - 2)), shape).astype(got.dtype)
    if et == "f64":  # arbitrary doubles: the float64 sum of k copies of a level rounds (~1e-15 relative)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    else:  # float32-representable levels: the float64 sum is exact, so x - mean == 0 exactly
        np.testing.assert_array_equal(got, want)
    # The CPU plugin is close but not exact here: an ulp of error in its float32 mean of a level of
    # up to 50, times 1/sqrt(eps) = 316 -> about 1e-3 (documented deviation).
    cpu = ov_run(xml, {"x": x})["y"]
    assert cpu.dtype == got.dtype
    np.testing.assert_allclose(cpu.astype(np.float64), want.astype(np.float64), rtol=0, atol=5e-3)


@pytest.mark.parametrize("shape,groups", [((1, 4, 8, 8), 2), ((2, 6, 300), 3)], ids=["r4", "r3-long"])
def test_large_mean_small_std_is_stable(shape, groups: int, tmp_path) -> None:
    """mean 1e4, std 1e-2 in f32: no E[x^2]-E[x]^2 cancellation and no lost low bits of the mean.
    The f32 result must match the f64 oracle (same f32 inputs) to 1e-3 of a standard deviation."""
    case = Case("big", shape, groups, 1e-9, "f32", 21, loc=1e4, std=1e-2)
    x = make_input(case)
    xml = save(build_model(case), tmp_path, "gn", compress_to_fp16=False)
    got = irnorm.load(xml).run({"x": x})["y"].astype(np.float64)
    want = oracle(case, x, xml)
    scale, bias = effective_weights(case, xml)
    cshape = (1, shape[1]) + (1,) * (len(shape) - 2)
    # back to standard-deviation units: (y - bias) / scale is the normalized value
    err = np.abs((got - want) / scale.reshape(cshape))
    assert err.max() < 1e-3, err.max()


@pytest.mark.parametrize("compress", [False, True], ids=["w32", "w16"])
def test_f64_large_mean(compress: bool, tmp_path) -> None:
    """f64 models compute in float64: mean 1e4 with std 1e-2 comes out within 1e-8 std of the oracle
    (one f64 ulp of 1e4 is 1.8e-12, i.e. 2e-10 std)."""
    case = Case("big64", (2, 4, 6, 5), 4, 1e-12, "f64", 22, loc=1e4, std=1e-2)
    x = make_input(case)
    xml = save(build_model(case), tmp_path, "gn", compress_to_fp16=compress)
    got = irnorm.load(xml).run({"x": x})["y"]
    assert got.dtype == np.float64
    want = oracle(case, x, xml)
    scale, _ = effective_weights(case, xml)
    assert np.abs((got - want) / scale.reshape(1, 4, 1, 1)).max() < 1e-8


def test_f16_mean_1000(tmp_path) -> None:
    """f16 data around 1000 (f16 spacing there is 0.5): statistics in float64, arithmetic in float32,
    one final rounding to f16; OpenVINO (f32 inference) agrees to f16 tolerance."""
    case = Case("f16big", (2, 8, 5, 5), 2, 1e-5, "f16", 23, loc=1000.0, std=4.0)
    x = make_input(case)
    assert x.dtype == np.float16 and 990 < float(x.astype(np.float32).mean()) < 1010
    xml = save(build_model(case), tmp_path, "gn", compress_to_fp16=True)
    got = compare_with_openvino(xml, {"x": x})["y"]
    check_reference(got, oracle(case, x, xml), "f16 mean 1000")


@pytest.mark.parametrize("eps", [1e-30, 1e-20, 1e4, 1e8], ids=["1e-30", "1e-20", "1e4", "1e8"])
def test_huge_and_tiny_eps(eps: float, tmp_path) -> None:
    """Tiny eps: plain standardization; huge eps: (x - mean) / sqrt(eps) dominates."""
    case = Case("eps", (2, 6, 4, 4), 3, eps, "f32", 24, loc=0.5, std=2.0)
    x = make_input(case)
    xml = save(build_model(case), tmp_path, "gn", compress_to_fp16=False)
    got = compare_with_openvino(xml, {"x": x})["y"]
    check_reference(got, oracle(case, x, xml), f"eps={eps}")


@pytest.mark.parametrize("compress", [False, True], ids=["w32", "w16"])
def test_bf16_model_runs_in_irnorm(compress: bool, tmp_path) -> None:
    """A GroupNormalization entirely in bf16 (bf16 data, scale, bias, output): irnorm computes in
    float32 and rounds once; checked against the oracle."""
    case = Case("bf16", (2, 6, 3, 4), 3, 1e-5, "bf16", 25, loc=1.5, std=2.0)
    x = make_input(case)
    xml = save(build_model(case), tmp_path, "gn", compress_to_fp16=compress)
    m = irnorm.load(xml)
    assert m.inputs[0].dtype == BF16 and m.outputs[0].dtype == BF16
    got = m.run({"x": x})["y"]
    assert got.dtype == BF16
    check_reference(got, oracle(case, x, xml), "bf16")


def test_zero_size_tensors(tmp_path) -> None:
    """N == 0 or a spatial dim of 0: an empty output of the same shape and type."""
    case = Case("dyn", (2, 6, 3), 3, 1e-5, "f32", 26)
    xml = save(build_model(case, shape=ov.PartialShape([-1, 6, -1])), tmp_path, "gn", compress_to_fp16=False)
    m = irnorm.load(xml)
    for shape in [(0, 6, 3), (2, 6, 0)]:
        y = m.run({"x": np.zeros(shape, np.float32)})["y"]
        assert y.shape == shape and y.dtype == np.float32


# ---------------------------------------------------------------------------------------------
# dynamic shapes


@pytest.mark.parametrize("compress", [False, True], ids=["w32", "w16"])
def test_dynamic_shapes(compress: bool, tmp_path) -> None:
    """A Parameter with every dim dynamic, fed several concrete shapes (compared with OpenVINO and
    the oracle); a runtime C that does not match scale/bias is refused with IRN064 naming the layer."""
    case = Case("dyn", (1, 6, 4, 4), 3, 1e-5, "f32", 27, loc=0.3, std=1.5)
    xml = save(build_model(case, shape=ov.PartialShape([-1, -1, -1, -1])), tmp_path, "gn", compress_to_fp16=compress)
    m = irnorm.load(xml)
    assert m.inputs[0].shape == (-1, -1, -1, -1)
    for i, shape in enumerate([(1, 6, 4, 4), (3, 6, 1, 7), (2, 6, 5, 1), (1, 6, 1, 1)]):
        x = make_input(case, shape, seed=100 + i)
        got = compare_with_openvino(xml, {"x": x})["y"]
        assert got.shape == shape
        check_reference(got, oracle(case, x, xml), f"dynamic {shape}")
    for bad in [(2, 4, 3, 3), (1, 9, 2, 2)]:
        with pytest.raises(irnorm.InputError) as info:
            m.run({"x": np.ones(bad, np.float32)})
        err = info.value
        assert err.code == "IRN064"
        assert err.layer_name == "gn"
        assert "'gn'" in str(err) and "GroupNormalization" in str(err)
        assert f"scale has 6 values but data has C={bad[1]} channels" in str(err)
    # the model still runs after a refused call
    x = make_input(case)
    check_reference(m.run({"x": x})["y"], oracle(case, x, xml), "after error")


def test_dynamic_channel_dim_with_static_rest(tmp_path) -> None:
    """[2, ?, 3]: only C is dynamic; a matching C runs, another C is IRN064."""
    case = Case("dyn", (2, 8, 3), 4, 1e-5, "f32", 28)
    xml = save(build_model(case, shape=ov.PartialShape([2, -1, 3])), tmp_path, "gn", compress_to_fp16=False)
    m = irnorm.load(xml)
    x = make_input(case)
    got = compare_with_openvino(xml, {"x": x})["y"]
    check_reference(got, oracle(case, x, xml), "C dynamic")
    with pytest.raises(irnorm.InputError) as info:
        m.run({"x": np.ones((2, 4, 3), np.float32)})
    assert info.value.code == "IRN064" and info.value.layer_name == "gn"
