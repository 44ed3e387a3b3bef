"""Tests of the float64 numpy oracle (irnorm/reference.py).

Two kinds: hand-checked cases taken from the specs and from docs/ir-format.md
(exact values, textbook loops, identities between operators), and comparisons against the
OpenVINO CPU runtime (marked ``openvino``; skipped when openvino is not importable).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from irnorm import reference as R

# ---------------------------------------------------------------------------------------------
# TensorRT Scale (spec 001)


def test_scale_uniform_spec_example() -> None:
    x = np.arange(1.0, 10.0).reshape(1, 1, 3, 3)
    y = R.scale(
        x, "UNIFORM", scale=np.array([2.0]), shift=np.array([1.0]), power=np.array([2.0]), channel_axis=1
    )
    expected = np.array([[[[9.0, 25.0, 49.0], [81.0, 121.0, 169.0], [225.0, 289.0, 361.0]]]])
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, expected)


def test_scale_channel_spec_example() -> None:
    plane = np.arange(1.0, 10.0).reshape(1, 3, 3)
    x = np.stack([plane, plane])[np.newaxis]  # 1x2x1x3x3
    assert x.shape == (1, 2, 1, 3, 3)
    y = R.scale(
        x, "CHANNEL", scale=np.array([1, 2]), shift=np.array([0, 1]), power=np.array([1, 2]), channel_axis=1
    )
    expected = np.array(
        [
            [
                [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]],
                [[[9.0, 25.0, 49.0], [81.0, 121.0, 169.0], [225.0, 289.0, 361.0]]],
            ]
        ]
    )
    np.testing.assert_array_equal(y, expected)


def test_scale_empty_weights_are_defaults_and_elementwise_layout() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 5))
    empty = np.array([])
    for mode in ("uniform", "channel", "elementwise"):
        np.testing.assert_array_equal(R.scale(x, mode, empty, empty, empty, 1), x)
    # ELEMENTWISE addresses dims [channel_axis..n], flattened in C order.
    s = rng.standard_normal(3 * 4 * 5)
    np.testing.assert_allclose(R.scale(x, "ElementWise", s, empty, empty, 1), x * s.reshape(3, 4, 5), rtol=0)
    t = rng.standard_normal(4 * 5)
    np.testing.assert_allclose(R.scale(x, "elementwise", empty, t, empty, -2), x + t.reshape(4, 5), rtol=0)
    # CHANNEL with a later channel axis indexes that axis.
    c = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(R.scale(x, "channel", c, empty, empty, 2), x * c.reshape(4, 1), rtol=0)


@pytest.mark.parametrize(
    ("mode", "count", "axis"),
    [("uniform", 2, 1), ("channel", 4, 1), ("elementwise", 3, 1), ("bogus", 1, 1), ("uniform", 1, 4)],
)
def test_scale_rejects_bad_arguments(mode: str, count: int, axis: int) -> None:
    x = np.ones((1, 3, 2, 2))
    with pytest.raises(ValueError):
        R.scale(x, mode, np.ones(count), np.array([]), np.array([]), axis)


def test_scale_int8_output_rounds_half_to_even_and_saturates() -> None:
    y = np.array([-300.0, -128.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.6, 126.5, 127.5, 1e9, np.inf])
    q = R.scale_int8_output(y)
    assert q.dtype == np.int8
    np.testing.assert_array_equal(q, [-128, -128, -2, -2, 0, 0, 2, 2, 3, 126, 127, 127, 127])
    with pytest.raises(ValueError):
        R.scale_int8_output(np.array([np.nan]))


# ---------------------------------------------------------------------------------------------
# TensorRT Normalization (spec 000)


def _spec_normalization_reference(
    x: np.ndarray, s: np.ndarray, bias: np.ndarray, axes: int, epsilon: float = 1e-5
) -> np.ndarray:
    """The spec's own example reference, verbatim in substance."""
    converted = tuple(i for i in range(x.ndim) if axes & (1 << i))
    mean = np.mean(x, axis=converted, keepdims=True)
    var = np.var(x, axis=converted, keepdims=True)
    return s * (x - mean) / np.sqrt(var + epsilon) + bias


