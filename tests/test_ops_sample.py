"""FakeQuantize-1, GridSample-9 and Interpolate-4/11 cubic beyond the conformance rows: against
OpenVINO's CPU plugin (skipped without OpenVINO) and numpy/float64 references over random shapes and
attributes, dynamic dims, the parallel paths of the Numba kernels, the spec's edge cases, and
malformed layers or inputs -> coded errors (never a traceback, never an out-of-bounds read)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from irbuilder import expect_error, single_op_model
from ovutil import HAVE_OPENVINO, compare_with_openvino, requires_openvino, save

import irnorm
from irnorm import reference as R

if HAVE_OPENVINO:
    import openvino as ov
    import openvino.opset1 as op1
    import openvino.opset9 as op9
    import openvino.opset10 as op10
    import openvino.opset11 as op11


def _run(b, tmp_path, feeds, name="m"):
    return irnorm.load(b.save(tmp_path, name)).run(feeds)


def _param(shape, dtype, name, dynamic=False):
    return op1.parameter(ov.PartialShape([-1] * len(shape)) if dynamic else ov.PartialShape(list(shape)),
                         np.dtype(dtype), name=name)


def _ov_model(node, params, tmp_path, name):
    node.output(0).get_tensor().set_names({"y"})
    return save(ov.Model([op1.result(node)], params, name), tmp_path, name)


# ---- FakeQuantize -----------------------------------------------------------------------------------------


def _limits(rng, shape, dtype=np.float32):
    il = rng.uniform(-2, 0, shape)
    ih = il + rng.uniform(0.5, 3, shape)
    ol = rng.uniform(-3, 3, shape)
    oh = ol + rng.uniform(-4, 4, shape)
    return [np.asarray(v).astype(dtype) for v in (il, ih, ol, oh)]


def _off_boundary(rng, xs, il, ih, levels, dtype=np.float32):
    """Data a fraction of a step away from every rounding boundary, 15% of it clipped."""
    il64, ih64 = (np.broadcast_to(v.astype(np.float64), xs) for v in (il, ih))
    x = il64 + (rng.integers(0, levels - 1, xs) + rng.choice([0.2, 0.4, 0.6, 0.8], xs)) / (levels - 1) * (ih64 - il64)
    return np.where(rng.random(xs) < 0.15, rng.uniform(-6, 6, xs), x).astype(dtype)


@requires_openvino
@pytest.mark.parametrize("seed", range(6))
def test_fake_quantize_matches_openvino(tmp_path, seed):
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 5))
    xs = tuple(int(d) for d in rng.integers(1, 6, rank))
    # per-tensor or per-channel limits: the layouts the CPU plugin takes (other broadcasts are checked
    # against the float64 reference, here and in the conformance rows)
    ls = () if seed % 2 else ((1, xs[1]) + (1,) * (rank - 2) if rank >= 2 else xs)
    levels = int(rng.choice([2, 5, 16, 255, 256]))
    lim = _limits(rng, ls)
    x = _off_boundary(rng, xs, lim[0], lim[1], levels)
    dynamic = bool(seed % 2)
    p = _param(xs, np.float32, "x", dynamic)
    limit_params = [_param(v.shape, np.float32, f"l{k}", dynamic) for k, v in enumerate(lim)] if seed % 3 == 0 \
        else list(lim)
    node = op1.fake_quantize(p, *limit_params, levels)
    params = [p] + [q for q in limit_params if not isinstance(q, np.ndarray)]
    xml = _ov_model(node, params, tmp_path, f"fq{seed}")
    feeds = {"x": x} | ({f"l{k}": v for k, v in enumerate(lim)} if seed % 3 == 0 else {})
    got = compare_with_openvino(xml, feeds)
    np.testing.assert_allclose(got["y"], R.fake_quantize(x, *lim, levels), rtol=1e-5, atol=1e-5)


def _fq_model(xs, ls, levels, et="f32", auto="numpy", out=None):
    ins = [("param:x", (xs, et))] + [(f"param:{n}", (ls, et)) for n in ("il", "ih", "ol", "oh")]
    attrs = {"levels": levels} if auto is None else {"levels": levels, "auto_broadcast": auto}
    return single_op_model("FakeQuantize", ins, [(out or xs, et)], attrs, version="opset1")


def test_fake_quantize_large_tensors_take_the_parallel_paths(tmp_path):
    """Per-channel limits over a [2, 3, 100, 200] tensor (rows of 20000 > one chunk) and per-element
    limits over the last dim; compared with the float64 reference element by element."""
    rng = np.random.default_rng(7)
    for ls in ((1, 3, 1, 1), (1, 1, 1, 200), ()):
        xs = (2, 3, 100, 200)
        lim = _limits(rng, ls)
        x = _off_boundary(rng, xs, lim[0], lim[1], 256)
        b = _fq_model(xs, ls, 256)
        y = _run(b, tmp_path, {"x": x, "il": lim[0], "ih": lim[1], "ol": lim[2], "oh": lim[3]}, f"big{len(ls)}")["y"]
        np.testing.assert_allclose(y, R.fake_quantize(x, *lim, 256), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("et,dtype,tol", [("f16", np.float16, 2e-3), ("f64", np.float64, 1e-12)])
def test_fake_quantize_other_float_types(tmp_path, et, dtype, tol):
    rng = np.random.default_rng(3)
    xs, ls = (3, 4, 5), (1, 4, 1)
    lim = _limits(rng, ls, dtype)
    x = _off_boundary(rng, xs, lim[0], lim[1], 16, dtype)
    y = _run(_fq_model(xs, ls, 16, et), tmp_path, {"x": x, "il": lim[0], "ih": lim[1], "ol": lim[2],
                                                   "oh": lim[3]})["y"]
    assert y.dtype == dtype
    exp = R.fake_quantize(x, *lim, 16)
    np.testing.assert_allclose(y.astype(np.float64), exp, rtol=tol, atol=tol * np.abs(exp).max())


def test_fake_quantize_spec_edge_cases(tmp_path):
    """Ties round half to even; x <= min(il, ih) -> output_low and x > max -> output_high, so an inverted
    range quantizes mirrored and il == ih splits at il (OpenVINO's reference; the CPU plugin departs, see
    docs/ir-format.md section 12); NaN data stays NaN."""
    x = np.array([0.5, 1.5, 2.5, -0.5, 255.5, 254.5, 7.0, np.nan], np.float32)
    b = _fq_model((8,), (), 256)

    def scalars(*v):
        return {k: np.array(s, np.float32) for k, s in zip(("il", "ih", "ol", "oh"), v, strict=True)}

    y = _run(b, tmp_path, {"x": x} | scalars(0, 255, 0, 255), "ties")["y"]
    assert y[:7].tolist() == [0, 2, 2, 0, 255, 254, 7] and np.isnan(y[7])
    y = _run(b, tmp_path, {"x": x} | scalars(255, 0, 0, 255), "inverted")["y"]
    assert y[:7].tolist() == [254, 254, 252, 0, 255, 0, 248]
    y = _run(b, tmp_path, {"x": x} | scalars(2, 2, -1, 1), "equal")["y"]
    assert y[:7].tolist() == [-1, -1, 1, -1, 1, 1, 1]
    b2 = _fq_model((5,), (), 2)
    y = _run(b2, tmp_path, {"x": np.array([-1, 0, 0.49, 0.51, 2], np.float32)} | scalars(0, 1, -3, 3), "bin")["y"]
    assert y.tolist() == [-3, -3, -3, 3, 3]


def test_fake_quantize_limits_may_broadcast_the_data(tmp_path):
    """numpy broadcasting merges all five shapes, so [4, 5] data with [2, 1, 5] limits gives [2, 4, 5]
    (OpenVINO's shape rule; its CPU plugin corrupts memory on such a model, see docs/ir-format.md)."""
    rng = np.random.default_rng(5)
    lim = _limits(rng, (2, 1, 5))
    x = rng.uniform(-3, 3, (4, 5)).astype(np.float32)
    ins = [("param:x", ((4, 5), "f32"))] + [(n, v) for n, v in zip(("il", "ih", "ol", "oh"), lim, strict=True)]
    b = single_op_model("FakeQuantize", ins, [((2, 4, 5), "f32")], {"levels": 9}, version="opset1")
    y = _run(b, tmp_path, {"x": x})["y"]
    assert y.shape == (2, 4, 5)
    np.testing.assert_allclose(y, R.fake_quantize(x, *lim, 9), rtol=1e-5, atol=1e-5)


def test_fake_quantize_dynamic_shapes_checked_at_run_time(tmp_path):
    b = single_op_model("FakeQuantize", [("param:x", ((-1, -1), "f32")), ("param:il", ((-1,), "f32")),
                                         ("ih", np.float32(1)), ("ol", np.float32(0)), ("oh", np.float32(1))],
                        [((-1, -1), "f32")], {"levels": 3, "auto_broadcast": "numpy"}, version="opset1")
    m = irnorm.load(b.save(tmp_path))
    x = np.array([[0.1, 0.6, 2.0], [-1, 0.4, 0.9]], np.float32)
    assert m.run({"x": x, "il": np.zeros(3, np.float32)})["y"].tolist() == [[0, 0.5, 1], [0, 0.5, 1]]
    with pytest.raises(irnorm.InputError) as e:
        m.run({"x": x, "il": np.zeros(4, np.float32)})
    assert e.value.code == "IRN064"


@pytest.mark.parametrize("xs,ls,attrs,et,code,fragment", [
    ((2, 3), (), {"levels": 1}, "f32", "IRN023", "at least 2"),
    ((2, 3), (), {"levels": "x"}, "f32", "IRN021", ""),
    ((2, 3), (), {}, "f32", "IRN020", "levels"),
    ((2, 3), (), {"levels": 3, "auto_broadcast": "pdpd"}, "f32", "IRN023", "pdpd"),
    ((2, 3), (4,), {"levels": 3}, "f32", "IRN032", "broadcast"),
    ((2, 3), (1, 3), {"levels": 3, "auto_broadcast": "none"}, "f32", "IRN032", "auto_broadcast=none"),
    ((2, 3), (), {"levels": 3}, "i32", "IRN033", "floating-point"),
])
def test_malformed_fake_quantize(tmp_path, xs, ls, attrs, et, code, fragment):
    ins = [("param:x", (xs, et))] + [(f"param:{n}", (ls, et)) for n in ("il", "ih", "ol", "oh")]
    b = single_op_model("FakeQuantize", ins, [(xs, et)], attrs, version="opset1")
    expect_error(b, tmp_path, code, fragment)


def test_fake_quantize_limits_of_another_type_are_refused(tmp_path):
    ins = [("param:x", ((2, 3), "f32")), ("param:il", ((), "f16"))] + \
        [(f"param:{n}", ((), "f32")) for n in ("ih", "ol", "oh")]
    b = single_op_model("FakeQuantize", ins, [((2, 3), "f32")], {"levels": 3}, version="opset1")
    expect_error(b, tmp_path, "IRN033", "input_low")


# ---- GridSample ---------------------------------------------------------------------------------------------


COMBOS = list(itertools.product(["bilinear", "bicubic", "nearest"], ["zeros", "border", "reflection"], [False, True]))


@requires_openvino
@pytest.mark.parametrize("mode,padding,align", COMBOS)
def test_grid_sample_matches_openvino(tmp_path, mode, padding, align):
    """Random data sizes (1-pixel ones too) and grids reaching well outside [-1, 1]."""
    rng = np.random.default_rng(abs(hash((mode, padding, align))) % 1000)
    for k, (h, w) in enumerate([(int(rng.integers(2, 7)), int(rng.integers(2, 7))), (1, 4), (3, 1)]):
        x = rng.standard_normal((2, 3, h, w)).astype(np.float32)
        g = rng.uniform(-2.5, 2.5, (2, int(rng.integers(1, 5)), int(rng.integers(1, 5)), 2)).astype(np.float32)
        dynamic = k == 0
        px, pg = _param(x.shape, np.float32, "x", dynamic), _param(g.shape, np.float32, "g", dynamic)
        node = op9.grid_sample(px, pg, {"align_corners": align, "mode": mode, "padding_mode": padding})
        xml = _ov_model(node, [px, pg], tmp_path, f"gs{k}")
        got = compare_with_openvino(xml, {"x": x, "g": g}, tol=(1e-4, 1e-4))
        np.testing.assert_allclose(got["y"], R.grid_sample(x, g, mode, padding, align), rtol=1e-4, atol=1e-4)


def _gs_model(xs, gs, attrs, et="f32", get="f32"):
    out = (xs[0], xs[1], gs[1], gs[2]) if len(xs) == 4 and len(gs) == 4 else (1,)
    return single_op_model("GridSample", [("param:x", (xs, et)), ("param:g", (gs, get))], [(out, et)], attrs,
                           version="opset9")


@pytest.mark.parametrize("mode,padding,align", COMBOS)
def test_grid_sample_against_the_float64_reference(tmp_path, mode, padding, align):
    """f16 data with an f32 grid, and a [2, 4, 40, 50] output (parallel path), vs the float64 oracle."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 4, 9, 7)).astype(np.float16)
    g = (np.round(rng.uniform(-1.4, 1.4, (2, 40, 50, 2)) * 64) / 64 + 1 / 512).astype(np.float32)
    b = _gs_model(x.shape, g.shape, {"mode": mode, "padding_mode": padding, "align_corners": align}, "f16")
    y = _run(b, tmp_path, {"x": x, "g": g})["y"]
    assert y.dtype == np.float16 and y.shape == (2, 4, 40, 50)
    np.testing.assert_allclose(y.astype(np.float64), R.grid_sample(x, g, mode, padding, align), rtol=3e-3,
                               atol=3e-3)


@pytest.mark.parametrize("mode,padding,align", COMBOS)
def test_grid_sample_nan_inf_and_huge_grid_values_read_inside_the_data(tmp_path, mode, padding, align):
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    vals = [np.nan, np.inf, -np.inf, 1e30, -1e30, 3e9, 0.25]
    g = np.array([[[[a, b] for a in vals] for b in vals]], np.float32)
    b = _gs_model(x.shape, g.shape, {"mode": mode, "padding_mode": padding, "align_corners": align})
    y = _run(b, tmp_path, {"x": x, "g": g})["y"]
    assert y.shape == (1, 1, 7, 7)
    finite = np.isfinite(y)
    assert np.all((y[finite] >= -2 * 11) & (y[finite] <= 3 * 11))  # a blend of data values (bicubic overshoots)
    assert np.isfinite(y[0, 0, 6, 6])  # the one in-range position


def test_grid_sample_empty_and_batch_mismatch_at_run_time(tmp_path):
    b = _gs_model((-1, -1, -1, -1), (-1, -1, -1, 2), {"mode": "bilinear"})
    m = irnorm.load(b.save(tmp_path))
    y = m.run({"x": np.ones((1, 2, 3, 3), np.float32), "g": np.zeros((1, 0, 4, 2), np.float32)})["y"]
    assert y.shape == (1, 2, 0, 4)
    y = m.run({"x": np.ones((1, 2, 3, 3), np.float32), "g": np.zeros((1, 1, 1, 2), np.float32)})["y"]
    assert y.tolist() == [[[[1.0]], [[1.0]]]]
    with pytest.raises(irnorm.InputError) as e:
        m.run({"x": np.ones((2, 2, 3, 3), np.float32), "g": np.zeros((1, 1, 1, 2), np.float32)})
    assert e.value.code == "IRN064"


@pytest.mark.parametrize("xs,gs,attrs,et,get,code,fragment", [
    ((1, 2, 3), (1, 2, 2, 2), {}, "f32", "f32", "IRN032", "4-D"),
    ((1, 2, 3, 3), (1, 2, 2), {}, "f32", "f32", "IRN032", "4-D"),
    ((1, 2, 3, 3), (1, 2, 2, 3), {}, "f32", "f32", "IRN032", "last dim must be 2"),
    ((2, 2, 3, 3), (1, 2, 2, 2), {}, "f32", "f32", "IRN032", "batch"),
    ((1, 2, 3, 3), (1, 2, 2, 2), {}, "i32", "f32", "IRN033", "data"),
    ((1, 2, 3, 3), (1, 2, 2, 2), {}, "f32", "i64", "IRN033", "grid"),
    ((1, 2, 3, 3), (1, 2, 2, 2), {"mode": "linear"}, "f32", "f32", "IRN021", ""),
    ((1, 2, 3, 3), (1, 2, 2, 2), {"padding_mode": "wrap"}, "f32", "f32", "IRN021", ""),
    ((1, 2, 3, 3), (1, 2, 2, 2), {"align_corners": "maybe"}, "f32", "f32", "IRN021", ""),
])
def test_malformed_grid_sample(tmp_path, xs, gs, attrs, et, get, code, fragment):
    expect_error(_gs_model(xs, gs, attrs, et, get), tmp_path, code, fragment)


# ---- Interpolate cubic ------------------------------------------------------------------------------------


TRANSFORMS = ["half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners", "tf_half_pixel_for_nn"]


@requires_openvino
@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("version", [4, 11])
def test_interpolate_cubic_matches_openvino(tmp_path, transform, version):
    rng = np.random.default_rng(TRANSFORMS.index(transform) * 10 + version)
    for k in range(3):
        x = rng.standard_normal((1, 2) + tuple(int(d) for d in rng.integers(1, 7, 2))).astype(np.float32)
        scales = np.array([rng.choice([0.5, 0.75, 1.0, 1.5, 2.0, 3.0]) for _ in range(2)], np.float32)
        sizes = np.array([int(np.floor(d * s + 1e-5)) for d, s in zip(x.shape[2:], scales, strict=True)], np.int64)
        if np.any(sizes == 0):
            continue
        calc = ("sizes", "scales")[k % 2]
        axes = np.array([2, 3] if k != 2 else [3, 2], np.int64)
        sizes, scales = (sizes, scales) if k != 2 else (sizes[::-1].copy(), scales[::-1].copy())
        coeff = float(rng.choice([-0.75, -0.5, -0.6]))
        p = _param(x.shape, np.float32, "x", dynamic=k == 1)
        kw = {"coordinate_transformation_mode": transform, "cube_coeff": coeff}
        if version == 4:
            node = op10.interpolate(p, sizes, scales, "cubic", calc, axes=axes, **kw)
        else:
            node = op11.interpolate(p, sizes if calc == "sizes" else scales, "cubic", calc, axes=axes, **kw)
        xml = _ov_model(node, [p], tmp_path, f"cub{version}{k}")
        compare_with_openvino(xml, {"x": x}, tol=(1e-4, 1e-4))


def test_interpolate_cubic_against_the_float64_reference(tmp_path):
    """Interpolate-11 cubic on a 3-D tensor along one middle axis and on f16/f64 data."""
    rng = np.random.default_rng(2)
    for k, (dt, et) in enumerate([(np.float32, "f32"), (np.float16, "f16"), (np.float64, "f64")]):
        x = rng.standard_normal((3, 5, 4)).astype(dt)
        b = single_op_model("Interpolate", [("param:x", (x.shape, et)), ("s", np.array([7], np.int64)),
                                            ("a", np.array([1], np.int64))], [((3, 7, 4), et)],
                            {"mode": "cubic", "shape_calculation_mode": "sizes", "cube_coeff": -0.5,
                             "coordinate_transformation_mode": "half_pixel"}, version="opset11")
        y = _run(b, tmp_path, {"x": x}, f"c{k}")["y"]
        exp = R.interpolate(x, [1], [7], [7 / 5], "cubic", "half_pixel", "round_prefer_floor", -0.5)
        assert y.dtype == dt
        np.testing.assert_allclose(y.astype(np.float64), exp, rtol=3e-3, atol=3e-3)


def test_interpolate_cubic_on_integers_rounds(tmp_path):
    x = np.array([[0, 10, 20, 30]], np.int32)
    b = single_op_model("Interpolate", [("param:x", ((1, 4), "i32")), ("s", np.array([8], np.int64)),
                                        ("a", np.array([1], np.int64))], [((1, 8), "i32")],
                        {"mode": "cubic", "shape_calculation_mode": "sizes"}, version="opset11")
    y = _run(b, tmp_path, {"x": x})["y"]
    exp = R.interpolate(x, [1], [8], [2.0], "cubic", "half_pixel", "round_prefer_floor")
    assert y.dtype == np.int32 and y.tolist() == np.round(exp).astype(np.int32).tolist()


@pytest.mark.parametrize("attrs,fragment", [
    ({"mode": "linear", "shape_calculation_mode": "scales", "antialias": True}, "antialias"),
    ({"mode": "cubic", "shape_calculation_mode": "scales", "cube_coeff": "nan"}, ""),
])
def test_interpolate_cubic_refusals(tmp_path, attrs, fragment):
    b = single_op_model("Interpolate", [("param:x", ((1, 1, 2, 2), "f32")), ("s", np.array([2.0, 2.0], np.float32)),
                                        ("a", np.array([2, 3]))], [((1, 1, 4, 4), "f32")], attrs, version="opset11")
    expect_error(b, tmp_path, "IRN021" if attrs.get("cube_coeff") else "IRN023", fragment)


# ---- Interpolate nearest: the per-shape plan -----------------------------------------------------------------

NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple"]


@pytest.mark.parametrize("et, dt", [("f32", np.float32), ("i32", np.int32), ("u8", np.uint8), ("f16", np.float16)])
def test_interpolate_nearest_plan_equals_the_reference(tmp_path, monkeypatch, et, dt):
    """Nearest Interpolate-11 keeps its source indices per input shape and operands: over ranks 3-5,
    every nearest rounding and coordinate transform, scales and sizes (2x, 3x, 0.5x, 1.5x, one axis or
    two, the last two axes or others) and changing dynamic shapes, each run equals the float64 reference
    exactly (nearest only copies), a repeated call too; an integer upsampling of the last two axes takes
    the one-pass kernel (f16 data np.take)."""
    from irnorm.kernels import sample

    calls = []
    kernel = sample.repeat_planes
    monkeypatch.setattr(sample, "repeat_planes", lambda *a: calls.append(a[2:]) or kernel(*a))
    rng = np.random.default_rng(len(et))
    for k in range(15):
        rank = 3 + k % 3
        transform, mode = TRANSFORMS[k % 5], NEAREST_MODES[(k // 3) % 5]
        axes = [rank - 2, rank - 1] if k % 4 else [1]
        scales = [[2.0, 2.0], [3.0, 1.0], [0.5, 2.0], [1.5, 2.0]][k % 4][:len(axes)]
        b = single_op_model("Interpolate", [("param:x", ((-1,) * rank, et)),
                                            ("s", np.array(scales, np.float32)), ("a", np.array(axes, np.int64))],
                            [((-1,) * rank, et)], {"mode": "nearest", "shape_calculation_mode": "scales",
                                                   "coordinate_transformation_mode": transform, "nearest_mode": mode},
                            version="opset11")
        m = irnorm.load(b.save(tmp_path / f"n{k}"))
        for _ in range(2):
            shape = tuple(int(d) for d in rng.integers(1, 6, rank))
            x = (rng.standard_normal(shape) * 50).astype(dt)
            sizes = [int(np.floor(shape[a] * s + 1e-5)) for a, s in zip(axes, scales, strict=True)]
            want = R.interpolate(x.astype(np.float64), axes, sizes, scales, "nearest", transform, mode, -0.75)
            for _ in range(2):  # the second call takes the kept plan
                y = m.run({"x": x})["y"]
                assert y.dtype == dt and y.flags.c_contiguous
                np.testing.assert_array_equal(y.astype(np.float64), want)
    # asymmetric + floor at 2x and 3x is each element repeated: the kernel (not for f16 data)
    seen_before = len(calls)
    for scales, repeat in (([2.0, 2.0], (2, 2)), ([1.0, 3.0], (1, 3))):
        b = single_op_model("Interpolate", [("param:x", ((2, 3, 5, 4), et)), ("s", np.array(scales, np.float32)),
                                            ("a", np.array([2, 3], np.int64))],
                            [((2, 3, 5 * repeat[0], 4 * repeat[1]), et)],
                            {"mode": "nearest", "shape_calculation_mode": "scales",
                             "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
                            version="opset11")
        x = (rng.standard_normal((2, 3, 5, 4)) * 50).astype(dt)
        y = irnorm.load(b.save(tmp_path / f"k{repeat}")).run({"x": x})["y"]
        np.testing.assert_array_equal(y, np.repeat(np.repeat(x, repeat[0], axis=2), repeat[1], axis=3))
    assert calls[seen_before:] == ([] if dt == np.float16 else [(2, 2), (1, 3)])


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_interpolate_of_an_empty_axis(tmp_path, mode):
    """Resizing an axis with no elements to a non-empty size has nothing to take values from: IRN064 at
    the layer (was an IndexError from numpy); resized to zero elements (scales) it gives an empty result."""
    b = single_op_model("Interpolate", [("param:x", ((1, 2, -1, 4), "f32")), ("s", np.array([5, 4], np.int64)),
                                        ("a", np.array([2, 3], np.int64))], [((1, 2, 5, 4), "f32")],
                        {"mode": mode, "shape_calculation_mode": "sizes"}, version="opset11")
    m = irnorm.load(b.save(tmp_path / "sizes"))
    with pytest.raises(irnorm.InputError) as e:
        m.run({"x": np.zeros((1, 2, 0, 4), np.float32)})
    assert e.value.diagnostics[0].code == "IRN064" and "axis 2 has no elements" in str(e.value)
    assert m.run({"x": np.ones((1, 2, 3, 4), np.float32)})["y"].shape == (1, 2, 5, 4)
    b = single_op_model("Interpolate", [("param:x", ((1, 2, -1, 4), "f32")), ("s", np.array([2, 1], np.float32)),
                                        ("a", np.array([2, 3], np.int64))], [((1, 2, -1, 4), "f32")],
                        {"mode": mode, "shape_calculation_mode": "scales"}, version="opset11")
    y = irnorm.load(b.save(tmp_path / "scales")).run({"x": np.zeros((1, 2, 0, 4), np.float32)})["y"]
    assert y.shape == (1, 2, 0, 4)
