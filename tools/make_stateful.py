"""Generate the stateful-model export under ``tests/stateful/``: a PyTorch decoder block with an explicit
key/value cache, converted by ``openvino.convert_model`` and made stateful by OpenVINO's own MakeStateful
transformation (``openvino._offline_transformations.apply_make_stateful_transformation``, the pass
optimum-intel's stateful LLM exports are built with): the cache inputs become ReadValue layers, the cache
outputs Assign layers, and the model keeps its cache between calls.

Writes:

* ``decoder_block.xml`` + ``.bin`` (``openvino.save_model``, f16-compressed weights as by default);
* ``decoder_block.calls.npz``: a sequence of calls as a user makes them -- a 3-token prompt, then one or two
  tokens at a time, a ``reset_state()``, and again -- with, for each call ``i``, the input ``x_i``, OpenVINO's
  output ``y_i`` (CPU plugin, ``INFERENCE_PRECISION_HINT=f32``, one thread, one infer request for the whole
  sequence) and ``len_i``, the cache length after the call; ``reset_before`` lists the calls preceded by a
  reset; ``state_<variable>`` is each variable's value after the last call.

Run from the repository root (needs torch and openvino; the tests need neither torch nor this script)::

    python tools/make_stateful.py [--out tests/stateful]
"""

from __future__ import annotations

import argparse
import io
import sys
import zipfile
from pathlib import Path

import numpy as np
import openvino as ov
import torch
from openvino._offline_transformations import apply_make_stateful_transformation

CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": "1"}
DIM, HEADS = 32, 2
# tokens per call; a reset before the calls listed in RESET_BEFORE
STEPS = (3, 1, 1, 2, 1, 2, 1, 1)
RESET_BEFORE = (5,)


class DecoderBlock(torch.nn.Module):
    """A pre-norm causal self-attention block with an MLP, as an LLM's layer: the new tokens' keys and values
    are appended to the cache (past_k / past_v -> present_k / present_v) and each new token attends to the
    cache and to the new tokens up to itself."""

    def __init__(self, d: int = DIM, h: int = HEADS):
        super().__init__()
        self.h, self.dh = h, d // h
        self.ln = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.mlp = torch.nn.Sequential(torch.nn.LayerNorm(d), torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                       torch.nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor, past_k: torch.Tensor, past_v: torch.Tensor):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.h, self.dh).transpose(1, 2) for z in (q, k, v))
        k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        past = past_k.shape[2]
        mask = torch.ones(t, past + t, dtype=torch.bool).tril(diagonal=past)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(x), k, v


def build() -> ov.Model:
    torch.manual_seed(20261128)
    block = DecoderBlock().eval()
    with torch.no_grad():  # norms away from their default ones / zeros
        for ln in (block.ln, block.mlp[0]):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.2, 0.2)
    cache = [1, HEADS, -1, DIM // HEADS]
    example = (torch.randn(1, 3, DIM), torch.zeros(1, HEADS, 0, DIM // HEADS), torch.zeros(1, HEADS, 0, DIM // HEADS))
    model = ov.convert_model(block, example_input=example, input=[("x", [1, -1, DIM], torch.float32),
                                                                  ("past_k", cache, torch.float32),
                                                                  ("past_v", cache, torch.float32)])
    for out, name in zip(model.outputs, ("y", "present_k", "present_v"), strict=True):
        out.get_tensor().set_names({name})
    apply_make_stateful_transformation(model, {"past_k": "present_k", "past_v": "present_v"})
    return model


def _save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """np.savez with a fixed timestamp: the same arrays give the same bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, arr if arr.flags.c_contiguous else arr.copy(), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, buf.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("tests/stateful"))
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    xml = args.out / "decoder_block.xml"
    ov.save_model(build(), xml)
    request = ov.Core().compile_model(xml, "CPU", CONFIG).create_infer_request()
    rng = np.random.default_rng(7)
    arrays: dict[str, np.ndarray] = {"reset_before": np.array(RESET_BEFORE, np.int64)}
    length = 0
    for i, t in enumerate(STEPS):
        if i in RESET_BEFORE:
            request.reset_state()
            length = 0
        x = rng.standard_normal((1, t, DIM)).astype(np.float32)
        arrays[f"x_{i}"] = x
        arrays[f"y_{i}"] = np.array(request.infer({"x": x})[0], copy=True)
        length += t
        arrays[f"len_{i}"] = np.array(length, np.int64)
    for state in request.query_state():
        arrays[f"state_{state.name}"] = np.array(state.state.data, copy=True)
    _save_npz(args.out / "decoder_block.calls.npz", arrays)
    print(f"wrote {xml} and {args.out / 'decoder_block.calls.npz'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
