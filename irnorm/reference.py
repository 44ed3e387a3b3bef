"""Flat float64 numpy oracle: one plain function per operator, named after it.

In the style of jax's ``lax_reference.py``: no classes, no registry, nothing from the rest of
``irnorm``.  Every function casts its inputs to float64 itself, computes with the textbook
two-pass formula (mean first, then the *biased* variance as the mean of squared deviations)
and returns float64 arrays, so that a reader can check it against the spec by eye.  It is
slow on purpose and used by the tests only.

The semantics follow docs/ir-format.md, sections 11-12 ("Operation semantics",
"Contradictions between sources"), and docs/operator-specs.md.  Where OpenVINO's
spec, reference implementation and CPU plugin disagree, each docstring says which one is
followed.

Degenerate inputs (eps=0 on a constant slice, 0**negative power, ...) produce NaN/inf as the
formula dictates; numpy's floating-point warnings are silenced for those, because here they
are the documented result rather than an accident.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

__all__ = [
    "batch_norm_inference",
    "ceiling",
    "convert",
    "convolution",
    "convolution_backprop_data",
    "group_convolution_backprop_data",
    "depth_to_space",
    "eye",
    "group_convolution",
    "elu",
    "floor",
    "floor_mod",
    "gelu",
    "group_normalization",
    "hard_sigmoid",
    "hsigmoid",
    "hswish",
    "is_inf",
    "layer_normalization",
    "lrn",
    "matmul",
    "max_pool",
    "avg_pool",
    "adaptive_avg_pool",
    "adaptive_max_pool",
    "math_unary",
    "mish",
    "mod",
    "mvn1",
    "mvn1_axes",
    "mvn6",
    "non_zero",
    "normalize_l2",
    "reduce",
    "reverse_sequence",
    "prelu",
    "relu",
    "round_",
    "scale",
    "scale_int8_output",
    "scaled_dot_product_attention",
    "softmax",
    "select",
    "selu",
    "sign",
    "softplus",
    "softsign",
    "space_to_depth",
    "swish",
    "trt_normalization",
    "embedding_bag_offsets",
    "embedding_bag_packed",
    "embedding_segments_sum",
    "col2im",
    "bucketize",
    "search_sorted",
    "inverse",
    "dft",
    "irdft",
    "rdft",
    "stft",
    "shuffle_channels",
    "space_to_batch",
    "batch_to_space",
    "grn",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "interpolate_pillow",
    "deformable_convolution",
    "detection_output",
    "prior_box",
    "prior_box_clustered",
]


def _f64(a: ArrayLike) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def _axes(axes: Sequence[int] | int, rank: int) -> tuple[int, ...]:
    """Normalize axes: each in [-rank, rank-1], negatives counted from the back, duplicates
    collapsed (as a set), result sorted.  Out-of-range axes raise ValueError."""
    out = set()
    for a in np.atleast_1d(np.asarray(axes, dtype=np.int64)).tolist():
        if not -rank <= a < rank:
            raise ValueError(f"axis {a} is out of range for rank {rank}")
        out.add(a % rank)
    return tuple(sorted(out))


def _moments(x: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Two-pass mean and biased variance over ``axes`` (keepdims).  Empty axes give
    mean == x and variance == 0."""
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    return mean, var


def _channel_shape(c: int, rank: int) -> tuple[int, ...]:
    """Shape [1, C, 1, ..., 1] of the given rank (a per-channel vector broadcast over axis 1)."""
    return (1, c) + (1,) * (rank - 2)


