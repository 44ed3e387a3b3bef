"""Generate the stateful-model export under ``tests/stateful/``: a PyTorch decoder block with an explicit
key/value cache, converted by ``openvino.convert_model`` and made stateful the way optimum-intel builds its
stateful LLM exports: a ``beam_idx`` input whose Gather reorders the cache rows, OpenVINO's own MakeStateful
transformation (``openvino._offline_transformations.apply_make_stateful_transformation``: the cache inputs
become ReadValue layers, the cache outputs Assign layers) and an initial value for each variable computed from
the input's batch (zeros, the cache empty). The model keeps its cache between calls.

Writes:

* ``decoder_block.xml`` + ``.bin`` (``openvino.save_model``, f16-compressed weights as by default);
* ``decoder_block.calls.npz``: a sequence of calls as a user makes them -- a 3-token prompt for two beams, then
  one or two tokens at a time (one call swapping the beams), a ``reset_state()``, and again with one beam --
  with, for each call ``i``, the inputs ``x_i`` and ``beam_idx_i``, OpenVINO's output ``y_i`` (CPU plugin,
  ``INFERENCE_PRECISION_HINT=f32``, ``KV_CACHE_PRECISION=f32``, one thread, one infer request for the whole
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

# KV_CACHE_PRECISION: the CPU plugin fuses the cache update into its attention node and keeps the cache in u8 by
# default, even at f32 inference precision (outputs off by ~2e-3 from the second call on); f32 is the model's math
CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32", "INFERENCE_NUM_THREADS": "1"}
DIM, HEADS = 32, 2
# tokens per call; a reset before the calls listed in RESET_BEFORE
STEPS = (3, 1, 1, 2, 1, 2, 1, 1)
RESET_BEFORE = (5,)
SWAP_BEAMS = (3,)  # calls whose beam_idx swaps the two beams' caches (batch 2 before the reset, 1 after)


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


def _reorder_cache(model: ov.Model, cache_inputs: tuple[str, ...]) -> None:
    """A ``beam_idx`` input [batch] and a Gather of each cache input's rows by it (beam search reorders the cache
    between calls), as optimum-intel's exports have."""
    beam_idx = ov.opset13.parameter([-1], ov.Type.i32, name="beam_idx")
    beam_idx.output(0).get_tensor().set_names({"beam_idx"})
    model.add_parameters([beam_idx])
    for name in cache_inputs:
        port = model.input(name)
        consumers = port.get_target_inputs()  # before the Gather becomes one
        gather = ov.opset13.gather(port, beam_idx, ov.opset13.constant(np.int64(0)))
        for consumer in consumers:
            consumer.replace_source_output(gather.output(0))
    model.validate_nodes_and_infer_types()


def _initial_values(model: ov.Model) -> None:
    """Each ReadValue's initial value: zeros of its shape with the batch dim taken from ``x`` and every other
    dynamic dim 0 (the empty cache), computed from the input at every call -- optimum-intel's state initializer."""
    batch = ov.opset13.gather(ov.opset13.shape_of(model.input("x"), output_type="i64"),
                              ov.opset13.constant(np.array([0], np.int64)), ov.opset13.constant(np.int64(0)))
    for op in model.get_ops():
        if op.get_type_name() == "ReadValue":
            dims = [ov.opset13.constant(np.array([d.get_min_length()], np.int64))
                    for d in op.get_output_partial_shape(0)]
            dims[0] = batch
            zeros = ov.opset13.constant(np.zeros((), np.float32))
            op.set_arguments([ov.opset13.broadcast(zeros, ov.opset13.concat(dims, 0))])
    model.validate_nodes_and_infer_types()


def build() -> ov.Model:
    torch.manual_seed(20261128)
    block = DecoderBlock().eval()
    with torch.no_grad():  # norms away from their default ones / zeros
        for ln in (block.ln, block.mlp[0]):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.2, 0.2)
    cache = [-1, HEADS, -1, DIM // HEADS]
    example = (torch.randn(1, 3, DIM), torch.zeros(1, HEADS, 0, DIM // HEADS), torch.zeros(1, HEADS, 0, DIM // HEADS))
    model = ov.convert_model(block, example_input=example, input=[("x", [-1, -1, DIM], torch.float32),
                                                                  ("past_k", cache, torch.float32),
                                                                  ("past_v", cache, torch.float32)])
    for out, name in zip(model.outputs, ("y", "present_k", "present_v"), strict=True):
        out.get_tensor().set_names({name})
    _reorder_cache(model, ("past_k", "past_v"))
    apply_make_stateful_transformation(model, {"past_k": "present_k", "past_v": "present_v"})
    _initial_values(model)
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
    length, batch = 0, 2
    for i, t in enumerate(STEPS):
        if i in RESET_BEFORE:
            request.reset_state()
            length, batch = 0, 1  # a new sequence, one beam
        x = rng.standard_normal((batch, t, DIM)).astype(np.float32)
        beams = np.arange(batch, dtype=np.int32)
        if i in SWAP_BEAMS:
            beams = beams[::-1].copy()
        arrays[f"x_{i}"], arrays[f"beam_idx_{i}"] = x, beams
        arrays[f"y_{i}"] = np.array(request.infer({"x": x, "beam_idx": beams})["y"], copy=True)
        length += t
        arrays[f"len_{i}"] = np.array(length, np.int64)
    for state in request.query_state():
        arrays[f"state_{state.name}"] = np.array(state.state.data, copy=True)
    _save_npz(args.out / "decoder_block.calls.npz", arrays)
    print(f"wrote {xml} and {args.out / 'decoder_block.calls.npz'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
