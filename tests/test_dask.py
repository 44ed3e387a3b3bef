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
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit="400MiB") as cluster, distributed.Client(cluster) as client:
        lazy = ird.run(xml, {"x": da.from_array(x, chunks=(500,) + rest)})["y"]
        got = client.compute(lazy).result()
    assert np.array_equal(got, irnorm.load(xml).run([x])["y"])
