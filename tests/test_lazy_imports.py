"""What a fresh process imports: `irnorm --help`, `validate` and `info` never import Numba, and nothing that runs
an f32 model imports ml_dtypes (its 0.7 release takes ~0.5 s to import: irnorm/ir/dtypes.py), while a bf16 model
still loads it on demand and runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "ir" / "group_norm.xml"
BF16_SAMPLE = ROOT / "samples" / "ir" / "group_norm_bf16_in.xml"
NETWORKS = ROOT / "tests" / "networks"

CLI_SCRIPT = r"""
import json, sys
from irnorm.cli import main
sys.argv = ["irnorm"] + sys.argv[1:]
try:
    main()
except SystemExit as e:
    code = e.code
else:
    code = 0
print(json.dumps({"code": code, "numba": "numba" in sys.modules, "ml_dtypes": "ml_dtypes" in sys.modules}))
"""

RUN_SCRIPT = r"""
import json, sys
import numpy as np
import irnorm
outs = {}
for xml in sys.argv[1:]:
    m = irnorm.load(xml)
    inputs = xml[:-4] + ".inputs.npz"
    try:
        with np.load(inputs) as z:
            feeds = {k: z[k] for k in z.files}
    except FileNotFoundError:
        feeds = {s.name: np.ones(s.shape, np.float32).astype(s.dtype) for s in m.inputs}
    res = m.run(feeds)
    outs[xml] = {k: [str(v.dtype), float(np.asarray(v, np.float64).sum())] for k, v in res.items()}
print(json.dumps({"ml_dtypes": "ml_dtypes" in sys.modules, "outs": outs}))
"""


def _last_json(args: list[str]) -> dict:
    r = subprocess.run([sys.executable, "-c", *args], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [["--help"], ["validate", str(SAMPLE)], ["info", str(SAMPLE)]],
                         ids=["help", "validate", "info"])
def test_cli_without_kernels_imports_neither_numba_nor_ml_dtypes(args: list[str]) -> None:
    got = _last_json([CLI_SCRIPT, *args])
    assert got == {"code": 0, "numba": False, "ml_dtypes": False}


def test_f32_models_run_without_ml_dtypes() -> None:
    models = [SAMPLE, NETWORKS / "resnet18_static.xml", NETWORKS / "bert_static.xml"]
    got = _last_json([RUN_SCRIPT, *map(str, models)])
    assert got["ml_dtypes"] is False
    assert set(got["outs"]) == {str(m) for m in models}
    for outs in got["outs"].values():
        assert outs and all(np.isfinite(s) for _, s in outs.values())


def test_bf16_model_imports_ml_dtypes_on_demand() -> None:
    """A fresh process, so ml_dtypes is not already imported by another test: the bf16 input's dtype is
    recognized, the model runs, and its output matches the same process-independent float64 figure as
    a run in this (test) process."""
    import irnorm

    got = _last_json([RUN_SCRIPT, str(BF16_SAMPLE)])
    assert got["ml_dtypes"] is True
    m = irnorm.load(BF16_SAMPLE)
    feeds = {s.name: np.ones(s.shape, np.float32).astype(s.dtype) for s in m.inputs}
    assert m.inputs[0].dtype.name == "bfloat16"
    here = {k: [str(v.dtype), float(np.asarray(v, np.float64).sum())] for k, v in m.run(feeds).items()}
    assert got["outs"][str(BF16_SAMPLE)] == here


OPS_SCRIPT = r"""
import json, sys
import irnorm
from irnorm.errors import IrnormError
from irnorm.ops import base
ops = lambda: sorted(m.split(".")[-1] for m in sys.modules if m.startswith("irnorm.ops."))
report = {}
try:
    irnorm.load(sys.argv[1]).run
    report["loaded"] = ops()
except IrnormError as e:
    report["error"] = [d.code for d in e.diagnostics]
report["all_loaded"] = base._loaded
print(json.dumps(report))
"""


def test_a_model_imports_only_its_own_ops_modules(tmp_path) -> None:
    """Checking the sample (Parameter, Const, GroupNormalization, Result) imports the modules that register
    those types and no other op module; a layer type the index does not know makes lookup import them all,
    so the error can still say which versions exist."""
    got = _last_json([OPS_SCRIPT, str(SAMPLE)])
    assert got == {"loaded": ["base", "group_normalization", "index", "io"], "all_loaded": False}
    xml = SAMPLE.read_text().replace('type="GroupNormalization"', 'type="NoSuchOperation"', 1)
    assert xml != SAMPLE.read_text()
    (tmp_path / "m.xml").write_text(xml)
    (tmp_path / "m.bin").write_bytes(SAMPLE.with_suffix(".bin").read_bytes())
    got = _last_json([OPS_SCRIPT, str(tmp_path / "m.xml")])
    assert got["all_loaded"] is True and got["error"]


def test_op_index_lists_each_type_with_the_modules_that_register_it() -> None:
    """The generated index against the registry as every module registers it (tools/gen_docs.py --check
    compares the file's text too): every registered type is listed with exactly its classes' modules."""
    from irnorm.ops import OP_MODULES, load_all
    from irnorm.ops.base import _REGISTRY
    from irnorm.ops.index import MODULES_BY_TYPE

    load_all()
    assert set(MODULES_BY_TYPE) == set(_REGISTRY)
    for type_, classes in _REGISTRY.items():
        assert set(MODULES_BY_TYPE[type_]) <= set(OP_MODULES)
        assert {c.__module__.rsplit(".", 1)[-1] for c in classes} <= set(MODULES_BY_TYPE[type_]), type_
