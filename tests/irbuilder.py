"""Write small IR v11 models (XML + .bin) by hand, in the layout OpenVINO's serializer uses.

For layers OpenVINO cannot build (irnorm's extension ops) and for malformed-IR tests: attribute
values are written as given (strings pass through untouched), so a test can put anything there.

    b = IRBuilder("m")
    x = b.parameter("x", (2, 3, 4), "f32")
    s = b.const(np.ones(4, np.float32), "scale")
    (y,) = b.layer("LayerNormalization", [x, s], [((2, 3, 4), "f32")], {"axis": -1}, names=["y"])
    b.result(y)
    xml_path = b.save(tmp_path)

Layout (as ``openvino.save_model`` writes it): tab indentation; ``<data>`` before ``<input>``
before ``<output>``; input ports numbered 0..n-1 and output ports n..n+m-1; Const data at
increasing offsets of the .bin (no padding); Result layers carry ``output_names``; edges sorted by
``from-layer``.  Used by the extension-op tests and by tools/make_extension_samples.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import numpy as np

# element type -> port precision, as the serializer writes it
PRECISION = {
    "f64": "FP64", "f32": "FP32", "f16": "FP16", "bf16": "BF16",
    "i64": "I64", "i32": "I32", "i16": "I16", "i8": "I8",
    "u64": "U64", "u32": "U32", "u16": "U16", "u8": "U8", "boolean": "BOOL",
}


def element_type(dtype: Any) -> str:
    """numpy dtype -> IR element type name ('f32', 'bf16', ...)."""
    name = np.dtype(dtype).name
    return {"float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16", "int64": "i64",
            "int32": "i32", "int16": "i16", "int8": "i8", "uint64": "u64", "uint32": "u32", "uint16": "u16",
            "uint8": "u8", "bool": "boolean"}[name]


def fmt_attr(v: Any) -> str:
    """Attribute text the way the serializer writes it: bools lower case, floats with 17 digits,
    lists comma + space separated; strings untouched."""
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.17g}"
    if isinstance(v, (list, tuple)):
        return ", ".join(fmt_attr(a) for a in v)
    return str(v)


@dataclass(frozen=True)
class Out:
    """An output port of a layer, to feed into other layers."""

    layer: int
    port: int
    shape: tuple[int, ...]
    et: str
    names: tuple[str, ...] = ()


@dataclass
class _Layer:
    id: int
    name: str
    type: str
    version: str
    data: dict[str, str] | None
    inputs: list[tuple[tuple[int, ...], str]]
    outputs: list[tuple[int, tuple[int, ...], str, tuple[str, ...]]]
    extra: str = ""  # extra attributes on <layer> (output_names)


@dataclass
class IRBuilder:
    name: str = "model"
    layers: list[_Layer] = field(default_factory=list)
    edges: list[tuple[int, int, int, int]] = field(default_factory=list)
    weights: bytearray = field(default_factory=bytearray)

    def _add(self, lay: _Layer) -> _Layer:
        self.layers.append(lay)
        return lay

    def parameter(self, name: str, shape: Sequence[int], et: str = "f32", names: Sequence[str] | None = None) -> Out:
        """A model input; -1 dims are dynamic (written '?' in <data shape>, -1 in <dim>)."""
        shape = tuple(int(d) for d in shape)
        names = tuple(names) if names is not None else (name,)
        text = ",".join("?" if d == -1 else str(d) for d in shape)
        lay = self._add(_Layer(len(self.layers), name, "Parameter", "opset1", {"shape": text, "element_type": et},
                               [], [(0, shape, et, names)]))
        return Out(lay.id, 0, shape, et, names)

    def const(self, value: np.ndarray, name: str | None = None, et: str | None = None,
              shape: Sequence[int] | None = None) -> Out:
        """A Const whose bytes are appended to the .bin.  `et` overrides the element type written
        (the bytes are those of `value`); `shape` overrides the declared shape."""
        value = np.ascontiguousarray(value).reshape(np.shape(value))  # ascontiguousarray makes 0-d arrays 1-d
        et = et or element_type(value.dtype)
        shape = tuple(int(d) for d in (value.shape if shape is None else shape))
        data = value.tobytes()
        offset = len(self.weights)
        self.weights += data
        lid = len(self.layers)
        self._add(_Layer(lid, name or f"const_{lid}", "Const", "opset1",
                         {"element_type": et, "shape": ", ".join(str(d) for d in shape), "offset": str(offset),
                          "size": str(len(data))}, [], [(0, shape, et, ())]))
        return Out(lid, 0, shape, et)

    def layer(self, type_: str, inputs: Sequence[Out], outputs: Sequence[tuple[Sequence[int], str]],
              attrs: Mapping[str, Any] | None = None, *, version: str = "irnorm1", name: str | None = None,
              names: Sequence[str | None] | None = None,
              input_dims: Sequence[Sequence[int]] | None = None) -> list[Out]:
        """Any layer.  `outputs` are the declared (dims, element type) of each output port; `names`
        the tensor name of each output (None for none); `input_dims` overrides the dims written on
        the input ports (default: the producer's)."""
        lid = len(self.layers)
        n_in = len(inputs)
        ins = []
        for i, src in enumerate(inputs):
            dims = tuple(input_dims[i]) if input_dims is not None else src.shape
            ins.append((dims, src.et))
            self.edges.append((src.layer, src.port, lid, i))
        outs = []
        result = []
        for k, (shape, et) in enumerate(outputs):
            shape = tuple(int(d) for d in shape)
            nm = names[k] if names is not None and k < len(names) and names[k] else None
            tnames = (nm,) if nm else ()
            outs.append((n_in + k, shape, et, tnames))
            result.append(Out(lid, n_in + k, shape, et, tnames))
        data = None if attrs is None else {k: fmt_attr(v) for k, v in attrs.items()}
        self._add(_Layer(lid, name or f"{type_.lower()}_{lid}", type_, version, data, ins, outs))
        return result

    def result(self, src: Out, name: str | None = None) -> None:
        lid = len(self.layers)
        extra = f" output_names={quoteattr(','.join(src.names))}" if src.names else ""
        label = name or (f"{src.names[0]}/result" if src.names else f"result_{lid}")
        self._add(_Layer(lid, label, "Result", "opset1", None, [(src.shape, src.et)], [], extra))
        self.edges.append((src.layer, src.port, lid, 0))

    # ---- output -------------------------------------------------------------------------

    def to_xml(self) -> str:
        lines = ['<?xml version="1.0"?>', f"<net name={quoteattr(self.name)} version=\"11\">", "\t<layers>"]
        for lay in self.layers:
            lines.append(f"\t\t<layer id=\"{lay.id}\" name={quoteattr(lay.name)} type={quoteattr(lay.type)} "
                         f"version={quoteattr(lay.version)}{lay.extra}>")
            if lay.data is not None:
                attrs = " ".join(f"{k}={quoteattr(v)}" for k, v in lay.data.items())
                lines.append(f"\t\t\t<data {attrs} />" if attrs else "\t\t\t<data />")
            if lay.inputs:
                lines.append("\t\t\t<input>")
                for i, (dims, et) in enumerate(lay.inputs):
                    lines.extend(_port(i, dims, et, ()))
                lines.append("\t\t\t</input>")
            if lay.outputs:
                lines.append("\t\t\t<output>")
                for pid, dims, et, names in lay.outputs:
                    lines.extend(_port(pid, dims, et, names))
                lines.append("\t\t\t</output>")
            lines.append("\t\t</layer>")
        lines.append("\t</layers>")
        lines.append("\t<edges>")
        for fl, fp, tl, tp in sorted(self.edges, key=lambda e: (e[0], e[2], e[3])):
            lines.append(f'\t\t<edge from-layer="{fl}" from-port="{fp}" to-layer="{tl}" to-port="{tp}" />')
        lines.append("\t</edges>")
        lines.append("\t<rt_info />")
        lines.append("</net>")
        return "\n".join(lines) + "\n"

    def save(self, directory: str | Path, name: str | None = None) -> Path:
        """Write directory/NAME.xml and NAME.bin; return the xml path."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        stem = name or self.name
        xml = directory / f"{stem}.xml"
        xml.write_text(self.to_xml())
        (directory / f"{stem}.bin").write_bytes(bytes(self.weights))
        return xml


def _port(pid: int, dims: Sequence[int], et: str, names: Sequence[str]) -> list[str]:
    prec = PRECISION.get(et, et.upper())
    nm = f" names={quoteattr(','.join(n.replace(',', chr(92) + ',') for n in names))}" if names else ""
    out = [f'\t\t\t\t<port id="{pid}" precision="{prec}"{nm}>']
    out.extend(f"\t\t\t\t\t<dim>{int(d)}</dim>" for d in dims)
    out.append("\t\t\t\t</port>")
    return out


def single_op_model(type_: str, inputs: Sequence[tuple[str, np.ndarray | tuple[Sequence[int], str]]],
                    outputs: Sequence[tuple[Sequence[int], str]], attrs: Mapping[str, Any] | None,
                    *, name: str = "model", out_names: Sequence[str] | None = None,
                    version: str = "irnorm1") -> IRBuilder:
    """Parameters / Consts -> one layer -> a Result per output.

    Each input is ("param:NAME", (shape, et)) for a model input or ("NAME", array) for a Const.
    Output k's tensor name is out_names[k] (default y, y1, y2, ...)."""
    b = IRBuilder(name)
    srcs = []
    for label, spec in inputs:
        if label.startswith("param:"):
            shape, et = spec
            srcs.append(b.parameter(label[6:], shape, et))
        else:
            srcs.append(b.const(np.asarray(spec), label))
    out_names = list(out_names) if out_names is not None else ["y"] + [f"y{k}" for k in range(1, len(outputs))]
    outs = b.layer(type_, srcs, outputs, attrs, version=version, name=f"{type_.lower()}_op", names=out_names)
    for o in outs:
        b.result(o)
    return b


# ---- test conveniences ------------------------------------------------------------------------------


def run_model(builder: IRBuilder, directory: str | Path, feeds: Mapping[str, np.ndarray], name: str | None = None
              ) -> dict[str, np.ndarray]:
    """Save the model, load it with irnorm (fails on any validation error) and run it."""
    import irnorm

    return irnorm.load(builder.save(directory, name)).run(dict(feeds))


def diagnostics(builder: IRBuilder, directory: str | Path, name: str | None = None) -> list:
    """Every diagnostic irnorm.check reports for the saved model."""
    import irnorm

    return irnorm.check(builder.save(directory, name))


def expect_error(builder: IRBuilder, directory: str | Path, code: str, *fragments: str):
    """Assert that checking the model reports an error `code` whose message contains every fragment;
    return that diagnostic."""
    diags = diagnostics(builder, directory)
    hits = [d for d in diags if d.code == code and d.severity == "error"]
    assert hits, f"expected {code}, got {[(d.code, d.message) for d in diags]}"
    for d in hits:
        if all(f in d.message for f in fragments):
            return d
    raise AssertionError(f"no {code} message contains {fragments}: {[d.message for d in hits]}")
