"""Generate ``tests/compressed/``: weight-compressed versions of real-network exports, as NNCF's
``compress_weights`` writes them for INT8 / INT4 / NF4 / MXFP4 models (what ``optimum-intel`` does to every LLM it
exports above a billion parameters), from the static variants of ``tests/networks`` (tools/make_networks.py).

For every (network, mode) in ``MODELS`` the script writes ``NAME_MODE.xml`` + ``.bin`` (``openvino.save_model``'s
defaults), ``NAME_MODE.inputs.npz`` (the network's stored inputs) and ``NAME_MODE.expected.npz``: OpenVINO's CPU
plugin's outputs from the re-read file with ``INFERENCE_PRECISION_HINT=f32``, one thread, and its dynamic
quantization of weight-compressed MatMuls' activations off (``DYNAMIC_QUANTIZATION_GROUP_SIZE=0``: int8
activations are an approximation on top of the model; docs/ir-format.md section 9).  Also ``README.md``: the
storage types each file holds.  Needs the ``export`` extra (openvino, nncf); run from the repository root::

    python tools/make_compressed.py [--out tests/compressed]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import nncf
import numpy as np
import openvino as ov

ROOT = Path(__file__).resolve().parent.parent
NETWORKS = ROOT / "tests" / "networks"
CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": "1", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"}
COMMAND = "python tools/make_compressed.py --out tests/compressed"

# (network, NNCF mode, compress_weights keyword arguments; None: the mode's defaults, embeddings included)
MODELS = [
    ("llama", "INT4_ASYM", {"group_size": 16, "ratio": 1.0, "all_layers": True}),
    ("llama", "INT4_SYM", {"group_size": 16, "ratio": 0.8, "all_layers": True}),  # i4, and u8 for the rest
    ("llama", "NF4", {"group_size": 16, "all_layers": True}),
    ("llama", "MXFP4", {"group_size": 32, "all_layers": True}),
    ("bert", "INT8_SYM", None),
    ("gpt2", "INT4_ASYM", {"group_size": 16, "ratio": 1.0, "all_layers": True}),  # tied input / output embeddings
]


def compress(core: ov.Core, net: str, mode: str, kwargs: dict | None) -> ov.Model:
    model = core.read_model(str(NETWORKS / f"{net}_static.xml"))
    return nncf.compress_weights(model, mode=getattr(nncf.CompressWeightsMode, mode), **(kwargs or {}))


def run(core: ov.Core, xml: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", CONFIG)
    request = compiled.create_infer_request()
    request.infer(dict(enumerate(inputs.values())))  # in input order
    return {p.get_any_name(): np.array(request.get_output_tensor(i).data, copy=True)
            for i, p in enumerate(compiled.outputs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "compressed")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    core = ov.Core()
    rows = []
    for net, mode, kwargs in MODELS:
        name = f"{net}_{mode.lower()}"
        model = compress(core, net, mode, kwargs)
        xml = args.out / f"{name}.xml"
        ov.save_model(model, str(xml))
        # the network's stored inputs (keyed by the network's input names, in input order; the compressed file's
        # inputs answer to those names too, though NNCF's rewrite may leave another one first)
        inputs = dict(np.load(NETWORKS / f"{net}_static.inputs.npz"))
        np.savez(args.out / f"{name}.inputs.npz", **inputs)
        np.savez(args.out / f"{name}.expected.npz", **run(core, xml, inputs))
        types = sorted({op.get_element_type().get_type_name() for op in model.get_ordered_ops()
                        if op.get_type_name() == "Constant"} - {"f32", "f16", "i64", "i32", "boolean"})
        rows.append(f"| {name} | {net}_static | {mode} {kwargs or ''} | {', '.join(types)} | "
                    f"{xml.with_suffix('.bin').stat().st_size} |")
        print(name, types)
    (args.out / "README.md").write_text(
        "# Weight-compressed exports\n\nWritten by `" + COMMAND + "` (NNCF " + nncf.__version__ + ", OpenVINO "
        + ov.get_version().split("-")[0] + "); expected outputs from OpenVINO's CPU plugin, f32, one thread, "
        "no dynamic quantization.\n\n| file | from | NNCF mode | storage types | bin bytes |\n|---|---|---|---|---|\n"
        + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