def group_normalization(
    x: ArrayLike, scale: ArrayLike, bias: ArrayLike, num_groups: int, epsilon: float
) -> np.ndarray:
    """OpenVINO GroupNormalization-12 (spec 002).

    ``x`` is [N, C, ...] with rank >= 2, ``scale`` and ``bias`` are 1-D [C].  ``x`` is viewed as
    [N, G, C/G, ...]; for each (n, g) the mean and biased variance are taken over the C/G
    channels and all spatial elements, and y = (x - mean) / sqrt(var + epsilon) * scale[c] + bias[c].
    ``num_groups`` must be in 1..C and divide C; a rank-2 input works (groups of C/G scalars).
    Validation mirrors OpenVINO's shape inference (notes section 11).
    """
    x, scale, bias = _f64(x), _f64(scale), _f64(bias)
    if x.ndim < 2:
        raise ValueError("GroupNormalization: the input tensor is required to be at least 2D")
    n, c = x.shape[:2]
    if scale.shape != (c,) or bias.shape != (c,):
        raise ValueError(
            f"GroupNormalization: scale and bias must be 1-D [{c}], got {scale.shape}, {bias.shape}"
        )
    if num_groups <= 0 or c % num_groups != 0:
        raise ValueError(f"GroupNormalization: num_groups={num_groups} must be positive and divide C={c}")
    grouped = x.reshape((n, num_groups, c // num_groups) + x.shape[2:])
    axes = tuple(range(2, grouped.ndim))
    mean, var = _moments(grouped, axes)
    with np.errstate(divide="ignore", invalid="ignore"):
        normalized = ((grouped - mean) / np.sqrt(var + epsilon)).reshape(x.shape)
    shape = _channel_shape(c, x.ndim)
    return normalized * scale.reshape(shape) + bias.reshape(shape)


def normalize_l2(x: ArrayLike, axes: Sequence[int], eps: float, eps_mode: str) -> np.ndarray:
    """OpenVINO NormalizeL2-1 (spec 003): y = x / sqrt(mode(sum_axes x**2, eps)).

    ``eps_mode`` "add" gives sum + eps, "max" gives max(sum, eps) (case-insensitive).
    Empty ``axes``: the spec's particular case "each element is divided by itself", i.e. 0 where
    x == 0 and 1 elsewhere (so -3 gives 1, not -1), applied at every rank.  The OpenVINO CPU
    plugin (2026.4) applies that rule only at ranks 2-4: it gives x / sqrt(x**2 + eps) ~ sign(x)
    at ranks 1 and 5 (notes section 11), and wrong values at rank >= 6 (its decomposed ReduceSum
    over empty axes fills only the innermost row).  The oracle follows the spec.
    An all-zero slice gives 0 when eps > 0 and NaN when eps == 0 (0/0), like the CPU plugin.
    """
    x = _f64(x)
    mode = eps_mode.lower()
    if mode not in ("add", "max"):
        raise ValueError(f"NormalizeL2: eps_mode must be 'add' or 'max', got {eps_mode!r}")
    red = _axes(axes, x.ndim)
    if not red:
        return np.where(x == 0, 0.0, 1.0)
    sumsq = np.sum(x * x, axis=red, keepdims=True)
    denom = sumsq + eps if mode == "add" else np.maximum(sumsq, eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        return x / np.sqrt(denom)


def mvn6(
    x: ArrayLike, axes: Sequence[int], normalize_variance: bool, eps: float, eps_mode: str
) -> np.ndarray:
    """OpenVINO MVN-6: mean-variance normalization over ``axes``.

    d = x - mean(x, axes); with ``normalize_variance`` false the result is d, otherwise
    "inside_sqrt" gives d / sqrt(var + eps) and "outside_sqrt" gives d / (sqrt(var) + eps)
    (``eps_mode`` case-insensitive: the serializer writes it upper case).  var is the MEAN of
    squared deviations, as in OpenVINO's reference and CPU plugin (the spec's formula writes a
    sum).  Axes may be negative or unsorted; duplicates act as a set.
    Empty axes: mean == x, so d == 0 and the output is all zeros, matching OpenVINO's reference
    (constant folding) -- the formula gives this naturally (for eps > 0; eps == 0 gives 0/0 NaN
    when normalizing the variance, as for any constant slice).  The OpenVINO CPU plugin (2026.4)
    agrees at ranks 1 and 3-5 but returns the input unchanged at rank 2 and wrong values at
    rank >= 6.
    """
    x = _f64(x)
    mode = eps_mode.lower()
    if mode not in ("inside_sqrt", "outside_sqrt"):
        raise ValueError(f"MVN-6: eps_mode must be 'inside_sqrt' or 'outside_sqrt', got {eps_mode!r}")
    mean, var = _moments(x, _axes(axes, x.ndim))
    d = x - mean
    if not normalize_variance:
        return d
    with np.errstate(divide="ignore", invalid="ignore"):
        if mode == "inside_sqrt":
            return d / np.sqrt(var + eps)
        return d / (np.sqrt(var) + eps)


def mvn1_axes(rank: int, across_channels: bool, reduction_axes: Sequence[int] | None) -> tuple[int, ...]:
    """Effective reduction axes of OpenVINO MVN-1 (notes section 11, "MVN-1").

    A non-empty ``reduction_axes`` wins: OpenVINO's serializer writes both attributes and the
    reader recomputes ``across_channels`` from the axes.  OpenVINO's reader treats an empty
    ``reduction_axes`` like an absent one, so then ``across_channels`` true gives [1..rank-1] and
    false gives [2..rank-1] (empty at rank 2).  Returned normalized: non-negative, sorted, unique.
    """
    if reduction_axes:
        return _axes(reduction_axes, rank)
    return tuple(range(1 if across_channels else 2, rank))


def mvn1(
    x: ArrayLike,
    across_channels: bool,
    reduction_axes: Sequence[int] | None,
    normalize_variance: bool,
    eps: float,
) -> np.ndarray:
    """OpenVINO MVN-1 (opset2..opset5): MVN over ``mvn1_axes(...)`` with eps always inside the
    sqrt: (x - mean) / sqrt(var + eps), or x - mean without ``normalize_variance``.  Empty
    effective axes (e.g. rank 2 with across_channels false) give zeros, as on the CPU plugin.
    """
    x = _f64(x)
    return mvn6(x, mvn1_axes(x.ndim, across_channels, reduction_axes), normalize_variance, eps, "inside_sqrt")


def batch_norm_inference(
    x: ArrayLike,
    gamma: ArrayLike,
    beta: ArrayLike,
    mean: ArrayLike,
    variance: ArrayLike,
    epsilon: float,
) -> np.ndarray:
    """OpenVINO BatchNormInference-1/-5: y = (x - mean) / sqrt(variance + epsilon) * gamma + beta.

    Channel axis 1, rank >= 2, every parameter 1-D [C].  The argument order is data first (the
    Python API's and BN-5's port order; BN-1's IR ports put gamma and beta before data, notes
    section 11).  epsilon == 0 is allowed.
    """
    x = _f64(x)
    if x.ndim < 2:
        raise ValueError("BatchNormInference: input argument must have rank of at least 2")
    c = x.shape[1]
    params = [_f64(p) for p in (gamma, beta, mean, variance)]
    for p in params:
        if p.shape != (c,):
            raise ValueError(f"BatchNormInference: parameters must be 1-D [{c}], got {p.shape}")
    g, b, m, v = (p.reshape(_channel_shape(c, x.ndim)) for p in params)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (x - m) / np.sqrt(v + epsilon) * g + b


def lrn(x: ArrayLike, axes: Sequence[int], alpha: float, beta: float, bias: float, size: int) -> np.ndarray:
    """OpenVINO LRN-1, following OpenVINO's reference implementation (which the CPU plugin matches).

    y = x / (bias + alpha / size**len(axes) * S)**beta, where S sums x**2 over a box: along each
    axis in ``axes`` the window is [i - (size-1)//2, i + (size-1)//2], clipped to the tensor.
    Even sizes therefore cover size-1 elements (size=2 covers only the element itself) yet still
    divide alpha by size**len(axes).  The spec's prose omits the square and its window example is
    wider; ONNX LRN's window is asymmetric (notes sections 11, 12).
    The OpenVINO CPU plugin (2026.4) matches for axes [1] and for exactly the spatial axes, but it
    truncates ``bias`` to an integer (1.5 acts as 1; intel_cpu keeps it in an ``int``), and for any
    other accepted axes set (one containing all spatial axes plus 0 and/or 1) it reduces over the
    spatial axes only.
    """
    x = _f64(x)
    if size < 1:
        raise ValueError(f"LRN: size must be positive, got {size}")
    red = _axes(axes, x.ndim)
    half = (size - 1) // 2
    window_sum = x * x
    for ax in red:  # the box sum is separable: a 1-D window sum along each axis in turn
        n = x.shape[ax]
        acc = np.zeros_like(window_sum)
        for off in range(-half, half + 1):
            # acc[..., i, ...] += window_sum[..., i + off, ...] for the i with 0 <= i + off < n
            dst = [slice(None)] * x.ndim
            src = [slice(None)] * x.ndim
            dst[ax] = slice(max(0, -off), min(n, n - off))
            src[ax] = slice(max(0, off), min(n, n + off))
            acc[tuple(dst)] += window_sum[tuple(src)]
        window_sum = acc
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return x / (bias + alpha / float(size) ** len(red) * window_sum) ** beta


def layer_normalization(
    x: ArrayLike,
    scale: ArrayLike,
    bias: ArrayLike | None = None,
    axis: int = -1,
    epsilon: float = 1e-5,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ONNX LayerNormalization-17 (spec 004); returns (Y, Mean, InvStdDev).

    Normalized axes are [axis..r-1] (``axis`` in [-r, r)).  Mean = mean(X), D = X - Mean,
    Var = mean(D*D), InvStdDev = 1 / sqrt(Var + epsilon), Y = D * InvStdDev * Scale + B.
    Mean and InvStdDev have shape X.shape[:axis] + [1] * (r - axis).  Scale and B (optional)
    need only be unidirectionally broadcastable to X.  ``stash_type`` is moot here: everything
    is float64.
    """
    x, scale = _f64(x), _f64(scale)
    r = x.ndim
    if not -r <= axis < r:
        raise ValueError(f"LayerNormalization: axis {axis} is out of range for rank {r}")
    axis %= r
    params = [scale] if bias is None else [scale, _f64(bias)]
    for p in params:
        if p.ndim > r or np.broadcast_shapes(p.shape, x.shape) != x.shape:
            raise ValueError(
                f"LayerNormalization: {p.shape} is not unidirectionally broadcastable to {x.shape}"
            )
    mean, var = _moments(x, tuple(range(axis, r)))
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_std_dev = 1.0 / np.sqrt(var + epsilon)
        y = (x - mean) * inv_std_dev * scale
    if bias is not None:
        y = y + params[1]
    return y, mean, inv_std_dev


def _mask_axes(axes_mask: int, rank: int) -> tuple[int, ...]:
    """Axes of a TensorRT uint32 axes bitmask (bit i = axis i)."""
    mask = int(axes_mask)
    if not 0 <= mask < 1 << 32:
        raise ValueError(f"Normalization: axes_mask {mask} is not a uint32")
    if mask >> rank:
        raise ValueError(f"Normalization: axes_mask {mask:#x} has bits beyond rank {rank}")
    return tuple(i for i in range(rank) if mask >> i & 1)


def trt_normalization(
    x: ArrayLike,
    scale: ArrayLike,
    bias: ArrayLike,
    axes_mask: int,
    num_groups: int = 1,
    epsilon: float = 1e-5,
) -> np.ndarray:
    """TensorRT INormalizationLayer (spec 000): Y = (X - Mean) / sqrt(Var + epsilon) * S + B.

    ``axes_mask`` is the uint32 bitmask (bit i = axis i); bits at or beyond the rank are rejected.
    num_groups == 1: mean and biased variance over the mask's axes (the spec's np.mean/np.var
    example); scale and bias are numpy-broadcast to X (they must broadcast to X's shape).
    num_groups > 1 (group norm): X [N, C, ...] is viewed as [N, G, C/G, ...] and the statistics
    are taken over the channel-in-group axis plus the mask's axes; the mask must not contain
    axis 1 (onnx-tensorrt PR #1052).  Scale/bias may be per-group [1, G, 1, ...] (the TRT docs)
    or per-channel [1, C, 1, ...] (ONNX-21, OpenVINO, and possibly addNormalizationV2), chosen by
    shape; when G == C both readings agree.  Other shapes raise ValueError (notes section 11).
    """
    x, scale, bias = _f64(x), _f64(scale), _f64(bias)
    r = x.ndim
    red = _mask_axes(axes_mask, r)
    if num_groups == 1:
        for p in (scale, bias):
            if p.ndim > r or np.broadcast_shapes(p.shape, x.shape) != x.shape:
                raise ValueError(f"Normalization: scale/bias {p.shape} does not broadcast to {x.shape}")
        mean, var = _moments(x, red)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (x - mean) / np.sqrt(var + epsilon) * scale + bias
    if num_groups < 1:
        raise ValueError(f"Normalization: num_groups must be positive, got {num_groups}")
    if r < 2:
        raise ValueError("Normalization: group normalization needs an input of rank >= 2")
    if 1 in red:
        raise ValueError("Normalization: axes_mask must not contain axis 1 when num_groups > 1")
    n, c = x.shape[:2]
    g = num_groups
    if c % g != 0:
        raise ValueError(f"Normalization: num_groups={g} does not divide C={c}")
    grouped = x.reshape((n, g, c // g) + x.shape[2:])
    # axis 0 of x stays axis 0; axis a >= 2 of x is axis a + 1 of the grouped view.
    grouped_axes = (2,) + tuple(a + 1 if a >= 2 else a for a in red)
    mean, var = _moments(grouped, tuple(sorted(grouped_axes)))
    with np.errstate(divide="ignore", invalid="ignore"):
        normalized = (grouped - mean) / np.sqrt(var + epsilon)
    per_group, per_channel = _channel_shape(g, r), _channel_shape(c, r)
    if scale.shape == per_channel and bias.shape == per_channel:
        return normalized.reshape(x.shape) * scale + bias
    if scale.shape == per_group and bias.shape == per_group:
        gshape = (1, g, 1) + (1,) * (r - 2)
        return (normalized * scale.reshape(gshape) + bias.reshape(gshape)).reshape(x.shape)
    raise ValueError(
        f"Normalization: scale/bias must both be {per_group} (per group) or {per_channel} (per channel), "
        f"got {scale.shape}, {bias.shape}"
    )


def scale(
    x: ArrayLike,
    mode: str,
    scale: ArrayLike,
    shift: ArrayLike,
    power: ArrayLike,
    channel_axis: int,
) -> np.ndarray:
    """TensorRT IScaleLayer (spec 001): y = (x * scale + shift) ** power, element by element.

    ``mode`` (case-insensitive): "uniform" takes one coefficient; "channel" one per
    x.shape[channel_axis]; "elementwise" one per element of x.shape[channel_axis:] (flattened in
    C order).  ``scale``/``shift``/``power`` are 1-D; an empty (size 0) array means the default
    1 / 0 / 1.  ``channel_axis`` may be negative.  TensorRT's rank >= 4 requirement is not
    enforced here (onnx-tensorrt pads lower ranks to 4-D; the math is the same).  A negative
    base with a non-integer power gives NaN, as C's pow does.
    """
    x = _f64(x)
    r = x.ndim
    m = mode.lower()
    if not -r <= channel_axis < r:
        raise ValueError(f"Scale: channel_axis {channel_axis} is out of range for rank {r}")
    ca = channel_axis % r
    if m == "uniform":
        shape: tuple[int, ...] = ()
    elif m == "channel":
        shape = (x.shape[ca],) + (1,) * (r - ca - 1)
    elif m == "elementwise":
        shape = x.shape[ca:]
    else:
        raise ValueError(f"Scale: mode must be uniform, channel or elementwise, got {mode!r}")
    count = int(np.prod(shape))
    coeffs = []
    for name, value, default in (("scale", scale, 1.0), ("shift", shift, 0.0), ("power", power, 1.0)):
        v = _f64(value).reshape(-1)
        if v.size == 0:
            coeffs.append(np.float64(default))
        elif v.size == count:
            coeffs.append(v.reshape(shape))
        else:
            raise ValueError(f"Scale: {m} mode needs {count} {name} values, got {v.size}")
    s, sh, p = coeffs
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.power(x * s + sh, p)


def scale_int8_output(y: ArrayLike) -> np.ndarray:
    """IScaleLayer FP32-in / INT8-out: round half to even, then saturate to [-128, 127].

    Returns int8.  NaN has no int8 value and raises ValueError (TensorRT's choice is not
    documented); +-inf saturate.
    """
    y = _f64(y)
    if np.isnan(y).any():
        raise ValueError("scale_int8_output: NaN cannot be converted to int8")
    return np.clip(np.rint(y), -128, 127).astype(np.int8)


def convert(x: ArrayLike, destination_dtype: DTypeLike) -> np.ndarray:
    """OpenVINO Convert, for completeness: plain numpy ``astype`` (returns ``destination_dtype``,
    not float64).  OpenVINO's own float-to-integer rounding and saturation rules are not modelled.
    """
    return np.asarray(x).astype(destination_dtype)


# ---- reductions ------------------------------------------------------------------------------------


def reduce(kind: str, x: ArrayLike, axes: Sequence[int], keep_dims: bool) -> np.ndarray:
    """OpenVINO ReduceSum/Mean/Max/Min/Prod-1, ReduceL1/L2-4, ReduceLogicalAnd/Or-1 over `axes`
    (negative counting from the back, repeats acting as a set).  Empty axes reduce over nothing
    (the identity; |x| for L1 and L2).  Floats in float64; booleans for the logical ones."""
    a = np.asarray(x)
    ax = _axes(axes, a.ndim) if len(axes) else ()
    if kind in ("and", "or"):
        b = a.astype(bool)
        return (np.all if kind == "and" else np.any)(b, axis=ax, keepdims=keep_dims) if ax else b.copy()
    v = _f64(a)
    if not ax:
        return np.abs(v) if kind in ("l1", "l2") else v
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
          "l1": lambda t, axis, keepdims: np.sum(np.abs(t), axis=axis, keepdims=keepdims),
          "l2": lambda t, axis, keepdims: np.sqrt(np.sum(t * t, axis=axis, keepdims=keepdims))}[kind]
    return fn(v, axis=ax, keepdims=keep_dims)
# ---- compute family: MatMul, Convolution, GroupConvolution, ConvolutionBackpropData ----------------


def matmul(a: ArrayLike, b: ArrayLike, transpose_a: bool = False, transpose_b: bool = False) -> np.ndarray:
    """MatMul-1: a 1-D A becomes [1, K] and a 1-D B [K, 1] (transposes ignored for them), the last two
    dims are swapped when transpose_* is set, batch dims broadcast (numpy rule), and the added unit
    dims are removed.  Float inputs are computed in float64; integer inputs in int64 and returned as
    int64 (callers cast)."""
    a, b = np.asarray(a), np.asarray(b)
    work = np.int64 if a.dtype.kind in "iu" else np.float64
    a, b = a.astype(work), b.astype(work)
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    a = a.reshape(1, -1) if a_vec else (np.swapaxes(a, -1, -2) if transpose_a else a)
    b = b.reshape(-1, 1) if b_vec else (np.swapaxes(b, -1, -2) if transpose_b else b)
    y = np.matmul(a, b)
    if a_vec:
        y = y[..., 0, :]
    if b_vec:
        y = y[..., 0]
    return y


def _conv_pads(n: int, k: int, s: int, d: int, pb: int, pe: int, auto_pad: str) -> tuple[int, int]:
    """Forward convolution padding of one spatial dim (begin, end)."""
    if auto_pad in ("same_upper", "same_lower"):
        out = -(-n // s)
        total = max(0, (out - 1) * s + d * (k - 1) + 1 - n)
        small = total // 2
        return (small, total - small) if auto_pad == "same_upper" else (total - small, small)
    if auto_pad == "valid":
        return 0, 0
    return pb, pe


def group_convolution(x: ArrayLike, w: ArrayLike, strides: Sequence[int], pads_begin: Sequence[int],
                      pads_end: Sequence[int], dilations: Sequence[int], auto_pad: str = "explicit") -> np.ndarray:
    """GroupConvolution-1: x [N, G*Cg, *S], w [G, Og, Cg, *k] -> [N, G*Og, *out];
    y[n, g*Og+o, p] = sum_{c, t} x[n, g*Cg+c, p*s - pad_begin + t*d] * w[g, o, c, t], zero outside x."""
    x, w = _f64(x), _f64(w)
    rank = x.ndim - 2
    g, og, cg = w.shape[:3]
    k = w.shape[3:]
    pads = [_conv_pads(x.shape[2 + i], k[i], strides[i], dilations[i], pads_begin[i] if pads_begin else 0,
                       pads_end[i] if pads_end else 0, auto_pad) for i in range(rank)]
    xp = np.pad(x, [(0, 0), (0, 0)] + [p for p in pads])
    out = [(xp.shape[2 + i] - dilations[i] * (k[i] - 1) - 1) // strides[i] + 1 for i in range(rank)]
    n = x.shape[0]
    y = np.zeros((n, g * og) + tuple(out))
    for t in np.ndindex(*k):
        # the input positions tap t reads for every output position
        idx = tuple(slice(t[i] * dilations[i], t[i] * dilations[i] + (out[i] - 1) * strides[i] + 1, strides[i])
                    for i in range(rank))
        patch = xp[(slice(None), slice(None)) + idx].reshape((n, g, cg) + tuple(out))
        wt = w[(slice(None), slice(None), slice(None)) + t]  # [G, Og, Cg]
        y += np.einsum("ngc...,goc->ngo...", patch, wt).reshape(y.shape)
    return y


def convolution(x: ArrayLike, w: ArrayLike, strides: Sequence[int], pads_begin: Sequence[int],
                pads_end: Sequence[int], dilations: Sequence[int], auto_pad: str = "explicit") -> np.ndarray:
    """Convolution-1: x [N, C, *S], w [O, C, *k]; GroupConvolution with one group."""
    w = _f64(w)
    return group_convolution(x, w[None], strides, pads_begin, pads_end, dilations, auto_pad)


def convolution_backprop_data(x: ArrayLike, w: ArrayLike, strides: Sequence[int], pads_begin: Sequence[int],
                              pads_end: Sequence[int], dilations: Sequence[int], auto_pad: str = "explicit",
                              output_padding: Sequence[int] | None = None,
                              output_shape: Sequence[int] | None = None) -> np.ndarray:
    """ConvolutionBackpropData-1: x [N, C, *S], w [C, O, *k]; every input element scatters
    x[n, c, i] * w[c, o, t] to output position i*s - pad_begin + t*d (kept when inside the output).
    Output size s*(i-1) + d*(k-1) + 1 - pb - pe + output_padding, pads zero for same_* / valid;
    with output_shape O: the output is O, pad_begin = pads_begin (explicit), 0 (valid), or the split of
    full - O with the odd element first (same_upper) / last (same_lower) — OpenVINO CPU's rule."""
    x, w = _f64(x), _f64(w)
    rank = x.ndim - 2
    k = w.shape[2:]
    op = list(output_padding) if output_padding else [0] * rank
    pb = list(pads_begin) if pads_begin else [0] * rank
    pe = list(pads_end) if pads_end else [0] * rank
    explicit = auto_pad in ("explicit", "notset")
    out, begin = [], []
    for i in range(rank):
        full = strides[i] * (x.shape[2 + i] - 1) + dilations[i] * (k[i] - 1) + 1 + op[i]
        if output_shape is None:
            b, e = (pb[i], pe[i]) if explicit else (0, 0)
            out.append(full - b - e)
            begin.append(b)
        else:
            out.append(int(output_shape[i]))
            total = max(0, full - int(output_shape[i]))
            b = {"valid": 0, "same_upper": total - total // 2, "same_lower": total // 2}.get(auto_pad, pb[i])
            begin.append(b)
    n = x.shape[0]
    o = w.shape[1]
    # scatter into a buffer big enough for every position, then crop
    big = [strides[i] * (x.shape[2 + i] - 1) + dilations[i] * (k[i] - 1) + 1 for i in range(rank)]
    buf = np.zeros((n, o) + tuple(big))
    for t in np.ndindex(*k):
        idx = tuple(slice(t[i] * dilations[i], t[i] * dilations[i] + (x.shape[2 + i] - 1) * strides[i] + 1,
                          strides[i]) for i in range(rank))
        buf[(slice(None), slice(None)) + idx] += np.einsum("nc...,co->no...", x, w[(slice(None), slice(None)) + t])
    y = np.zeros((n, o) + tuple(out))
    src, dst = [], []
    for i in range(rank):
        lo = max(begin[i], 0)
        hi = min(big[i], begin[i] + out[i])
        if hi <= lo:
            return y
        src.append(slice(lo, hi))
        dst.append(slice(lo - begin[i], hi - begin[i]))
    y[(slice(None), slice(None)) + tuple(dst)] = buf[(slice(None), slice(None)) + tuple(src)]
    return y
# ---- activations and float math (irnorm.ops.activation) ------------------------------------------
# Floating-point data is computed in float64; integer data (Relu, PRelu, Sign, Floor, Ceiling, Round)
# keeps its integer type.  NaN and inf follow each formula as written (OpenVINO's reference).



def group_convolution_backprop_data(x: ArrayLike, w: ArrayLike, strides: Sequence[int], pads_begin: Sequence[int],
                                    pads_end: Sequence[int], dilations: Sequence[int], auto_pad: str = "explicit",
                                    output_padding: Sequence[int] | None = None,
                                    output_shape: Sequence[int] | None = None) -> np.ndarray:
    """GroupConvolutionBackpropData-1: x [N, G*C, *S], w [G, C, O, *k]; group g's channels go through
    convolution_backprop_data with w[g], and the G outputs are stacked along the channels."""
    x, w = _f64(x), _f64(w)
    c = w.shape[1]
    return np.concatenate([convolution_backprop_data(x[:, g * c:(g + 1) * c], w[g], strides, pads_begin, pads_end,
                                                     dilations, auto_pad, output_padding, output_shape)
                           for g in range(w.shape[0])], axis=1)

def _num(x: ArrayLike) -> np.ndarray:
    """float64 for floating-point data, the array itself for integers."""
    a = np.asarray(x)
    return a if a.dtype.kind in "iu" else a.astype(np.float64)


def relu(x: ArrayLike) -> np.ndarray:
    """Relu-1: x < 0 ? 0 : x (NaN stays NaN)."""
    x = _num(x)
    return np.where(x < 0, np.zeros((), x.dtype), x)


def gelu(x: ArrayLike, approximation_mode: str = "erf") -> np.ndarray:
    """Gelu-2 (erf) and Gelu-7: 0.5 x (1 + erf(x / sqrt 2)), or with mode tanh
    0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    import math

    x = _f64(x)
    with np.errstate(all="ignore"):
        if approximation_mode.lower() == "tanh":
            return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        erf = np.vectorize(math.erf, otypes=[np.float64])
        return 0.5 * x * (1 + erf(x / math.sqrt(2))) if x.size else x.copy()


def swish(x: ArrayLike, beta: float = 1.0) -> np.ndarray:
    """Swish-4: x / (1 + exp(-beta x))."""
    x = _f64(x)
    with np.errstate(all="ignore"):
        return x / (1 + np.exp(-beta * x))


def hsigmoid(x: ArrayLike) -> np.ndarray:
    """HSigmoid-5: min(max(x + 3, 0), 6) / 6 (NaN stays NaN)."""
    t = _f64(x) + 3
    t = np.where(t < 0, 0.0, np.where(t > 6, 6.0, t))
    return t / 6


def hswish(x: ArrayLike) -> np.ndarray:
    """HSwish-4: x min(max(x + 3, 0), 6) / 6."""
    with np.errstate(all="ignore"):
        return _f64(x) * hsigmoid(x)


def mish(x: ArrayLike) -> np.ndarray:
    """Mish-4: x tanh(log(1 + exp(x)))."""
    x = _f64(x)
    with np.errstate(all="ignore"):
        return x * np.tanh(np.log1p(np.exp(x)))


def softplus(x: ArrayLike, threshold: float = 709.782712893384) -> np.ndarray:
    """SoftPlus-4: log(1 + exp(x)) for x < threshold, else x (OpenVINO uses log(max) of the type)."""
    x = _f64(x)
    with np.errstate(all="ignore"):
        return np.where(x < threshold, np.log1p(np.exp(x)), x)


def elu(x: ArrayLike, alpha: float) -> np.ndarray:
    """Elu-1: x > 0 ? x : alpha (exp(x) - 1)."""
    x = _f64(x)
    with np.errstate(all="ignore"):
        return np.where(x > 0, x, alpha * np.expm1(x))


def selu(x: ArrayLike, alpha: float, lambda_: float) -> np.ndarray:
    """Selu-1: lambda (x > 0 ? x : alpha (exp(x) - 1))."""
    return lambda_ * elu(x, alpha)


def hard_sigmoid(x: ArrayLike, alpha: float, beta: float) -> np.ndarray:
    """HardSigmoid-1: max(0, min(1, alpha x + beta)) with std::min/std::max's order, so NaN gives 1."""
    t = alpha * _f64(x) + beta
    t = np.where(t < 1, t, 1.0)
    return np.where(t > 0, t, 0.0)


def softsign(x: ArrayLike) -> np.ndarray:
    """SoftSign-9: x / (1 + |x|)."""
    x = _f64(x)
    with np.errstate(all="ignore"):
        return x / (1 + np.abs(x))


def prelu(x: ArrayLike, slope: ArrayLike) -> np.ndarray:
    """PRelu-1: x < 0 ? slope x : x.  A one-element slope applies everywhere; a 1-D slope as long as the
    data's axis 1 (axis 0 for 1-D data) applies along that axis; any other slope broadcasts to the data
    (numpy rule)."""
    x, s = _num(x), _num(slope)
    if s.size == 1:  # one value applies to any data
        s = s.reshape(())
    elif s.ndim == 1 and x.ndim >= 1:
        ch = 1 if x.ndim > 1 else 0
        if x.shape[ch] == s.shape[0]:
            shape = [1] * x.ndim
            shape[ch] = s.shape[0]
            s = s.reshape(shape)
    with np.errstate(all="ignore"):
        return np.where(x < 0, x * s, x).astype(x.dtype)


def floor(x: ArrayLike) -> np.ndarray:
    """Floor-1 (integers unchanged)."""
    return np.floor(_num(x)).astype(_num(x).dtype)


def ceiling(x: ArrayLike) -> np.ndarray:
    """Ceiling-1 (integers unchanged)."""
    return np.ceil(_num(x)).astype(_num(x).dtype)


def round_(x: ArrayLike, mode: str = "half_to_even") -> np.ndarray:
    """Round-5: half_to_even or half_away_from_zero (integers unchanged)."""
    x = _num(x)
    if x.dtype.kind in "iu":
        return x.copy()
    if mode == "half_to_even":
        return np.rint(x)
    t = np.trunc(x)
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def sign(x: ArrayLike) -> np.ndarray:
    """Sign-1: -1, 0 or 1 (NaN stays NaN)."""
    return np.sign(_num(x))


def math_unary(name: str, x: ArrayLike) -> np.ndarray:
    """Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh (opset1) and Asinh, Acosh, Atanh (opset4) by
    their numpy names (sin, arcsin, arcsinh, ...); outside the domain NaN, atanh(+-1) = +-inf."""
    with np.errstate(all="ignore"):
        return getattr(np, name)(_f64(x))


# ---- comparison, logic, bitwise, modulo, selection (irnorm.ops.logic) ------------------------------


def mod(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """Mod-1, the truncated remainder (sign of the dividend).  Floats: x - trunc(x / y) y (NaN for
    y = 0 or y = inf); integers: C's %, and a zero divisor raises ZeroDivisionError."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iu":
        if np.any(b == 0):
            raise ZeroDivisionError("integer division by zero")
        q = np.abs(a.astype(object)) // np.abs(b.astype(object))  # exact, truncated toward zero
        r = np.abs(a.astype(object)) - q * np.abs(b.astype(object))
        return np.where(a < 0, -r, r).astype(a.dtype)
    x, y = _f64(a), _f64(b)
    with np.errstate(all="ignore"):
        return x - np.trunc(x / y) * y


def floor_mod(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """FloorMod-1, the floored remainder (sign of the divisor): x - floor(x / y) y.  Integers are
    exact (Python's %); a zero integer divisor raises ZeroDivisionError."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iu":
        if np.any(b == 0):
            raise ZeroDivisionError("integer division by zero")
        return (a.astype(object) % b.astype(object)).astype(a.dtype)
    x, y = _f64(a), _f64(b)
    with np.errstate(all="ignore"):
        return x - y * np.floor(x / y)


def select(cond: ArrayLike, then: ArrayLike, else_: ArrayLike) -> np.ndarray:
    """Select-1: cond ? then : else, the three shapes broadcast together (numpy rule)."""
    t = np.asarray(then)
    return np.where(np.asarray(cond, dtype=bool), t, np.asarray(else_)).astype(t.dtype)


def is_inf(x: ArrayLike, detect_negative: bool = True, detect_positive: bool = True) -> np.ndarray:
    """IsInf-10."""
    x = _f64(x)
    return (np.isneginf(x) & detect_negative) | (np.isposinf(x) & detect_positive)


# ---- pooling ---------------------------------------------------------------------------------------


def _pool_windows(x: np.ndarray, kernel, strides, dilations, pads_begin, out_spatial):
    """Yield (output index, list of (flat in-plane index, value) of the in-bounds taps, taps in the padded extent
    are reported by pool_extent)."""
    spatial = x.shape[2:]
    for o in np.ndindex(*out_spatial):
        taps = []
        for k in np.ndindex(*kernel):
            pos = [o[i] * strides[i] - pads_begin[i] + k[i] * dilations[i] for i in range(len(kernel))]
            if all(0 <= p < n for p, n in zip(pos, spatial, strict=True)):
                taps.append(tuple(pos))
        yield o, taps


def max_pool(x: ArrayLike, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
             pads_begin: Sequence[int], out_spatial: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """OpenVINO MaxPool-1/8/14 on [N, C, spatial...] with the output size already decided (the
    rounding rules live in the op): the maximum of the in-bounds taps of each window and its flat
    index within the (n, c) plane (the first maximum on ties)."""
    x_in, x = x, _f64(x)
    n, c = x.shape[:2]
    out = np.empty((n, c) + tuple(out_spatial))
    idx = np.empty(out.shape, np.int64)
    low = np.finfo(np.asarray(x_in).dtype).min if np.asarray(x_in).dtype.kind == "f" else np.finfo(np.float64).min
    if np.asarray(x_in).dtype.name == "bfloat16":
        import ml_dtypes

        low = float(ml_dtypes.finfo(ml_dtypes.bfloat16).min)
    for o, taps in _pool_windows(x, kernel, strides, dilations, pads_begin, out_spatial):
        for b in range(n):
            for ch in range(c):
                if not taps:  # a window wholly in the padding: the data type's lowest value, index 0
                    out[(b, ch) + o], idx[(b, ch) + o] = low, 0
                    continue
                vals = [x[(b, ch) + t] for t in taps]
                j = int(np.argmax(vals))
                out[(b, ch) + o] = vals[j]
                idx[(b, ch) + o] = int(np.ravel_multi_index(taps[j], x.shape[2:]))
    return out, idx


def avg_pool(x: ArrayLike, kernel: Sequence[int], strides: Sequence[int], pads_begin: Sequence[int],
             pads_end: Sequence[int], exclude_pad: bool, out_spatial: Sequence[int],
             dilations: Sequence[int] | None = None) -> np.ndarray:
    """OpenVINO AvgPool-1/14/16: the mean of the in-bounds taps (exclude_pad) or their sum divided by
    the taps inside the padded extent [-pads_begin, in + pads_end)."""
    x = _f64(x)
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    dilations = list(dilations or [1] * len(kernel))
    out = np.empty((n, c) + tuple(out_spatial))
    for o, taps in _pool_windows(x, kernel, strides, dilations, pads_begin, out_spatial):
        if exclude_pad:
            count = len(taps)
        else:
            count = 1
            for i in range(len(kernel)):
                start = o[i] * strides[i] - pads_begin[i]
                count *= sum(1 for k in range(kernel[i]) if start + k * dilations[i] < spatial[i] + pads_end[i])
        s = sum(x[(slice(None), slice(None)) + t] for t in taps) if taps else np.zeros((n, c))
        out[(slice(None), slice(None)) + o] = s / count if count else 0.0
    return out



def _adaptive_windows(spatial: Sequence[int], out_spatial: Sequence[int]):
    """Yield (output index, tuple of slices): window i of o along an axis of n is
    [floor(i * n / o), ceil((i + 1) * n / o))."""
    for o in np.ndindex(*out_spatial):
        yield o, tuple(slice(i * n // m, -(-(i + 1) * n // m)) for i, n, m in zip(o, spatial, out_spatial, strict=True))


def adaptive_avg_pool(x: ArrayLike, out_spatial: Sequence[int]) -> np.ndarray:
    """OpenVINO AdaptiveAvgPool-8 on [N, C, spatial...]: the mean of each adaptive window."""
    x = _f64(x)
    out = np.empty(x.shape[:2] + tuple(out_spatial))
    for o, win in _adaptive_windows(x.shape[2:], out_spatial):
        out[(slice(None), slice(None)) + o] = x[(slice(None), slice(None)) + win].reshape(x.shape[:2] + (-1,)).mean(-1)
    return out


def adaptive_max_pool(x: ArrayLike, out_spatial: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """OpenVINO AdaptiveMaxPool-8: the maximum of each adaptive window and its flat index within the (n, c)
    plane (the first maximum on ties; data without NaN)."""
    x = _f64(x)
    n, c = x.shape[:2]
    out = np.empty((n, c) + tuple(out_spatial))
    idx = np.empty(out.shape, np.int64)
    plane = np.arange(int(np.prod(x.shape[2:]))).reshape(x.shape[2:])
    for o, win in _adaptive_windows(x.shape[2:], out_spatial):
        vals = x[(slice(None), slice(None)) + win].reshape(n, c, -1)
        j = np.argmax(vals, axis=-1)  # the first maximum, in row-major order
        out[(slice(None), slice(None)) + o] = np.take_along_axis(vals, j[..., None], -1)[..., 0]
        idx[(slice(None), slice(None)) + o] = plane[win].reshape(-1)[j]
    return out, idx

# ---- softmax and attention -------------------------------------------------------------------------


def softmax(x: ArrayLike, axis: int, log: bool = False) -> np.ndarray:
    """OpenVINO SoftMax-1/8 and LogSoftmax-5 along `axis` (negative counts from the back)."""
    x = _f64(x)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        e = np.exp(x - m)
        s = np.sum(e, axis=axis, keepdims=True)
        return x - m - np.log(s) if log else e / s


def scaled_dot_product_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, mask: ArrayLike | None = None,
                                 scale: float | None = None, causal: bool = False) -> np.ndarray:
    """OpenVINO ScaledDotProductAttention-13: softmax(Q K^T * scale + mask) V; a boolean mask lets the
    true positions attend (false adds -inf); causal lets query i attend to keys 0..i (the mask ignored)."""
    q, k, v = _f64(q), _f64(k), _f64(v)
    if scale is None:
        scale = 1.0 / np.sqrt(q.shape[-1])
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if causal:
        s = s + np.where(np.tril(np.ones(s.shape[-2:], bool)), 0.0, -np.inf)
    elif mask is not None:
        m = np.asarray(mask)
        s = s + (np.where(m, 0.0, -np.inf) if m.dtype == bool else _f64(m))
    return np.matmul(softmax(s, -1), v)


# ---- data movement, Range, Interpolate, Einsum -----------------------------------------------------


def transpose(x: ArrayLike, order: Sequence[int]) -> np.ndarray:
    """OpenVINO Transpose-1 (empty order reverses the dims)."""
    x = np.asarray(x)
    return np.transpose(x, list(order) if len(order) else None)


def split(x: ArrayLike, axis: int, lengths: Sequence[int]) -> list[np.ndarray]:
    """Split-1 (equal lengths) and VariadicSplit-1 (lengths, one of them -1 for the rest)."""
    x = np.asarray(x)
    d = x.shape[axis]
    lengths = [d - sum(v for v in lengths if v != -1) if v == -1 else v for v in lengths]
    return np.split(x, np.cumsum(lengths)[:-1], axis=axis)


def slice_(x: ArrayLike, start: Sequence[int], stop: Sequence[int], step: Sequence[int],
           axes: Sequence[int] | None = None) -> np.ndarray:
    """Slice-8: per axis, negative bounds count from the end, then start and stop clamp to [0, n] for a
    positive step and to [0, n-1] / [-1, n-1] for a negative one (ONNX's rule; -1 = before index 0)."""
    x = np.asarray(x)
    idx = [slice(None)] * x.ndim
    for a, b, e, s in zip(axes if axes is not None else range(len(start)), start, stop, step, strict=True):
        n = x.shape[a]
        b, e = (b + n if b < 0 else b), (e + n if e < 0 else e)
        if s > 0:
            picks = list(range(min(max(b, 0), n), min(max(e, 0), n), s))
        else:
            picks = list(range(min(max(b, 0), n - 1), min(max(e, -1), n - 1), s)) if n else []
        idx[a] = picks
        x = np.take(x, picks, axis=a)
        idx[a] = slice(None)
    return x


def pad(x: ArrayLike, begin: Sequence[int], end: Sequence[int], mode: str, value: float = 0) -> np.ndarray:
    """Pad-1/12: negative pads crop; constant/edge/reflect/symmetric as numpy's pad."""
    x = np.asarray(x)
    x = x[tuple(slice(max(-b, 0), x.shape[k] - max(-e, 0)) for k, (b, e) in enumerate(zip(begin, end, strict=True)))]
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end, strict=True)]
    return np.pad(x, widths, mode="constant", constant_values=value) if mode == "constant" else \
        np.pad(x, widths, mode=mode)


def range_(start: float, stop: float, step: float) -> np.ndarray:
    """Range-1/4 in float64: start + k * step for k = 0 .. ceil((stop - start) / step) - 1."""
    n = max(int(np.ceil((stop - start) / step)), 0)
    return start + step * np.arange(n, dtype=np.float64)


def recurrent_sequence(kind: str, x: ArrayLike, h0: ArrayLike, c0: ArrayLike | None, lengths: ArrayLike,
                       w: ArrayLike, r: ArrayLike, b: ArrayLike, direction: str, activations: Sequence[str] = (),
                       clip: float = 0.0, linear_before_reset: bool = False) -> list[np.ndarray]:
    """LSTMSequence-5 / GRUSequence-5 / RNNSequence-5 in float64, one row and one step at a time:
    kind 'lstm' (gates f, i, c, o), 'gru' (z, r, h) or 'rnn'.  Steps at or past a row's length give
    zeros and keep the state; the last state is the one after the row's last step (zeros for length 0).
    Returns [Y [N, D, T, H], Ho [N, D, H]] (+ Co for LSTM)."""
    acts = {"sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh, "relu": lambda v: np.maximum(v, 0)}
    default = {"lstm": ("sigmoid", "tanh", "tanh"), "gru": ("sigmoid", "tanh"), "rnn": ("tanh",)}[kind]
    fs = [acts[a] for a in (activations or default)]
    cl = (lambda v: np.clip(v, -clip, clip)) if clip > 0 else (lambda v: v)
    x, h0, w, r, b = (_f64(v) for v in (x, h0, w, r, b))
    c0 = None if c0 is None else _f64(c0)
    lens = np.asarray(lengths).astype(np.int64)
    n, t_len, _ = x.shape
    nd, hs = w.shape[0], r.shape[-1]
    y = np.zeros((n, nd, t_len, hs))
    ho = np.zeros((n, nd, hs))
    co = np.zeros((n, nd, hs))
    for d in range(nd):
        rev = direction == "reverse" or d == 1
        for row in range(n):
            h = h0[row, d].copy()
            c = c0[row, d].copy() if c0 is not None else None
            steps = range(lens[row] - 1, -1, -1) if rev else range(lens[row])
            for t in steps:
                xt = x[row, t]
                if kind == "lstm":
                    g = cl(w[d] @ xt + r[d] @ h + b[d])
                    f, i, cc, o = np.split(g, 4)
                    c = fs[0](f) * c + fs[0](i) * fs[1](cc)
                    h = fs[0](o) * fs[2](c)
                elif kind == "gru":
                    wz, wr, wh = np.split(w[d], 3)
                    rz, rr, rh = np.split(r[d], 3)
                    bz, br, bwh = b[d][:hs], b[d][hs:2 * hs], b[d][2 * hs:3 * hs]
                    z = fs[0](cl(wz @ xt + rz @ h + bz))
                    rg = fs[0](cl(wr @ xt + rr @ h + br))
                    if linear_before_reset:
                        hh = fs[1](cl(wh @ xt + rg * (rh @ h + b[d][3 * hs:]) + bwh))
                    else:
                        hh = fs[1](cl(wh @ xt + rh @ (rg * h) + bwh))
                    h = (1 - z) * hh + z * h
                else:
                    h = fs[0](cl(w[d] @ xt + r[d] @ h + b[d]))
                y[row, d, t] = h
            if lens[row] > 0:
                ho[row, d] = h
                if c is not None:
                    co[row, d] = c
    return [y, ho] + ([co] if kind == "lstm" else [])


def non_max_suppression(boxes: ArrayLike, scores: ArrayLike, max_per_class: int, iou_threshold: float,
                        score_threshold: float, soft_nms_sigma: float = 0.0, center: bool = False,
                        sort_descending: bool = True) -> list[np.ndarray]:
    """NonMaxSuppression-9 in float64, eagerly: per batch and class, repeatedly take the best remaining
    box (ties: lower index) while it scores above the threshold; hard NMS drops the remaining boxes whose
    IoU with it exceeds iou_threshold, soft NMS scales their scores by exp(-0.5 IoU^2 / sigma).
    Returns [selected indices [M, 3], selected (batch, class, score) [M, 3]]."""
    b = _f64(boxes)
    if center:
        b = np.stack([b[..., 1] - b[..., 3] / 2, b[..., 0] - b[..., 2] / 2, b[..., 1] + b[..., 3] / 2,
                      b[..., 0] + b[..., 2] / 2], axis=-1)
    y1, x1 = np.minimum(b[..., 0], b[..., 2]), np.minimum(b[..., 1], b[..., 3])
    y2, x2 = np.maximum(b[..., 0], b[..., 2]), np.maximum(b[..., 1], b[..., 3])

    def iou(bi: int, i: int, j: int) -> float:
        ai = (y2[bi, i] - y1[bi, i]) * (x2[bi, i] - x1[bi, i])
        aj = (y2[bi, j] - y1[bi, j]) * (x2[bi, j] - x1[bi, j])
        if ai <= 0 or aj <= 0:
            return 0.0
        ih = max(min(y2[bi, i], y2[bi, j]) - max(y1[bi, i], y1[bi, j]), 0.0)
        iw = max(min(x2[bi, i], x2[bi, j]) - max(x1[bi, i], x1[bi, j]), 0.0)
        return ih * iw / (ai + aj - ih * iw)

    sc = _f64(scores)
    rows = []
    for bi in range(sc.shape[0]):
        for ci in range(sc.shape[1]):
            live = {k: sc[bi, ci, k] for k in range(sc.shape[2]) if sc[bi, ci, k] > score_threshold}
            picked = 0
            while live and picked < max_per_class:
                k = min(live, key=lambda m: (-live[m], m))
                rows.append((bi, ci, k, live.pop(k)))
                picked += 1
                for m in list(live):
                    v = iou(bi, k, m)
                    if soft_nms_sigma > 0:
                        live[m] *= np.exp(-0.5 * v * v / soft_nms_sigma)
                        if live[m] <= score_threshold:
                            del live[m]
                    elif v > iou_threshold:
                        del live[m]
    if sort_descending:
        rows.sort(key=lambda r: -r[3])
    idx = np.array([r[:3] for r in rows], np.int64).reshape(-1, 3)
    return [idx, np.array([(r[0], r[1], r[3]) for r in rows], np.float64).reshape(-1, 3)]


def unique(x: ArrayLike, axis: int | None = None, sort: bool = True) -> list[np.ndarray]:
    """Unique-10 by brute force: walk the elements (or slices along axis) in order, collect the distinct
    ones with their first index and count, then sort ascending (lexicographically for slices) if asked."""
    a = np.asarray(x)
    items = list(a.reshape(-1)) if axis is None else [np.take(a, k, axis=axis) for k in range(a.shape[axis])]
    keys: list[tuple] = []
    first: list[int] = []
    counts: list[int] = []
    where: list[int] = []
    for k, it in enumerate(items):
        key = tuple(np.asarray(it).reshape(-1).tolist())
        if key in keys:
            u = keys.index(key)
            counts[u] += 1
        else:
            u = len(keys)
            keys.append(key)
            first.append(k)
            counts.append(1)
        where.append(u)
    order = sorted(range(len(keys)), key=lambda u: keys[u]) if sort else list(range(len(keys)))
    rank = {u: r for r, u in enumerate(order)}
    if axis is None:
        values = np.array([items[first[u]] for u in order], a.dtype)
    else:
        values = np.stack([items[first[u]] for u in order], axis=axis) if order else np.take(a, [], axis=axis)
    return [values, np.array([first[u] for u in order], np.int64), np.array([rank[u] for u in where], np.int64),
            np.array([counts[u] for u in order], np.int64)]


def roi_align(x: ArrayLike, rois: ArrayLike, batch_indices: ArrayLike, pooled_h: int, pooled_w: int,
              sampling_ratio: int, spatial_scale: float, mode: str, aligned_mode: str = "asymmetric") -> np.ndarray:
    """ROIAlign-3/9 in float64, one sample at a time: each bin averages (or maxes, from 0) its
    bilinearly interpolated samples; samples over a pixel outside the map count 0, the rest are
    clamped to it."""
    x, rois = _f64(x), _f64(rois)
    n_roi, (_, c, h, w) = rois.shape[0], x.shape
    src = 0.5 if aligned_mode == "half_pixel" else 0.0
    dst = 0.0 if aligned_mode == "asymmetric" else -0.5
    out = np.zeros((n_roi, c, pooled_h, pooled_w))

    def sample(plane: np.ndarray, py: float, px: float) -> np.ndarray:
        if px < -1 or px > w or py < -1 or py > h:
            return np.zeros(plane.shape[0])
        py, px = max(py, 0.0), max(px, 0.0)
        y0, x0 = min(int(py), h - 1), min(int(px), w - 1)
        y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
        ly = 0.0 if y0 == h - 1 else py - y0
        lx = 0.0 if x0 == w - 1 else px - x0
        return ((1 - ly) * (1 - lx) * plane[:, y0, x0] + (1 - ly) * lx * plane[:, y0, x1]
                + ly * (1 - lx) * plane[:, y1, x0] + ly * lx * plane[:, y1, x1])

    for r in range(n_roi):
        x1, y1, x2, y2 = ((float(v) + src) * spatial_scale + dst for v in rois[r])
        rw, rh = x2 - x1, y2 - y1
        if aligned_mode == "asymmetric":
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bw, bh = rw / pooled_w, rh / pooled_h
        sx = sampling_ratio or int(np.ceil(bw))
        sy = sampling_ratio or int(np.ceil(bh))
        plane = x[int(np.asarray(batch_indices).reshape(-1)[r])]
        for i in range(pooled_h):
            for j in range(pooled_w):
                vals = [sample(plane, y1 + i * bh + bh / sy * (a + 0.5), x1 + j * bw + bw / sx * (b + 0.5))
                        for a in range(sy) for b in range(sx)]
                if not vals:
                    continue
                v = np.array(vals)
                out[r, :, i, j] = np.maximum(v.max(axis=0), 0.0) if mode == "max" else v.mean(axis=0)
    return out


def gather_elements(x: ArrayLike, indices: ArrayLike, axis: int) -> np.ndarray:
    x, i = np.asarray(x), np.asarray(indices).astype(np.int64)
    i = np.where(i < 0, i + x.shape[axis], i)
    return np.take_along_axis(x[tuple(slice(0, i.shape[k]) if k != axis % x.ndim else slice(None)
                                      for k in range(x.ndim))], i, axis=axis)


def scatter_nd_update(x: ArrayLike, indices: ArrayLike, updates: ArrayLike, reduction: str = "none") -> np.ndarray:
    """ScatterNDUpdate-3/15: rows of indices address data's leading dims; in order, each update
    replaces (or, with a reduction, is combined into) what is there."""
    y = np.array(x, copy=True)
    i = np.asarray(indices).astype(np.int64)
    k = i.shape[-1]
    u = np.asarray(updates).reshape((-1,) + y.shape[k:])
    combine = {"sum": np.add, "sub": np.subtract, "prod": np.multiply, "min": np.minimum, "max": np.maximum}
    for row, val in zip(i.reshape(-1, k), u, strict=True):
        row = tuple(int(r) + y.shape[j] if r < 0 else int(r) for j, r in enumerate(row))
        y[row] = val if reduction == "none" else combine[reduction](y[row], val)
    return y


def einsum(equation: str, *operands: ArrayLike) -> np.ndarray:
    return np.einsum(equation, *(_f64(o) for o in operands))


def interpolate(x: ArrayLike, axes: Sequence[int], sizes: Sequence[int], scales: Sequence[float], mode: str,
                transform: str, nearest_mode: str, cube_coeff: float = -0.75) -> np.ndarray:
    """Interpolate-4/11 (nearest, linear_onnx, cubic; no antialias) in float64, one output element at a
    time per axis: the input coordinate by `transform`, then the nearest sample (by `nearest_mode`), the
    two neighbours blended linearly (clamped to the edges) or the four neighbours floor(c)-1..floor(c)+2
    (indices clamped to the edges) weighted by the cubic convolution kernel with A = `cube_coeff`."""
    y = _f64(x)
    for ax, n_out, sc in zip(axes, sizes, scales, strict=True):
        n_in = y.shape[ax]
        if mode != "nearest" and n_out == n_in and sc == 1.0:
            continue  # an unscaled axis stays as it is (OpenVINO's CPU plugin, tf_half_pixel_for_nn too)
        rows = []
        for o in range(n_out):
            if transform == "half_pixel":
                c = (o + 0.5) / sc - 0.5
            elif transform == "pytorch_half_pixel":
                c = (o + 0.5) / sc - 0.5 if n_out > 1 else 0.0
            elif transform == "asymmetric":
                c = o / sc
            elif transform == "tf_half_pixel_for_nn":
                c = (o + 0.5) / sc
            else:
                c = o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
            if mode == "nearest":
                f = np.floor(c)
                k = {"round_prefer_floor": f if c - f == 0.5 else np.round(c),
                     "round_prefer_ceil": np.ceil(c) if c - f == 0.5 else np.round(c),
                     "floor": f, "ceil": np.ceil(c), "simple": np.ceil(c) if sc < 1 else np.trunc(c)}[nearest_mode]
                rows.append(np.take(y, [int(min(max(k, 0), n_in - 1))], axis=ax))
            elif mode == "cubic":
                f = int(np.floor(c))
                t = c - f
                row = 0.0
                for k in range(-1, 3):
                    d = abs(t - k)  # distance of the tap at f + k
                    w = (((cube_coeff + 2) * d - (cube_coeff + 3)) * d * d + 1 if d <= 1 else
                         ((cube_coeff * d - 5 * cube_coeff) * d + 8 * cube_coeff) * d - 4 * cube_coeff)
                    row = row + w * np.take(y, [min(max(f + k, 0), n_in - 1)], axis=ax)
                rows.append(row)
            else:
                c = min(max(c, 0.0), n_in - 1)
                lo = int(np.floor(c))
                hi = min(lo + 1, n_in - 1)
                rows.append(np.take(y, [lo], axis=ax) * (1 - (c - lo)) + np.take(y, [hi], axis=ax) * (c - lo))
        y = np.concatenate(rows, axis=ax) if rows else np.take(y, [], axis=ax)
    return y


def _block_offsets(bs: int, k: int) -> np.ndarray:
    """[bs^k, k]: the block offset (b1, ..., bk) of each linear block index, b1 slowest."""
    return np.array(np.unravel_index(np.arange(bs ** k), (bs,) * k)).T.reshape(bs ** k, k)


def depth_to_space(x: ArrayLike, block_size: int, mode: str) -> np.ndarray:
    """DepthToSpace-1, element by element: output [n, c, h1..hk] takes input channel
    (linear block of (h_i % bs)) * C' + c in blocks_first mode, c * bs^k + (linear block) in
    depth_first mode, at spatial position (h_i // bs)."""
    x = np.asarray(x)
    n, c_in, *dims = x.shape
    k, bs = len(dims), block_size
    cf = c_in // bs ** k
    y = np.empty((n, cf) + tuple(d * bs for d in dims), x.dtype)
    for out in np.ndindex(*y.shape[1:]):
        c, h = out[0], out[1:]
        blk = 0
        for hi in h:
            blk = blk * bs + hi % bs
        ch = blk * cf + c if mode == "blocks_first" else c * bs ** k + blk
        y[(slice(None),) + out] = x[(slice(None), ch) + tuple(hi // bs for hi in h)]
    return y


def space_to_depth(x: ArrayLike, block_size: int, mode: str) -> np.ndarray:
    """SpaceToDepth-1, element by element: output channel blk * C + c (blocks_first) or
    c * bs^k + blk (depth_first), where blk is the linear block offset, reads input channel c at
    spatial position d_i * bs + b_i."""
    x = np.asarray(x)
    n, c_in, *dims = x.shape
    k, bs = len(dims), block_size
    offs = _block_offsets(bs, k)
    y = np.empty((n, c_in * bs ** k) + tuple(d // bs for d in dims), x.dtype)
    for out in np.ndindex(*y.shape[1:]):
        ch, d = out[0], out[1:]
        blk, c = (ch // c_in, ch % c_in) if mode == "blocks_first" else (ch % bs ** k, ch // bs ** k)
        y[(slice(None),) + out] = x[(slice(None), c) + tuple(di * bs + int(b) for di, b in zip(d, offs[blk],
                                                                                           strict=True))]
    return y


def reverse_sequence(x: ArrayLike, seq_lengths: ArrayLike, batch_axis: int, seq_axis: int) -> np.ndarray:
    """ReverseSequence-1: slice b along batch_axis has its first seq_lengths[b] elements along
    seq_axis reversed (a length of 0 reverses nothing).  Lengths must lie in [0, dim]."""
    x = np.asarray(x)
    r = x.ndim
    ba, sa = batch_axis % r, seq_axis % r
    y = np.array(x, copy=True)
    for b, length in enumerate(np.trunc(np.asarray(seq_lengths, dtype=np.float64)).astype(np.int64)):
        if not 0 <= length <= x.shape[sa]:
            raise ValueError(f"seq_lengths[{b}] = {length} is out of range")
        for t in range(length):
            dst = [slice(None)] * r
            src = [slice(None)] * r
            dst[ba] = src[ba] = b
            dst[sa], src[sa] = t, length - 1 - t
            y[tuple(dst)] = x[tuple(src)]
    return y


def eye(num_rows: int, num_columns: int, diagonal_index: int, batch_shape: Sequence[int] = ()) -> np.ndarray:
    """Eye-9 in float64: out[..., i, i + diagonal_index] = 1 where that column exists."""
    m = np.zeros((num_rows, num_columns))
    for i in range(num_rows):
        if 0 <= i + diagonal_index < num_columns:
            m[i, i + diagonal_index] = 1.0
    return np.broadcast_to(m, tuple(batch_shape) + m.shape).copy()


def non_zero(x: ArrayLike) -> np.ndarray:
    """NonZero-3: the coordinates of the non-zero elements, one column each, row-major order; a
    scalar counts as a one-element 1-D tensor."""
    x = np.asarray(x)
    x = x.reshape(1) if x.ndim == 0 else x
    flags = x.astype(np.float64) != 0
    return np.array([[int(v) for v in coord] for coord in zip(*np.nonzero(flags), strict=True)],
                    np.int64).reshape(-1, x.ndim).T.copy()


# ---- quantization, grid sampling ------------------------------------------------------------------


def fake_quantize(x: ArrayLike, il: ArrayLike, ih: ArrayLike, ol: ArrayLike, oh: ArrayLike, levels: int
                  ) -> np.ndarray:
    """FakeQuantize-1 in float64 (numpy broadcasting of all five): ol at or below min(il, ih), oh above
    max(il, ih), else round((x - il) / (ih - il) * (levels - 1)) / (levels - 1) * (oh - ol) + ol with
    rounding half to even."""
    x, il, ih, ol, oh = np.broadcast_arrays(*(_f64(a) for a in (x, il, ih, ol, oh)))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.rint((x - il) / (ih - il) * (levels - 1)) / (levels - 1) * (oh - ol) + ol
    return np.where(x <= np.minimum(il, ih), ol, np.where(x > np.maximum(il, ih), oh, q))


def _gs_reflect(v: float, lo2: float, hi2: float) -> float:
    if lo2 == hi2:
        return 0.0
    lo, span = lo2 / 2, (hi2 - lo2) / 2
    v = abs(v - lo)
    flips = np.floor(v / span)
    extra = v - flips * span
    return extra + lo if flips % 2 == 0 else span - extra + lo


def _gs_pad(v: float, size: int, padding: str, align: bool) -> float:
    if padding == "border":
        return min(max(v, 0.0), size - 1.0)
    if padding == "reflection":
        v = _gs_reflect(v, 0.0, 2.0 * (size - 1)) if align else _gs_reflect(v, -1.0, 2.0 * size - 1)
        return min(max(v, 0.0), size - 1.0)
    return v


def grid_sample(data: ArrayLike, grid: ArrayLike, mode: str, padding: str, align: bool) -> np.ndarray:
    """GridSample-9 in float64, one output pixel at a time (PyTorch's rules): the grid's (x, y) in
    [-1, 1] unnormalized to pixel coordinates (corner centres with `align`, else corner edges);
    border/reflection padding move the coordinate into the data (bicubic: each tap index instead);
    nearest rounds half to even, bilinear blends 2x2 and bicubic 4x4 neighbours (A = -0.75); a tap
    outside the data reads 0."""
    x, g = _f64(data), _f64(grid)
    n_b, n_c, h, w = x.shape
    out = np.zeros((n_b, n_c, g.shape[1], g.shape[2]))

    def taps(c: float, size: int) -> list[tuple[int, float]]:
        if mode != "bicubic":
            c = _gs_pad(c, size, padding, align)
        if mode == "nearest":
            return [(int(np.rint(c)), 1.0)]
        f = int(np.floor(c))
        t = c - f
        if mode == "bilinear":
            return [(f, 1 - t), (f + 1, t)]
        a = -0.75
        res = []
        for k in range(-1, 3):
            d = abs(t - k)
            wk = ((a + 2) * d - (a + 3)) * d * d + 1 if d <= 1 else ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
            i = f + k if padding == "zeros" else int(_gs_pad(float(f + k), size, padding, align))
            res.append((i, wk))
        return res

    for n in range(n_b):
        for yo in range(g.shape[1]):
            for xo in range(g.shape[2]):
                gx, gy = g[n, yo, xo]
                cx = (gx + 1) / 2 * (w - 1) if align else ((gx + 1) * w - 1) / 2
                cy = (gy + 1) / 2 * (h - 1) if align else ((gy + 1) * h - 1) / 2
                for iy, wy in taps(cy, h):
                    for ix, wx in taps(cx, w):
                        if 0 <= iy < h and 0 <= ix < w:
                            out[n, :, yo, xo] += wy * wx * x[n, :, iy, ix]
    return out


def scatter_update(x: ArrayLike, indices: ArrayLike, updates: ArrayLike, axis: int) -> np.ndarray:
    """ScatterUpdate-3: for each position p of indices, data[..., indices[p], ...] = updates[..., p, ...]
    along `axis`, in order (a repeated index takes the last update)."""
    y = np.array(x, copy=True)
    ax = axis % y.ndim
    idx = np.asarray(indices).astype(np.int64)
    u = np.asarray(updates)
    lead = (slice(None),) * ax
    for p in np.ndindex(*idx.shape):
        y[lead + (int(idx[p]),)] = u[lead + p]
    return y


def scatter_elements_update(x: ArrayLike, indices: ArrayLike, updates: ArrayLike, axis: int,
                            reduction: str = "none", use_init_val: bool = True) -> np.ndarray:
    """ScatterElementsUpdate-3/12, one element at a time in float64 (integers exact): the target of
    indices[p] is p with the axis coordinate replaced by indices[p] (negative: from the end).  With
    a reduction every update at a target is combined into it, starting from data's value
    (use_init_val) or from nothing; mean divides by the count (integers: rounded down)."""
    x = np.asarray(x)
    is_int = x.dtype.kind in "iu"
    y = (x.astype(np.int64) if is_int else _f64(x)).copy()
    idx = np.asarray(indices).astype(np.int64)
    u = np.asarray(updates)
    ax = axis % x.ndim
    got: dict[tuple[int, ...], list] = {}
    for p in np.ndindex(*idx.shape):
        t = list(p)
        t[ax] = int(idx[p]) % x.shape[ax]
        t = tuple(t)
        if reduction == "none":
            y[t] = u[p]
        else:
            got.setdefault(t, []).append(u[p].item())
    for t, vals in got.items():
        vals = ([y[t].item()] if use_init_val else []) + vals
        if reduction == "sum":
            r = sum(vals)
        elif reduction == "prod":
            r = 1
            for v in vals:
                r *= v
        elif reduction == "min":
            r = min(vals)
        elif reduction == "max":
            r = max(vals)
        else:  # mean
            r = sum(vals) // len(vals) if is_int else sum(vals) / len(vals)
        y[t] = r
    return y.astype(x.dtype) if is_int or x.dtype == np.bool_ else y


def gather_nd(x: ArrayLike, indices: ArrayLike, batch_dims: int = 0, fold_batch: bool = False) -> np.ndarray:
    """GatherND-5/8: out[b..., p...] = data[b..., indices[b..., p...]] (the index tuple addresses the dims
    after the batch dims; negative from the end).  GatherND-5 (fold_batch) folds the batch dims into one."""
    x = np.asarray(x)
    idx = np.asarray(indices).astype(np.int64)
    b = batch_dims
    k = idx.shape[-1]
    rest = x.shape[b + k:]
    out = np.empty(idx.shape[:-1] + rest, x.dtype)
    for p in np.ndindex(*idx.shape[:-1]):
        tup = tuple(int(v) % x.shape[b + j] for j, v in enumerate(idx[p]))
        out[p] = x[p[:b] + tup]
    if fold_batch and b:
        out = out.reshape((int(np.prod(idx.shape[:b])),) + out.shape[b:])
    return out


def one_hot(indices: ArrayLike, depth: int, on_value, off_value, axis: int, normalize: bool = False) -> np.ndarray:
    """OneHot-1/16: a new axis of length depth at `axis`, on_value where its position equals the index,
    off_value elsewhere; an index outside [0, depth) gives an all-off row, except that normalize
    (OneHot-16) first maps [-depth, -1] to index + depth."""
    idx = np.asarray(indices).astype(np.int64)
    on, off = np.asarray(on_value).reshape(-1)[0], np.asarray(off_value).reshape(-1)[0]
    ax = axis % (idx.ndim + 1)
    out = np.empty(idx.shape + (depth,), np.asarray(on_value).dtype)
    for p in np.ndindex(*idx.shape):
        i = int(idx[p])
        if normalize and -depth <= i < 0:
            i += depth
        for c in range(depth):
            out[p + (c,)] = on if c == i else off
    return np.moveaxis(out, -1, ax)


# ---- embedding bags and Col2Im (docs/ir-format.md, section 11, "Embedding bags" and "Col2Im-15") ----------


def _bag_rows(table: np.ndarray, idx: Sequence[int], weights: np.ndarray | None, pos: Sequence[int]) -> np.ndarray:
    acc = np.zeros(table.shape[1:], table.dtype)
    for p in pos:
        row = table[int(idx[p])]
        acc = acc + (row * weights[p] if weights is not None else row)
    return acc


def _bag_mean(acc: np.ndarray, n: int, integer: bool) -> np.ndarray:
    if integer:  # the sum divided truncating towards zero, as OpenVINO divides its integer sums
        return np.sign(acc) * (np.abs(acc) // n)
    return acc / n


def _table64(table: ArrayLike) -> tuple[np.ndarray, bool]:
    t = np.asarray(table)
    integer = t.dtype.kind in "iu"
    return (t.astype(np.int64) if integer else t.astype(np.float64)), integer


def embedding_bag_offsets(table: ArrayLike, indices: ArrayLike, offsets: ArrayLike, default_index: int | None = None,
                          weights: ArrayLike | None = None, reduction: str = "sum") -> np.ndarray:
    """EmbeddingBagOffsets-15 (and EmbeddingBagOffsetsSum-3 with reduction sum): bag b reduces the rows
    indices[offsets[b]:offsets[b+1]] (the last bag runs to the end) times the weights; an empty bag is
    row default_index, or zeros when it is None or -1.  Integer tables: int64 sums, means truncated."""
    t, integer = _table64(table)
    idx = [int(v) for v in np.asarray(indices).reshape(-1)]
    off = [int(v) for v in np.asarray(offsets).reshape(-1)] + [len(idx)]
    w = None if weights is None else (np.asarray(weights).astype(t.dtype))
    out = np.zeros((len(off) - 1,) + t.shape[1:], t.dtype)
    for b in range(len(off) - 1):
        pos = range(off[b], off[b + 1])
        if len(pos) == 0:
            if default_index is not None and default_index != -1:
                out[b] = t[default_index]
            continue
        acc = _bag_rows(t, idx, w, pos)
        out[b] = _bag_mean(acc, len(pos), integer) if reduction == "mean" else acc
    return out


def embedding_bag_packed(table: ArrayLike, indices: ArrayLike, weights: ArrayLike | None = None,
                         reduction: str = "sum") -> np.ndarray:
    """EmbeddingBagPacked-15 (and EmbeddingBagPackedSum-3): bag b reduces the rows indices[b, :] times the
    weights[b, :]; bags of no indices give zeros (sum and mean)."""
    t, integer = _table64(table)
    idx = np.asarray(indices).astype(np.int64)
    w = None if weights is None else np.asarray(weights).astype(t.dtype)
    out = np.zeros((idx.shape[0],) + t.shape[1:], t.dtype)
    for b in range(idx.shape[0]):
        if idx.shape[1] == 0:
            continue
        acc = _bag_rows(t, idx[b], None if w is None else w[b], range(idx.shape[1]))
        out[b] = _bag_mean(acc, idx.shape[1], integer) if reduction == "mean" else acc
    return out


def embedding_segments_sum(table: ArrayLike, indices: ArrayLike, segment_ids: ArrayLike, num_segments: int,
                           default_index: int | None = None, weights: ArrayLike | None = None) -> np.ndarray:
    """EmbeddingSegmentsSum-3: segment s sums the rows indices[p] (times weights[p]) of every p with
    segment_ids[p] == s; ids outside [0, num_segments) are dropped (OpenVINO's CPU plugin); an empty
    segment is row default_index, or zeros without one."""
    t, _ = _table64(table)
    idx = [int(v) for v in np.asarray(indices).reshape(-1)]
    seg = [int(v) for v in np.asarray(segment_ids).reshape(-1)]
    w = None if weights is None else np.asarray(weights).astype(t.dtype)
    out = np.zeros((num_segments,) + t.shape[1:], t.dtype)
    for s in range(num_segments):
        pos = [p for p in range(len(idx)) if seg[p] == s]
        if pos:
            out[s] = _bag_rows(t, idx, w, pos)
        elif default_index is not None:
            out[s] = t[default_index]
    return out


def col2im(data: ArrayLike, output_size: Sequence[int], kernel_size: Sequence[int], strides: Sequence[int] = (1, 1),
           dilations: Sequence[int] = (1, 1), pads_begin: Sequence[int] = (0, 0),
           pads_end: Sequence[int] = (0, 0)) -> np.ndarray:
    """Col2Im-15: column (c*kh + i)*kw + j of block (by, bx) of data [N, C*kh*kw, L] (or unbatched) is
    added at pixel (by*sh - ph + i*dh, bx*sw - pw + j*dw) of [N, C, H, W] when inside; the blocks per
    axis are (size + pads - (d*(k-1) + 1)) // s + 1 (0 when the kernel does not fit)."""
    x = np.asarray(data)
    integer = x.dtype.kind in "iu"
    x = x.astype(np.int64 if integer else np.float64)
    batched = x.ndim == 3
    if not batched:
        x = x[None]
    h, w = (int(v) for v in output_size)
    kh, kw = (int(v) for v in kernel_size)
    nb = []
    for d, size in enumerate((h, w)):
        span = size + pads_begin[d] + pads_end[d] - (dilations[d] * ((kh, kw)[d] - 1) + 1)
        nb.append(span // strides[d] + 1 if span >= 0 else 0)
    c = x.shape[1] // (kh * kw)
    out = np.zeros((x.shape[0], c, h, w), x.dtype)
    for n in range(x.shape[0]):
        for col in range(x.shape[1]):
            ch, i, j = col // (kh * kw), (col // kw) % kh, col % kw
            for by in range(nb[0]):
                y = by * strides[0] - pads_begin[0] + i * dilations[0]
                for bx in range(nb[1]):
                    xx = bx * strides[1] - pads_begin[1] + j * dilations[1]
                    if 0 <= y < h and 0 <= xx < w:
                        out[n, ch, y, xx] += x[n, col, by * nb[1] + bx]
    return out if batched else out[0]


# ---- Bucketize-3, SearchSorted-15, Inverse-14 -----------------------------------------------------------


def _exact(v) -> int | float:
    """A numpy scalar as a Python int or float: Python compares those exactly (2**60 + 1 > 2.0**60)."""
    v = np.asarray(v)
    return int(v) if v.dtype.kind in "iub" else float(v.astype(np.float64))


def bucketize(x: ArrayLike, buckets: ArrayLike, with_right_bound: bool = True) -> np.ndarray:
    """Bucketize-3 (int64): per element, how many buckets lie before it -- count(b < x) when
    with_right_bound (bucket i is (b[i-1], b[i]]), count(b <= x) otherwise -- comparing the two types'
    values exactly.  NaN gives 0, or len(buckets) without the right bound (where OpenVINO's CPU plugin's
    lower_bound / upper_bound put it).  Buckets must be sorted."""
    x = np.asarray(x)
    bs = [_exact(b) for b in np.asarray(buckets).reshape(-1)]
    out = np.zeros(x.shape, np.int64)
    for p in np.ndindex(*x.shape):
        v = _exact(x[p])
        if v != v:
            out[p] = 0 if with_right_bound else len(bs)
        else:
            out[p] = sum(1 for b in bs if (b < v if with_right_bound else b <= v))
    return out


def search_sorted(sorted_sequence: ArrayLike, values: ArrayLike, right_mode: bool = False) -> np.ndarray:
    """SearchSorted-15 (int64): for each value, count(s < v) -- count(s <= v) with right_mode -- over the
    sequence's row with the value's leading indices (the whole sequence when it is 1-D).  NaN gives 0
    (lower_bound compares with < or <=, false for NaN); an empty sequence gives 0."""
    s = np.asarray(sorted_sequence)
    v = np.asarray(values)
    out = np.zeros(v.shape, np.int64)
    for p in np.ndindex(*v.shape):
        row = s if s.ndim == 1 else s[p[:-1]]
        t = _exact(v[p])
        if t != t:
            continue
        out[p] = sum(1 for e in row if (_exact(e) <= t if right_mode else _exact(e) < t))
    return out


def inverse(x: ArrayLike, adjoint: bool = False) -> np.ndarray:
    """Inverse-14: Gauss-Jordan elimination with partial pivoting on each [N, N] matrix of [..., N, N], in
    float64.  A matrix with an exactly zero pivot, or holding NaN or inf, gives all NaN (the spec leaves
    it undefined; OpenVINO's CPU plugin gives inf/NaN).  adjoint gives the transpose of the inverse (the
    spec's adjoint of a real matrix, and what OpenVINO 2026.4's CPU plugin computes)."""
    a = _f64(x)
    n = a.shape[-1]
    out = np.empty(a.shape, np.float64)
    for p in np.ndindex(*a.shape[:-2]):
        m = [[float(a[p + (i, j)]) for j in range(n)] + [1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
        ok = all(np.isfinite(v) for row in m for v in row)
        for k in range(n if ok else 0):
            piv = max(range(k, n), key=lambda i, k=k: abs(m[i][k]))
            if m[piv][k] == 0.0:
                ok = False
                break
            m[k], m[piv] = m[piv], m[k]
            d = m[k][k]
            m[k] = [v / d for v in m[k]]
            for i in range(n):
                if i != k and m[i][k] != 0.0:
                    f = m[i][k]
                    m[i] = [vi - f * vk for vi, vk in zip(m[i], m[k], strict=True)]
        inv = np.array([row[n:] for row in m], np.float64).reshape(n, n) if ok else np.full((n, n), np.nan)
        out[p] = inv.T if adjoint else inv
    return out


# ---- Fourier transforms (DFT-7, IDFT-7, RDFT-9, IRDFT-9, STFT-15) --------------------------------------------
# Textbook sums (an n x n matrix of exp(-+2 pi i jk / n) per axis), not an FFT, so that they check irnorm's
# numpy.fft kernel independently.  Complex tensors are [..., 2] (real, imaginary) at the boundary.


def _fit_axis(c: np.ndarray, axis: int, n: int) -> np.ndarray:
    """The slice 0:n of an axis, or the axis zero-padded at the end to n."""
    m = c.shape[axis]
    if n <= m:
        return np.take(c, np.arange(n), axis=axis)
    pad = list(c.shape)
    pad[axis] = n - m
    return np.concatenate([c, np.zeros(pad, c.dtype)], axis=axis)


def _dft_axis(c: np.ndarray, axis: int, inverse: bool) -> np.ndarray:
    n = c.shape[axis]
    if n == 0:
        return c
    k = np.arange(n)
    w = np.exp((2j if inverse else -2j) * np.pi * np.outer(k, k) / n)
    y = np.moveaxis(np.tensordot(np.moveaxis(c, axis, -1), w, axes=([-1], [0])), -1, axis)
    return y / n if inverse else y


def _axes_sizes(dims: Sequence[int], axes: Sequence[int], signal_size: Sequence[int] | None) -> tuple[list, list]:
    r = len(dims)
    ax = [int(a) + r if int(a) < 0 else int(a) for a in axes]
    sizes = [dims[a] for a in ax] if signal_size is None else \
        [dims[a] if int(s) == -1 else int(s) for a, s in zip(ax, signal_size, strict=True)]
    return ax, sizes


def dft(x: ArrayLike, axes: Sequence[int], signal_size: Sequence[int] | None = None,
        inverse: bool = False) -> np.ndarray:
    """DFT-7 / IDFT-7 of x [..., 2]: axes count the complex dims (negative from the end of those); each axis
    is cut to signal_size or zero-padded at its end (-1 keeps it), then transformed; IDFT divides by the
    product of the sizes."""
    x = np.asarray(x, np.float64)
    c = x[..., 0] + 1j * x[..., 1]
    ax, sizes = _axes_sizes(c.shape, axes, signal_size)
    for a, n in zip(ax, sizes, strict=True):
        c = _dft_axis(_fit_axis(c, a, n), a, inverse)
    return np.stack([c.real, c.imag], -1)


def rdft(x: ArrayLike, axes: Sequence[int], signal_size: Sequence[int] | None = None) -> np.ndarray:
    """RDFT-9: the DFT of real x (axes over all of x's dims), keeping n // 2 + 1 bins of the last axis listed
    (0 for n = 0)."""
    x = np.asarray(x, np.float64)
    ax, sizes = _axes_sizes(x.shape, axes, signal_size)
    y = dft(np.stack([x, np.zeros_like(x)], -1), ax, sizes)
    n = sizes[-1]
    return np.take(y, np.arange(n // 2 + 1 if n > 0 else 0), axis=ax[-1])


def irdft(x: ArrayLike, axes: Sequence[int], signal_size: Sequence[int] | None = None) -> np.ndarray:
    """IRDFT-9 as OpenVINO's reference computes it: inverse DFT over the other axes listed (cut / padded), then
    the last axis listed: n = signal_size or 2 (m - 1); its first n // 2 + 1 entries (zero-padded) X_j, with
    X_{n-j} = conj(X_j) for the rest, inverse-transformed; the real part."""
    x = np.asarray(x, np.float64)
    c = x[..., 0] + 1j * x[..., 1]
    ax, sizes = _axes_sizes(c.shape, axes, signal_size)
    if signal_size is None or int(signal_size[-1]) == -1:
        sizes[-1] = max(2 * (c.shape[ax[-1]] - 1), 0)
    for a, n in zip(ax[:-1], sizes[:-1], strict=True):
        c = _dft_axis(_fit_axis(c, a, n), a, True)
    last, n = ax[-1], sizes[-1]
    half = _fit_axis(c, last, n // 2 + 1)
    full = np.zeros(half.shape[:last] + (n,) + half.shape[last + 1:], complex)
    for j in range(n):
        if j <= n // 2:
            full[(slice(None),) * last + (j,)] = np.take(half, j, axis=last)
        else:
            full[(slice(None),) * last + (j,)] = np.conj(np.take(half, n - j, axis=last))
    return _dft_axis(full, last, True).real


def stft(signal: ArrayLike, window: ArrayLike, frame_size: int, frame_step: int,
         transpose_frames: bool) -> np.ndarray:
    """STFT-15: the window centred in a frame of frame_size (zeros around it, the extra one on the right);
    frame f = signal[..., f * step : f * step + frame_size] times it, RDFT'd:
    [batch, frames, frame_size // 2 + 1, 2] (bins before frames when transpose_frames)."""
    s = np.asarray(signal, np.float64)
    w = np.asarray(window, np.float64)
    one = s.ndim == 1
    s = s[None] if one else s
    padded = np.zeros(frame_size)
    off = (frame_size - w.shape[0]) // 2
    padded[off:off + w.shape[0]] = w
    n_frames = (s.shape[1] - frame_size) // frame_step + 1
    out = np.zeros((s.shape[0], n_frames, frame_size // 2 + 1, 2))
    for b in range(s.shape[0]):
        for f in range(n_frames):
            out[b, f] = rdft(s[b, f * frame_step:f * frame_step + frame_size] * padded, [0])
    if transpose_frames:
        out = out.transpose(0, 2, 1, 3)
    return out[0] if one else out


# ---- channel and batch shuffles, GRN --------------------------------------------------------------------


def shuffle_channels(x: ArrayLike, axis: int, group: int) -> np.ndarray:
    """ShuffleChannels-1, channel by channel: output channel a * group + g (a < C / group, g < group) along
    `axis` is input channel g * (C / group) + a."""
    x = np.asarray(x)
    ax = axis % x.ndim
    c = x.shape[ax]
    per = c // group
    y = np.empty_like(x)
    for o in range(c):
        src = (o % group) * per + o // group
        dst_idx = [slice(None)] * x.ndim
        src_idx = [slice(None)] * x.ndim
        dst_idx[ax], src_idx[ax] = o, src
        y[tuple(dst_idx)] = x[tuple(src_idx)]
    return y


def _block_index(offsets: Sequence[int], blocks: Sequence[int]) -> int:
    """The linear index of a block offset (r_1, ..., r_k), r_1 slowest."""
    lin = 0
    for r, b in zip(offsets, blocks, strict=True):
        lin = lin * b + r
    return lin


def space_to_batch(x: ArrayLike, block_shape: Sequence[int], pads_begin: Sequence[int],
                   pads_end: Sequence[int]) -> np.ndarray:
    """SpaceToBatch-2, element by element: output [r * N + n, q_1..q_k], with r the linear index of the
    block offset (r_1..r_k), reads the zero-padded input at [n, q_i * B_i + r_i - pads_begin_i] (zero where
    that falls in the padding).  block_shape[0] must be 1 and the batch is not padded."""
    x = np.asarray(x)
    n, *dims = x.shape
    bs = [int(b) for b in block_shape[1:]]
    pb = [int(p) for p in pads_begin[1:]]
    pe = [int(p) for p in pads_end[1:]]
    if int(block_shape[0]) != 1 or int(pads_begin[0]) or int(pads_end[0]):
        raise ValueError("block_shape[0] must be 1 and the batch pads 0")
    padded = [d + p + e for d, p, e in zip(dims, pb, pe, strict=True)]
    if any(p % b for p, b in zip(padded, bs, strict=True)):
        raise ValueError("a padded dim is not a multiple of its block")
    q_dims = [p // b for p, b in zip(padded, bs, strict=True)]
    y = np.zeros((n * int(np.prod(bs, dtype=np.int64)),) + tuple(q_dims), x.dtype)
    for offsets in np.ndindex(*bs):
        r = _block_index(offsets, bs)
        for b in range(n):
            for q in np.ndindex(*q_dims):
                src = [qi * bi + ri - pi for qi, bi, ri, pi in zip(q, bs, offsets, pb, strict=True)]
                if all(0 <= s < d for s, d in zip(src, dims, strict=True)):
                    y[(r * n + b,) + q] = x[(b,) + tuple(src)]
    return y


def batch_to_space(x: ArrayLike, block_shape: Sequence[int], crops_begin: Sequence[int],
                   crops_end: Sequence[int]) -> np.ndarray:
    """BatchToSpace-2, element by element: output [n, j_1..j_k] reads input [r * (N / prod B) + n, f_i // B_i]
    where f_i = j_i + crops_begin_i and r is the linear index of the offsets (f_i % B_i).  The inverse of
    space_to_batch (crops for pads)."""
    x = np.asarray(x)
    n_in, *dims = x.shape
    bs = [int(b) for b in block_shape[1:]]
    cb = [int(c) for c in crops_begin[1:]]
    ce = [int(c) for c in crops_end[1:]]
    if int(block_shape[0]) != 1 or int(crops_begin[0]) or int(crops_end[0]):
        raise ValueError("block_shape[0] must be 1 and the batch crops 0")
    blocks = int(np.prod(bs, dtype=np.int64))
    if n_in % blocks:
        raise ValueError("the batch is not a multiple of the blocks' product")
    n = n_in // blocks
    out_dims = [d * b - p - e for d, b, p, e in zip(dims, bs, cb, ce, strict=True)]
    if any(d < 0 for d in out_dims):
        raise ValueError("the crops exceed a dim")
    y = np.empty((n,) + tuple(out_dims), x.dtype)
    for b in range(n):
        for j in np.ndindex(*out_dims):
            full = [ji + ci for ji, ci in zip(j, cb, strict=True)]
            r = _block_index([f % bi for f, bi in zip(full, bs, strict=True)], bs)
            y[(b,) + j] = x[(r * n + b,) + tuple(f // bi for f, bi in zip(full, bs, strict=True))]
    return y


def grn(x: ArrayLike, bias: float) -> np.ndarray:
    """GRN-1 in float64: y = x / sqrt(sum over axis 1 of x**2 + bias) (rank 2-4)."""
    x = _f64(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return x / np.sqrt(np.sum(x * x, axis=1, keepdims=True) + bias)


# ---- BitwiseLeftShift / BitwiseRightShift, Interpolate-11's pillow modes --------------------------------


def bitwise_left_shift(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """BitwiseLeftShift-15, element by element in Python integers: a * 2**b reduced to a's type (wraps) for
    0 <= b < bits of the type; 0 for any other b (what shifting one bit at a time gives; the reference is
    undefined there)."""
    a, b = np.asarray(a), np.asarray(b)
    bits = np.iinfo(a.dtype).bits
    lo = int(np.iinfo(a.dtype).min)
    shape = np.broadcast_shapes(a.shape, b.shape)
    a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    out = np.empty(shape, a.dtype)
    for idx in np.ndindex(*shape):
        x, s = int(a[idx]), int(b[idx])
        v = (x << s) % (1 << bits) if 0 <= s < bits else 0
        out[idx] = v + 2 * lo if lo < 0 and v >= -lo else v  # two's complement
    return out


def bitwise_right_shift(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """BitwiseRightShift-15, element by element in Python integers: floor(a / 2**b) (the arithmetic shift for
    signed types, the logical one for unsigned) for 0 <= b < bits of the type; for any other b the sign fill,
    -1 for a negative a and 0 otherwise."""
    a, b = np.asarray(a), np.asarray(b)
    bits = np.iinfo(a.dtype).bits
    shape = np.broadcast_shapes(a.shape, b.shape)
    a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    out = np.empty(shape, a.dtype)
    for idx in np.ndindex(*shape):
        x, s = int(a[idx]), int(b[idx])
        out[idx] = x >> s if 0 <= s < bits else (-1 if x < 0 else 0)
    return out


def interpolate_pillow(x: ArrayLike, axes: Sequence[int], sizes: Sequence[int], mode: str, cube_coeff: float,
                       int_dtype: DTypeLike | None = None) -> np.ndarray:
    """Interpolate-11 bilinear_pillow / bicubic_pillow on (padded) data, after OpenVINO's reference
    (interpolate_pil.hpp, Pillow's Resample.c): each axis whose size changes (at most two), the later one in
    `axes` first, is resampled on its own.  Output j of an axis resized from n to m (scale = n / m, fs =
    max(scale, 1)) centred at c = (j + 0.5) * scale sums the inputs i from int(c - support + 0.5) (at least 0)
    to int(c + support + 0.5) (at most n, excluded) weighted by filter((i - c + 0.5) / fs), the weights divided
    by their sum; support = fs (bilinear: the triangle 1 - |t|) or 2 fs (bicubic: the cubic convolution kernel
    with a = cube_coeff).  With `int_dtype`, every pass's sums are rounded half away from zero and clamped to
    that integer type."""
    y = _f64(x)
    changed = [(ax, n) for ax, n in zip(axes, sizes, strict=True) if y.shape[ax] != n]
    assert len(changed) <= 2, "pillow modes resize at most two axes"
    for ax, m in changed[::-1]:
        n = y.shape[ax]
        if m == 0:
            y = np.zeros(y.shape[:ax] + (0,) + y.shape[ax + 1:])
            continue
        scale = n / m
        fs = max(scale, 1.0)
        support = (1.0 if mode == "bilinear_pillow" else 2.0) * fs
        rows = []
        for j in range(m):
            c = (j + 0.5) * scale
            lo, hi = max(int(c - support + 0.5), 0), min(int(c + support + 0.5), n)
            ws = []
            for i in range(lo, hi):
                t = abs((i - c + 0.5) / fs)
                if mode == "bilinear_pillow":
                    w = 1.0 - t if t < 1.0 else 0.0
                else:
                    a = cube_coeff
                    w = (((a + 2.0) * t - (a + 3.0)) * t * t + 1.0 if t < 1.0 else
                         (((t - 5.0) * t + 8.0) * t - 4.0) * a if t < 2.0 else 0.0)
                ws.append(w)
            total = sum(ws)
            row = np.zeros(y.shape[:ax] + (1,) + y.shape[ax + 1:])
            for i, w in zip(range(lo, hi), ws, strict=True):
                row = row + (w / total if total != 0.0 else w) * np.take(y, [i], axis=ax)
            if int_dtype is not None:
                info = np.iinfo(int_dtype)
                row = np.clip(np.where(row >= 0, np.trunc(row + 0.5), np.trunc(row - 0.5)), info.min, info.max)
            rows.append(row)
        y = np.concatenate(rows, axis=ax)
    return y


def deformable_convolution(x: ArrayLike, offsets: ArrayLike, w: ArrayLike, mask: ArrayLike | None,
                           strides: Sequence[int], pads_begin: Sequence[int], pads_end: Sequence[int],
                           dilations: Sequence[int], auto_pad: str = "explicit", group: int = 1,
                           deformable_group: int = 1, bilinear_interpolation_pad: bool = False,
                           neg_zero_reads: bool = False) -> np.ndarray:
    """DeformableConvolution-1/8, 2-D, as OpenVINO's CPU plugin computes it (docs/ir-format.md, section 11,
    "DeformableConvolution"): x [N, C, H, W], offsets [N, 2*DG*K, Ho, Wo] ((y, x) per tap k = i*kw + j of
    deformable group dg = c // (C/DG)), w [O, C/G, kh, kw], mask [N, DG*K, Ho, Wo] or None (ones).
    Tap position (oy*sh - pb + i*dh + dy, ox*sw - pb + j*dw + dx).  Without the pad flag a tap is sampled when
    0 <= y < H and 0 <= x < W (corners floor and min(ceil, size-1)); a NaN coordinate with the other inside
    gives NaN.  With it, when -1 < y < H and -1 < x < W (corners floor and floor+1, outside ones read 0), a NaN
    one is not sampled.  Corner weights (1-l or l) products times the mask; a zero weight is not read (a -0.0
    one is when `neg_zero_reads`).  Then a grouped convolution of the samples with w."""
    x, off, w = _f64(x), _f64(offsets), _f64(w)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    kk = kh * kw
    pads = [_conv_pads(x.shape[2 + i], w.shape[2 + i], strides[i], dilations[i], pads_begin[i] if pads_begin else 0,
                       pads_end[i] if pads_end else 0, auto_pad) for i in range(2)]
    ho = (h + sum(pads[0]) - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    wo = (wd + sum(pads[1]) - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    m = np.ones((n, deformable_group * kk, ho, wo)) if mask is None else _f64(mask)
    per_dg = c // deformable_group
    cols = np.zeros((n, c, kk, ho, wo))
    with np.errstate(invalid="ignore", over="ignore"):
        for b, ch, i, j, oy, ox in np.ndindex(n, c, kh, kw, ho, wo):
            dg, k = ch // per_dg, i * kw + j
            py = oy * strides[0] - pads[0][0] + i * dilations[0] + off[b, 2 * (dg * kk + k), oy, ox]
            px = ox * strides[1] - pads[1][0] + j * dilations[1] + off[b, 2 * (dg * kk + k) + 1, oy, ox]
            if bilinear_interpolation_pad:
                if not (-1 < py < h and -1 < px < wd):
                    continue
                y0, x0 = int(np.floor(py)), int(np.floor(px))
                y1, x1 = y0 + 1, x0 + 1
            else:
                if py < 0 or py >= h or px < 0 or px >= wd:
                    continue
                if np.isnan(py) or np.isnan(px):
                    cols[b, ch, k, oy, ox] = np.nan
                    continue
                y0, x0 = int(np.floor(py)), int(np.floor(px))
                y1, x1 = min(int(np.ceil(py)), h - 1), min(int(np.ceil(px)), wd - 1)
            ly, lx = py - np.floor(py), px - np.floor(px)
            hy, hx = (1 - ly if y0 >= 0 else 0.0), (1 - lx if x0 >= 0 else 0.0)
            ly, lx = (ly if y1 < h else 0.0), (lx if x1 < wd else 0.0)
            mk = m[b, dg * kk + k, oy, ox]
            v = 0.0
            for wt, yy, xx in ((hy * hx * mk, y0, x0), (ly * hx * mk, y1, x0), (hy * lx * mk, y0, x1),
                               (ly * lx * mk, y1, x1)):
                if wt != 0 or (neg_zero_reads and np.signbit(wt)):
                    v += wt * x[b, ch, min(max(yy, 0), h - 1), min(max(xx, 0), wd - 1)]
            cols[b, ch, k, oy, ox] = v
    og = o // group
    y = np.zeros((n, o, ho, wo))
    for gi in range(group):
        part = cols[:, gi * cg:(gi + 1) * cg].reshape(n, cg * kk, ho * wo)
        y[:, gi * og:(gi + 1) * og] = np.einsum("ok,nkp->nop", w[gi * og:(gi + 1) * og].reshape(og, cg * kk),
                                                part).reshape(n, og, ho, wo)
    return y


# ---- SSD detection: PriorBox-1/8, PriorBoxClustered-1, DetectionOutput-1/8 ------------------------------------


def _prior_ratios(aspect_ratio: Sequence[float], flip: bool) -> list[float]:
    out = [1.0]
    for r in aspect_ratio:
        if any(abs(r - e) < 1e-6 for e in out):
            continue
        out.append(float(r))
        if flip:
            out.append(1.0 / r)
    return out


def prior_box(size: Sequence[int], image: Sequence[int], min_size: Sequence[float], max_size: Sequence[float],
              aspect_ratio: Sequence[float], flip: bool, clip: bool, step: float, offset: float,
              variance: Sequence[float], scale_all_sizes: bool = True, fixed_size: Sequence[float] = (),
              fixed_ratio: Sequence[float] = (), density: Sequence[float] = (),
              min_max_aspect_ratios_order: bool = True) -> np.ndarray:
    """PriorBox-1/8: [2, 4 * H * W * priors], boxes (xmin, ymin, xmax, ymax) / image size cell by cell, then the
    variances (none given: 0.1).  OpenVINO's reference order: per cell the fixed-size boxes (density x density
    grid, centres shifted by -floor(fixed_size / 2) + shift / 2 + i * shift with shift = int(fixed_size /
    density), each clipped on its outer side), then per min_size the square box, the sqrt(min * max) box and the
    aspect-ratio boxes (min_max_aspect_ratios_order false: ratio boxes before the max box); scale_all_sizes false
    multiplies min_size and step by the image height (step -1: image height / H) and makes ratio boxes for the
    last min_size only, from the first."""
    h, w = int(size[0]), int(size[1])
    ih, iw = int(image[0]), int(image[1])
    ratios = _prior_ratios(aspect_ratio, flip)
    mins = [float(m) for m in min_size]
    if not scale_all_sizes:
        step = ih / h if step == -1 else step * ih
        mins = [m * ih for m in mins]
    boxes: list[list[float]] = []

    def add(cx, cy, bw, bh, outer_clip):
        b = [(cx - bw) / iw, (cy - bh) / ih, (cx + bw) / iw, (cy + bh) / ih]
        if outer_clip:
            b = [max(b[0], 0.0), max(b[1], 0.0), min(b[2], 1.0), min(b[3], 1.0)]
        boxes.append(b)

    for y in range(h):
        for x in range(w):
            if step == 0:
                cx, cy = (x + 0.5) * iw / w, (y + 0.5) * ih / h
            else:
                cx, cy = (offset + x) * step, (offset + y) * step
            for s, fs in enumerate(fixed_size):
                shapes = ([(fs * 0.5 * np.sqrt(r), fs * 0.5 / np.sqrt(r)) for r in fixed_ratio] if fixed_ratio else
                          ([(int(fs) * 0.5, int(fs) * 0.5)] if density else []) +
                          [(fs * 0.5 * np.sqrt(r), fs * 0.5 / np.sqrt(r)) for r in ratios[1:]])
                d = int(density[s]) if shapes else 0
                shift = int(fs / d) if d else 0
                for bw, bh in shapes:
                    for r in range(d):
                        for c in range(d):
                            add(cx - int(fs) // 2 + shift / 2 + c * shift, cy - int(fs) // 2 + shift / 2 + r * shift,
                                bw, bh, True)
            for k, m in enumerate(mins):
                add(cx, cy, m * 0.5, m * 0.5, False)
                big = [np.sqrt(m * max_size[k]) * 0.5] if k < len(max_size) else []
                ar = []
                if scale_all_sizes or k == len(mins) - 1:
                    base = m if scale_all_sizes else mins[0]
                    ar = [(base * 0.5 * np.sqrt(r), base * 0.5 / np.sqrt(r)) for r in ratios[1:]]
                seq = [(b, b) for b in big] + ar if min_max_aspect_ratios_order else ar + [(b, b) for b in big]
                for bw, bh in seq:
                    add(cx, cy, bw, bh, False)
    out = np.array(boxes, np.float64).reshape(-1)
    if clip:
        out = np.clip(out, 0.0, 1.0)
    var = np.tile(np.array(list(variance) or [0.1], np.float64), out.size // max(len(variance), 1))
    return np.stack([out, var[:out.size]])


def prior_box_clustered(size: Sequence[int], image: Sequence[int], widths: Sequence[float],
                        heights: Sequence[float], clip: bool, step: float, step_w: float, step_h: float,
                        offset: float, variance: Sequence[float]) -> np.ndarray:
    """PriorBoxClustered-1: per cell one (width, height) box per pair centred at ((x + offset) * step_w,
    (y + offset) * step_h), divided by the image size; step_w / step_h 0 fall back to step, and both 0 to
    image size / map size.  clip (default true) clips to [0, 1].  Row 1: the variances (none: 0.1)."""
    h, w = int(size[0]), int(size[1])
    ih, iw = int(image[0]), int(image[1])
    sw = step_w if step_w != 0 else step
    sh = step_h if step_h != 0 else step
    if sw == 0 and sh == 0:
        sw, sh = iw / w, ih / h
    boxes = []
    for y in range(h):
        for x in range(w):
            cx, cy = (x + offset) * sw, (y + offset) * sh
            for bw, bh in zip(widths, heights, strict=True):
                boxes.append([(cx - bw / 2) / iw, (cy - bh / 2) / ih, (cx + bw / 2) / iw, (cy + bh / 2) / ih])
    out = np.array(boxes, np.float64).reshape(-1)
    if clip:
        out = np.clip(out, 0.0, 1.0)
    var = np.tile(np.array(list(variance) or [0.1], np.float64), out.size // max(len(variance), 1))
    return np.stack([out, var[:out.size]])


def _do_decode(prior, loc, var, center, normalized, iw, ih, clip):
    px0, py0, px1, py1 = prior
    if not normalized:
        px0, py0, px1, py1 = px0 / iw, py0 / ih, px1 / iw, py1 / ih
    v = var if var is not None else (1.0, 1.0, 1.0, 1.0)
    if not center:
        b = [px0 + v[0] * loc[0], py0 + v[1] * loc[1], px1 + v[2] * loc[2], py1 + v[3] * loc[3]]
    else:
        pw, ph = px1 - px0, py1 - py0
        cx, cy = v[0] * loc[0] * pw + (px0 + px1) / 2, v[1] * loc[1] * ph + (py0 + py1) / 2
        bw, bh = np.exp(v[2] * loc[2]) * pw, np.exp(v[3] * loc[3]) * ph
        b = [cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2]
    return [min(max(t, 0.0), 1.0) for t in b] if clip else b


def _do_overlap(a, b) -> float:
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    iw, ih = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    size_a, size_b = (a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])
    return inter / (size_a + size_b - inter)


def detection_output(loc: ArrayLike, conf: ArrayLike, priors: ArrayLike, arm_conf: ArrayLike | None,
                     arm_loc: ArrayLike | None, keep_top_k: int, nms_threshold: float, top_k: int = -1,
                     background_label_id: int = 0, code_type: str = "caffe.PriorBoxParameter.CORNER",
                     share_location: bool = True, variance_encoded_in_target: bool = False,
                     confidence_threshold: float = 0.0, clip_before_nms: bool = False,
                     clip_after_nms: bool = False, decrease_label_id: bool = False, normalized: bool = False,
                     input_height: int = 1, input_width: int = 1, objectness_score: float = 0.0) -> np.ndarray:
    """DetectionOutput-1/8 as OpenVINO's CPU plugin computes it: [1, 1, rows, 7] (image, label, score, xmin, ymin,
    xmax, ymax), image by image, class by class, the row after the last detection starting with -1, zeros
    elsewhere.  Decoding: priors [1 or N, 2 (1 with variance in target), P * (4 or 5)] (normalized false: an image
    id first -- the first prior whose id is -1 ends the list -- and pixel coordinates divided by input_width /
    height), CORNER adds the scaled offsets, CENTER_SIZE moves the centre by var * loc * size and scales the size
    by exp(var * loc); with ARM inputs (5) each prior is first decoded by the ARM location and a prior whose ARM
    objectness is below objectness_score scores 1 for the background class and 0 for the others.  Caffe style:
    per class (not the background) the scores above confidence_threshold, highest first (ties: lower prior),
    top_k of them, greedy NMS (overlap > nms_threshold suppresses).  decrease_label_id (MXNet style): per prior
    its best class >= 1 scoring >= the threshold; all priors highest first (ties: lower class * P + prior),
    top_k, NMS within each class; labels minus 1.  keep_top_k > -1: the best keep_top_k of an image's kept
    detections (ties: lower prior, then lower class).  rows: N * keep_top_k (> 0), else N * top_k * C (keep_top_k
    -1, top_k > 0), else N * P * C."""
    loc, conf, pri = (np.asarray(x, np.float64) for x in (loc, conf, priors))
    center = code_type.lower().endswith("center_size")
    psize, off = (4, 0) if normalized else (5, 1)
    n_img, n_pr = loc.shape[0], pri.shape[2] // psize
    n_cls = conf.shape[1] // n_pr
    loc_cls = 1 if share_location else n_cls
    if keep_top_k > 0:
        rows = n_img * keep_top_k
    elif keep_top_k == -1 and top_k > 0:
        rows = n_img * top_k * n_cls
    else:
        rows = n_img * n_pr * n_cls
    out = np.zeros((rows, 7), np.float64)
    count = 0
    for n in range(n_img):
        pb = pri[n if pri.shape[0] > 1 else 0]
        pboxes = pb[0].reshape(n_pr, psize)
        var = None if variance_encoded_in_target else pb[1, :4 * n_pr].reshape(n_pr, 4)
        actual = n_pr
        if not normalized:
            ends = [p for p in range(n_pr) if pboxes[p, 0] == -1]
            actual = ends[0] if ends else n_pr
        scores = conf[n].reshape(n_pr, n_cls).copy()
        if arm_conf is not None:
            ac = np.asarray(arm_conf, np.float64)[n].reshape(n_pr, 2)
            for p in range(n_pr):
                if ac[p, 1] < objectness_score:
                    scores[p] = [1.0 if c == background_label_id else 0.0 for c in range(n_cls)]
        lp = loc[n].reshape(n_pr, loc_cls, 4)
        boxes = {}
        for c in range(loc_cls):
            for p in range(actual):
                v = None if var is None else var[p]
                prior = pboxes[p, off:off + 4]
                if arm_loc is not None:
                    al = np.asarray(arm_loc, np.float64)[n].reshape(n_pr, loc_cls, 4)
                    prior = _do_decode(prior, al[p, c], v, center, normalized, input_width, input_height,
                                       clip_before_nms)
                boxes[c, p] = _do_decode(prior, lp[p, c], v, center, normalized, input_width, input_height,
                                         clip_before_nms)

        def box(c, p, boxes=boxes):
            return boxes[0 if share_location else c, p]

        kept: dict[int, list[int]] = {c: [] for c in range(n_cls)}
        if not decrease_label_id:
            for c in range(n_cls):
                if c == background_label_id:
                    continue
                cand = sorted((p for p in range(actual) if scores[p, c] > confidence_threshold),
                              key=lambda p, c=c: (-scores[p, c], p))
                for p in cand[:top_k] if top_k > -1 else cand:
                    if all(_do_overlap(box(c, p), box(c, q)) <= nms_threshold for q in kept[c]):
                        kept[c].append(p)
        else:
            cand = []
            for p in range(actual):
                best, best_c = -1.0, 0
                for c in range(1, n_cls):
                    if scores[p, c] >= confidence_threshold and scores[p, c] > best:
                        best, best_c = scores[p, c], c
                if best_c > 0:
                    cand.append((best, best_c, p))
            cand.sort(key=lambda t: (-t[0], t[1] * n_pr + t[2]))
            for _, c, p in cand[:top_k] if top_k > -1 else cand:
                if all(_do_overlap(box(c, p), box(c, q)) <= nms_threshold for q in kept[c]):
                    kept[c].append(p)
        dets = [(scores[p, c], p, c) for c in range(n_cls) for p in kept[c]]
        if keep_top_k > -1 and len(dets) > keep_top_k:
            best = sorted(dets, key=lambda t: (-t[0], t[1], t[2]))[:keep_top_k]
            kept = {c: [p for _, p, cc in best if cc == c] for c in range(n_cls)}
        for c in range(n_cls):
            for p in kept[c]:
                b = box(c, p)
                if clip_after_nms:
                    b = [min(max(t, 0.0), 1.0) for t in b]
                out[count] = [n, c - 1 if decrease_label_id else c, scores[p, c], *b]
                count += 1
    if count < rows:
        out[count, 0] = -1
    return out.reshape(1, 1, rows, 7)