def test_trt_normalization_spec_example() -> None:
    rng = np.random.default_rng(1)
    x = rng.random((2, 3, 2, 2))
    s = np.array([1.0, 2.0, 3.0]).reshape(1, 3, 1, 1)
    b = np.array([-3.0, -2.0, -1.0]).reshape(1, 3, 1, 1)
    axes = 1 << 2 | 1 << 3
    y = R.trt_normalization(x, s, b, axes)
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, _spec_normalization_reference(x, s, b, axes), rtol=1e-12, atol=1e-12)
    # Layer-norm flavour: axes [2, 3] with scale [1, 1, D2, D3].
    s2, b2 = rng.random((1, 1, 2, 2)), rng.random((1, 1, 2, 2))
    np.testing.assert_allclose(
        R.trt_normalization(x, s2, b2, axes, epsilon=1e-3),
        _spec_normalization_reference(x, s2, b2, axes, 1e-3),
        rtol=1e-12,
        atol=1e-12,
    )


def test_trt_group_normalization_matches_openvino_semantics() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 6, 3, 4)) * 3 + 1
    spatial = 1 << 2 | 1 << 3
    gamma, beta = rng.standard_normal(6), rng.standard_normal(6)
    # Per-channel affine ([1, C, 1, 1]) with a mask of the spatial axes is OpenVINO's GroupNormalization.
    y = R.trt_normalization(
        x, gamma.reshape(1, 6, 1, 1), beta.reshape(1, 6, 1, 1), spatial, num_groups=3, epsilon=1e-4
    )
    np.testing.assert_allclose(y, R.group_normalization(x, gamma, beta, 3, 1e-4), rtol=1e-12, atol=1e-12)
    # Per-group affine ([1, G, 1, 1]) equals per-channel with each group's value repeated.
    sg, bg = rng.standard_normal(3), rng.standard_normal(3)
    y_group = R.trt_normalization(x, sg.reshape(1, 3, 1, 1), bg.reshape(1, 3, 1, 1), spatial, num_groups=3)
    y_chan = R.trt_normalization(
        x, np.repeat(sg, 2).reshape(1, 6, 1, 1), np.repeat(bg, 2).reshape(1, 6, 1, 1), spatial, num_groups=3
    )
    np.testing.assert_allclose(y_group, y_chan, rtol=1e-12, atol=1e-12)
    # A mask without spatial axes: statistics over the channels of a group only.
    y_c = R.trt_normalization(x, np.ones((1, 3, 1, 1)), np.zeros((1, 3, 1, 1)), 0, num_groups=3)
    xg = x.reshape(2, 3, 2, 3, 4)
    ref = (xg - xg.mean(axis=2, keepdims=True)) / np.sqrt(xg.var(axis=2, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y_c, ref.reshape(x.shape), rtol=1e-12, atol=1e-12)


def test_trt_normalization_rejects_bad_arguments() -> None:
    x = np.ones((2, 4, 3))
    ok = np.ones((1, 2, 1))
    with pytest.raises(ValueError, match="axis 1"):
        R.trt_normalization(x, ok, ok, 1 << 1 | 1 << 2, num_groups=2)
    with pytest.raises(ValueError):
        R.trt_normalization(
            x, np.ones((1, 3, 1)), np.ones((1, 3, 1)), 1 << 2, num_groups=2
        )  # neither G nor C
    with pytest.raises(ValueError):
        R.trt_normalization(x, np.ones((2,)), np.ones((2,)), 1 << 2, num_groups=2)  # 1-D: not [1, G, 1]
    with pytest.raises(ValueError):
        R.trt_normalization(x, ok, ok, 1 << 2, num_groups=3)  # 3 does not divide 4
    with pytest.raises(ValueError):
        R.trt_normalization(x, np.ones(4), np.ones(4), 1 << 3)  # bit beyond the rank
    with pytest.raises(ValueError):
        R.trt_normalization(x, np.ones((4, 1, 1, 1)), np.ones(1), 1 << 2)  # does not broadcast to x


# ---------------------------------------------------------------------------------------------
# ONNX LayerNormalization-17 (spec 004)


def _layer_norm_loop(
    x: np.ndarray, scale: np.ndarray, bias: np.ndarray, axis: int, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    outer = int(np.prod(x.shape[:axis]))
    inner = int(np.prod(x.shape[axis:]))
    flat = x.reshape(outer, inner)
    s = np.broadcast_to(scale, x.shape).reshape(outer, inner)
    b = np.broadcast_to(bias, x.shape).reshape(outer, inner)
    y = np.empty_like(flat)
    means, invs = np.empty(outer), np.empty(outer)
    for i in range(outer):
        total = 0.0
        for v in flat[i]:
            total += v
        mean = total / inner
        sq = 0.0
        for v in flat[i]:
            sq += (v - mean) * (v - mean)
        inv = 1.0 / np.sqrt(sq / inner + eps)
        for j in range(inner):
            y[i, j] = (flat[i, j] - mean) * inv * s[i, j] + b[i, j]
        means[i], invs[i] = mean, inv
    stat_shape = x.shape[:axis] + (1,) * (x.ndim - axis)
    return y.reshape(x.shape), means.reshape(stat_shape), invs.reshape(stat_shape)


@pytest.mark.parametrize(
    ("axis", "scale_shape"), [(-1, (4,)), (2, (3, 4)), (1, (3, 4)), (1, (3, 1)), (0, (2, 3, 4)), (-3, (1, 4))]
)
def test_layer_normalization_matches_loop(axis: int, scale_shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4)) * 2 + 5
    scale, bias = rng.standard_normal(scale_shape), rng.standard_normal(scale_shape)
    y, mean, inv = R.layer_normalization(x, scale, bias, axis=axis, epsilon=1e-3)
    y_ref, mean_ref, inv_ref = _layer_norm_loop(x, scale, bias, axis % 3, 1e-3)
    assert mean.shape == mean_ref.shape and inv.shape == inv_ref.shape
    np.testing.assert_allclose(y, y_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(inv, inv_ref, rtol=1e-12, atol=1e-12)


def test_layer_normalization_defaults_and_errors() -> None:
    x = np.arange(6.0).reshape(2, 3)
    y, mean, inv = R.layer_normalization(x, np.ones(3))
    assert mean.shape == (2, 1)
    np.testing.assert_allclose(mean.ravel(), [1.0, 4.0])
    np.testing.assert_allclose(inv.ravel(), 1 / np.sqrt(2 / 3 + 1e-5))
    np.testing.assert_allclose(y, (x - mean) * inv)
    with pytest.raises(ValueError):
        R.layer_normalization(x, np.ones((2, 1, 3)))  # scale of higher rank than X
    with pytest.raises(ValueError):
        R.layer_normalization(x, np.ones((2, 3)), axis=2)


# ---------------------------------------------------------------------------------------------
# OpenVINO GroupNormalization-12, BatchNormInference


def test_group_normalization_identities() -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 3, 5)) * 2 - 1
    gamma, beta = rng.standard_normal(4), rng.standard_normal(4)
    per_c = (1, 4, 1, 1)
    # num_groups == 1: layer norm over [C, H, W] with a per-channel affine.
    one = R.group_normalization(x, gamma, beta, 1, 1e-5)
    ln = R.mvn6(x, [1, 2, 3], True, 1e-5, "inside_sqrt") * gamma.reshape(per_c) + beta.reshape(per_c)
    np.testing.assert_allclose(one, ln, rtol=1e-12, atol=1e-12)
    # num_groups == C: instance norm over [H, W].
    inst = R.group_normalization(x, gamma, beta, 4, 1e-5)
    inorm = (x - x.mean(axis=(2, 3), keepdims=True)) / np.sqrt(x.var(axis=(2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(
        inst, inorm * gamma.reshape(per_c) + beta.reshape(per_c), rtol=1e-12, atol=1e-12
    )
    # Rank 2: each group is C/G scalars; a constant group gives 0 * scale + bias.
    x2 = np.array([[1.0, 3.0, 7.0, 7.0]])
    y2 = R.group_normalization(x2, np.full(4, 2.0), np.arange(4.0), 2, 1e-12)
    np.testing.assert_allclose(y2, [[-2.0, 3.0, 2.0, 3.0]])


def test_group_normalization_rejects_bad_arguments() -> None:
    x = np.ones((2, 6, 3))
    with pytest.raises(ValueError):
        R.group_normalization(x, np.ones(6), np.ones(6), 4, 1e-5)
    with pytest.raises(ValueError):
        R.group_normalization(x, np.ones(6), np.ones(6), 0, 1e-5)
    with pytest.raises(ValueError):
        R.group_normalization(x, np.ones(3), np.ones(3), 3, 1e-5)  # [G] scale is rejected, as by OpenVINO
    with pytest.raises(ValueError):
        R.group_normalization(np.ones(6), np.ones(6), np.ones(6), 3, 1e-5)


def test_batch_norm_inference_by_hand() -> None:
    x = np.array([[[1.0, 2.0], [3.0, 4.0]]])  # N=1, C=2, W=2
    y = R.batch_norm_inference(x, [2.0, 1.0], [0.5, -1.0], [1.0, 3.0], [4.0, 0.25], 0.0)
    np.testing.assert_allclose(y, [[[0.5, 1.5], [-1.0, 1.0]]])
    with pytest.raises(ValueError):
        R.batch_norm_inference(np.ones(3), [1.0], [0.0], [0.0], [1.0], 1e-5)


# ---------------------------------------------------------------------------------------------
# OpenVINO NormalizeL2-1


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_normalize_l2_empty_axes_follows_spec_at_every_rank(rank: int) -> None:
    x = np.array([-3.0, 0.0, 2.0]).reshape((1,) * (rank - 1) + (3,))
    for mode in ("add", "max"):
        y = R.normalize_l2(x, [], 1e-6, mode)
        np.testing.assert_array_equal(y.ravel(), [1.0, 0.0, 1.0])


def test_normalize_l2_zero_slice_and_modes() -> None:
    x = np.array([[0.0, 0.0], [3.0, 4.0]])
    for mode in ("add", "max", "MAX"):
        np.testing.assert_array_equal(R.normalize_l2(x, [1], 1e-3, mode)[0], [0.0, 0.0])
        assert np.isnan(R.normalize_l2(x, [-1], 0.0, mode)[0]).all()
    np.testing.assert_allclose(R.normalize_l2(x, [1], 1.0, "add")[1], [3 / np.sqrt(26), 4 / np.sqrt(26)])
    np.testing.assert_allclose(R.normalize_l2(x, [1], 1.0, "max")[1], [0.6, 0.8])
    np.testing.assert_allclose(R.normalize_l2(x, [1], 100.0, "max")[1], [0.3, 0.4])
    np.testing.assert_allclose(R.normalize_l2(x, [1, 0], 0.0, "add"), x / 5.0)
    with pytest.raises(ValueError):
        R.normalize_l2(x, [2], 1e-3, "add")
    with pytest.raises(ValueError):
        R.normalize_l2(x, [1], 1e-3, "sum")


# ---------------------------------------------------------------------------------------------
# OpenVINO MVN-6 / MVN-1


@pytest.mark.parametrize("normalize_variance", [True, False])
@pytest.mark.parametrize("eps_mode", ["inside_sqrt", "OUTSIDE_SQRT"])
def test_mvn6_empty_axes_gives_zeros(normalize_variance: bool, eps_mode: str) -> None:
    x = np.random.default_rng(5).standard_normal((2, 3, 4))
    y = R.mvn6(x, [], normalize_variance, 1e-9, eps_mode)
    np.testing.assert_array_equal(y, np.zeros_like(x))


def test_mvn6_formula_axes_and_modes() -> None:
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 4, 5)) * 4 + 2
    mean = x.mean(axis=(1, 3), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=(1, 3), keepdims=True)  # mean, not sum, of squared deviations
    for axes in ([1, 3], [3, 1], [-1, 1], [1, 3, -3]):
        np.testing.assert_allclose(R.mvn6(x, axes, True, 0.1, "inside_sqrt"), (x - mean) / np.sqrt(var + 0.1))
        np.testing.assert_allclose(
            R.mvn6(x, axes, True, 0.1, "outside_sqrt"), (x - mean) / (np.sqrt(var) + 0.1)
        )
        np.testing.assert_allclose(R.mvn6(x, axes, False, 0.1, "outside_sqrt"), x - mean)
    with pytest.raises(ValueError):
        R.mvn6(x, [1], True, 0.1, "inside")


def test_mvn1_axes_and_formula() -> None:
    assert R.mvn1_axes(4, True, None) == (1, 2, 3)
    assert R.mvn1_axes(4, False, None) == (2, 3)
    assert R.mvn1_axes(2, False, None) == ()
    assert R.mvn1_axes(4, False, [1, 2]) == (1, 2)  # reduction_axes wins over across_channels
    assert R.mvn1_axes(4, True, [3, -2]) == (2, 3)
    assert R.mvn1_axes(4, True, []) == (1, 2, 3)  # empty reduction_axes reads as absent (OpenVINO reader)
    assert R.mvn1_axes(4, False, []) == (2, 3)
    x = np.random.default_rng(7).standard_normal((2, 3, 4))
    np.testing.assert_array_equal(
        R.mvn1(x, False, None, True, 1e-9), R.mvn6(x, [2], True, 1e-9, "inside_sqrt")
    )
    np.testing.assert_array_equal(
        R.mvn1(x, True, None, False, 1e-9), R.mvn6(x, [1, 2], False, 1e-9, "inside_sqrt")
    )
    np.testing.assert_array_equal(R.mvn1(x[0], False, None, True, 1e-3), np.zeros((3, 4)))


# ---------------------------------------------------------------------------------------------
# OpenVINO LRN-1


def _lrn_loop_1d(x: np.ndarray, alpha: float, beta: float, bias: float, size: int) -> np.ndarray:
    half = (size - 1) // 2
    y = np.empty_like(x)
    for i in range(len(x)):
        lo, hi = max(0, i - half), min(len(x) - 1, i + half)
        y[i] = x[i] / (bias + alpha / size * sum(x[j] ** 2 for j in range(lo, hi + 1))) ** beta
    return y


def test_lrn_size_two_covers_only_the_element() -> None:
    x = np.array([[1.0, -2.0, 3.0, 0.5]])
    y = R.lrn(x, [1], alpha=0.4, beta=0.75, bias=2.0, size=2)
    np.testing.assert_allclose(y, x / (2.0 + 0.4 / 2 * x**2) ** 0.75, rtol=1e-14)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 6, 9])
