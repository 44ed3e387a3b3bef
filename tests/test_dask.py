"""irnorm.dask: models written by OpenVINO with a dynamic batch run chunk by chunk on dask, bit for bit
equal to one in-memory run; models that mix rows of the batch axis are refused with IRN070; a
distributed LocalCluster of worker processes gives the same answer."""

from __future__ import annotations

import numpy as np
import pytest
from ovutil import save

import irnorm

da = pytest.importorskip("dask.array")
ird = pytest.importorskip("irnorm.dask")
ov = pytest.importorskip("openvino")
op1 = pytest.importorskip("openvino.opset1")
op6 = pytest.importorskip("openvino.opset6")
op12 = pytest.importorskip("openvino.opset12")


def _named(node, name="y"):
    node.output(0).get_tensor().set_names({name})
    return node


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("dask")
    rng = np.random.default_rng(0)
    out = {}
    x = op1.parameter([-1, 16, 4, 4], np.float32, name="x")
    gn = op12.group_normalization(x, op1.constant(rng.standard_normal(16).astype(np.float32)),
                                  op1.constant(rng.standard_normal(16).astype(np.float32)), 4, 1e-5)
    out["gn"] = (save(ov.Model([op1.result(_named(gn))], [x]), d, "gn"), (16, 4, 4))
    x = op1.parameter([-1, 384], np.float32, name="x")
    l2 = op1.normalize_l2(x, op1.constant(np.array([1], np.int64)), 1e-12, "add")
    out["l2"] = (save(ov.Model([op1.result(_named(l2))], [x]), d, "l2"), (384,))
    x = op1.parameter([-1, 5, 32], np.float32, name="x")
    ln = op6.mvn(x, op1.constant(np.array([-1], np.int64)), True, 1e-5, "inside_sqrt")
    ln = op1.add(op1.multiply(ln, op1.constant(rng.standard_normal(32).astype(np.float32))),
                 op1.constant(rng.standard_normal(32).astype(np.float32)))
    out["ln"] = (save(ov.Model([op1.result(_named(ln))], [x]), d, "ln"), (5, 32))
    x = op1.parameter([-1, 8], np.float32, name="x")
    bad = op1.subtract(x, op1.reduce_mean(x, op1.constant(np.array([0], np.int64)), True))
    out["batchmean"] = (save(ov.Model([op1.result(_named(bad))], [x]), d, "batchmean"), (8,))
    return out


@pytest.mark.parametrize("name", ["gn", "l2", "ln"])
@pytest.mark.parametrize("chunks", [(25,), (7, 7, 7, 4), (1,) * 5 + (20,)], ids=["one", "uneven", "many"])
def test_chunked_run_is_bit_identical_to_one_run(models, name, chunks):
    xml, rest = models[name]
    x = np.random.default_rng(1).standard_normal((25,) + rest).astype(np.float32) * 3 + 1
    lazy = ird.run(xml, {"x": da.from_array(x, chunks=(chunks,) + tuple((d,) for d in rest))})["y"]
    assert lazy.shape == x.shape and lazy.dtype == np.float32 and lazy.chunks[0] == chunks  # known before compute
    assert np.array_equal(lazy.compute(), irnorm.load(xml).run([x])["y"])


def test_a_model_that_mixes_the_batch_axis_is_refused(models):
    xml, rest = models["batchmean"]
    x = da.zeros((10,) + rest, chunks=(5,) + rest, dtype=np.float32)
    with pytest.raises(irnorm.ValidationError) as e:
        ird.run(xml, {"x": x})
    assert e.value.code == "IRN070" and "reduces over the batch axis" in e.value.diagnostics[0].message
    assert e.value.diagnostics[0].layer_type == "ReduceMean"


def test_inputs_are_checked_before_anything_runs(models):
    xml, rest = models["gn"]
    with pytest.raises(irnorm.InputError) as e:
        ird.run(xml, {"nosuch": da.zeros((2,) + rest, dtype=np.float32)})
    assert e.value.code == "IRN060"
    with pytest.raises(irnorm.InputError) as e:
        ird.run(xml, {"x": da.zeros((2,) + rest, dtype=np.float64)})
    assert e.value.code == "IRN062"
    with pytest.raises(irnorm.InputError) as e:
        ird.run(xml, {"x": da.zeros((2, 15, 4, 4), dtype=np.float32)})
    assert e.value.code == "IRN061"


