"""SoftMax / LogSoftmax / ScaledDotProductAttention beyond the conformance rows: malformed IR, fully
masked rows, a causal mask against OpenVINO at two dynamic shapes."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import expect_error, single_op_model
from ovutil import compare_with_openvino, save

import irnorm

ov = pytest.importorskip("openvino")
op1 = pytest.importorskip("openvino.opset1")
op13 = pytest.importorskip("openvino.opset13")


def test_softmax_axis_out_of_range_and_integer_data(tmp_path):
    b = single_op_model("SoftMax", [("param:x", ((2, 3), "f32"))], [((2, 3), "f32")], {"axis": 2}, version="opset8")
    expect_error(b, tmp_path, "IRN023", "axis=2")
    b = single_op_model("SoftMax", [("param:x", ((2, 3), "f32"))], [((2, 3), "f32")], {"axis": -1}, version="opset1")
    expect_error(b, tmp_path, "IRN023", "axis=-1")  # SoftMax-1 takes no negative axis
    b = single_op_model("SoftMax", [("param:x", ((2, 3), "i32"))], [((2, 3), "i32")], {"axis": 1}, version="opset8")
    expect_error(b, tmp_path, "IRN033", "floating-point")


def test_sdpa_shape_and_type_rules(tmp_path):
    q = ("param:q", ((1, 2, 4, 8), "f32"))
    b = single_op_model("ScaledDotProductAttention", [q, ("param:k", ((1, 2, 5, 7), "f32")),
                                                      ("param:v", ((1, 2, 5, 8), "f32"))],
                        [((1, 2, 4, 8), "f32")], {"causal": False}, version="opset13")
    expect_error(b, tmp_path, "IRN032", "differ in the last dim")
    b = single_op_model("ScaledDotProductAttention", [q, ("param:k", ((1, 2, 5, 8), "f32")),
                                                      ("param:v", ((1, 2, 5, 8), "f32")),
                                                      ("param:m", ((4, 5), "i32"))],
                        [((1, 2, 4, 8), "f32")], {"causal": False}, version="opset13")
    expect_error(b, tmp_path, "IRN033", "attention_mask")


def test_a_fully_masked_row_gives_nan_and_causal_matches_openvino(tmp_path):
    rng = np.random.default_rng(4)
    q = op1.parameter([-1, 2, -1, 8], np.float32, name="q")
    k = op1.parameter([-1, 2, -1, 8], np.float32, name="k")
    v = op1.parameter([-1, 2, -1, 8], np.float32, name="v")
    y = op13.scaled_dot_product_attention(q, k, v, causal=True)
    y.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([op1.result(y)], [q, k, v]), tmp_path, "causal")
    for b, length in ((1, 5), (3, 9)):
        feeds = {n: rng.standard_normal((b, 2, length, 8)).astype(np.float32) for n in "qkv"}
        got = compare_with_openvino(xml, feeds)["y"]
        assert np.allclose(got[:, :, 0], feeds["v"][:, :, 0], atol=1e-6)  # query 0 sees key 0 only
    m = np.zeros((2, 3), bool)
    m[0] = True
    b = single_op_model("ScaledDotProductAttention", [("param:q", ((2, 4), "f32")), ("param:k", ((3, 4), "f32")),
                                                      ("param:v", ((3, 4), "f32")), ("m", m)],
                        [((2, 4), "f32")], {"causal": False}, version="opset13")
    y = irnorm.load(b.save(tmp_path, "masked")).run({n: np.ones(s, np.float32) for n, s in
                                                     (("q", (2, 4)), ("k", (3, 4)), ("v", (3, 4)))})["y"]
    assert np.all(np.isfinite(y[0])) and np.all(np.isnan(y[1]))


def _sdpa_reference(q, k, v, mask, causal, scale):
    """float64 numpy: softmax(q k^T * scale + causal + mask) v, masks broadcast numpy-style."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = s + np.where(np.tril(np.ones(s.shape[-2:], bool)), 0.0, -np.inf)
    if mask is not None:
        s = s + (np.where(mask, 0.0, -np.inf) if mask.dtype == np.bool_ else mask.astype(np.float64))
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("case", range(10))
def test_small_heads_run_in_one_kernel_and_agree_with_the_blas_path(tmp_path, monkeypatch, case):
    """float32 heads run in one attention_gemm call on irnorm's GEMM kernels where they run; elsewhere heads of
    up to ATTENTION_ROWS_MAX multiply-adds run in one attention_rows call (scores, causal and boolean/additive
    masks broadcast over batch, query or key positions, softmax, weighted sum), larger ones in one
    attention_gemm call (two cblas_?gemm per head) where BLAS is driven; other broadcasts take numpy's BLAS
    products.  All four agree with each other and with float64, fully masked rows (NaN) included."""
    from irnorm.kernels import softmax as ksoftmax
    from irnorm.ops import attention

    rng = np.random.default_rng(40 + case)
    batch = [(1, 2), (2, 3), (3,), (1, 4)][case % 4]
    L, S, E, Ev = int(rng.integers(1, 9)), int(rng.integers(1, 9)), int(rng.integers(1, 17)), int(rng.integers(1, 9))
    causal = case in (0, 7)  # no mask there
    mask_shape = [None, (L, S), batch + (L, S), (L, 1), (S,), (), (1, S)][case % 7]
    mask_dtype = "boolean" if case % 2 else "f32"
    ins = [("param:q", (batch + (L, E), "f32")), ("param:k", (batch + (S, E), "f32")),
           ("param:v", (batch + (S, Ev), "f32"))]
    feeds = {"q": rng.standard_normal(batch + (L, E)).astype(np.float32),
             "k": rng.standard_normal(batch + (S, E)).astype(np.float32),
             "v": rng.standard_normal(batch + (S, Ev)).astype(np.float32)}
    mask = None
    if mask_shape is not None:
        ins.append(("param:m", (mask_shape, mask_dtype)))
        if mask_dtype == "boolean":
            mask = rng.random(mask_shape) < 0.7
            if mask.ndim >= 2 and case == 1:
                mask[..., 0, :] = False  # a fully masked query row: NaN
        else:
            mask = (rng.standard_normal(mask_shape) * 2).astype(np.float32)
        feeds["m"] = mask
    b = single_op_model("ScaledDotProductAttention", ins, [(batch + (L, Ev), "f32")], {"causal": causal},
                        version="opset13")
    xml = b.save(tmp_path, "sdpa")
    from irnorm.kernels import blas as kblas
    from irnorm.kernels import microgemm

    calls, gemm_calls = [], []
    orig, orig_gemm = ksoftmax.attention_rows, ksoftmax.attention_gemm
    monkeypatch.setattr(ksoftmax, "attention_rows", lambda *a: calls.append(1) or orig(*a))
    monkeypatch.setattr(ksoftmax, "attention_gemm", lambda *a: gemm_calls.append(a[0]) or orig_gemm(*a))
    # the default path: irnorm's GEMM kernels in attention_gemm where they run (address 0), else attention_rows
    model = irnorm.load(xml)
    default = model.run(feeds)["y"]
    if microgemm.ENABLED:
        assert gemm_calls == [0] and not calls
    else:
        assert calls and not gemm_calls, "the one-kernel path did not run"
    # a static model's later calls take the step's static_call, bound on the first call: same kernel, same bits
    np.testing.assert_array_equal(model.run(feeds)["y"], default)
    assert len(calls) + len(gemm_calls) == 2
    monkeypatch.setattr(microgemm, "ENABLED", False)  # plans made from here on: the AVX2 machines' paths
    calls.clear()
    gemm_calls.clear()
    model = irnorm.load(xml)
    small = model.run(feeds)["y"]
    assert calls and not gemm_calls, "the one-kernel path did not run"
    np.testing.assert_array_equal(model.run(feeds)["y"], small)
    assert len(calls) == 2
    monkeypatch.setattr(attention, "ATTENTION_ROWS_MAX", 0)
    n = len(calls)
    model = irnorm.load(xml)
    by_gemm = model.run(feeds)["y"]  # the heads' products by BLAS in one attention_gemm call
    np.testing.assert_array_equal(model.run(feeds)["y"], by_gemm)
    assert len(calls) == n
    assert bool(gemm_calls) == (kblas.gemm_address(np.float32) is not None) and 0 not in gemm_calls
    monkeypatch.setattr(attention, "ATTENTION_GEMM_MAX", 0)
    before = len(gemm_calls)
    blas = irnorm.load(xml).run(feeds)["y"]  # numpy's matmul and softmax_rows
    assert len(calls) == n and len(gemm_calls) == before
    want = _sdpa_reference(feeds["q"], feeds["k"], feeds["v"], mask, causal, 1 / np.sqrt(E))
    for got in (default, small, by_gemm, blas):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    for got in (default, small, by_gemm):
        np.testing.assert_allclose(got, blas, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dims", [(4, 8, 8, 8, 8), (2, 3, 33, 17, 20), (3, 40, 5, 3, 7), (1, 1, 1, 1, 1),
                                  (2, 17, 16, 16, 32)])