def test_lrn_matches_loop_along_one_axis(size: int) -> None:
    x = np.random.default_rng(8).standard_normal(7)
    y = R.lrn(x.reshape(1, 7, 1), [1], 0.3, 0.6, 1.5, size)
    np.testing.assert_allclose(y.ravel(), _lrn_loop_1d(x, 0.3, 0.6, 1.5, size), rtol=1e-13)


def test_lrn_box_window_over_two_axes() -> None:
    x = np.random.default_rng(9).standard_normal((1, 2, 4, 5))
    size, half = 3, 1
    y = R.lrn(x, [3, -2], 0.5, 0.75, 1.0, size)
    ref = np.empty_like(x)
    for n, c, h, w in itertools.product(*map(range, x.shape)):
        box = x[n, c, max(0, h - half) : h + half + 1, max(0, w - half) : w + half + 1]
        ref[n, c, h, w] = x[n, c, h, w] / (1.0 + 0.5 / size**2 * np.sum(box**2)) ** 0.75
    np.testing.assert_allclose(y, ref, rtol=1e-13)


def test_convert_is_astype() -> None:
    y = R.convert(np.array([1.7, -1.7, 2.5]), np.int32)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, [1, -1, 2])


# ---------------------------------------------------------------------------------------------
# Comparisons with the OpenVINO CPU runtime (f32 runtime against the f64 oracle)

