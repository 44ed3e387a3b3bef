"""Structure-aware fuzzing of whole models (hypothesis), and replay of every crash a fuzzer found.

Each example takes a valid seed model (every sample in samples/ir, a few real exports from
tests/exports, and a few built here for the ops no sample uses), applies 0-4 random mutations
to its XML tree and its .bin (drop / duplicate / rewrite attributes, dims, ports, edges and
layers; truncate, corrupt, extend or remove the weights), writes the result and asserts:

* ``irnorm.check`` never raises and every diagnostic has a documented code;
* ``irnorm.load`` either returns a model or raises an :class:`irnorm.IrnormError` subclass, and
  it raises exactly when ``check`` reported an error (memory limits aside);
* a loaded model runs on random inputs of its declared shapes (dynamic dims 1-4, sometimes NaN,
  Inf, zeros or extreme values) or raises an IrnormError; outputs have the declared names, order,
  dtypes and shapes and are fresh arrays, and the inputs are untouched;
* with ordinary inputs, every layer of a mutated model that still runs agrees with irnorm's float64
  reference (``irnorm.compare(model, "reference")``, default tolerances): a mutated attribute
  value must change the result the way the operator's definition says (not checked when the weights
  are arbitrary bit patterns or beyond 1e30: see run_case);
* when only meaning-preserving mutations were applied (layer/edge order, layer and port ids
  renumbered consistently, comments, attribute order, an input dim made dynamic or a dynamic one
  fixed at the inputs' size), the model loads and its outputs are
  bit-identical to the unmutated model's (and within tolerance of OpenVINO's stored outputs) -- or, where
  a dim made dynamic turned a planner fusion off, bit-identical with fusions off and within tolerance with
  them on;
* ``amplify`` repeats a layer, port, dim, edge or attribute up to 3,000 times, or hangs a chain of
  3,000 layers below a random layer or a new cycle, so that work superlinear in a count shows up
  against the time bound;
* one example in six also runs ``irnorm validate --json`` and ``irnorm info --json`` on the file:
  exit code 0 or 1, never the internal-error code 3, and JSON that parses;
* check + load + run within TIME_BOUND seconds plus TIME_PER_MB per MB of XML (a slow example is
  re-timed once, so a one-off Numba compilation of a new kernel specialization does not count).

CI runs IRNORM_FUZZ_EXAMPLES examples (default 200, derandomized); ``fuzz/run_structural.py``
runs long campaigns with random seeds (see fuzz/README.md).
"""

from __future__ import annotations

import atexit
import copy
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

import irnorm
from irnorm.errors import CODES, IrnormError, ResourceLimitError
from irnorm.runtime.model import Model

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
EXPORTS = Path(__file__).resolve().parent / "exports"
REGRESSIONS = Path(__file__).resolve().parent / "regressions"
sys.path.insert(0, str(ROOT / "fuzz"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import load_npz  # noqa: E402
from irbuilder import IRBuilder  # noqa: E402

TIME_BOUND = 2.0  # seconds per example (check + load + run), warm ...
TIME_PER_MB = 3.0  # ... plus this per MB of XML: linear work is allowed to grow with the file, not faster
REFERENCE_ORACLE = os.environ.get("IRNORM_FUZZ_REFERENCE", "1") != "0"
MAX_MEMORY = 256 << 20  # plans above this are refused (IRN051), which is an accepted outcome
MAX_INPUT_ELEMENTS = 1 << 22  # larger declared inputs are loaded and checked but not run
EXPORT_SEEDS = ("torch_block_static_f16w", "torch_manual_groupnorm_dynamic_f32w", "torch_l2_plumbing_dynamic_f32w",
                "onnx_layernorm17_dynamic_f32w", "onnx_reducel2norm_static_f32w", "onnx_groupnorm21_dynamic_f16w")
TOL = {"float32": (1e-5, 1e-5), "float64": (1e-9, 1e-9), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2)}


# ---- seeds ------------------------------------------------------------------------------------


@dataclass
class Seed:
    name: str
    xml: bytes
    weights: bytes
    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray] | None  # OpenVINO's outputs, when stored
    baseline: dict[str, np.ndarray] | None = None  # irnorm's outputs on the unmutated model
    baseline_unfused: dict[str, np.ndarray] | None = None  # the same, with the planner's fusions off
    tree: etree._Element | None = None

    def __repr__(self) -> str:
        return f"Seed({self.name!r})"


