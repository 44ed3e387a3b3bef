"""Stage 1: read `model.xml` safely into plain records (no semantics, no numpy).

The parser never resolves entities, never loads a DTD, never touches the network
and never processes XInclude; a document that declares a DTD or uses XInclude is
refused outright.  Every record keeps its XML line so later stages can point at it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from lxml import etree

from ..errors import Diagnostic, ModelFileError
from .dtypes import precision_to_type

# Reader limits (documented in the README's reliability section).
MAX_XML_BYTES = 512 * 1024 * 1024
MAX_DEPTH = 32
MAX_ATTR_CHARS = 1024 * 1024
# Attributes on one element (no IR element has more than a few dozen).  Reading values through
# lxml is quadratic in this count: 200,000 attributes on one <data> took minutes.
MAX_ATTRS = 256

_XML_DECL_RE = re.compile(rb"^(?:\xef\xbb\xbf)?\s*<\?xml[^>]*?\bencoding\s*=\s*[\"']([^\"']*)[\"']")
_OK_ENCODINGS = ("utf-8", "utf8", "us-ascii", "ascii")
# Largest dim an IR may declare: element counts are int64 in OpenVINO and numpy.
MAX_DIM = (1 << 63) - 1
# ASCII digits only: str.isdigit() and int() also accept '²', '٨' and '1_0'.
_UINT_RE = re.compile(r"^[0-9]+$")
_DIM_RE = re.compile(r"^[+-]?[0-9]+$")
_PORT_RE = re.compile(r"^(?:-1|[0-9]{1,18})$")

XINCLUDE_NS = ("http://www.w3.org/2001/XInclude", "http://www.w3.org/2003/XInclude")


@dataclass
class PortRecord:
    id: int
    index: int  # position inside <input>/<output>: the operand index (the id is only a label)
    dims: list[int]
    precision: str | None  # element type name, or None when absent
    precision_raw: str | None
    names: list[str]
    line: int


@dataclass
class PortMapRecord:
    """One ``<input>`` / ``<output>`` entry of an If's ``<then_port_map>`` / ``<else_port_map>`` or of a
    TensorIterator's / Loop's ``<port_map>``: the layer's port id (-1 for a Loop's special body ports) and the
    body layer (a Parameter or a Result) it maps to; `extra` keeps the entry's other attributes as written
    (axis, start, end, stride, part_size, purpose), read by the op."""

    kind: str  # "input" | "output"
    external_port_id: int
    internal_layer_id: str
    line: int
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class BackEdgeRecord:
    """One ``<edge from-layer=R to-layer=P/>`` of a TensorIterator's / Loop's ``<back_edges>``: the body's
    Result R feeds the body's Parameter P on the next iteration."""

    from_layer: str
    to_layer: str
    line: int


@dataclass
class LayerRecord:
    id: str
    name: str
    type: str
    version: str
    line: int
    data: dict[str, str]
    data_line: int
    inputs: list[PortRecord]
    outputs: list[PortRecord]
    rt_info: list[str] = field(default_factory=list)  # names of <rt_info><attribute name=...>
    output_names: list[str] | None = None  # Result layers in IR v11
    # sub-graphs (If: "then_body", "else_body"; TensorIterator, Loop: "body"), each a document of its own, and
    # their port maps ("then_port_map", "else_port_map"; "port_map") and back edges (TensorIterator, Loop)
    bodies: dict[str, IRDocument] = field(default_factory=dict)
    port_maps: dict[str, list[PortMapRecord]] = field(default_factory=dict)
    back_edges: list[BackEdgeRecord] | None = None

    def where(self, file: str | None) -> dict:
        return dict(file=file, line=self.line, layer_id=self.id, layer_name=self.name,
                    layer_type=self.type, layer_version=self.version)


@dataclass
class EdgeRecord:
    from_layer: str
    from_port: int
    to_layer: str
    to_port: int
    line: int