RTOL = ATOL = 1e-5


@pytest.fixture(scope="module")
def run_cpu() -> Callable[..., np.ndarray]:
    """Compile ``build(parameter)`` on the CPU plugin with an f32 inference precision and run it."""
    ov = pytest.importorskip("openvino")
    opset1 = pytest.importorskip("openvino.opset1")
    core = ov.Core()

    def run(build: Callable, x: np.ndarray) -> np.ndarray:
        param = opset1.parameter(list(x.shape), ov.Type.f32)
        model = ov.Model([build(param)], [param])
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        return compiled([x])[0]

    return run


def _axes_const(axes: Sequence[int]) -> object:
    """An i64 axes Constant; unlike opset1.constant it also accepts an empty list."""
    import openvino as ov

    return ov.op.Constant(np.array(list(axes), dtype=np.int64))


def _random(shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("shape", "num_groups"),
    [
        ((2, 6), 3),
        ((2, 6, 5), 2),
        ((1, 8, 3, 4), 4),
        ((2, 4, 3, 2), 1),
        ((2, 4, 3, 2), 4),
        ((1, 6, 2, 3, 2), 3),
    ],
)
def test_openvino_group_normalization(run_cpu: Callable, shape: tuple[int, ...], num_groups: int) -> None:
    opset12 = pytest.importorskip("openvino.opset12")
    x = _random(shape, 10)
    c = shape[1]
    gamma, beta = _random((c,), 11), _random((c,), 12)
    y = run_cpu(lambda p: opset12.group_normalization(p, gamma, beta, num_groups, 1e-5), x)
    np.testing.assert_allclose(
        y, R.group_normalization(x, gamma, beta, num_groups, 1e-5), rtol=RTOL, atol=ATOL
    )


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("shape", "axes"),
    [
        ((7,), [0]),
        ((3, 5), [1]),
        ((3, 5), [-1, 0]),
        ((2, 3, 4), [1]),
        ((2, 3, 4), [2, 0]),
        ((2, 3, 4, 5), [1]),
        ((2, 3, 4, 5), [-2, -1]),
        ((2, 3, 4, 5), [0, 1, 2, 3]),
        ((2, 3, 2, 3, 4), [1, 3]),
        # empty axes: the spec's rule (0 where x == 0, else 1); the CPU applies it at ranks 2-4 only
        ((3, 5), []),
        ((2, 3, 4), []),
        ((2, 3, 4, 5), []),
    ],
)
def test_openvino_normalize_l2_add(run_cpu: Callable, shape: tuple[int, ...], axes: list[int]) -> None:
    opset1 = pytest.importorskip("openvino.opset1")
    x = _random(shape, 13)
    x.flat[::4] = 0.0
    for eps in (1e-6, 0.5):
        y = run_cpu(lambda p, eps=eps: opset1.normalize_l2(p, _axes_const(axes), eps, "add"), x)
        np.testing.assert_allclose(y, R.normalize_l2(x, axes, eps, "add"), rtol=RTOL, atol=ATOL)


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("shape", "axes"),
    [
        ((3, 5), [1]),
        ((3, 5), [0, 1]),
        ((2, 3, 4), [2]),
        ((2, 3, 4), [-1, 0]),
        ((2, 3, 4, 5), [2, 3]),
        ((2, 3, 4, 5), [3, 1, 2]),
        ((2, 3, 4, 5), [0, -3]),
        ((2, 3, 2, 3, 4), [2, 3, 4]),
        ((2, 3, 2, 3, 4), [1]),
        # empty axes: zeros like OpenVINO's reference (not at rank 2 or rank >= 6 on the CPU, see below)
        ((2, 3, 4), []),
        ((2, 3, 4, 5), []),
    ],
)
@pytest.mark.parametrize("eps_mode", ["inside_sqrt", "outside_sqrt"])
@pytest.mark.parametrize("normalize_variance", [True, False])
def test_openvino_mvn6(
    run_cpu: Callable, shape: tuple[int, ...], axes: list[int], eps_mode: str, normalize_variance: bool
) -> None:
    opset6 = pytest.importorskip("openvino.opset6")
    x = _random(shape, 14)
    y = run_cpu(lambda p: opset6.mvn(p, _axes_const(axes), normalize_variance, 1e-4, eps_mode), x)
    np.testing.assert_allclose(y, R.mvn6(x, axes, normalize_variance, 1e-4, eps_mode), rtol=RTOL, atol=ATOL)


