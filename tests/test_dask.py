"""irnorm.dask: chunked runs on Dask, bit for bit equal to one process; the batch-axis refusal
(IRN070); zarr in and out through the CLI, resumed after a kill; a LocalCluster of 2 processes
under a memory limit well below the data, and with a worker killed mid-run.

Models are written by OpenVINO (save_model) with a dynamic batch dim."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dask.array")
pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")
ov = pytest.importorskip("openvino")

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import openvino.opset12 as op  # noqa: E402
from ovutil import save  # noqa: E402

import irnorm  # noqa: E402
import irnorm.dask  # noqa: E402
from irnorm.cli import main  # noqa: E402
from irnorm.dask import worker  # noqa: E402
from irnorm.dask.zarr_io import DONE  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


# ---- models -----------------------------------------------------------------------------


def _model(outputs, params, d: Path, name: str) -> Path:
    return save(ov.Model(outputs, params, name), d, name)


def _named(node, name: str):
    node.output(0).set_names({name})
    return node


def _const(a):
    return op.constant(np.asarray(a))


def l2norm(d: Path, dim: int = 384, name: str = "l2") -> Path:
    x = op.parameter([-1, dim], np.float32, name="x")
    y = _named(op.normalize_l2(x, _const(np.array([1], np.int64)), 1e-12, "add"), "y")
    return _model([y], [x], d, name)


def groupnorm(d: Path) -> Path:
    rng = np.random.default_rng(1)
    x = op.parameter([-1, 8, 5, 3], np.float32, name="x")
    y = _named(op.group_normalization(x, _const(rng.standard_normal(8).astype(np.float32)),
                                      _const(rng.standard_normal(8).astype(np.float32)), 4, 1e-5), "y")
    return _model([y], [x], d, "gn")


def layernorm(d: Path) -> Path:
    """The LayerNorm decomposition MVN + Multiply + Add; two outputs (the normalized and the affine)."""
    rng = np.random.default_rng(2)
    x = op.parameter([-1, 6, 16], np.float32, name="x")
    mvn = _named(op.mvn(x, _const(np.array([-1], np.int64)), True, 1e-5, "inside_sqrt"), "normed")
    y = _named(op.add(op.multiply(mvn, _const(rng.standard_normal(16).astype(np.float32))),
                      _const(rng.standard_normal(16).astype(np.float32))), "y")
    return _model([mvn, y], [x], d, "ln")


def reshape_shapeof(d: Path) -> Path:
    """Reshape [N,4,8] -> [N,32] with the target computed from ShapeOf (as exporters write it), then
    NormalizeL2 over the 32, and a second input added first: rows stay apart."""
    x = op.parameter([-1, 4, 8], np.float32, name="x")
    b = op.parameter([-1, 1, 8], np.float32, name="b")
    s = op.add(x, b)
    n = op.gather(op.shape_of(s), _const(np.array([0], np.int64)), _const(np.array(0, np.int64)))
    flat = op.reshape(s, op.concat([n, _const(np.array([-1], np.int64))], 0), False)
    y = _named(op.normalize_l2(flat, _const(np.array([1], np.int64)), 1e-6, "max"), "y")
    return _model([y], [x, b], d, "rs")


def mixed_ops(d: Path) -> Path:
    """Unsqueeze, ReduceMean over a non-batch axis, Squeeze, BatchNormInference, Exp: rows stay apart."""
    rng = np.random.default_rng(3)
    x = op.parameter([-1, 4, 8], np.float32, name="x")
    u = op.unsqueeze(x, _const(np.array([1], np.int64)))
    r = op.reduce_mean(u, _const(np.array([3], np.int64)), False)
    q = op.squeeze(r, _const(np.array([1], np.int64)))
    p = [_const(v.astype(np.float32)) for v in (rng.uniform(0.5, 2, 4), rng.standard_normal(4),
                                                  rng.standard_normal(4), rng.uniform(0.5, 2, 4))]
    bn = op.batch_norm_inference(q, *p, 1e-5)
    y = _named(op.exp(op.multiply(bn, _const(np.float32(0.1)))), "y")
    return _model([y], [x], d, "mix")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("dask_models")
    return {"l2": l2norm(d, 384), "l2s": l2norm(d, 64, "l2s"), "gn": groupnorm(d), "ln": layernorm(d),
            "rs": reshape_shapeof(d), "mix": mixed_ops(d)}


SHAPES = {"l2": (40, 384), "gn": (40, 8, 5, 3), "ln": (40, 6, 16), "rs": (40, 4, 8), "mix": (40, 4, 8)}


def _data(shape, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    # rows of very different scales, some all-zero: per-row statistics would show any mixing
    scale = 10.0 ** rng.integers(-3, 4, size=(shape[0],) + (1,) * (len(shape) - 1))
    x = (rng.standard_normal(shape) * scale + rng.standard_normal((shape[0],) + (1,) * (len(shape) - 1)))
    x[::7] = 0
    return x.astype(dtype)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _inputs(name: str, rows: int = 40, seed: int = 0) -> dict[str, np.ndarray]:
    shape = (rows,) + SHAPES[name][1:]
    feeds = {"x": _data(shape, seed)}
    if name == "rs":
        feeds["b"] = _data((rows, 1, 8), seed + 1)
    return feeds


# ---- irnorm.dask.run: bit for bit -------------------------------------------------------

CHUNKINGS = {"one chunk": 40, "uneven": (5, 20, 12, 3), "many": 3, "rows of one": 1}


def test_split_and_pad_off_the_batch_axis(tmp_path):
    """VariadicSplit and Pad keep the rows when they act on other axes; splitting the batch axis is refused."""
    x = op.parameter([-1, 6, 4], np.float32, name="x")
    a, b = op.variadic_split(x, _const(np.int64(1)), _const(np.array([2, 4], np.int64))).outputs()
    padded = op.pad(a, _const(np.array([0, 1, 0], np.int64)), _const(np.array([0, 1, 1], np.int64)), "reflect")
    y = _named(op.normalize_l2(op.concat([padded, op.pad(b, _const(np.array([0, 0, 0], np.int64)),
                                                          _const(np.array([0, 0, 1], np.int64)), "constant")], 1),
                               _const(np.array([1], np.int64)), 1e-6, "add"), "y")
    xml = _model([y], [x], tmp_path, "split_pad")
    rows = np.random.default_rng(4).standard_normal((7, 6, 4)).astype(np.float32)
    got = irnorm.dask.run(xml, {"x": da.from_array(rows, chunks=(3, 6, 4))})["y"].compute(scheduler="threads")
    assert _same_bits(got, irnorm.load(xml).run({"x": rows})["y"])
    z = _named(op.normalize_l2(op.variadic_split(x, _const(np.int64(0)), _const(np.array([1, -1], np.int64))).output(0),
                               _const(np.array([1], np.int64)), 1e-6, "add"), "z")
    bad = _model([z], [x], tmp_path, "split_rows")
    with pytest.raises(irnorm.IrnormError) as e:
        irnorm.dask.run(bad, {"x": da.from_array(rows, chunks=(3, 6, 4))})
    assert e.value.code == "IRN070" and "splits along the batch axis" in str(e.value)


def test_embedding_lookup_by_row_indices(tmp_path):
    """Gather from a constant table by indices that carry the rows (an embedding) keeps the batch axis."""
    rng = np.random.default_rng(3)
    ids = op.parameter([-1, 5], np.int64, name="ids")
    emb = op.gather(_const(rng.standard_normal((50, 8)).astype(np.float32)), ids, _const(np.int64(0)))
    y = _named(op.normalize_l2(emb, _const(np.array([2], np.int64)), 1e-6, "add"), "y")
    xml = _model([y], [ids], tmp_path, "emb")
    rows = rng.integers(0, 50, (9, 5)).astype(np.int64)
    got = irnorm.dask.run(xml, {"ids": da.from_array(rows, chunks=(4, 5))})["y"].compute(scheduler="threads")
    assert _same_bits(got, irnorm.load(xml).run({"ids": rows})["y"])


@pytest.mark.parametrize("name", ["resnet18_dynamic", "convnext_dynamic", "efficientnet_b0_dynamic",
                                  "resnetv2_bit_dynamic", "alexnet_dynamic"])
def test_real_network_in_chunks(name):
    """A real export (tests/networks, written by OpenVINO from a torchvision model, dynamic batch) runs
    chunked: bit for bit what one process computes on the same chunks, and equal to one run over all the
    rows up to the last bits of the BLAS layers (OpenBLAS picks its GEMM kernels by the matrix size, so
    a classifier's MatMul over 3 rows and over 7 can round differently)."""
    xml = ROOT / "tests" / "networks" / f"{name}.xml"
    feeds = dict(np.load(xml.with_suffix(".inputs.npz")))
    rng = np.random.default_rng(1)
    rows = {k: np.concatenate([v * np.float32(rng.uniform(0.5, 1.5)) for _ in range(4)])[:7] for k, v in feeds.items()}
    m = irnorm.load(xml)
    out = irnorm.dask.run(xml, {k: da.from_array(v, chunks=(3,) + v.shape[1:]) for k, v in rows.items()})
    got = dask.compute(out, scheduler="threads")[0]
    whole = m.run(rows)
    for k, v in got.items():
        chunks = [m.run({n: a[lo:lo + 3] for n, a in rows.items()})[k] for lo in (0, 3, 6)]
        assert _same_bits(v, np.concatenate(chunks)), k
        np.testing.assert_allclose(v, whole[k], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["l2", "gn", "ln", "rs", "mix"])
def test_run_equals_single_process_bit_for_bit(models, name):
    xml = models[name]
    feeds = _inputs(name)
    expected = irnorm.load(xml).run(feeds)
    for label, chunks in CHUNKINGS.items():
        arrays = {k: da.from_array(v, chunks=(chunks,) + tuple(-1 for _ in v.shape[1:])) for k, v in feeds.items()}
        out = irnorm.dask.run(xml, arrays)
        assert list(out) == list(expected)
        for k, y in out.items():
            # shapes, dtypes and chunks known before computing
            assert y.shape == expected[k].shape and y.dtype == expected[k].dtype, (label, k)
            assert y.chunks[0] == arrays["x"].chunks[0], (label, k)
        got = dask.compute(out, scheduler="threads")[0]
        for k in expected:
            assert _same_bits(got[k], expected[k]), f"{name}/{k} differs with {label} chunks"


def test_run_with_a_loaded_model_and_aliases_and_numpy(models):
    m = irnorm.load(models["l2"])
    x = _data((23, 384), 5)
    loads = sum(worker.loads.values())
    y = irnorm.dask.run(m, {"x": da.from_array(x, chunks=(6, 100))})["y"]  # chunks along axis 1 are merged
    assert y.chunks == ((6, 6, 6, 5), (384,))
    assert _same_bits(y.compute(), m.run({"x": x})["y"])
    assert sum(worker.loads.values()) == loads  # the threaded scheduler reused the model passed in
    z = irnorm.dask.run(models["l2"], {"x": x})["y"]  # a NumPy array: one chunk
    assert z.numblocks == (1, 1) and _same_bits(z.compute(), m.run({"x": x})["y"])


def test_run_input_errors(models):
    xml = models["rs"]
    x = da.zeros((10, 4, 8), dtype=np.float32, chunks=5)
    b = da.zeros((10, 1, 8), dtype=np.float32, chunks=5)
    with pytest.raises(irnorm.InputError) as e:
        irnorm.dask.run(xml, {"x": x})
    assert e.value.code == "IRN060" and "'b' is missing" in str(e.value)
    with pytest.raises(irnorm.InputError) as e:
        irnorm.dask.run(xml, {"x": x, "b": b, "c": b})
    assert e.value.code == "IRN060" and "unknown input 'c'" in str(e.value)
    with pytest.raises(irnorm.InputError) as e:
        irnorm.dask.run(xml, {"x": x.astype(np.float64), "b": b})
    assert e.value.code == "IRN062"
    with pytest.raises(irnorm.InputError) as e:
        irnorm.dask.run(xml, {"x": da.zeros((10, 4, 9), dtype=np.float32), "b": b})
    assert e.value.code == "IRN061"
    with pytest.raises(irnorm.InputError) as e:
        irnorm.dask.run(xml, {"x": x, "b": da.zeros((11, 1, 8), dtype=np.float32)})
    assert e.value.code == "IRN061" and "different numbers of rows" in str(e.value)
    # a second input chunked differently is rechunked to the first one's rows
    xs, bs = _data((10, 4, 8)), _data((10, 1, 8), 3)
    y = irnorm.dask.run(xml, {"x": da.from_array(xs, chunks=4), "b": da.from_array(bs, chunks=3)})["y"]
    assert y.chunks[0] == (4, 4, 2)
    assert _same_bits(y.compute(), irnorm.load(xml).run({"x": xs, "b": bs})["y"])


# ---- refusal: models that mix the batch axis --------------------------------------------


def _refused(d: Path, name: str, build) -> Path:
    x = op.parameter([-1, 4, 8], np.float32, name="x")
    node = build(x)
    node.set_friendly_name(f"{name}_layer")
    return _model([_named(node, "y")], [x], d, name)


REFUSED = {
    "reduce_over_batch": (lambda x: op.reduce_mean(x, _const(np.array([0, 2], np.int64)), True), "include the batch"),
    "mvn_over_batch": (lambda x: op.mvn(x, _const(np.array([0, 1], np.int64)), True, 1e-5, "inside_sqrt"),
                       "include the batch"),
    "l2_over_batch": (lambda x: op.normalize_l2(x, _const(np.array([-3, 1], np.int64)), 1e-6, "add"),
                      "include the batch"),
    "reshape_merges_batch": (lambda x: op.reshape(x, _const(np.array([-1, 8], np.int64)), False), "merging"),
    "concat_on_batch": (lambda x: op.concat([x, x], 0), "along the batch axis"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_models_mixing_rows_are_refused_at_plan_time(tmp_path, name):
    build, why = REFUSED[name]
    xml = _refused(tmp_path, name, build)
    irnorm.load(xml)  # a valid model: irnorm runs it in one process
    with pytest.raises(irnorm.ValidationError) as e:
        irnorm.dask.run(xml, {"x": da.zeros((6, 4, 8), dtype=np.float32, chunks=2)})
    d = e.value.errors[0]
    assert d.code == "IRN070" and d.layer_name == f"{name}_layer", d
    assert why in d.message
    assert "IRN070" in irnorm.CODES


def test_output_without_the_batch_axis_first_is_refused(tmp_path):
    x = op.parameter([-1, 4, 8], np.float32, name="x")
    t = op.unsqueeze(op.abs(x), _const(np.array([0], np.int64)))
    xml = _model([_named(t, "y")], [x], tmp_path, "unsq")
    with pytest.raises(irnorm.IrnormError) as e:
        irnorm.dask.run(xml, {"x": da.zeros((6, 4, 8), dtype=np.float32, chunks=2)})
    assert e.value.code == "IRN070"


# ---- zarr through the CLI ---------------------------------------------------------------


def _zarr_inputs(path: Path, arrays: dict[str, np.ndarray], chunk_rows: int, compressors=None) -> Path:
    g = zarr.open_group(str(path), mode="w")
    for k, v in arrays.items():
        g.create_array(k, shape=v.shape, chunks=(chunk_rows,) + v.shape[1:], dtype=v.dtype, compressors=compressors)
        g[k][:] = v
    return path


def _cli(*args: str) -> int:
    try:
        main([str(a) for a in args])
    except SystemExit as e:
        return e.code
    return 0


def test_cli_zarr_run_and_input_errors(models, tmp_path, capsys):
    feeds = _inputs("ln", rows=50)
    inp = _zarr_inputs(tmp_path / "in.zarr", feeds, 8, compressors="auto")
    out = tmp_path / "out.zarr"
    assert _cli("run", models["ln"], "--inputs", inp, "-o", out, "--chunk", 12) == 0
    text = capsys.readouterr()
    assert "wrote 50 rows" in text.out and "5 chunk(s) computed, 0 already done" in text.out
    expected = irnorm.load(models["ln"]).run(feeds)
    g = zarr.open_group(str(out), mode="r")
    for k in expected:
        assert g[k].chunks == (12, 6, 16)
        assert _same_bits(g[k][:], expected[k])
    assert g[DONE][:].tolist() == [1] * 5
    # the same on a LocalCluster of 2 worker processes
    assert _cli("run", models["ln"], "--inputs", inp, "-o", tmp_path / "out2.zarr", "--chunk", 7, "--workers", 2) == 0
    assert "8 chunk(s) computed" in capsys.readouterr().out
    g2 = zarr.open_group(str(tmp_path / "out2.zarr"), mode="r")
    assert all(_same_bits(g2[k][:], expected[k]) for k in expected)
    # again: nothing left to compute
    assert _cli("run", models["ln"], "--inputs", inp, "-o", out, "--chunk", 12) == 0
    assert "0 chunk(s) computed, 5 already done" in capsys.readouterr().out
    # an output group written by a different run is refused, not mixed
    assert _cli("run", models["ln"], "--inputs", inp, "-o", out, "--chunk", 10) == 1
    assert "[IRN065]" in capsys.readouterr().err
    # wrong dtype, wrong shape, missing input: coded errors, before any chunk runs
    bad = {"dtype": ({"x": feeds["x"].astype(np.float64)}, "IRN062"),
           "shape": ({"x": feeds["x"][:, :, :8].copy()}, "IRN061"),
           "missing": ({"z": feeds["x"]}, "IRN060")}
    for label, (arrays, code) in bad.items():
        p = _zarr_inputs(tmp_path / f"bad_{label}.zarr", arrays, 8)
        assert _cli("run", models["ln"], "--inputs", p, "-o", tmp_path / f"o_{label}.zarr") == 1
        err = capsys.readouterr().err
        assert f"[{code}]" in err and "Traceback" not in err, err
        assert not (tmp_path / f"o_{label}.zarr").exists()
    # a model that mixes rows: refused before the output is created
    ref = _refused(tmp_path, "reduce_over_batch", REFUSED["reduce_over_batch"][0])
    p = _zarr_inputs(tmp_path / "in3.zarr", {"x": _data((9, 4, 8))}, 3)
    assert _cli("run", ref, "--inputs", p, "-o", tmp_path / "o3.zarr") == 1
    assert "[IRN070]" in capsys.readouterr().err and not (tmp_path / "o3.zarr").exists()
    # zarr options without zarr paths
    assert _cli("run", models["ln"], "--workers", 2) == 2


def _chunk_files(out: Path, name: str) -> dict[str, tuple[int, int]]:
    root = out / name / "c"
    return {str(p.relative_to(root)): (p.stat().st_ino, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_cli_resume_after_kill_computes_only_missing_chunks(models, tmp_path):
    n, rows = 96, 3000
    feeds = {"x": _data((n * rows, 64), 7)}
    inp = _zarr_inputs(tmp_path / "in.zarr", feeds, rows)
    out = tmp_path / "out.zarr"
    cmd = [sys.executable, "-m", "irnorm", "run", str(models["l2s"]), "--inputs", str(inp), "-o", str(out),
           "--chunk", str(rows), "-q"]
    marks = out / DONE / "c"
    with subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if marks.is_dir() and len(list(marks.iterdir())) >= 3:
                break
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    done = zarr.open_group(str(out), mode="r")[DONE][:]
    # (a mark whose file the kill caught half-written reads as not done: on a loaded machine 2 of the 3 seen)
    assert 1 <= done.sum() < n, f"the kill did not land mid-run ({done.sum()} of {n} chunks done)"
    before = _chunk_files(out, "y")
    kept = {k: v for k, v in before.items() if done[int(k.split("/")[0])]}
    r = irnorm.dask.run_zarr(models["l2s"], inp, out, chunk_rows=rows)
    assert r.already_done == done.sum()
    assert sorted(r.computed) == [i for i in range(n) if not done[i]]
    after = _chunk_files(out, "y")
    assert all(after[k] == v for k, v in kept.items()), "a chunk written before the kill was rewritten"
    y = zarr.open_group(str(out), mode="r")["y"][:]
    assert _same_bits(y, irnorm.load(models["l2s"]).run(feeds)["y"])


# ---- a LocalCluster of 2 processes, memory-limited ---------------------------------------

MEMORY_LIMIT = 350 << 20


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit=MEMORY_LIMIT,
                     dashboard_address=":0", silence_logs=logging.ERROR)
    client = Client(c)
    yield c, client
    client.close()
    c.close()


def _check_zarr(xml: Path, inp: Path, out: Path, name: str, step: int) -> None:
    m = irnorm.load(xml)
    x = zarr.open_group(str(inp), mode="r")["x"]
    y = zarr.open_group(str(out), mode="r")[name]
    assert y.shape[0] == x.shape[0]
    for lo in range(0, x.shape[0], step):
        assert _same_bits(y[lo:lo + step], m.run({"x": x[lo:lo + step]})[name]), f"rows {lo}.."


def test_cluster_processes_data_several_times_its_memory_limit(models, tmp_path, cluster):
    c, client = cluster
    rows, chunk = 800_000, 5_000  # 1.2 GB of f32 [N, 384] in, as much out: 3.5x a worker's limit each
    g = zarr.open_group(str(tmp_path / "in.zarr"), mode="w")
    x = g.create_array("x", shape=(rows, 384), chunks=(chunk, 384), dtype="f4", compressors=None)
    rng = np.random.default_rng(3)
    for lo in range(0, rows, 100_000):
        x[lo:lo + 100_000] = rng.random((100_000, 384), dtype=np.float32) - 0.5
    assert x.nbytes > 3 * MEMORY_LIMIT
    pids = client.run(os.getpid)
    r = irnorm.dask.run_zarr(models["l2"], tmp_path / "in.zarr", tmp_path / "out.zarr", chunk_rows=chunk,
                             scheduler=c.scheduler_address)
    assert len(r.computed) == r.chunks == rows // chunk
    assert client.run(os.getpid) == pids, "a worker was restarted"
    key = worker.model_key(models["l2"])
    assert set(client.run(lambda: worker.loads[key]).values()) == {1}, "each worker loads the model once"
    _check_zarr(models["l2"], tmp_path / "in.zarr", tmp_path / "out.zarr", "y", 100_000)


def test_run_arrays_on_the_cluster(models, cluster):
    c, client = cluster
    feeds = _inputs("ln", rows=600, seed=4)
    x = da.from_array(feeds["x"], chunks=(50, 6, 16))
    out = irnorm.dask.run(models["ln"], {"x": x})
    got = client.compute(out, sync=True)
    expected = irnorm.load(models["ln"]).run(feeds)
    assert all(_same_bits(got[k], expected[k]) for k in expected)
    key = worker.model_key(models["ln"])
    counts = client.run(lambda: worker.loads[key])
    assert max(counts.values()) == 1 and sum(counts.values()) >= 1, counts


def test_real_network_on_the_cluster_same_bits(cluster):
    """ResNetV2-BiT (its stem convolution a product large enough to be cut into blocks, kernels/blas.py)
    in worker processes, which Dask starts with OPENBLAS_NUM_THREADS=1: the bits of a run in this
    process on the same chunks (they followed the BLAS thread count on AVX2 machines before)."""
    c, client = cluster
    xml = ROOT / "tests" / "networks" / "resnetv2_bit_dynamic.xml"
    feeds = dict(np.load(xml.with_suffix(".inputs.npz")))
    rows = {k: np.concatenate([v, v[::-1] * np.float32(0.5), v])[:5] for k, v in feeds.items()}
    out = irnorm.dask.run(xml, {k: da.from_array(v, chunks=(3,) + v.shape[1:]) for k, v in rows.items()})
    got = client.compute(out, sync=True)
    m = irnorm.load(xml)
    for k, v in got.items():
        chunks = [m.run({n: a[lo:lo + 3] for n, a in rows.items()})[k] for lo in (0, 3)]
        assert _same_bits(v, np.concatenate(chunks)), k


def test_cluster_survives_a_worker_killed_mid_run(models, tmp_path, cluster):
    c, client = cluster
    rows, chunk = 120_000, 1_000
    feeds = {"x": _data((rows, 8, 5, 3), 11)}
    inp = _zarr_inputs(tmp_path / "in.zarr", feeds, chunk)
    out = tmp_path / "out.zarr"
    pids = client.run(os.getpid)
    killed: dict[str, int] = {}

    def killer():
        marks = out / DONE / "c"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if marks.is_dir() and len(list(marks.iterdir())) >= 2:
                victim = sorted(pids.values())[0]
                killed["done"] = len(list(marks.iterdir()))
                os.kill(victim, signal.SIGKILL)
                killed["pid"] = victim
                return
            time.sleep(0.002)

    t = threading.Thread(target=killer)
    t.start()
    r = irnorm.dask.run_zarr(models["gn"], inp, out, chunk_rows=chunk, scheduler=c.scheduler_address)
    t.join()
    assert killed.get("pid") and killed["done"] < r.chunks, f"the kill did not land mid-run: {killed}"
    assert len(r.computed) == r.chunks and sorted(r.computed) == list(range(r.chunks))
    assert zarr.open_group(str(out), mode="r")[DONE][:].all()
    _check_zarr(models["gn"], inp, out, "y", 20_000)
    client.wait_for_workers(2, timeout=60)
    assert killed["pid"] not in client.run(os.getpid).values()