@dataclass
class IRDocument:
    path: str
    name: str
    ir_version: int
    layers: list[LayerRecord]
    edges: list[EdgeRecord]
    rt_info: dict[str, str]
    diagnostics: list[Diagnostic]


def split_names(text: str) -> list[str]:
    """Split a `names` / `output_names` value on commas, honouring the serializer's `\\,` escape."""
    out: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] == ",":
            cur.append(",")
            i += 2
            continue
        if c == ",":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    out.append("".join(cur))
    return [n for n in out if n != ""]


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        load_dtd=False,
        dtd_validation=False,
        no_network=True,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
        collect_ids=False,
    )


def _file_error(path: str, code: str, msg: str, line: int | None = None) -> ModelFileError:
    return ModelFileError(Diagnostic(code, msg, file=path, line=line))


def read_xml_bytes(path: str) -> bytes:
    try:
        st = os.stat(path)
    except OSError as e:
        raise _file_error(path, "IRN001", f"cannot read model: {e.strerror or e}") from None
    if not os.path.isfile(path):
        raise _file_error(path, "IRN001", "not a regular file")
    if st.st_size > MAX_XML_BYTES:
        raise _file_error(path, "IRN004", f"XML is {st.st_size} bytes, over the reader limit of {MAX_XML_BYTES}")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise _file_error(path, "IRN001", f"cannot read model: {e.strerror or e}") from None


def parse_document(path: str, data: bytes | None = None) -> IRDocument:
    """Parse and sanity-check the XML; structural errors become diagnostics on the document.

    Raises ModelFileError for what makes the document unreadable as a whole
    (not well-formed, unsafe, not an IR).
    """
    if data is None:
        data = read_xml_bytes(path)
    if len(data) > MAX_XML_BYTES:
        raise _file_error(path, "IRN004", f"XML is {len(data)} bytes, over the reader limit of {MAX_XML_BYTES}")
    # Refuse DTDs before libxml2 sees them: entity declarations are how XXE and
    # billion-laughs files work, and no IR written by OpenVINO has a DOCTYPE.
    head = data[:4096]
    dtd_at = _doctype_offset(data)
    if dtd_at is not None:
        line = data[:dtd_at].count(b"\n") + 1
        raise _file_error(path, "IRN003", "document declares a DTD or entities; refused (no IR needs one)", line)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in head[:64]:
        raise _file_error(path, "IRN005", "not a UTF-8 IR document")
    # Only ASCII-compatible UTF-8 is read: under another declared encoding (UTF-7, EBCDIC ...)
    # the byte-level DTD check above could be bypassed.  OpenVINO writes UTF-8 without a declaration.
    decl = _XML_DECL_RE.match(head)
    if decl and decl.group(1).decode("ascii", "replace").lower() not in _OK_ENCODINGS:
        raise _file_error(path, "IRN005", f"document declares encoding {decl.group(1).decode('ascii', 'replace')!r}; "
                                          "irnorm reads UTF-8 IR only (what OpenVINO writes)", 1)
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as e:
        line = e.lineno if getattr(e, "lineno", None) else None
        msg = str(e.msg if hasattr(e, "msg") and e.msg else e)
        code = "IRN004" if ("huge" in msg.lower() or "depth" in msg.lower()) else "IRN002"
        raise _file_error(path, code, f"XML is not well-formed: {msg}", line) from None
    except (ValueError, MemoryError) as e:
        raise _file_error(path, "IRN002", f"XML cannot be parsed: {e}") from None
    tree = root.getroottree()
    if tree.docinfo.internalDTD is not None or tree.docinfo.doctype:
        raise _file_error(path, "IRN003", "document declares a DTD; refused")
    return _walk(path, root)


