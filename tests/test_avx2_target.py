"""irnorm's GEMM kernels where Numba compiles for AVX2 without AVX-512 (an AVX2-only x86-64 such as Zen 3 or
Haswell-Skylake client cores), checked on any machine: a process of its own compiles for Haswell
(NUMBA_CPU_NAME=haswell, NUMBA_CPU_FEATURES= so the name alone sets the features).  There the kernels run with
6 x 16 tiles; the same process checks products against a float64 one and real networks against the outputs
OpenVINO stored.  A target without AVX2 keeps OpenBLAS's products (the bits of np.matmul)."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT

HASWELL = {"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": ""}

# the networks whose convolutions, products and attention take the kernels' paths (conv: implicit GEMM, pointwise,
# pixel rows; linear layers; attention), compared as tests/test_real_networks.py compares them
NETWORKS = ("resnet18_static", "efficientnet_b0_static", "swin_static", "bert_static")

_AVX2_CHECK = """
import numpy as np
import irnorm
from irnorm.kernels import blas, microgemm

assert microgemm.ENABLED and not microgemm.AVX512, (microgemm.ENABLED, microgemm.AVX512)
assert (microgemm.MR, microgemm.NR) == (6, 16), (microgemm.MR, microgemm.NR)
rng = np.random.default_rng(3)
shapes = [(1, 1, 1), (6, 16, 5), (7, 17, 3), (65, 192, 64), (64, 1024, 147), (3, 7, 2 * microgemm.KC + 5),
          (13, 8, 20), (5, 9, 700)]
shapes += [tuple(int(v) for v in rng.integers(1, (80, 110, 900))) for _ in range(30)]
for m, n, k in shapes:
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    microgemm.gemm(m, n, k, a.ctypes.data, k, b.ctypes.data, n, c.ctypes.data, n, 0, n)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    bound = (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)) * (k + 1) * 2.0 ** -23
    assert np.all(np.abs(c - ref) <= bound + 1e-30), (m, n, k)
blas.enter()
a = rng.standard_normal((3, 65, 64)).astype(np.float32)
b = rng.standard_normal((64, 192)).astype(np.float32)
out = np.empty((3, 65, 192), np.float32)
blas.product(a, b, out, None)
np.testing.assert_allclose(out, np.matmul(a.astype(np.float64), b), rtol=1e-5, atol=1e-4)
for name in NETWORKS:
    stem = NETWORKS_DIR + "/" + name
    with np.load(stem + ".inputs.npz") as z:
        feeds = {k: z[k] for k in z.files}
    with np.load(stem + ".expected.npz") as z:
        expected = {k: z[k] for k in z.files}
    model = irnorm.load(stem + ".xml")
    got = model.run(feeds)
    atol = 1e-4 * max(1.0, max(float(np.abs(v).max()) for v in expected.values()))
    for key, want in expected.items():
        np.testing.assert_allclose(np.asarray(got[key], np.float64), want, rtol=1e-4, atol=atol, err_msg=name)
print("ok")
"""

_NO_AVX2_CHECK = """
import numpy as np
from irnorm.kernels import blas, microgemm

assert not microgemm.ENABLED
rng = np.random.default_rng(5)
blas.enter()
a = rng.standard_normal((3, 65, 64)).astype(np.float32)
b = rng.standard_normal((64, 192)).astype(np.float32)
out = np.empty((3, 65, 192), np.float32)
blas.product(a, b, out, None)
assert np.array_equal(out, np.matmul(a, b))
print("ok")
"""


def _run(code: str, env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env), capture_output=True,
                          text=True, timeout=1800, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_avx2_target_runs_irnorms_kernels_and_real_networks():
    """Compiling for Haswell (AVX2 + FMA, no AVX-512): the kernels are on with 6 x 16 tiles, their products are
    within float32 rounding of a float64 product, and real networks give OpenVINO's stored outputs."""
    code = f"NETWORKS = {NETWORKS!r}\nNETWORKS_DIR = {str(ROOT / 'tests' / 'networks')!r}\n" + _AVX2_CHECK
    _run(code, HASWELL)


def test_without_avx2_products_stay_openblas():
    """Compiling for a CPU without AVX2 (Sandy Bridge: AVX only) irnorm's kernels are off and float32 products are
    OpenBLAS's: the bits of np.matmul."""
    _run(_NO_AVX2_CHECK, {"NUMBA_CPU_NAME": "sandybridge", "NUMBA_CPU_FEATURES": ""})
