"""irnorm.dask.chunkfiles: uncompressed zarr chunks read and written as raw bytes must be exactly what
zarr reads and writes (v2 and v3 stores, an uneven last chunk, several zarr chunks per task), and
every layout it cannot do byte for byte -- and every surprise on disk -- must fall back to zarr."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
pytest.importorskip("dask")

import irnorm.dask  # noqa: E402
from irnorm.dask.chunkfiles import chunk_files, read_rows, write_rows  # noqa: E402


def _array(path: Path, data: np.ndarray, chunk_rows: int, fmt: int = 3, compressors=None, chunks=None):
    g = zarr.open_group(str(path), mode="w", zarr_format=fmt)
    a = g.create_array("grp/x" if fmt == 3 else "x", shape=data.shape, dtype=data.dtype,
                       chunks=chunks or (chunk_rows,) + data.shape[1:], compressors=compressors)
    a[:] = data
    return a


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("dtype", ["f4", "f8", "u1", "i8", "f2"])
def test_direct_reads_and_writes_are_zarrs_bytes(tmp_path, fmt, dtype):
    rng = np.random.default_rng(0)
    data = (rng.standard_normal((23, 3, 5)) * 50).astype(dtype)
    a = _array(tmp_path / "in.zarr", data, 4, fmt)
    cf = chunk_files(a)
    assert cf is not None and cf.chunk_rows == 4
    for lo, hi in [(0, 4), (4, 12), (8, 23), (20, 23), (0, 23)]:  # one, several, up to the uneven end
        got = read_rows(cf, lo, hi, slot=0)
        assert got is not None and got.dtype == data.dtype
        np.testing.assert_array_equal(got, data[lo:hi])
    for lo, hi in [(1, 4), (0, 5), (4, 22)]:  # not whole chunks: zarr's job
        assert read_rows(cf, lo, hi, slot=0) is None
    # writes: into a fresh array of the same layout, then read back by zarr itself
    b = _array(tmp_path / "out.zarr", np.zeros_like(data), 4, fmt)
    cb = chunk_files(b)
    for lo, hi in [(0, 8), (8, 20), (20, 23)]:
        assert write_rows(cb, lo, np.ascontiguousarray(data[lo:hi] + 1))
    assert not write_rows(cb, 2, data[2:4])  # not on a chunk boundary
    assert not write_rows(cb, 0, data[0:4].astype("f4" if dtype != "f4" else "f8"))  # another dtype
    assert not any(p.name.endswith(".partial") for p in (tmp_path / "out.zarr").rglob("*"))
    again = zarr.open_array(store=str(tmp_path / "out.zarr"), path="grp/x" if fmt == 3 else "x", mode="r")
    np.testing.assert_array_equal(again[:], data + 1)


def test_reads_across_chunks_reuse_a_buffer_per_slot(tmp_path):
    data = np.arange(40 * 6, dtype=np.float32).reshape(40, 6)
    cf = chunk_files(_array(tmp_path / "in.zarr", data, 10))
    a = read_rows(cf, 0, 20, slot=0)
    b = read_rows(cf, 20, 40, slot=0)
    c = read_rows(cf, 0, 20, slot=1)
    assert np.shares_memory(a, b) and not np.shares_memory(a, c)
    np.testing.assert_array_equal(b, data[20:40])
    np.testing.assert_array_equal(c, data[0:20])


def test_a_read_within_one_chunk_maps_the_file_copy_on_write(tmp_path):
    data = np.arange(40 * 6, dtype=np.float32).reshape(40, 6)
    a = _array(tmp_path / "in.zarr", data, 10)
    cf = chunk_files(a)
    buffered = read_rows(cf, 0, 20, slot=0)
    one = read_rows(cf, 20, 30, slot=0)
    assert not np.shares_memory(one, buffered)  # not the slot's buffer: a mapping of chunk 2's file
    np.testing.assert_array_equal(one, data[20:30])
    last = read_rows(cf, 30, 40, slot=0)
    np.testing.assert_array_equal(last, data[30:40])
    assert one.flags.writeable and one.flags.c_contiguous and one.dtype == np.float32
    one[:] = -1  # private: the file does not change
    np.testing.assert_array_equal(read_rows(cf, 20, 30, slot=0), data[20:30])
    np.testing.assert_array_equal(a[20:30], data[20:30])


def test_layouts_that_are_not_plain_bytes_go_through_zarr(tmp_path):
    data = np.ones((12, 4), np.float32)
    assert chunk_files(_array(tmp_path / "gz.zarr", data, 4, compressors="auto")) is None
    assert chunk_files(_array(tmp_path / "gz2.zarr", data, 4, fmt=2, compressors="auto")) is None
    assert chunk_files(_array(tmp_path / "cols.zarr", data, 4, chunks=(4, 2))) is None  # splits axis 1
    assert chunk_files(_array(tmp_path / "be.zarr", data.astype(">f4"), 4, fmt=2)) is None  # byte order
    mem = zarr.create_array(store=zarr.storage.MemoryStore(), shape=(12, 4), chunks=(4, 4), dtype="f4",
                            compressors=None)
    assert chunk_files(mem) is None  # not files on a local disk


def test_surprises_on_disk_fall_back_to_zarr(tmp_path):
    data = np.arange(48, dtype=np.float32).reshape(12, 4)
    a = _array(tmp_path / "in.zarr", data, 4)
    cf = chunk_files(a)
    os.unlink(cf.path(1))  # a missing chunk: zarr's fill value
    assert read_rows(cf, 0, 8, slot=0) is None
    with open(cf.path(2), "ab") as f:  # a chunk file of the wrong size
        f.write(b"\0")
    assert read_rows(cf, 8, 12, slot=0) is None
    assert read_rows(cf, 0, 4, slot=0) is not None


def _model(d: Path) -> Path:
    ov = pytest.importorskip("openvino")
    import openvino.opset12 as op

    x = op.parameter([-1, 4, 6], np.float32, name="x")
    y = op.mvn(x, op.constant(np.array([2], np.int64)), True, 1e-6, "inside_sqrt")
    y.output(0).set_names({"y"})
    from ovutil import save

    return save(ov.Model([y], [x], "mvn"), d, "mvn")


@pytest.mark.parametrize("fmt", [2, 3])
def test_run_zarr_direct_and_through_zarr_agree(tmp_path, monkeypatch, fmt):
    """The same run with the direct path and with IRNORM_ZARR_DIRECT=0 (zarr all the way): the same
    output bytes, including a missing input chunk (zarr's fill value) and an uneven last chunk."""
    xml = _model(tmp_path)
    rng = np.random.default_rng(5)
    data = rng.standard_normal((50, 4, 6)).astype(np.float32)
    g = zarr.open_group(str(tmp_path / "in.zarr"), mode="w", zarr_format=fmt)
    x = g.create_array("x", shape=data.shape, chunks=(5, 4, 6), dtype="f4", compressors=None)
    x[:] = data
    os.unlink(chunk_files(x).path(3))  # rows 15..19 read as zeros (the fill value) either way
    from irnorm.dask import chunkfiles

    outs, direct_reads, direct_writes = {}, [], []
    monkeypatch.setattr(chunkfiles, "read_rows", lambda *a: direct_reads.append(read_rows(*a)) or direct_reads[-1])
    monkeypatch.setattr(chunkfiles, "write_rows", lambda *a: direct_writes.append(write_rows(*a)) or direct_writes[-1])
    for direct in ("1", "0"):
        monkeypatch.setenv("IRNORM_ZARR_DIRECT", direct)
        out = tmp_path / f"out{direct}.zarr"
        r = irnorm.dask.run_zarr(xml, tmp_path / "in.zarr", out, chunk_rows=10)
        assert sorted(r.computed) == list(range(5))
        outs[direct] = zarr.open_group(str(out), mode="r")["y"][:]
    # the direct run read 4 of 5 chunks itself (rows 10..19 lack a file: zarr) and wrote all 5 and their
    # 5 markers; the other none
    assert sum(b is not None for b in direct_reads) == 4 and len(direct_reads) == 5
    assert direct_writes == [True] * 10
    assert outs["1"].tobytes() == outs["0"].tobytes()
    feed = data.copy()
    feed[15:20] = 0
    m = irnorm.load(xml)
    for lo in range(0, 50, 10):
        assert m.run({"x": feed[lo:lo + 10]})["y"].tobytes() == outs["1"][lo:lo + 10].tobytes()