def _doctype_offset(data: bytes) -> int | None:
    """Where a document type declaration starts, or None.  XML allows one only in the prolog, among
    comments, processing instructions and white space before the root element -- and entities can
    only be declared inside it -- so only the prolog is scanned: "<!DOCTYPE" in a comment or an
    attribute value further on is just text."""
    i, n = 0, len(data)
    if data.startswith(b"\xef\xbb\xbf"):
        i = 3
    while i < n:
        if data[i:i + 1].isspace():
            i += 1
        elif data.startswith(b"<?", i):
            j = data.find(b"?>", i + 2)
            if j < 0:
                return None  # unterminated: the parser reports it
            i = j + 2
        elif data.startswith(b"<!--", i):
            j = data.find(b"-->", i + 4)
            if j < 0:
                return None
            i = j + 3
        elif data.startswith(b"<!", i):
            return i  # <!DOCTYPE (any other markup declaration is not well-formed here either)
        else:
            return None  # the root element (or junk the parser refuses)
    return None


def _check_safety(path: str, root: etree._Element) -> None:
    for el in root.iter():
        if not isinstance(el.tag, str):  # entity references, if any slipped through
            raise _file_error(path, "IRN003", "entity reference refused", el.sourceline)
        if el.tag.startswith("{") and el.tag[1:].split("}")[0] in XINCLUDE_NS:
            raise _file_error(path, "IRN003", "XInclude is refused", el.sourceline)
        n_attrs = len(el.attrib)
        if n_attrs > MAX_ATTRS:
            raise _file_error(path, "IRN004", f"<{el.tag}> has {n_attrs} attributes, over the limit of {MAX_ATTRS}",
                              el.sourceline)
        for k, v in el.attrib.items():
            if len(v) > MAX_ATTR_CHARS:
                raise _file_error(path, "IRN004", f"attribute '{k}' is {len(v)} characters, over the limit of "
                                  f"{MAX_ATTR_CHARS}", el.sourceline)


def _depth_ok(path: str, root: etree._Element) -> None:
    stack = [(root, 1)]
    while stack:
        el, d = stack.pop()
        if d > MAX_DEPTH:
            raise _file_error(path, "IRN004", f"XML nesting deeper than {MAX_DEPTH} levels", el.sourceline)
        stack.extend((c, d + 1) for c in el)


def _walk(path: str, root: etree._Element) -> IRDocument:
    _depth_ok(path, root)
    _check_safety(path, root)
    diags: list[Diagnostic] = []
    if root.tag.lower() != "net":
        raise _file_error(path, "IRN005", f"root element is <{root.tag}>, expected <net>", root.sourceline)
    ver_text = root.get("version")
    if ver_text is None:
        raise _file_error(path, "IRN005", "<net> has no 'version' attribute (the IR version: 10 or 11)",
                          root.sourceline)
    if ver_text.strip() not in ("10", "11"):
        raise _file_error(path, "IRN005", f"IR version {ver_text!r} is not supported (10 and 11 are)", root.sourceline)
    ir_version = int(ver_text)
    layers_el = root.find("layers")
    if layers_el is None:
        raise _file_error(path, "IRN005", "<net> has no <layers>", root.sourceline)
    if root.find("pre-process") is not None:
        diags.append(Diagnostic("IRN006", "legacy <pre-process> block is not supported", file=path,
                                line=root.find("pre-process").sourceline))
    layers, edges = _network(path, layers_el, root.find("edges"), diags, ir_version)
    rt: dict[str, str] = {}
    rt_el = root.find("rt_info")
    if rt_el is not None:
        for c in rt_el:
            key = c.get("name") if c.tag == "info" else c.tag
            if key is not None and c.get("value") is not None:
                rt[key] = c.get("value")
    return IRDocument(path, root.get("name", ""), ir_version, layers, edges, rt, diags)