def test_attention_rows_kernel_against_float64(dtype, dims):
    """attention_rows itself: rows of more than one vector (S, Ev > rowvec.VW: the products in column chunks),
    float64 (the loop form of weighted_rows), every mask broadcast (per key, per query row, per head, boolean
    and additive, causal), a fully masked row (NaN) and -inf / huge additive values, against float64."""
    from irnorm.kernels.softmax import attention_rows

    B, L, S, E, Ev = dims
    rng = np.random.default_rng(sum(dims))
    q, k = rng.standard_normal((B, L, E)).astype(dtype), rng.standard_normal((B, S, E)).astype(dtype)
    v = rng.standard_normal((B, S, Ev)).astype(dtype)
    masks = [(np.zeros((1, 1, 0), dtype), False), (None, True), (rng.random((1, L, S)) < 0.7, False),
             (rng.random((B, L, 1)) < 0.8, False), ((rng.standard_normal((1, 1, S)) * 30).astype(dtype), False)]
    masks[2][0][0, 0] = False  # query row 0: nothing to attend to -> NaN
    masks[4][0][0, 0, 0] = -np.inf
    for mask, causal in masks:
        mask = np.zeros((1, 1, 0), dtype) if mask is None else mask
        out = np.full((B, L, Ev), np.nan, dtype)
        attention_rows(q, k, v, mask, mask.dtype == np.bool_, dtype(0.37), causal, out)
        full = None if mask.shape[2] == 0 else np.broadcast_to(mask, (B, L, S))
        want = _sdpa_reference(q, k, v, full, causal, 0.37)
        np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
        tol = 2e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(out, want, rtol=tol, atol=tol / 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 65, 1000])