def _built_seeds() -> list[tuple[str, IRBuilder, dict[str, np.ndarray]]]:
    """Small models for the ops no sample or export uses: BatchNormInference-1/-5, LRN-1, MVN-1, Sigmoid, the other
    unary ops, Clamp, Power, Divide and SquaredDifference, the index-taking ops (Gather, GatherElements,
    ScatterElementsUpdate, ScatterNDUpdate, GatherND, OneHot, TopK), and the ops added for real exports that
    read indices or sizes (embedding bags, Bucketize, SearchSorted, SpaceToBatch, Col2Im, ...)."""
    rng = np.random.default_rng(7)
    b = IRBuilder("bn_lrn_mvn1")
    x = b.parameter("x", (1, 4, 5, 5), "f32")
    cs = [b.const(v.astype(np.float32)) for v in (rng.uniform(0.5, 2, 4), rng.normal(size=4), rng.normal(size=4),
                                                  rng.uniform(0.5, 2, 4))]
    (y,) = b.layer("BatchNormInference", [x, *cs], [((1, 4, 5, 5), "f32")], {"epsilon": 1e-5}, version="opset5")
    axes = b.const(np.array([1], np.int64))
    (y,) = b.layer("LRN", [y, axes], [((1, 4, 5, 5), "f32")], {"alpha": 1e-4, "beta": 0.75, "bias": 1.0,
                                                                "size": 3}, version="opset1")
    (y,) = b.layer("MVN", [y], [((1, 4, 5, 5), "f32")], {"across_channels": "false", "normalize_variance": "true",
                                                          "eps": 1e-9}, version="opset2", names=["y"])
    b.result(y)
    x1 = rng.normal(size=(1, 4, 5, 5)).astype(np.float32)

    b2 = IRBuilder("bn1_dynamic")
    x = b2.parameter("x", (-1, 3, -1), "f32")
    cs = [b2.const(v.astype(np.float32)) for v in (rng.uniform(0.5, 2, 3), rng.normal(size=3), rng.normal(size=3),
                                                   rng.uniform(0.5, 2, 3))]
    (y,) = b2.layer("BatchNormInference", [cs[0], cs[1], x, cs[2], cs[3]], [((-1, 3, -1), "f32")],  # v1: data 3rd
                    {"epsilon": 1e-3}, version="opset1")
    (z,) = b2.layer("Sigmoid", [y], [((-1, 3, -1), "f32")], None, version="opset1", names=["z"])
    b2.result(z)
    x2 = rng.normal(size=(2, 3, 4)).astype(np.float32)

    b3 = IRBuilder("unary_chain")  # every unary op, Clamp, and the binary ops no export uses
    x = b3.parameter("x", (2, 3, 4), "f32")
    f32 = ((2, 3, 4), "f32")
    y = x
    for t in ("Tanh", "Exp", "Log", "Erf", "Negative"):
        (y,) = b3.layer(t, [y], [f32], None, version="opset1")
    (y,) = b3.layer("Clamp", [y], [f32], {"min": -0.5, "max": 0.75}, version="opset1")
    (y,) = b3.layer("Sigmoid", [y], [f32], None, version="opset1")
    (y,) = b3.layer("SquaredDifference", [y, x], [f32], None, version="opset1")
    (ax,) = b3.layer("Abs", [x], [f32], None, version="opset1")
    (y,) = b3.layer("Divide", [y, ax], [f32], None, version="opset1", names=["a"])
    b3.result(y)
    (z,) = b3.layer("Log", [ax], [f32], None, version="opset1")
    (z,) = b3.layer("Sqrt", [z], [f32], None, version="opset1")  # NaN where |x| < 1: IEEE, no warning
    (z,) = b3.layer("Power", [z, b3.const(np.array([2.0], np.float32))], [f32], None, version="opset1")
    (z,) = b3.layer("Subtract", [z, x], [f32], None, version="opset1", names=["b"])
    b3.result(z)
    x3 = rng.normal(size=(2, 3, 4)).astype(np.float32) * 3

    # the ops that take indices from the file or an input: a mutated index, shape or attribute must give a
    # coded error, never an out-of-bounds read or write
    b4 = IRBuilder("indexing")
    f26 = ((2, 6), "f32")
    x = b4.parameter("x", (2, 6), "f32")
    i = b4.parameter("i", (2,), "i64")
    (y,) = b4.layer("Gather", [x, i, b4.const(np.array(1, np.int64))], [((2, 2), "f32")], {"batch_dims": 0},
                    version="opset8", names=["gather"])
    b4.result(y)
    (y,) = b4.layer("GatherElements", [x, b4.const(np.array([[0, 5, 1], [4, 4, 2]], np.int64))],
                    [((2, 3), "f32")], {"axis": 1}, version="opset6", names=["gather_elements"])
    b4.result(y)
    (y,) = b4.layer("ScatterElementsUpdate", [x, b4.const(np.array([[1, 1], [0, 5]], np.int64)),
                                              b4.const(np.ones((2, 2), np.float32)), b4.const(np.array(1, np.int64))],
                    [f26], {"reduction": "sum", "use_init_val": "true"}, version="opset12", names=["scatter_elements"])
    b4.result(y)
    (y,) = b4.layer("ScatterNDUpdate", [x, b4.const(np.array([[1, 2], [0, 0]], np.int64)),
                                        b4.const(np.array([7.0, 8.0], np.float32))], [f26], None, version="opset3",
                    names=["scatter_nd"])
    b4.result(y)
    (y,) = b4.layer("GatherND", [x, b4.const(np.array([[0, 1], [1, 5]], np.int64))], [((2,), "f32")],
                    {"batch_dims": 0}, version="opset8", names=["gather_nd"])
    b4.result(y)
    (y,) = b4.layer("OneHot", [i, b4.const(np.array(4, np.int64)), b4.const(np.float32(1)),
                               b4.const(np.float32(0))], [((2, 4), "f32")], {"axis": -1}, version="opset16",
                    names=["one_hot"])
    b4.result(y)
    (v, k) = b4.layer("TopK", [x, b4.const(np.array(3, np.int64))], [((2, 3), "f32"), ((2, 3), "i32")],
                      {"axis": 1, "mode": "max", "sort": "value"}, version="opset11", names=["top_values", "top_idx"])
    b4.result(v)
    b4.result(k)
    x4 = rng.normal(size=(2, 6)).astype(np.float32)

    # the operators added for real exports that take indices, sizes or block shapes from the file: embedding bags,
    # segment sums, Bucketize / SearchSorted, ShuffleChannels, GRN, SpaceToBatch / BatchToSpace, Col2Im -- a mutated
    # index, size or attribute must give a coded error, never an out-of-bounds read.  (Not the FFTs: the seeds also
    # run test_reliability's NaN-placement check against the O(n^2) reference, and an FFT spreads a NaN into bins
    # and parts differently from it; tests/test_ops_fourier.py covers their NaN rule.)
    b5 = IRBuilder("export_ops")
    x = b5.parameter("x", (2, 6), "f32")
    c = b5.parameter("c", (1, 4, 4), "f32")
    i64 = np.int64
    table = b5.const(rng.normal(size=(5, 3)).astype(np.float32))
    idx = b5.const(np.array([0, 2, 4, 1], i64))
    (y,) = b5.layer("EmbeddingBagOffsets", [table, idx, b5.const(np.array([0, 2], i64))], [((2, 3), "f32")],
                    {"reduction": "sum"}, version="opset15", names=["bags"])
    b5.result(y)
    (y,) = b5.layer("EmbeddingSegmentsSum", [table, idx, b5.const(np.array([0, 0, 1, 2], i64)),
                                             b5.const(np.array(3, i64))], [((3, 3), "f32")], None, version="opset3",
                    names=["segments"])
    b5.result(y)
    edges = b5.const(np.array([-1.0, 0.0, 1.0], np.float32))
    (y,) = b5.layer("Bucketize", [x, edges], [((2, 6), "i64")], {"output_type": "i64", "with_right_bound": "true"},
                    version="opset3", names=["buckets"])
    b5.result(y)
    (y,) = b5.layer("SearchSorted", [edges, x], [((2, 6), "i64")], {"right_mode": "false"}, version="opset15",
                    names=["searched"])
    b5.result(y)
    (y,) = b5.layer("ShuffleChannels", [x], [((2, 6), "f32")], {"axis": 1, "group": 3}, version="opset1")
    (y,) = b5.layer("GRN", [y], [((2, 6), "f32")], {"bias": 1.0}, version="opset1")
    blocks = [b5.const(np.array(v, i64)) for v in ([1, 2], [0, 0], [0, 0])]
    (y,) = b5.layer("SpaceToBatch", [y, *blocks], [((4, 3), "f32")], None, version="opset2")
    (y,) = b5.layer("BatchToSpace", [y, *blocks], [((2, 6), "f32")], None, version="opset2", names=["moved"])
    b5.result(y)
    (y,) = b5.layer("Col2Im", [c, b5.const(np.array([3, 3], i64)), b5.const(np.array([2, 2], i64))],
                    [((1, 1, 3, 3), "f32")], {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [0, 0],
                                              "pads_end": [0, 0]}, version="opset15", names=["folded"])
    b5.result(y)
    x5, c5 = rng.normal(size=(2, 6)).astype(np.float32), rng.normal(size=(1, 4, 4)).astype(np.float32)
    return [("bn_lrn_mvn1", b, {"x": x1}), ("bn1_dynamic", b2, {"x": x2}), ("unary_chain", b3, {"x": x3}),
            ("indexing", b4, {"x": x4, "i": np.array([5, -2], np.int64)}), ("export_ops", b5, {"x": x5, "c": c5})]


