"""Replays the op conformance table (tests/conformance/): every row against its float64 oracle, and
against OpenVINO's CPU plugin where OpenVINO can build the op (skipped cleanly without OpenVINO)."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest
from conformance import Case, Row, all_rows
from irbuilder import IRBuilder, element_type
from ovutil import HAVE_OPENVINO, TOLERANCE, assert_close, compare_with_openvino, save

import irnorm
from irnorm.ops.base import all_ops

ROWS = all_rows()
# OpenVINO's CPU plugin computes f64 models in float32: hold them to float32's tolerance.
OV_F64_TOL = TOLERANCE["float32"]


def _f64_out(case: Case) -> bool:
    return any(v.dtype == np.float64 for v in case.inputs)


def _rng(row: Row, salt: int) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(row.op.encode()) + salt)


def _feeds(case: Case) -> dict[str, np.ndarray]:
    return {f"in{i}": case.inputs[i] for i in case.params}


def _irnorm_xml(row: Row, case: Case, expected: list[np.ndarray], directory: Path) -> Path:
    """The case as one layer in an IR written by tests/irbuilder.py; output dims and element
    types are left for irnorm to infer (declared dynamic)."""
    b = IRBuilder(row.type)
    srcs = []
    for i, v in enumerate(case.inputs):
        if i in case.params:
            dims = [-1] * v.ndim if case.dynamic else v.shape
            srcs.append(b.parameter(f"in{i}", dims, element_type(v.dtype)))
        else:
            srcs.append(b.const(v, f"const{i}"))
    outs = b.layer(row.type, srcs, [([-1] * e.ndim, "dynamic") for e in expected], dict(case.attrs),
                   version=row.opset, names=[f"y{k}" for k in range(len(expected))])
    for o in outs:
        b.result(o)
    return b.save(directory)


def test_every_registered_op_has_a_row():
    """The table covers the registry (Parameter/Const/Result and irnorm's extension ops aside)."""
    covered = {r.op for r in ROWS}
    assert len(covered) == len(ROWS), "two rows for one op"
    known = {cls.label() for cls in all_ops()}
    assert covered <= known, f"rows for ops irnorm does not register: {sorted(covered - known)}"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.op)
def test_against_reference(row: Row, tmp_path):
    rng = _rng(row, 0)
    for k in range(row.cases):
        case = row.sample(rng)
        expected = [np.asarray(e) for e in row.reference(case)]
        xml = _irnorm_xml(row, case, expected, tmp_path / str(k))
        got = irnorm.load(xml).run(_feeds(case))
        assert len(got) == len(expected), f"{row.op} case {k}: {len(got)} outputs, reference {len(expected)}"
        for j, (g, e) in enumerate(zip(got.values(), expected, strict=True)):
            what = f"{row.op} case {k} ({case.label}) output {j}"
            if g.dtype.kind in "iub":
                assert g.shape == e.shape and np.array_equal(g, e), what
            else:
                assert_close(g, e, what, row.tol.get(g.dtype.name, (0.0, 0.0)))


def _ov_const(v: np.ndarray):
    """An OpenVINO Constant for any value, empty ones included (opset1.constant refuses those)."""
    import openvino as ov
    import openvino.opset1 as op1

    if v.size:
        return op1.constant(v)
    return ov.op.Constant(ov.Type(v.dtype), ov.Shape(list(v.shape)), [])


def _ov_model(row: Row, case: Case):
    import openvino as ov
    import openvino.opset1 as op1

    nodes, params = [], []
    for i, v in enumerate(case.inputs):
        if i in case.params:
            ptype = ov.Type.bf16 if v.dtype.name == "bfloat16" else v.dtype
            shape = ov.PartialShape([-1] * v.ndim) if case.dynamic else ov.PartialShape(list(v.shape))
            p = op1.parameter(shape, ptype, name=f"in{i}")
            params.append(p)
            nodes.append(p)
        else:
            nodes.append(_ov_const(v))
    built = row.openvino(nodes, case)
    outs = built.outputs() if hasattr(built, "outputs") else list(built)
    results = []
    for k, o in enumerate(outs):
        o.get_tensor().set_names({f"y{k}"})
        results.append(op1.result(o))
    return ov.Model(results, params, row.type)


@pytest.mark.skipif(not HAVE_OPENVINO, reason="openvino (test dependency) is not installed")
@pytest.mark.parametrize("row", [r for r in ROWS if r.openvino is not None], ids=lambda r: r.op)
def test_against_openvino(row: Row, tmp_path):
    """bf16 cases are drawn (so the draws match the reference test's stream) but compared with the
    oracle only: whether OpenVINO's CPU plugin runs an op in bf16 depends on the CPU's instruction set."""
    rng = _rng(row, 1)
    compared = 0
    for k in range(row.cases):
        case = row.sample(rng)
        if case.not_openvino or any(v.dtype.name == "bfloat16" for v in case.inputs):
            continue
        compared += 1
        xml = save(_ov_model(row, case), tmp_path, f"case{k}")
        got = compare_with_openvino(xml, _feeds(case), tol=OV_F64_TOL if _f64_out(case) else None)
        assert got, f"{row.op} case {k}: no outputs"
    assert compared, f"{row.op}: every drawn case was bf16; nothing was compared with OpenVINO"