def _network(path: str, layers_el: etree._Element, edges_el: etree._Element | None, diags: list[Diagnostic],
             ir_version: int) -> tuple[list[LayerRecord], list[EdgeRecord]]:
    """The layers and edges of a <net> or of a sub-graph body."""
    layers = [_layer(path, el, diags, ir_version) for el in layers_el if el.tag == "layer"]
    for el in layers_el:
        if el.tag != "layer":
            diags.append(Diagnostic("IRN010", f"unexpected element <{el.tag}> in <layers>", file=path,
                                    line=el.sourceline))
    edges: list[EdgeRecord] = []
    if edges_el is not None:
        for el in edges_el:
            if el.tag != "edge":
                continue
            try:
                edges.append(EdgeRecord(_req_str(el, "from-layer"), _req_uint(el, "from-port"),
                                        _req_str(el, "to-layer"), _req_uint(el, "to-port"), el.sourceline))
            except ValueError as e:
                diags.append(Diagnostic("IRN014", f"malformed edge: {e}", file=path, line=el.sourceline))
    return layers, edges


def _body(path: str, el: etree._Element, ir_version: int, where: dict) -> IRDocument:
    """An If's <then_body> / <else_body>, a TensorIterator's or Loop's <body>: a network of its own (its
    diagnostics stay with it until the checker reports them, located in this file)."""
    diags: list[Diagnostic] = []
    layers_el = el.find("layers")
    if layers_el is None:
        diags.append(Diagnostic("IRN010", f"<{el.tag}> has no <layers>", **{**where, "line": el.sourceline}))
        return IRDocument(path, el.tag, ir_version, [], [], {}, diags)
    layers, edges = _network(path, layers_el, el.find("edges"), diags, ir_version)
    return IRDocument(path, el.tag, ir_version, layers, edges, {}, diags)


def _port_map(el: etree._Element, diags: list[Diagnostic], where: dict) -> list[PortMapRecord]:
    out: list[PortMapRecord] = []
    for c in el:
        if c.tag not in ("input", "output"):
            diags.append(Diagnostic("IRN010", f"unexpected element <{c.tag}> in <{el.tag}>",
                                    **{**where, "line": c.sourceline}))
            continue
        try:
            port = _req_str(c, "external_port_id")
            if not _PORT_RE.match(port):  # -1: a Loop's special body ports (purpose="...")
                raise ValueError(f"'external_port_id' must be an integer >= -1, got {port[:40]!r}")
            extra = {k: v for k, v in c.attrib.items() if k not in ("external_port_id", "internal_layer_id")}
            out.append(PortMapRecord(c.tag, int(port), _req_str(c, "internal_layer_id"), c.sourceline, extra))
        except ValueError as e:
            diags.append(Diagnostic("IRN010", f"malformed <{c.tag}> in <{el.tag}>: {e}",
                                    **{**where, "line": c.sourceline}))
    return out


def _back_edges(el: etree._Element, diags: list[Diagnostic], where: dict) -> list[BackEdgeRecord]:
    out: list[BackEdgeRecord] = []
    for c in el:
        if c.tag != "edge":
            diags.append(Diagnostic("IRN010", f"unexpected element <{c.tag}> in <back_edges>",
                                    **{**where, "line": c.sourceline}))
            continue
        try:
            out.append(BackEdgeRecord(_req_str(c, "from-layer"), _req_str(c, "to-layer"), c.sourceline))
        except ValueError as e:
            diags.append(Diagnostic("IRN010", f"malformed <edge> in <back_edges>: {e}",
                                    **{**where, "line": c.sourceline}))
    return out


def _req_str(el: etree._Element, key: str) -> str:
    v = el.get(key)
    if v is None:
        raise ValueError(f"missing '{key}'")
    return v.strip()


def _req_uint(el: etree._Element, key: str) -> int:
    v = _req_str(el, key)
    if not _UINT_RE.match(v):
        raise ValueError(f"'{key}' must be a non-negative integer, got {v!r}")
    return int(v)