def _load_seeds() -> list[Seed]:
    seeds = []
    for p in sorted((SAMPLES / "ir").glob("*.xml")):
        n = p.stem
        seeds.append(Seed(n, p.read_bytes(), p.with_suffix(".bin").read_bytes(),
                          load_npz(SAMPLES / "data" / f"{n}.inputs.npz"),
                          load_npz(SAMPLES / "data" / f"{n}.expected.npz")))
    for n in EXPORT_SEEDS:
        p = EXPORTS / f"{n}.xml"
        seeds.append(Seed(n, p.read_bytes(), p.with_suffix(".bin").read_bytes(),
                          load_npz(EXPORTS / f"{n}.inputs.npz"), load_npz(EXPORTS / f"{n}.expected.npz")))
    for n, b, feeds in _built_seeds():
        seeds.append(Seed(n, b.to_xml().encode(), bytes(b.weights), feeds, None))
    for s in seeds:
        s.tree = etree.fromstring(s.xml, etree.XMLParser(remove_blank_text=False))
    return seeds


SEEDS = _load_seeds()
_WORKDIR = tempfile.mkdtemp(prefix="irnorm-fuzz-")
atexit.register(shutil.rmtree, _WORKDIR, True)


def _bf16_fix(model: Model, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    feeds = dict(feeds)
    for spec in model.inputs:
        if spec.element_type == "bf16" and spec.name in feeds and feeds[spec.name].dtype.kind in "uV":
            feeds[spec.name] = feeds[spec.name].view(spec.dtype)
    return feeds


def baseline_unfused(seed: Seed) -> dict[str, np.ndarray]:
    """irnorm's outputs for the unmutated seed with the planner's fusions off (computed once)."""
    if seed.baseline_unfused is None:
        baseline(seed)
        xml = Path(_WORKDIR) / f"seed-{seed.name}" / "model.xml"
        seed.baseline_unfused = irnorm.load(xml, fuse=False).run(seed.inputs)
    return seed.baseline_unfused


def baseline(seed: Seed) -> dict[str, np.ndarray]:
    """irnorm's outputs for the unmutated seed (computed once; also warms the kernels up)."""
    if seed.baseline is None:
        d = Path(_WORKDIR) / f"seed-{seed.name}"
        d.mkdir(exist_ok=True)
        xml = d / "model.xml"
        xml.write_bytes(seed.xml)
        xml.with_suffix(".bin").write_bytes(seed.weights)
        m = irnorm.load(xml)
        seed.inputs = _bf16_fix(m, seed.inputs)
        seed.baseline = m.run(seed.inputs)
        if seed.expected is not None:
            for k, exp in seed.expected.items():
                rtol, atol = TOL[seed.baseline[k].dtype.name]
                np.testing.assert_allclose(seed.baseline[k].astype(np.float64), exp.astype(np.float64),
                                           rtol=rtol, atol=atol)
    return seed.baseline


# ---- value strategies ---------------------------------------------------------------------------

PRECISION_WORDS = ["FP32", "FP16", "BF16", "FP64", "I64", "I32", "I8", "U8", "U64", "BOOL", "I4", "U1", "STRING",
                   "UNSPECIFIED", "dynamic", "fp32", "f32", "FP33"]
WORDS = ["", " ", "0", "1", "-1", "2", "3", "4", "6", "12", "-0", "+3", "007", "true", "false", "True", "yes",
         "1e-5", "-1e-5", "0.5", "2.7", "1e-45", "1e38", "3.5e38", "1e308", "1e309", "nan", "inf", "-inf", "NaN",
         "9223372036854775807", "9223372036854775808", "-9223372036854775809", "18446744073709551616",
         "4294967296", "2147483648", "1,2", "0,1", "-1,-2", "1, 2, 3", "1,,2", ",", "0,0", "1,12,6,6", "?", "...",
         "1..10", "?,?", "-1,3", "[1,2]", "f32", "f16", "bf16", "f64", "i64", "i32", "i8", "u8", "u64", "boolean",
         "u1", "string", "dynamic", "undefined", "add", "max", "Max", "inside_sqrt", "outside_sqrt", "INSIDE_SQRT",
         "instance", "group", "layer", "uniform", "channel", "elementwise", "numpy", "none", "pdpd", "explicit",
         "bidirectional", "٣", "²", "1_0", "0x10", "1 2", "\t5\n", "é", "a" * 300, "9" * 100, "1," * 50 + "1"]
WORDS += PRECISION_WORDS


def _xml_text(max_size: int = 12) -> st.SearchStrategy[str]:
    return st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=max_size)


def attr_values() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(WORDS),
        st.integers(-(1 << 70), 1 << 70).map(str),
        st.integers(-3, 64).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.lists(st.integers(-6, 12), max_size=6).map(lambda v: ",".join(map(str, v))),
        st.lists(st.sampled_from(["?", "-1", "0", "1", "2", "3", "1..4", "8"]), max_size=6).map(",".join),
        _xml_text(),
    )


DIM_WORDS = ["-1", "0", "1", "2", "3", "4", "5", "6", "7", "8", "12", "64", "100000", "2147483648",
             "4611686018427387904", "9223372036854775807", "9223372036854775808", "-2", "", "abc", "1.5", " 3 ", "+4",
             "٣", "?", "1" * 45]
ATTR_NAMES = ["epsilon", "eps", "eps_mode", "num_groups", "axis", "axes", "shape", "element_type", "offset", "size",
              "destination_type", "normalize_variance", "across_channels", "reduction_axes", "keep_dims", "mode",
              "special_zero", "auto_broadcast", "batch_dims", "alpha", "beta", "bias", "power", "shift", "scale",
              "stash_type", "id", "name", "type", "version", "precision", "names", "from-layer", "to-layer",
              "from-port", "to-port", "output_names", "bogus", "Epsilon", "xmlns:xi"]
UNKNOWN_TYPES = ["Foo", "TensorIterator", "If", "Loop", "Softmax", "Convolution", "parameter", "CONST", ""]
VERSIONS = ["opset1", "opset2", "opset3", "opset4", "opset5", "opset6", "opset8", "opset12", "opset15", "opset17",
            "opset18", "opset99", "opset0", "opset-1", "irnorm1", "irnorm2", "opset", "extension", "", " opset1 "]
INJECT = ["<body/>", "<then_body/>", "<port_map/>", "<pre-process/>", "<foo/>", "<data/>", "<data epsilon='1'/>",
          "<input/>", "<output/>", "<input><port id='99'/></input>",
          "<output><port id='98' precision='FP32'/></output>",
          "<rt_info><attribute name='decompression' version='0'/></rt_info>", "<rt_info><foo/></rt_info>",
          "<dim>3</dim>", "<port id='0'><dim>1</dim></port>", "<edge from-layer='0' from-port='0' to-layer='1'/>",
          "<layer id='77' name='x' type='Result' version='opset1'><input><port id='0'/></input></layer>",
          "<layer/>", "<edges/>", "<layers/>"]
SPECIAL_I64 = [0, 1, -1, 2, 3, 5, -5, 100, -100, (1 << 31) - 1, -(1 << 31), (1 << 63) - 1, -(1 << 63), 1 << 40]
SPECIAL_F32 = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, 3.4e38, -1.0, 1e-30]


def _all_types() -> list[str]:
    from irnorm.ops.base import all_ops

    return sorted({c.type for c in all_ops()})


TYPES = _all_types() + UNKNOWN_TYPES


# ---- mutations -------------------------------------------------------------------------------------


def _layers(root: etree._Element) -> list[etree._Element]:
    el = root.find("layers")
    return [] if el is None else [c for c in el if c.tag == "layer"]