@pytest.mark.openvino
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 4, 3, 5), (1, 3, 2, 3, 2)])
@pytest.mark.parametrize("epsilon", [0.0, 1e-3])
def test_openvino_batch_norm_inference_opset5(
    run_cpu: Callable, shape: tuple[int, ...], epsilon: float
) -> None:
    opset5 = pytest.importorskip("openvino.opset5")
    x = _random(shape, 15)
    c = shape[1]
    gamma, beta, mean = _random((c,), 16), _random((c,), 17), _random((c,), 18)
    variance = np.random.default_rng(19).uniform(0.2, 3.0, c).astype(np.float32)
    y = run_cpu(lambda p: opset5.batch_norm_inference(p, gamma, beta, mean, variance, epsilon), x)
    expected = R.batch_norm_inference(x, gamma, beta, mean, variance, epsilon)
    np.testing.assert_allclose(y, expected, rtol=RTOL, atol=ATOL)


# The CPU plugin supports LRN axes [1] (across channels) or sets containing every spatial axis; in the
# latter case it reduces over exactly the spatial axes, so only [1] and the exact spatial set are compared.
@pytest.mark.openvino
@pytest.mark.parametrize(
    ("shape", "axes"),
    [((2, 5, 4, 6), [1]), ((2, 5, 4, 6), [2, 3]), ((2, 5, 4, 6), [3, 2]), ((2, 5, 7), [1]), ((2, 5, 7), [2]),
     ((1, 3, 4, 5, 6), [2, 3, 4]), ((1, 6, 2, 3, 2), [1]), ((3, 6), [1])],
)  # fmt: skip
@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_openvino_lrn(run_cpu: Callable, shape: tuple[int, ...], axes: list[int], size: int) -> None:
    opset1 = pytest.importorskip("openvino.opset1")
    x = _random(shape, 20)
    # bias is an integer on purpose: the CPU plugin truncates it (see the xfail test below)
    y = run_cpu(lambda p: opset1.lrn(p, _axes_const(axes), 0.7, 0.6, 2.0, size), x)
    np.testing.assert_allclose(y, R.lrn(x, axes, 0.7, 0.6, 2.0, size), rtol=RTOL, atol=ATOL)