def _layer(path: str, el: etree._Element, diags: list[Diagnostic], ir_version: int) -> LayerRecord:
    lid = el.get("id")
    name = el.get("name")
    where = dict(file=path, line=el.sourceline, layer_id=lid, layer_name=name, layer_type=el.get("type"),
                 layer_version=el.get("version"))
    for key in ("id", "type", "version"):
        if el.get(key) is None:
            diags.append(Diagnostic("IRN010", f"layer is missing mandatory attribute '{key}'", **where))
        elif not el.get(key).strip():
            diags.append(Diagnostic("IRN010", f"layer attribute '{key}' is empty", **where))
    if lid is not None and lid.strip() and not _UINT_RE.match(lid.strip()):
        diags.append(Diagnostic("IRN010", f"layer id {lid!r} is not a non-negative integer", **where))
    data_el = el.find("data")
    data = dict(data_el.attrib) if data_el is not None else {}
    rt_names: list[str] = []
    rt_el = el.find("rt_info")
    if rt_el is not None and ir_version > 10:
        for a in rt_el.iter("attribute"):
            if a.get("name") is not None:
                rt_names.append(a.get("name"))
    # sub-graphs: If's two bodies, TensorIterator's and Loop's one (the checker refuses them on any other
    # layer type)
    bodies = {tag: _body(path, el.find(tag), ir_version, where) for tag in ("then_body", "else_body", "body")
              if el.find(tag) is not None}
    port_maps = {tag: _port_map(el.find(tag), diags, where)
                 for tag in ("then_port_map", "else_port_map", "port_map") if el.find(tag) is not None}
    back_edges = _back_edges(el.find("back_edges"), diags, where) if el.find("back_edges") is not None else None
    inputs = _ports(path, el.find("input"), diags, where)
    outputs = _ports(path, el.find("output"), diags, where)
    seen: set[int] = set()
    for p in inputs + outputs:
        if p.id in seen:
            diags.append(Diagnostic("IRN013", f"port id {p.id} is used twice", **{**where, "line": p.line}))
        seen.add(p.id)
    out_names = None
    if el.get("output_names") is not None:
        out_names = split_names(el.get("output_names"))
    return LayerRecord(
        id=(lid or "").strip(), name=name if name is not None else "", type=(el.get("type") or "").strip(),
        version=(el.get("version") or "").strip(), line=el.sourceline, data=data,
        data_line=data_el.sourceline if data_el is not None else el.sourceline,
        inputs=inputs, outputs=outputs, rt_info=rt_names, output_names=out_names, bodies=bodies, port_maps=port_maps,
        back_edges=back_edges,
    )


def _ports(path: str, parent: etree._Element | None, diags: list[Diagnostic], where: dict) -> list[PortRecord]:
    if parent is None:
        return []
    ports: list[PortRecord] = []
    for el in parent:
        if el.tag != "port":
            continue
        pw = {**where, "line": el.sourceline}
        pid_text = (el.get("id") or "").strip()
        if not _UINT_RE.match(pid_text):
            diags.append(Diagnostic("IRN013", f"port id {el.get('id')!r} is missing or not a non-negative integer",
                                    **pw))
            pid = -1 - len(ports)
        else:
            pid = int(pid_text)
        dims: list[int] = []
        for d in el.findall("dim"):
            t = (d.text or "").strip()
            v = int(t) if len(t) < 40 and _DIM_RE.match(t) else None
            if v is None or v < -1 or v > MAX_DIM:
                diags.append(Diagnostic("IRN013", f"port {pid}: <dim>{t[:40]}</dim> must be an integer in "
                                                  "[-1, 2**63-1]", **{**where, "line": d.sourceline}))
                v = -1
            dims.append(v)
        prec_raw = el.get("precision")
        prec = None
        if prec_raw is not None:
            prec = precision_to_type(prec_raw)
            if prec is None:
                diags.append(Diagnostic("IRN013", f"port {pid}: unknown precision {prec_raw!r}", **pw))
        names = split_names(el.get("names")) if el.get("names") is not None else []
        ports.append(PortRecord(pid, len(ports), dims, prec, prec_raw, names, el.sourceline))
    return ports