def _edges(root: etree._Element) -> list[etree._Element]:
    el = root.find("edges")
    return [] if el is None else [c for c in el if c.tag == "edge"]


def _ports(root: etree._Element) -> list[etree._Element]:
    return [p for lay in _layers(root) for side in ("input", "output") for s in lay.findall(side)
            for p in s.findall("port")]


def _elements(root: etree._Element) -> list[etree._Element]:
    return [e for e in root.iter() if isinstance(e.tag, str)]


def _pick(data: st.DataObject, items: list, label: str):
    if not items:
        return None
    return items[data.draw(st.integers(0, len(items) - 1), label=label)]


def _in_const(el: etree._Element) -> bool:
    """Whether the element belongs to a Const layer (its offset/size/shape/type decide what bytes are read)."""
    while el is not None and el.tag != "layer":
        el = el.getparent()
    return el is not None and (el.get("type") or "").lower() == "const"


def _set(el: etree._Element, key: str, value: str) -> None:
    try:
        el.set(key, value)
    except ValueError:  # lxml refuses names/values XML cannot hold; such files cannot be written anyway
        pass


class Mutator:
    """Applies drawn mutations to one seed's tree and weights."""

    def __init__(self, seed: Seed, data: st.DataObject):
        self.seed = seed
        self.root = copy.deepcopy(seed.tree)
        self.weights: bytearray | None = bytearray(seed.weights)
        self.data = data
        self.applied: list[str] = []
        self.garbled = False  # weights bytes changed or read from elsewhere: constants may be any bit pattern

    def draw(self, strategy: st.SearchStrategy, label: str):
        return self.data.draw(strategy, label=label)

    # attributes (on any element: layer, data, port, edge, net)
    def attr_drop(self) -> None:
        el = _pick(self.data, [e for e in _elements(self.root) if e.attrib], "element")
        if el is not None:
            key = _pick(self.data, sorted(el.attrib), "attribute")
            del el.attrib[key]
            self.garbled |= _in_const(el)

    def attr_rewrite(self) -> None:
        el = _pick(self.data, [e for e in _elements(self.root) if e.attrib], "element")
        if el is not None:
            key = _pick(self.data, sorted(el.attrib), "attribute")
            _set(el, key, self.draw(attr_values(), "value"))
            self.garbled |= _in_const(el)

    def attr_plausible(self) -> None:
        """Rewrite a declared <data> attribute with a value of its own kind (a float epsilon, a small integer,
        the other bool, another enum member, a short axes list): such files often still load, and must then
        compute what the operator's definition says (the reference oracle)."""
        from irnorm.ops.base import lookup

        cands = []
        for lay in _layers(self.root):
            cls = lookup(lay.get("type") or "", lay.get("version") or "")
            data_el = lay.find("data")
            if cls is not None and data_el is not None:
                cands.extend((data_el, a) for a in cls.schema.attrs)
        pick = _pick(self.data, cands, "declared attribute")
        if pick is None:
            return
        el, a = pick
        kind = getattr(a.parse, "__name__", "")
        if kind.startswith("enum("):
            value = self.draw(st.sampled_from(kind[5:-1].split("|")), "member")
        elif kind == "parse_bool":
            value = self.draw(st.sampled_from(["true", "false"]), "bool")
        elif kind == "parse_float":
            value = self.draw(st.one_of(st.sampled_from(["0", "1e-12", "1e-05", "0.001", "0.5", "1", "2", "10"]),
                                        st.floats(1e-9, 100).map(repr)), "float")
        elif kind == "parse_int_list":
            value = self.draw(st.lists(st.integers(-4, 4), max_size=4).map(lambda v: ",".join(map(str, v))),
                              "ints")
        elif kind == "_element_type":
            value = self.draw(st.sampled_from(["f32", "f16", "f64", "bf16", "i64", "i32", "u8", "boolean"]), "type")
        elif kind == "parse_shape":
            return
        else:
            value = self.draw(st.integers(-2, 8).map(str), "int")
        _set(el, a.name, value)
        self.garbled |= _in_const(el)

    def attr_nudge(self) -> None:
        """Small arithmetic change of a numeric attribute (offset+1, size-1, num_groups*2, ...)."""
        cands = [(e, k) for e in _elements(self.root) for k, v in e.attrib.items()
                 if re.fullmatch(r"-?[0-9]{1,30}", v.strip())]
        pick = _pick(self.data, cands, "numeric attribute")
        if pick is not None:
            el, key = pick
            v = int(el.get(key))
            op = self.draw(st.sampled_from(["+", "*", "neg"]), "op")
            d = self.draw(st.integers(-3, 3), "delta")
            _set(el, key, str(v + d if op == "+" else v * d if op == "*" else -v))
            self.garbled |= _in_const(el)

    def attr_add(self) -> None:
        el = _pick(self.data, [e for e in _elements(self.root) if e.tag in ("data", "layer", "port", "edge", "net")],
                   "element")
        if el is not None:
            key = self.draw(st.one_of(st.sampled_from(ATTR_NAMES), st.from_regex(r"[a-z_]{1,8}", fullmatch=True)),
                            "name")
            _set(el, key, self.draw(attr_values(), "value"))

    def attr_copy(self) -> None:
        """Copy an attribute (name and value) from one element to another (duplicated epsilon, shape ...)."""
        src = _pick(self.data, [e for e in _elements(self.root) if e.attrib], "from element")
        dst = _pick(self.data, _elements(self.root), "to element")
        if src is not None and dst is not None:
            key = _pick(self.data, sorted(src.attrib), "attribute")
            _set(dst, key, src.get(key))
            self.garbled |= _in_const(dst)

    # dims
    def dim_change(self) -> None:
        d = _pick(self.data, [e for e in self.root.iter("dim")], "dim")
        if d is not None:
            d.text = self.draw(st.one_of(st.sampled_from(DIM_WORDS), st.integers(-3, 20).map(str)), "dim")

    def dim_add(self) -> None:
        p = _pick(self.data, _ports(self.root), "port")
        if p is not None:
            el = etree.Element("dim")
            el.text = self.draw(st.sampled_from(DIM_WORDS[:8]), "dim")
            p.insert(self.draw(st.integers(0, len(p)), "at"), el)

    def _drop(self, items: list, label: str) -> None:
        """Remove one drawn element of `items` (nothing when there are none)."""
        el = _pick(self.data, items, label)
        if el is not None:
            el.getparent().remove(el)

    def _duplicate(self, items: list, label: str) -> None:
        """Insert a copy of one drawn element of `items` right after it."""
        el = _pick(self.data, items, label)
        if el is not None:
            el.addnext(copy.deepcopy(el))

    def dim_drop(self) -> None:
        self._drop(list(self.root.iter("dim")), "dim")

    # ports
    def port_drop(self) -> None:
        self._drop(_ports(self.root), "port")

    def port_duplicate(self) -> None:
        self._duplicate(_ports(self.root), "port")

    def port_id(self) -> None:
        p = _pick(self.data, _ports(self.root), "port")
        if p is not None:
            _set(p, "id", self.draw(st.one_of(st.integers(-1, 6).map(str), st.sampled_from(WORDS[:20])), "id"))

    def port_precision(self) -> None:
        p = _pick(self.data, _ports(self.root), "port")
        if p is not None:
            _set(p, "precision", self.draw(st.sampled_from(PRECISION_WORDS), "precision"))

    # edges
    def edge_drop(self) -> None:
        self._drop(_edges(self.root), "edge")

    def edge_duplicate(self) -> None:
        self._duplicate(_edges(self.root), "edge")

    def edge_retarget(self) -> None:
        e = _pick(self.data, _edges(self.root), "edge")
        if e is None:
            return
        key = self.draw(st.sampled_from(["from-layer", "from-port", "to-layer", "to-port"]), "end")
        ids = [lay.get("id") or "" for lay in _layers(self.root)]
        value = self.draw(st.one_of(st.sampled_from(ids or ["0"]), st.integers(-1, 12).map(str)), "target")
        _set(e, key, value)

    def edge_add(self) -> None:
        lays = _layers(self.root)
        parent = self.root.find("edges")
        if not lays or parent is None:
            return
        src, dst = _pick(self.data, lays, "from"), _pick(self.data, lays, "to")
        sp = _pick(self.data, src.findall("output/port"), "from port")
        dp = _pick(self.data, dst.findall("input/port"), "to port")
        fp = (sp.get("id") if sp is not None else "0") or ""
        tp = (dp.get("id") if dp is not None else "0") or ""
        etree.SubElement(parent, "edge", {"from-layer": src.get("id") or "", "from-port": fp,
                                          "to-layer": dst.get("id") or "", "to-port": tp})

    # layers
    def layer_drop(self) -> None:
        self._drop(_layers(self.root), "layer")

    def layer_duplicate(self) -> None:
        lay = _pick(self.data, _layers(self.root), "layer")
        if lay is not None:
            dup = copy.deepcopy(lay)
            if self.draw(st.booleans(), "new id"):
                dup.set("id", str(1000 + len(_layers(self.root))))
            lay.addnext(dup)

    def layer_type(self) -> None:
        lay = _pick(self.data, _layers(self.root), "layer")
        if lay is not None:
            lay.set("type", self.draw(st.sampled_from(TYPES), "type"))
            self.garbled |= _in_const(lay)

    def layer_version(self) -> None:
        lay = _pick(self.data, _layers(self.root), "layer")
        if lay is not None:
            lay.set("version", self.draw(st.sampled_from(VERSIONS), "version"))

    def inject(self) -> None:
        el = _pick(self.data, _elements(self.root), "parent")
        if el is not None:
            el.append(etree.fromstring(self.draw(st.sampled_from(INJECT), "element")))

    def element_drop(self) -> None:
        self._drop([e for e in _elements(self.root) if e.getparent() is not None], "element")

    # scale: many copies of one thing, so that work superlinear in a count shows up against TIME_BOUND
    def amplify(self) -> None:
        """Repeat a layer, port, dim, edge or attribute hundreds to thousands of times (duplicate ids, a chain
        of copies, many attributes): checking must stay fast and report, not hang."""
        kind = self.draw(st.sampled_from(["layer", "port", "dim", "edge", "attr", "chain", "cycle-chain"]), "what")
        k = self.draw(st.sampled_from([10, 100, 1000, 3000]), "copies")
        if kind == "attr":
            el = _pick(self.data, [e for e in _elements(self.root)], "element")
            if el is not None:
                for i in range(k):
                    el.set(f"x{i}", str(i))
            return
        if kind in ("chain", "cycle-chain"):  # k fresh Sqrt layers chained below a layer (or below a new cycle)
            lays = _layers(self.root)
            src = _pick(self.data, [lay for lay in lays if lay.find("output/port") is not None], "source")
            edges, layers_el = self.root.find("edges"), self.root.find("layers")
            if src is None or edges is None or layers_el is None:
                return
            prev, port = src.get("id") or "0", src.find("output/port").get("id") or "0"
            if kind == "cycle-chain":
                for lid in ("99998", "99999"):
                    layers_el.append(etree.fromstring(
                        f'<layer id="{lid}" name="cycle{lid}" type="Add" version="opset1"><input><port id="0"/>'
                        f'<port id="1"/></input><output><port id="2"/></output></layer>'))
                for a, b, tp in ((prev, "99998", "0"), ("99998", "99999", "0"), ("99999", "99998", "1")):
                    etree.SubElement(edges, "edge", {"from-layer": a, "from-port": port if a == prev else "2",
                                                     "to-layer": b, "to-port": tp})
                etree.SubElement(edges, "edge", {"from-layer": prev, "from-port": port, "to-layer": "99999",
                                                 "to-port": "1"})
                prev, port = "99999", "2"
            for i in range(k):
                lid = str(100000 + i)
                layers_el.append(etree.fromstring(
                    f'<layer id="{lid}" name="chain{i}" type="Sqrt" version="opset1"><input><port id="0"/></input>'
                    f'<output><port id="1"/></output></layer>'))
                etree.SubElement(edges, "edge", {"from-layer": prev, "from-port": port, "to-layer": lid,
                                                 "to-port": "0"})
                prev, port = lid, "1"
            return
        pool = {"layer": _layers(self.root), "port": _ports(self.root), "dim": list(self.root.iter("dim")),
                "edge": _edges(self.root)}[kind]
        el = _pick(self.data, pool, kind)
        if el is not None:
            for _ in range(k):
                el.addnext(copy.deepcopy(el))

    # weights
    def bin_truncate(self) -> None:
        self.garbled = True
        if self.weights is not None:
            del self.weights[self.draw(st.integers(0, len(self.weights)), "length"):]

    def bin_corrupt(self) -> None:
        self.garbled = True
        if not self.weights:
            return
        kind = self.draw(st.sampled_from(["byte", "i64", "f32", "f16", "snan32", "snan16"]), "kind")
        n = len(self.weights)
        if kind == "byte":
            i = self.draw(st.integers(0, n - 1), "at")
            self.weights[i] = self.draw(st.integers(0, 255), "byte")
            return
        size = {"i64": 8, "f32": 4, "f16": 2, "snan32": 4, "snan16": 2}[kind]
        if n < size:
            return
        i = self.draw(st.integers(0, (n - size) // size), "slot") * size
        if kind == "i64":
            v = np.array([self.draw(st.sampled_from(SPECIAL_I64), "value")], np.int64)
        elif kind.startswith("snan"):  # signalling NaNs: widening one raises the 'invalid' flag
            v = np.array([0x7F800001], np.uint32) if kind == "snan32" else np.array([0x7C01], np.uint16)
        else:
            with np.errstate(over="ignore"):
                v = np.array([self.draw(st.sampled_from(SPECIAL_F32), "value")],
                             np.float32 if kind == "f32" else np.float16)
        self.weights[i:i + size] = v.tobytes()

    def bin_extend(self) -> None:
        self.garbled = True
        if self.weights is not None:
            self.weights += self.draw(st.binary(min_size=1, max_size=64), "tail")

    def bin_missing(self) -> None:
        self.garbled = True
        self.weights = None

    # meaning-preserving
    def _shuffle(self, parent_tag: str, children: list) -> None:
        """Put the children of <parent_tag> back in a drawn order."""
        parent = self.root.find(parent_tag)
        if parent is not None and children:
            order = self.draw(st.permutations(range(len(children))), "order")
            for c in children:
                parent.remove(c)
            for i in order:
                parent.append(children[i])

    def shuffle_layers(self) -> None:
        self._shuffle("layers", _layers(self.root))

    def shuffle_edges(self) -> None:
        self._shuffle("edges", _edges(self.root))

    def renumber_layers(self) -> None:
        lays = _layers(self.root)
        ids = self.draw(st.lists(st.integers(0, 10 ** 6), min_size=len(lays), max_size=len(lays), unique=True),
                        "ids")
        mapping = {lay.get("id"): str(i) for lay, i in zip(lays, ids, strict=True) if lay.get("id") is not None}
        for lay in lays:
            if lay.get("id") is not None:
                lay.set("id", mapping[lay.get("id")])
        for e in _edges(self.root):
            for k in ("from-layer", "to-layer"):
                if e.get(k) in mapping:
                    e.set(k, mapping[e.get(k)])

    def renumber_ports(self) -> None:
        lay = _pick(self.data, _layers(self.root), "layer")
        if lay is None:
            return
        ports = lay.findall("input/port") + lay.findall("output/port")
        if not ports:
            return
        ids = self.draw(st.lists(st.integers(0, 999), min_size=len(ports), max_size=len(ports), unique=True), "ids")
        old = [p.get("id") for p in ports]
        mapping = {o: str(n) for o, n in zip(old, ids, strict=True) if o is not None}
        for p in ports:
            if p.get("id") is not None:
                p.set("id", mapping[p.get("id")])
        lid = lay.get("id")
        for e in _edges(self.root):
            if e.get("from-layer") == lid and e.get("from-port") in mapping:
                e.set("from-port", mapping[e.get("from-port")])
            if e.get("to-layer") == lid and e.get("to-port") in mapping:
                e.set("to-port", mapping[e.get("to-port")])

    def _parameter_dim(self, want_dynamic: bool):
        """A (Parameter layer, dim index, its input array) whose dim is static (or dynamic), or None."""
        cands = []
        for lay in _layers(self.root):
            port, data_el = lay.find("output/port"), lay.find("data")
            if lay.get("type") != "Parameter" or port is None or data_el is None:
                continue
            names = [lay.get("name")] + (port.get("names") or "").split(",")
            arr = next((self.seed.inputs[n] for n in names if n in self.seed.inputs), None)
            parts = [p.strip() for p in (data_el.get("shape") or "").split(",")]
            if arr is None or len(parts) != arr.ndim or len(port.findall("dim")) != arr.ndim:
                continue
            cands.extend((lay, i, arr) for i, p in enumerate(parts) if (p in ("?", "-1") or ".." in p) == want_dynamic)
        return _pick(self.data, cands, "parameter dim")

    def _set_dim(self, lay: etree._Element, i: int, text: str, dim: str) -> None:
        data_el = lay.find("data")
        parts = [p.strip() for p in data_el.get("shape").split(",")]
        parts[i] = text
        data_el.set("shape", ",".join(parts))
        lay.find("output/port").findall("dim")[i].text = dim

    def dynamize(self) -> None:
        """Make one input dim dynamic: the same inputs must give bit-identical outputs through the
        dynamic path (no folding of shape subgraphs, shapes re-inferred on every run)."""
        pick = self._parameter_dim(want_dynamic=False)
        if pick is not None:
            lay, i, _ = pick
            self._set_dim(lay, i, self.draw(st.sampled_from(["?", "-1", "1..4096"]), "dynamic dim"), "-1")

    def staticize(self) -> None:
        """Make one dynamic input dim static at the size the seed's inputs have."""
        pick = self._parameter_dim(want_dynamic=True)
        if pick is not None:
            lay, i, arr = pick
            self._set_dim(lay, i, str(arr.shape[i]), str(arr.shape[i]))

    def comment(self) -> None:
        el = _pick(self.data, _elements(self.root), "parent")
        if el is not None:
            el.insert(self.draw(st.integers(0, len(el)), "at"), etree.Comment(" fuzz "))

    def reorder_attrs(self) -> None:
        el = _pick(self.data, [e for e in _elements(self.root) if len(e.attrib) > 1], "element")
        if el is not None:
            items = list(el.attrib.items())
            order = self.draw(st.permutations(range(len(items))), "order")
            el.attrib.clear()
            for i in order:
                el.set(*items[i])


PRESERVING = ("shuffle_layers", "shuffle_edges", "renumber_layers", "renumber_ports", "comment", "reorder_attrs",
              "dynamize", "dynamize", "staticize")
BREAKING = ("attr_drop", "attr_rewrite", "attr_rewrite", "attr_plausible", "attr_plausible", "attr_plausible",
            "attr_plausible", "attr_nudge", "attr_add", "attr_copy", "dim_change", "dim_add",
            "dim_drop", "port_drop", "port_duplicate", "port_id", "port_precision", "edge_drop", "edge_duplicate",
            "edge_retarget", "edge_add", "layer_drop", "layer_duplicate", "layer_type", "layer_version", "inject",
            "element_drop", "amplify", "bin_truncate", "bin_corrupt", "bin_corrupt", "bin_extend", "bin_missing")


# ---- the checks -------------------------------------------------------------------------------


class FuzzFailure(AssertionError):
    """An outcome the contract forbids (wrong exception, undocumented code, wrong outputs, too slow)."""


def _check_diags(diags: list, where: str) -> None:
    for d in diags:
        if d.code not in CODES:
            raise FuzzFailure(f"{where}: undocumented code {d.code}: {d}")
        if d.severity not in ("error", "warning"):
            raise FuzzFailure(f"{where}: bad severity {d.severity!r}")
        d.format()
        if "cannot handle these inputs" in d.message:  # graph.py's safety net caught an op rule's crash
            raise FuzzFailure(f"{where}: an operation's rule crashed (caught as IRN032): {d}")


@dataclass(frozen=True)
class InputPlan:
    """How to make random inputs: a numpy seed, the kind of values, the sizes given to dynamic dims in turn."""

    seed: int = 0
    kind: str = "normal"  # normal | nan | snan | inf | zeros | huge | tiny
    dims: tuple[int, ...] = (2,)


INPUT_KINDS = ["normal", "normal", "normal", "nan", "snan", "inf", "zeros", "huge", "tiny"]
input_plans = st.builds(InputPlan, st.integers(0, 2 ** 32 - 1), st.sampled_from(INPUT_KINDS),
                        st.lists(st.integers(1, 4), min_size=1, max_size=6).map(tuple))


def random_inputs(model: Model, plan: InputPlan) -> dict[str, np.ndarray] | None:
    """Inputs of the declared shapes and dtypes (dynamic dims from plan.dims), sometimes with NaN/Inf/zeros/extremes;
    None when they would be larger than MAX_INPUT_ELEMENTS."""
    rng = np.random.default_rng(plan.seed)
    kind = plan.kind
    dyn = iter(plan.dims * 64)
    feeds = {}
    for spec in model.inputs:
        shape = tuple(next(dyn) if d == -1 else d for d in spec.shape)
        if int(np.prod(shape, dtype=object)) > MAX_INPUT_ELEMENTS:
            return None
        dt = spec.dtype
        if dt.kind == "b":
            a = rng.integers(0, 2, shape).astype(dt)
        elif dt.kind in "iu":
            info = np.iinfo(dt)
            lo, hi = (info.min, info.max) if kind == "huge" else (max(info.min, -3), 4)
            a = rng.integers(lo, hi, shape, dtype=dt, endpoint=True)
            if kind == "zeros":
                a[...] = 0
        else:
            a = rng.standard_normal(shape)
            flat = a.reshape(-1)
            if flat.size:
                if kind == "nan":
                    flat[rng.integers(0, flat.size)] = np.nan
                elif kind == "inf":
                    flat[rng.integers(0, flat.size)] = rng.choice([np.inf, -np.inf])
                elif kind == "zeros":
                    flat[:] = 0
                elif kind == "huge":
                    flat *= 3e38
                elif kind == "tiny":
                    flat *= 1e-40
            with np.errstate(over="ignore"):
                a = a.astype(dt)
            if kind == "snan" and a.size and dt.itemsize in (2, 4, 8):  # a signalling NaN, bit for bit
                bits = {2: (np.uint16, 0x7C01 if dt == np.float16 else 0x7F81), 4: (np.uint32, 0x7F800001),
                        8: (np.uint64, 0x7FF0000000000001)}[dt.itemsize]
                a.reshape(-1).view(bits[0])[rng.integers(0, a.size)] = bits[1]
        feeds[spec.name] = a
    return feeds


def _check_outputs(model: Model, feeds: dict[str, np.ndarray], out: dict[str, np.ndarray]) -> None:
    names = [s.name for s in model.outputs]
    if list(out) != names:
        raise FuzzFailure(f"outputs {list(out)} but the model declares {names}")
    for spec in model.outputs:
        a = out[spec.name]
        if not isinstance(a, np.ndarray):
            raise FuzzFailure(f"output {spec.name} is a {type(a).__name__}")
        if a.dtype != spec.dtype:
            raise FuzzFailure(f"output {spec.name} has dtype {a.dtype}, declared {spec.dtype}")
        if a.ndim != len(spec.shape) or any(e != -1 and d != e for d, e in zip(a.shape, spec.shape, strict=True)):
            raise FuzzFailure(f"output {spec.name} has shape {a.shape}, declared {spec.shape}")
        if any(np.shares_memory(a, x) for x in feeds.values()):
            raise FuzzFailure(f"output {spec.name} shares memory with an input")


def _extreme_constants(model: Model) -> bool:
    """Whether any constant of the model holds a float that is not finite or beyond 1e30 in magnitude."""
    for n in model.graph.nodes:
        for o in n.outputs:
            if o is not None and o.value is not None and o.value.dtype.kind in "fV":
                with np.errstate(invalid="ignore"):
                    v = np.abs(o.value.astype(np.float64))
                if not np.all(v <= 1e30):
                    return True
    return False


def run_case(xml: Path, plan: InputPlan | None, preserving_seed: Seed | None = None, garbled: bool = False) -> str:
    """Check, load and run one model file; return the outcome: invalid, refused (memory), loaded (not run),
    ran (meaning-preserving), ran-checked (against the reference), ran-mutated, ran-extreme (constants beyond
    1e30: not compared with the reference), input-error.
    Raises FuzzFailure (or the unexpected exception itself) on a broken contract."""
    diags = irnorm.check(xml)  # must never raise
    _check_diags(diags, "check")
    errors = [d for d in diags if d.severity == "error"]
    try:
        model = irnorm.load(xml, max_memory=MAX_MEMORY)
    except ResourceLimitError as e:
        _check_diags(e.diagnostics, "load")
        if errors and not all(d.code.startswith("IRN05") for d in errors):
            raise FuzzFailure(f"check reported {errors[0]} but load raised {e.code}") from None
        return "refused"
    except IrnormError as e:
        _check_diags(e.diagnostics, "load")
        if not errors:
            raise FuzzFailure(f"check found no error but load raised {e!r}") from None
        if preserving_seed is not None:
            raise FuzzFailure(f"a meaning-preserving mutation of {preserving_seed.name} was refused: {e}") from None
        return "invalid"
    if errors:
        raise FuzzFailure(f"check reported {errors[0]} but load succeeded")
    if preserving_seed is not None:
        feeds = preserving_seed.inputs
        out = model.run(feeds)
        _check_outputs(model, feeds, out)
        base = baseline(preserving_seed)
        if set(out) != set(base):
            raise FuzzFailure(f"outputs {sorted(out)} differ from the unmutated model's {sorted(base)}")
        for k, v in base.items():
            if out[k].dtype != v.dtype or out[k].shape != v.shape:
                raise FuzzFailure(f"output {k} is {out[k].dtype} {out[k].shape}, the unmutated model's {v.dtype} "
                                  f"{v.shape}")
        differ = [k for k, v in base.items() if out[k].tobytes() != v.tobytes()]
        if differ:
            # A dim made dynamic can turn a fusion off (the planner fuses what the declared shapes prove: an
            # exported LayerNorm's scale must keep the data's shape), and a fused step rounds differently
            # from the layers it covers. The unfused plans must still agree bit for bit, the fused outputs
            # within the fusion's tolerance.
            unfused = irnorm.load(xml, max_memory=MAX_MEMORY, fuse=False).run(feeds)
            base_unfused = baseline_unfused(preserving_seed)
            for k, v in base_unfused.items():
                if unfused[k].tobytes() != v.tobytes():
                    raise FuzzFailure(f"output {k} is not bit-identical to the unmutated model's (fusions off)")
            for k in differ:
                rtol, atol = TOL[out[k].dtype.name] if out[k].dtype.name in TOL else (0.0, 0.0)
                scale = max(1.0, float(np.nanmax(np.abs(base[k].astype(np.float64)), initial=0.0)))
                if not np.allclose(out[k].astype(np.float64), base[k].astype(np.float64), rtol=rtol,
                                   atol=atol * scale, equal_nan=True):
                    raise FuzzFailure(f"output {k} differs from the unmutated model's beyond the fusion tolerance")
        return "ran"
    if plan is None:
        return "loaded"
    feeds = random_inputs(model, plan)
    if feeds is None:
        return "loaded"
    frozen = {k: v.copy() for k, v in feeds.items()}
    try:
        out = model.run(feeds)
    except IrnormError as e:
        _check_diags(e.diagnostics, "run")
        return "input-error"
    for k, v in feeds.items():
        if v.tobytes() != frozen[k].tobytes():  # bit for bit (isnan on a signalling NaN would warn)
            raise FuzzFailure(f"run modified its input {k}")
    _check_outputs(model, feeds, out)
    if plan.kind == "normal" and REFERENCE_ORACLE and (garbled or _extreme_constants(model)):
        # Weights that are arbitrary bit patterns (corrupted .bin, a Const read at another offset or as another
        # type) or beyond 1e30 are ill-conditioned inputs: irnorm computes in float32 with coefficients combined
        # first (scale / sigma, x * a + c), so it overflows or cancels where the float64 reference, fed its own
        # float64 values layer by layer, does not.  Such models only have to run cleanly (above).
        return "ran-extreme"
    if plan.kind == "normal" and REFERENCE_ORACLE:
        # A mutated model that still loads must still compute the right thing: every layer against
        # irnorm's float64 reference (irnorm/reference.py via the workbench), default tolerances.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the float64 reference may overflow where irnorm's kernels do not
            report = irnorm.compare(model, "reference", feeds)
        fd = report.first_divergence
        if fd is not None:
            raise FuzzFailure(f"diverges from the float64 reference at {fd.where}: "
                              f"{fd.stats.summary() if fd.stats else fd.note}")
        return "ran-checked"
    return "ran-mutated"


def cli_case(xml: Path) -> None:
    """``irnorm validate --json`` and ``irnorm info --json`` on the file, in-process: exit 0 or 1 (never 3,
    the internal-error code), JSON that parses, and validate failing exactly when check found an error."""
    import contextlib
    import io
    import json

    from irnorm.cli import main

    has_errors = any(d.severity == "error" for d in irnorm.check(xml))
    for argv in (["validate", "--json", str(xml)], ["info", "--json", str(xml)]):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
                code = 0
            except SystemExit as e:
                code = e.code
        if code not in (0, 1) or "Traceback" in err.getvalue():
            raise FuzzFailure(f"irnorm {argv[0]} exited {code}: {err.getvalue()[-2000:]}")
        if argv[0] == "validate":
            report = json.loads(out.getvalue())
            if (code == 1) != has_errors or report[0]["ok"] == has_errors:
                raise FuzzFailure(f"validate exit {code} / ok={report[0]['ok']} but check has_errors={has_errors}")
        elif code == 0:
            json.loads(out.getvalue())


STATS: dict[str, int] = {}


def fuzz_example(data: st.DataObject, save_dir: str | None = None) -> None:
    """One structural fuzz example (the body of the hypothesis test)."""
    STATS["attempts"] = STATS.get("attempts", 0) + 1
    seed = data.draw(st.sampled_from(SEEDS), label="seed")
    baseline(seed)
    mut = Mutator(seed, data)
    n = data.draw(st.integers(0, 4), label="mutations")
    for _ in range(n):
        pool = BREAKING if data.draw(st.integers(0, 3), label="breaking?") else PRESERVING
        kind = data.draw(st.sampled_from(pool), label="mutation")
        getattr(mut, kind)()
        mut.applied.append(kind)
    preserving = all(k in PRESERVING for k in mut.applied)
    plan = data.draw(input_plans, label="inputs")
    with_cli = data.draw(st.integers(0, 5), label="cli?") == 3  # hypothesis favours 0: about 1 in 6
    xml = Path(_WORKDIR) / "model.xml"
    xml.write_bytes(etree.tostring(mut.root, xml_declaration=True, encoding="utf-8"))
    wpath = xml.with_suffix(".bin")
    if mut.weights is None:
        if wpath.exists():
            wpath.unlink()
    else:
        wpath.write_bytes(bytes(mut.weights))
    try:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            outcome = run_case(xml, plan, seed if preserving else None, mut.garbled)
        took = time.perf_counter() - t0
        if with_cli:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                cli_case(xml)
            STATS["cli"] = STATS.get("cli", 0) + 1
        bound = TIME_BOUND + TIME_PER_MB * xml.stat().st_size / 1e6
        if took > bound:  # re-time once: the first run of a new kernel specialization compiles it
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                run_case(xml, plan, seed if preserving else None, mut.garbled)
            took = time.perf_counter() - t0
            if took > bound:
                raise FuzzFailure(f"took {took:.2f} s, over the bound of {bound:.2f} s")
        STATS[outcome] = STATS.get(outcome, 0) + 1
        STATS["examples"] = STATS.get("examples", 0) + 1
    except BaseException:
        if save_dir:  # keep the (last, i.e. shrunk) failing files for a regression test
            os.makedirs(save_dir, exist_ok=True)
            Path(save_dir, "model.xml").write_bytes(xml.read_bytes())
            if wpath.exists():
                Path(save_dir, "model.bin").write_bytes(wpath.read_bytes())
            elif Path(save_dir, "model.bin").exists():
                Path(save_dir, "model.bin").unlink()
            Path(save_dir, "mutations.txt").write_text(f"{seed.name}: {' '.join(mut.applied)}\n{plan}\n")
        raise


def fuzz_settings(max_examples: int, seed: int | None = None) -> settings:
    return settings(max_examples=max_examples, deadline=None, derandomize=seed is None, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)


CI_EXAMPLES = int(os.environ.get("IRNORM_FUZZ_EXAMPLES", "200"))


@fuzz_settings(CI_EXAMPLES)
@given(st.data())
def test_structural_fuzz(data):
    fuzz_example(data, os.environ.get("IRNORM_FUZZ_SAVE"))


def test_fuzzer_reaches_every_outcome():
    """The mutations are neither all fatal nor all harmless: a fixed batch covers invalid files,
    runs with random inputs and meaning-preserving runs."""
    STATS.clear()

    @fuzz_settings(300)
    @given(st.data())
    def batch(data):
        fuzz_example(data)

    batch()
    assert STATS.get("invalid", 0) >= 10 and STATS.get("ran", 0) >= 10, STATS
    assert STATS.get("ran-checked", 0) + STATS.get("ran-mutated", 0) >= 10, STATS


def test_every_seed_is_valid_and_matches_its_expected_outputs():
    for s in SEEDS:
        out = baseline(s)  # compares with OpenVINO's stored outputs where there are some
        assert out, s.name


# ---- regressions ------------------------------------------------------------------------------------


def _regressions() -> list[Path]:
    return sorted(p for p in REGRESSIONS.glob("*") if p.suffix in (".xml", ".bytes"))


def _header(p: Path) -> tuple[set[str], InputPlan]:
    """A regression file starts with ``<!-- expect: IRN032 IRN030; inputs: kind=nan seed=5 dims=2,3 -->``: the
    codes it must produce and (optional) the inputs its run needs."""
    head = p.read_bytes()[:400].decode("utf-8", "replace")
    if "expect:" not in head:
        return set(), InputPlan()
    body = head.split("expect:", 1)[1].split("-->", 1)[0]
    codes, _, rest = body.partition(";")
    kw = dict(item.split("=", 1) for item in rest.replace("inputs:", "").split())
    plan = InputPlan(int(kw.get("seed", 0)), kw.get("kind", "normal"),
                     tuple(int(d) for d in kw.get("dims", "2").split(",")))
    return set(codes.split()), plan


@pytest.mark.parametrize("path", _regressions(), ids=lambda p: p.name)
def test_regression(path):
    """Every crash a fuzzer found, minimized: now a documented diagnostic (or, if it loads, a clean run)."""
    from fuzz_reader import check_bytes

    want, plan = _header(path)
    assert want, f"{path.name} must say which codes it expects"
    if path.suffix == ".bytes":  # byte-level (atheris) finds: the reader + graph builder only
        codes = {d.code for d in check_bytes(path.read_bytes())}
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            outcome = run_case(path, plan)
        codes = {d.code for d in irnorm.check(path)}
        if "none" in want:  # a file that must load and run cleanly
            assert outcome.startswith("ran") and not [d for d in irnorm.check(path) if d.severity == "error"], outcome
            return
    assert want <= codes, (path.name, sorted(codes))