# --- Known CPU-plugin deviations from the documented semantics (OpenVINO 2026.4). Strict xfails: if one
# --- starts passing, OpenVINO changed and docs/ir-format.md should be updated.


@pytest.mark.openvino
@pytest.mark.xfail(
    strict=True, reason="CPU LRN stores bias in an int (intel_cpu nodes/lrn.h `int k`): 1.5 -> 1"
)
def test_openvino_lrn_fractional_bias(run_cpu: Callable) -> None:
    opset1 = pytest.importorskip("openvino.opset1")
    x = _random((1, 4, 3, 3), 21)
    y = run_cpu(lambda p: opset1.lrn(p, _axes_const([1]), 0.3, 0.75, 1.5, 3), x)
    np.testing.assert_allclose(y, R.lrn(x, [1], 0.3, 0.75, 1.5, 3), rtol=RTOL, atol=ATOL)


@pytest.mark.openvino
@pytest.mark.xfail(
    strict=True, reason="CPU LRN runs oneDNN within_channel over the spatial axes only, ignoring 0/1"
)
def test_openvino_lrn_channel_and_spatial_axes(run_cpu: Callable) -> None:
    opset1 = pytest.importorskip("openvino.opset1")
    x = _random((2, 5, 4, 6), 22)
    y = run_cpu(lambda p: opset1.lrn(p, _axes_const([1, 2, 3]), 0.7, 0.6, 2.0, 3), x)
    np.testing.assert_allclose(y, R.lrn(x, [1, 2, 3], 0.7, 0.6, 2.0, 3), rtol=RTOL, atol=ATOL)


