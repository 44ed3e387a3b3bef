"""Diagnostics and the exception hierarchy.

Every problem irnorm finds in a model or an input is a :class:`Diagnostic` with a
stable code (``IRN0xx``), a severity, and where it is: file, XML line, layer id,
name, type and opset.  Exceptions carry the diagnostics that caused them, so Python
callers see the same information the CLI prints.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

# Stable codes.  The README's "Diagnostics" table is generated from this one place.
CODES: dict[str, str] = {
    # reading the file
    "IRN001": "file cannot be read (missing, unreadable, not a regular file)",
    "IRN002": "XML is not well-formed",
    "IRN003": "unsafe XML construct refused (DTD, entity, XInclude, external reference)",
    "IRN004": "file exceeds a reader limit (size, nesting depth, attribute length)",
    "IRN005": "not an IR document (root is not <net>, or unsupported IR version)",
    "IRN006": "unsupported construct (a sub-graph on a layer that cannot have one, legacy pre-process block)",
    # structure
    "IRN010": "layer is missing a mandatory attribute (id, name, type, version) or has a malformed one",
    "IRN011": "duplicate layer id",
    "IRN012": "unknown operation type or opset",
    "IRN013": "malformed port (missing or duplicate id, bad <dim>, unknown precision)",
    "IRN014": "edge is malformed or refers to a layer or port that does not exist",
    "IRN015": "input port has no producer, or more than one",
    "IRN016": "the graph has a cycle",
    "IRN017": "wrong number of inputs or outputs for the operation",
    "IRN018": "the model has no Result, or a Result is unreachable from the inputs",
    # attributes
    "IRN020": "required attribute is missing",
    "IRN021": "attribute value is malformed (bad integer, float, bool, list, enum)",
    "IRN022": "unknown attribute for this operation",
    "IRN023": "attribute value is out of range",
    # shapes and types
    "IRN030": "declared port dims disagree with the producer or with the operation's shape rule",
    "IRN031": "declared port precision disagrees with the producer or with the operation's type rule",
    "IRN032": "operation shape rule violated by its input shapes",
    "IRN033": "operation type rule violated by its input element types",
    "IRN034": "operation needs a constant input that is not constant",
    "IRN035": "a variable's Assign and ReadValue disagree (undeclared variable, element type or shape)",
    # weights
    "IRN040": "weights file missing or unreadable",
    "IRN041": "Const lies outside the weights file",
    "IRN042": "Const size disagrees with its shape and element type",
    "IRN043": "Const element type or shape is unsupported or malformed",
    # resources
    "IRN050": "shape arithmetic overflows or a tensor is absurdly large",
    "IRN051": "the plan needs more memory than the limit (--max-memory)",
    # runtime inputs
    "IRN060": "input name missing, unknown or given twice",
    "IRN061": "input rank or dims do not fit the model",
    "IRN062": "input dtype does not match the model (no silent casts; use cast=True / --cast)",
    "IRN063": "input file cannot be read (corrupt .npz/.npy, not an array)",
    "IRN064": "runtime shape rule violated (dynamic dims resolved to inconsistent sizes)",
    "IRN065": "out= array does not fit its output (unknown name, shape, dtype, read-only, overlapping)",
    "IRN066": "a layer named for capture or --dump is unknown, not run, or a Result",
    "IRN067": "an argument to an irnorm function is invalid (unknown choice, out of range, unknown name)",
    "IRN070": "the model cannot run chunk by chunk along the batch axis (a layer mixes its rows)",
    # warnings
    "IRN090": "dangling layer: no Result consumes it",
    "IRN091": "fp16-compressed weights (Const f16 + Convert decompression); outputs differ from an f32 original",
    "IRN092": "declared precision on an input port ignored (OpenVINO ignores it too)",
    "IRN093": "weight-compressed weights (u8/i8/u4/i4/nf4/f8... Const + Convert): decompressed at load time",
}


MAX_MESSAGE_CHARS = 2000  # a message quoting a hostile file's 200,000 axes stays readable
MAX_NAME_CHARS = 200  # layer names as printed
MAX_LISTED = 100  # errors spelled out in an exception's text and in the CLI's text output


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


@dataclass
class Diagnostic:
    """One problem found in a model, a weights file or an input.  Messages longer than
    MAX_MESSAGE_CHARS are cut (saying how much was cut)."""

    code: str
    message: str
    severity: str = "error"  # "error" | "warning"
    file: str | None = None
    line: int | None = None
    layer_id: str | None = None
    layer_name: str | None = None
    layer_type: str | None = None
    layer_version: str | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.message = _clip(str(self.message), MAX_MESSAGE_CHARS)

    def format(self) -> str:
        """``model.xml:LINE: error: layer ID 'NAME' (Type-opsetN): what is wrong [IRN0xx]``."""
        where = self.file or "<input>"
        if self.line is not None:
            where += f":{self.line}"
        layer = ""
        if self.layer_id is not None or self.layer_name is not None:
            layer = f"layer {_clip(str(self.layer_id or '?'), MAX_NAME_CHARS)} " \
                    f"'{_clip(self.layer_name or '', MAX_NAME_CHARS)}'"
            if self.layer_type:
                layer += f" ({self.layer_type}-{self.layer_version or '?'})"
            layer += ": "
        return f"{where}: {self.severity}: {layer}{self.message} [{self.code}]"

    def to_dict(self) -> dict:
        d = asdict(self)
        if not d["extra"]:
            d.pop("extra")
        return d

    __str__ = format


class IrnormError(Exception):
    """Root of every error irnorm raises on purpose.

    ``diagnostics`` lists what is wrong; the first one's location is mirrored on
    ``code``, ``file``, ``line``, ``layer_id`` and ``layer_name`` for convenience.
    """

    exit_code = 1

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic | str, *, code: str = "IRN001"):
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic(code, diagnostics)]
        elif isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics: list[Diagnostic] = list(diagnostics)
        first = self.errors[0] if self.errors else self.diagnostics[0]
        self.code = first.code
        self.file = first.file
        self.line = first.line
        self.layer_id = first.layer_id
        self.layer_name = first.layer_name
        shown = self.errors or self.diagnostics
        text = "\n".join(d.format() for d in shown[:MAX_LISTED])
        if len(shown) > MAX_LISTED:
            text += f"\n... and {len(shown) - MAX_LISTED} more (all are in .diagnostics)"
        super().__init__(text)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    def to_json(self) -> str:
        return json.dumps([d.to_dict() for d in self.diagnostics], indent=2)


class RuleError(Exception):
    """An operation's shape, type or attribute rule is broken (raised by an op's rule or by the
    weights reader); the checking stage turns it into a Diagnostic located at the layer."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def fail(code: str, message: str) -> RuleError:
    """``raise fail("IRN032", "...")`` in a rule."""
    return RuleError(code, message)