def test_a_local_cluster_of_processes_gives_the_same_answer(models):
    distributed = pytest.importorskip("distributed")
    xml, rest = models["l2"]
    x = np.random.default_rng(2).standard_normal((4000,) + rest).astype(np.float32)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  memory_limit="400MiB") as cluster, distributed.Client(cluster) as client:
        lazy = ird.run(xml, {"x": da.from_array(x, chunks=(500,) + rest)})["y"]
        got = client.compute(lazy).result()
    assert np.array_equal(got, irnorm.load(xml).run([x])["y"])


def _zarr_input(path, x, chunk):
    import zarr

    g = zarr.open_group(str(path), mode="w")
    g.create_array("x", shape=x.shape, dtype=x.dtype, chunks=(chunk,) + x.shape[1:])[:] = x
    return path


def test_cli_runs_over_zarr_and_resumes_an_interrupted_run(models, tmp_path, capsys):
    import shutil

    import zarr

    from irnorm.cli import main

    xml, rest = models["gn"]
    x = np.random.default_rng(3).standard_normal((23,) + rest).astype(np.float32)
    src = _zarr_input(tmp_path / "in.zarr", x, 5)
    out = tmp_path / "out.zarr"
    with pytest.raises(SystemExit) as e:
        main(["run", str(xml), "--inputs", str(src), "-o", str(out), "--json"])
    captured = capsys.readouterr()
    assert e.value.code == 0, captured.err
    report = __import__("json").loads(captured.out)
    assert report["chunks"] == 5 and report["computed"] == 5 and report["skipped"] == 0
    want = irnorm.load(xml).run([x])["y"]
    assert np.array_equal(zarr.open_group(str(out), mode="r")["y"][:], want)
    # an interruption: two chunks never flagged done (their data lost); the rerun redoes those two only
    g = zarr.open_group(str(out), mode="r+")
    g["irnorm_done"][1] = 0
    g["irnorm_done"][3] = 0
    g["y"][5:10] = 0
    kept = zarr.open_group(str(out), mode="r")["y"][:5].copy()
    with pytest.raises(SystemExit) as e:
        main(["run", str(xml), "--inputs", str(src), "-o", str(out), "--json", "--chunk", "5"])
    captured = capsys.readouterr()
    assert e.value.code == 0, captured.err
    report = __import__("json").loads(captured.out) and report["computed"] == 2 and report["skipped"] == 3
    got = zarr.open_group(str(out), mode="r")["y"][:]
    assert np.array_equal(got, want) and np.array_equal(got[:5], kept)
    shutil.rmtree(out)


def test_cli_zarr_input_problems_are_coded_before_any_work(models, tmp_path, capsys):
    import zarr

    from irnorm.cli import main

    xml, rest = models["gn"]
    g = zarr.open_group(str(tmp_path / "bad.zarr"), mode="w")
    g.create_array("x", shape=(4,) + rest, dtype=np.float64, chunks=(2,) + rest)
    g.create_array("other", shape=(4, 3), dtype=np.float32, chunks=(2, 3))
    with pytest.raises(SystemExit) as e:
        main(["run", str(xml), "--inputs", str(tmp_path / "bad.zarr"), "-o", str(tmp_path / "o.zarr"), "--json"])
    data = __import__("json").loads(capsys.readouterr().out)
    assert e.value.code == 1 and data["error"]["code"] == "IRN062" and not (tmp_path / "o.zarr").exists()
    g2 = zarr.open_group(str(tmp_path / "missing.zarr"), mode="w")
    g2.create_array("q", shape=(4,) + rest, dtype=np.float32, chunks=(2,) + rest)
    with pytest.raises(SystemExit) as e:
        main(["run", str(xml), "--inputs", str(tmp_path / "missing.zarr"), "-o", str(tmp_path / "o2.zarr")])
    assert e.value.code == 1 and "IRN060" in capsys.readouterr().err