@pytest.mark.openvino
@pytest.mark.xfail(strict=True, reason="CPU NormalizeL2 applies the empty-axes rule only at ranks 2-4")
@pytest.mark.parametrize("shape", [(5,), (2, 3, 2, 3, 4)])
def test_openvino_normalize_l2_empty_axes_other_ranks(run_cpu: Callable, shape: tuple[int, ...]) -> None:
    opset1 = pytest.importorskip("openvino.opset1")
    x = _random(shape, 23)
    y = run_cpu(lambda p: opset1.normalize_l2(p, _axes_const([]), 1e-4, "add"), x)
    np.testing.assert_allclose(y, R.normalize_l2(x, [], 1e-4, "add"), rtol=RTOL, atol=ATOL)


@pytest.mark.openvino
@pytest.mark.xfail(strict=True, reason="CPU MVN-6 with empty axes: identity at rank 2, garbage at rank >= 6")
@pytest.mark.parametrize("shape", [(3, 5), (1, 2, 1, 2, 1, 3)])
def test_openvino_mvn6_empty_axes_other_ranks(run_cpu: Callable, shape: tuple[int, ...]) -> None:
    opset6 = pytest.importorskip("openvino.opset6")
    x = _random(shape, 24)
    y = run_cpu(lambda p: opset6.mvn(p, _axes_const([]), True, 1e-4, "inside_sqrt"), x)
    np.testing.assert_allclose(y, R.mvn6(x, [], True, 1e-4, "inside_sqrt"), rtol=RTOL, atol=ATOL)