class ModelFileError(IrnormError):
    """The XML or weights file cannot be read, is not well-formed, or is unsafe (IRN00x, IRN04x)."""


class ValidationError(IrnormError):
    """The model breaks a structural, attribute, shape or type rule (IRN01x-IRN03x)."""


class ResourceLimitError(IrnormError):
    """The model or an input would need more memory than allowed (IRN05x)."""


class InputError(IrnormError):
    """Runtime inputs do not fit the model (IRN06x)."""


class ArgumentError(IrnormError, ValueError):
    """An argument to an irnorm function is invalid (IRN067).  Also a ValueError, as Python callers
    expect of a bad argument."""

    def __init__(self, message: str):
        super().__init__(Diagnostic("IRN067", message))


# Which exception a model's error diagnostics raise, by code: declared here, beside the codes.
_FILE_CODES = frozenset({"IRN001", "IRN002", "IRN003", "IRN004", "IRN005", "IRN006",
                         "IRN040", "IRN041", "IRN042", "IRN043"})
_RESOURCE_CODES = frozenset({"IRN050", "IRN051"})


def exception_for(diagnostics: list[Diagnostic]) -> IrnormError:
    """The most specific exception for a model's diagnostics: only file-level problems ->
    ModelFileError, only size problems -> ResourceLimitError, anything else -> ValidationError."""
    codes = {d.code for d in diagnostics if d.severity == "error"}
    if codes and codes <= _FILE_CODES:
        return ModelFileError(diagnostics)
    if codes and codes <= _RESOURCE_CODES:
        return ResourceLimitError(diagnostics)
    return ValidationError(diagnostics)