def test_softmax_rows_against_float64_with_nasty_rows(dtype, n):
    """kernels/softmax.softmax_rows (and log) against a float64 reference: random rows, huge and tiny
    values, +-0, subnormals, +inf; a row with a NaN (either sign bit) is all NaN and an all -inf row is
    all NaN, as the formula gives; the row maximum (found on the bits as ordered integers) must be the
    float maximum for everything else."""
    from irnorm.kernels.softmax import softmax_rows

    rng = np.random.default_rng(n)
    x = (rng.standard_normal((12, n)) * 4).astype(dtype)
    x[1] = -x[1] - 1e4  # every value negative
    x[2] = np.where(rng.random(n) < 0.5, -0.0, 0.0)  # signed zeros only
    x[3] = rng.standard_normal(n) * (1e30 if dtype == np.float32 else 1e300)
    x[4] = rng.standard_normal(n) * np.finfo(dtype).tiny  # subnormal-sized
    x[5, -1] = np.inf
    x[6, n // 2] = np.nan
    x[7, 0] = -np.nan if n > 1 else np.nan
    x[7].view(np.uint32 if dtype == np.float32 else np.uint64)[0] |= 1 << (31 if dtype == np.float32 else 63)
    x[8] = -np.inf
    x[9] = np.float32(3.5)  # a constant row
    x[10] = -np.abs(x[10]) * 1e3
    x[11, : max(1, n // 3)] = -np.inf
    for log in (False, True):
        got = softmax_rows(np.ascontiguousarray(x), log)
        assert got.dtype == dtype
        x64 = x.astype(np.float64)
        for r in range(x.shape[0]):
            row = x64[r]
            if np.isnan(row).any() or np.isneginf(row).all() or (np.isposinf(row).any()):
                if np.isposinf(row).any() and not np.isnan(row).any():
                    # exp(inf - inf) = NaN: the formula's own result
                    assert np.isnan(got[r]).all()
                    continue
                assert np.isnan(got[r]).all(), (r, got[r])
                continue
            m = row.max()
            e = np.exp(row - m)
            want = (row - m - np.log(e.sum())) if log else e / e.sum()
            tol = 2e-6 if dtype == np.float32 else 1e-13
            scale = 1 + np.abs(want[np.isfinite(want)]).max()  # log-softmax: -inf where exp underflows
            np.testing.assert_allclose(got[r], want, rtol=tol, atol=tol * scale, err_msg=str(r))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 16, 65])
def test_softmax_blocks_of_rows_keep_each_row_its_own(dtype, n):
    """Rows are taken kernels/softmax.BLOCK at a time (maxima, exponentials over the block's elements as
    one run, sums, scaling): serial and parallel give the same bits, and every row, nasty ones at the
    blocks' edges included, gives the same bits alone as inside its block."""
    from irnorm.kernels import softmax as S

    b = S.BLOCK
    rows = 2 * b + 7  # two whole blocks and a partial one
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((rows, n)) * 5).astype(dtype)
    x[b - 1] = -np.inf  # all -inf: NaN, last of a block
    x[b, n // 2] = np.nan  # first of the next
    x[b + 1, 0] = np.inf
    x[-1] = x[-1] * 1e3 - 1e4
    for log in (False, True):
        serial, parallel = np.empty_like(x), np.empty_like(x)
        S._rows_serial(x, serial, log)
        S._rows_parallel(x, parallel, log)
        assert serial.tobytes() == parallel.tobytes()
        for r in range(rows):
            alone = np.empty_like(x[r:r + 1])
            S._rows_serial(np.ascontiguousarray(x[r:r + 1]), alone, log)
            assert alone.tobytes() == serial[r:r + 1].tobytes(), r
        assert np.isnan(serial[[b - 1, b, b + 1]]).all()
        ok = np.setdiff1d(np.arange(rows), [b - 1, b, b + 1])
        x64 = x[ok].astype(np.float64)
        d = x64 - x64.max(1, keepdims=True)
        e = np.exp(d)
        want = d - np.log(e.sum(1, keepdims=True)) if log else e / e.sum(1, keepdims=True)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(serial[ok], want, rtol=tol, atol=tol * (1 + np.abs(want).max() if log else 1))


@pytest.mark.parametrize("dtype, causal, mask_kind", [(np.float32, False, None), (np.float32, True, None),
                                                      (np.float64, False, "additive"), (np.float32, False, "boolean")])
def test_attention_gemm_heads_over_threads(dtype, causal, mask_kind):
    """attention_gemm on ViT-sized heads ([4, 65, 16], 65 keys) as strided views of a fused QKV projection, its
    products by cblas_?gemm and (float32, where they run) by irnorm's GEMM kernels: the float64 reference's
    values, and the same bits whether the heads run on one thread or several."""
    from irnorm.kernels import blas, microgemm
    from irnorm.kernels.softmax import attention_gemm
    from irnorm.ops.attention import IRNORM_GEMM

    gemms = [g for g in (blas.gemm_address(np.dtype(dtype)),
                         IRNORM_GEMM if dtype == np.float32 and microgemm.ENABLED else None) if g is not None]
    if not gemms:
        pytest.skip("neither an OpenBLAS irnorm drives nor irnorm's float32 GEMM kernels: attention_gemm is not used")
    rng = np.random.default_rng(7 + causal)
    B, L, S, E, Ev = 4, 65, 65, 16, 12
    # the heads as a fused QKV projection leaves them: strided views [1, B, tokens, E] of [tokens, 3, B, E]
    qkv = rng.standard_normal((L, 3, B, E)).astype(dtype)
    q4, k4 = qkv[:, 0].transpose(1, 0, 2)[None], qkv[:, 1].transpose(1, 0, 2)[None]
    v4 = rng.standard_normal((S, B, Ev)).astype(dtype).transpose(1, 0, 2)[None]
    assert not q4.flags.c_contiguous
    q, k, v = (np.ascontiguousarray(a[0]) for a in (q4, k4, v4))
    if mask_kind == "boolean":
        mask = rng.random((1, L, S)) < 0.8
        mask[0, 3] = False  # a fully masked row: NaN
    elif mask_kind == "additive":
        mask = rng.standard_normal((B, 1, S)).astype(dtype)
    else:
        mask = np.zeros((1, 1, 0), dtype)
    scale = dtype(0.25)
    m = None if mask_kind is None else mask
    want = _sdpa_reference(q, k, v, m, causal, 0.25)
    for gemm in gemms:
        outs = []
        for tasks in (1, 2, 3):
            out = np.empty((B, L, Ev), dtype)
            blas.enter()
            try:
                attention_gemm(*gemm, q4, k4, v4, mask, mask.dtype == np.bool_, scale, causal, out, tasks)
            finally:
                blas.leave()
            outs.append(out)
        np.testing.assert_array_equal(outs[0], outs[1])
        np.testing.assert_array_equal(outs[0], outs[2])
        np.testing.assert_array_equal(np.isnan(outs[0]), np.isnan(want))
        tol = 2e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(outs[0], want, rtol=tol, atol=tol)


def test_float32_softmax_has_no_subnormal_results_as_in_openvino(tmp_path):
    """float32 softmax flushes what would be subnormal (kernels/softmax.py FLUSH_BELOW, TINY32): differences
    below -87 give exactly 0, as OpenVINO's CPU plugin gives; every other value, each row's sum and the
    log-softmax are those of the unflushed formula (float64 reference), NaN and all -inf rows as before; a
    masked attention (Swin's -100 on shifted windows) matches OpenVINO and feeds its product no subnormal."""
    from irnorm.kernels import softmax as S

    x = np.zeros((6, 40), np.float32)
    x[:, :8] = [0.0, -86.9, -87.1, -87.3, -90.0, -100.0, -104.0, -150.0]
    x[:, 8:] = -np.abs(np.random.default_rng(5).standard_normal((6, 32))).astype(np.float32)  # row maxima 0
    x[1, 9] = 80.0  # the row's maximum elsewhere: its differences shift down
    x[2, 3] = np.nan
    x[3] = -np.inf
    x[4, :20] = -np.inf
    x[5] = x[5] * 1e-30  # values near 0, no large differences
    tiny = np.finfo(np.float32).tiny
    for log in (False, True):
        got = S.softmax_rows(x, log)
        x64 = x.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):  # the NaN and all -inf rows
            d = x64 - x64.max(1, keepdims=True)
            e = np.exp(d)
            want = d - np.log(e.sum(1, keepdims=True)) if log else e / e.sum(1, keepdims=True)
        assert np.isnan(got[[2, 3]]).all()
        ok = [0, 1, 4, 5]
        if log:  # exact sums: the log-softmax keeps every value, far below -87 too
            np.testing.assert_allclose(got[ok], want[ok], rtol=2e-6, atol=2e-6 * 200)
            continue
        assert not ((got[ok] != 0) & (np.abs(got[ok]) < tiny)).any()  # no subnormal
        flushed = (d[ok] < S.FLUSH_BELOW) | (want[ok] < tiny)
        assert (got[ok][flushed] == 0).all()
        # (rtol: d = x - max rounds in float32, and e**d carries |d| times that rounding: 80 * 2**-24 here)
        np.testing.assert_allclose(got[ok][~flushed], want[ok][~flushed], rtol=1e-5, atol=0)
    edge = S.softmax_rows(np.array([[0.0, -86.9, -87.1, -200.0]], np.float32))  # a sum of 1
    assert edge[0, 0] == 1 and edge[0, 2] == edge[0, 3] == 0  # e**-87.1 is flushed (a normal 1.4e-38) ...
    np.testing.assert_allclose(edge[0, 1], np.exp(-86.9), rtol=1e-5)  # ... e**-86.9 is kept
    # against OpenVINO: a SoftMax over scores with Swin's -100 mask, then the product with V
    s = op1.parameter([2, 16, 16], np.float32, name="s")
    v = op1.parameter([2, 16, 8], np.float32, name="v")
    y = op1.matmul(op1.softmax(s, 2), v, False, False)
    y.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([op1.result(y)], [s, v]), tmp_path, "masked_softmax")
    rng = np.random.default_rng(6)
    scores = rng.standard_normal((2, 16, 16)).astype(np.float32)
    scores[:, :, 8:] -= 100.0
    compare_with_openvino(xml, {"s": scores, "v": rng.standard_normal((2, 16, 8)).astype(np.float32)})
