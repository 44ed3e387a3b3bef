"""One test per validation rule.  Every test starts from a real IR written by
OpenVINO (samples/ir), breaks exactly one thing in the XML text or the .bin, and
checks the documented code, a useful message, the XML line and the layer -- and
that nothing else is reported (no cascades), so each rule is seen in isolation.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLES

import irnorm
from irnorm.ir.attrs import AttrError
from irnorm.ops.base import all_ops, lookup

IR = SAMPLES / "ir"
GN = "group_norm_f32w"  # Parameter x[2,8,5,5], Const scale/bias f32 [8], GroupNormalization G=4, Result
L2 = "normalize_l2"  # Parameter x[2,6,4,4], Const axes i64 [1] = [1], NormalizeL2 add, Result
CHAIN = "gn_l2_chain"  # fp16-compressed GN -> NormalizeL2, two Results, two input names


class Mut:
    """A copy of a sample IR in tmp_path, edited as text; knows where things are."""

    def __init__(self, tmp_path: Path, name: str, stem: str = "model"):
        self.xml = (IR / f"{name}.xml").read_text()
        self.path = tmp_path / f"{stem}.xml"
        self.bin = tmp_path / f"{stem}.bin"
        shutil.copy(IR / f"{name}.bin", self.bin)

    def sub(self, old: str, new: str, count: int = 1) -> Mut:
        assert old in self.xml, f"sample does not contain {old!r}"
        self.xml = self.xml.replace(old, new, count if count > 0 else -1)
        return self

    def resub(self, pattern: str, new: str, count: int = 1) -> Mut:
        self.xml, n = re.subn(pattern, new, self.xml, count=count, flags=re.S)
        assert n, f"pattern {pattern!r} not found"
        return self

    def line(self, snippet: str, nth: int = 0) -> int:
        """1-based line of the nth occurrence of snippet in the (edited) text."""
        pos = -1
        for _ in range(nth + 1):
            pos = self.xml.index(snippet, pos + 1)
        return self.xml.count("\n", 0, pos) + 1

    def write(self) -> Path:
        self.path.write_text(self.xml)
        return self.path

    def check(self) -> list[irnorm.Diagnostic]:
        return irnorm.check(self.write())


def errors(diags: list[irnorm.Diagnostic]) -> list[irnorm.Diagnostic]:
    return [d for d in diags if d.severity == "error"]


def only_error(diags: list[irnorm.Diagnostic], code: str) -> irnorm.Diagnostic:
    errs = errors(diags)
    assert [d.code for d in errs] == [code], "\n".join(d.format() for d in diags)
    return errs[0]


def at_layer(d: irnorm.Diagnostic, layer_id: str, name: str, type_: str, version: str) -> None:
    assert (d.layer_id, d.layer_name, d.layer_type, d.layer_version) == (layer_id, name, type_, version), d.format()


def dims_block(dims: tuple[int, ...], indent: str = "\t\t\t\t\t") -> str:
    return "".join(f"\n{indent}<dim>{d}</dim>" for d in dims)


def reshape_everywhere(m: Mut, old: tuple[int, ...], new: tuple[int, ...]) -> Mut:
    """Change the data tensor's shape consistently: Parameter shape attribute and every port."""
    m.sub(f'shape="{",".join(map(str, old))}" element_type', f'shape="{",".join(map(str, new))}" element_type')
    return m.sub(dims_block(old), dims_block(new), count=-1)


# ---- the samples themselves ---------------------------------------------------------


@pytest.mark.parametrize("name", [GN, L2, CHAIN, "normalize_l2_v10", "group_norm_dynamic"])
def test_unmodified_samples_have_no_errors(tmp_path, name):
    assert errors(Mut(tmp_path, name).check()) == []


# ---- reading the document ----------------------------------------------------------


def test_xml_syntax_error_has_line(tmp_path):
    m = Mut(tmp_path, GN).sub("<data num_groups", "<data num_groups=", 1)
    d = only_error(m.check(), "IRN002")
    assert "not well-formed" in d.message
    assert d.line == m.line("<data num_groups")
    assert d.file == str(m.path)


def test_root_is_not_net(tmp_path):
    m = Mut(tmp_path, GN).sub("<net ", "<model ").sub("</net>", "</model>")
    d = only_error(m.check(), "IRN005")
    assert "<model>" in d.message and "<net>" in d.message and d.line == 2


@pytest.mark.parametrize("version", ["7", "12", "abc", ""])
def test_unsupported_ir_version(tmp_path, version):
    m = Mut(tmp_path, GN).sub('version="11"', f'version="{version}"')
    d = only_error(m.check(), "IRN005")
    assert f"'{version}'" in d.message and "10 and 11" in d.message and d.line == 2


def test_missing_ir_version(tmp_path):
    m = Mut(tmp_path, GN).sub(' version="11"', "")
    d = only_error(m.check(), "IRN005")
    assert "no 'version'" in d.message and d.line == 2


def test_net_without_layers(tmp_path):
    m = Mut(tmp_path, GN).resub(r"<layers>.*</layers>", "")
    assert "no <layers>" in only_error(m.check(), "IRN005").message


# ---- structure ---------------------------------------------------------------------


@pytest.mark.parametrize("attr", ["id", "type", "version"])
def test_layer_missing_mandatory_attribute(tmp_path, attr):
    m = Mut(tmp_path, GN)
    m.sub('<layer id="4" name="y/result" type="Result" version="opset1"', {
        "id": '<layer name="y/result" type="Result" version="opset1"',
        "type": '<layer id="4" name="y/result" version="opset1"',
        "version": '<layer id="4" name="y/result" type="Result"',
    }[attr])
    diags = m.check()
    d = errors(diags)[0]
    assert d.code == "IRN010" and f"missing mandatory attribute '{attr}'" in d.message, d.format()
    assert d.line == m.line('name="y/result"') and d.layer_name == "y/result"
    if attr == "id":
        assert "layer ? 'y/result'" in d.format()  # no id to show: a '?' rather than nothing
    else:
        assert d.layer_id == "4"
    # without a usable type/version (or id) the Result is lost; nothing else may be blamed on other layers
    assert {e.code for e in errors(diags)} <= {"IRN010", "IRN014", "IRN015", "IRN018"}


def test_layer_id_not_an_integer(tmp_path):
    m = Mut(tmp_path, GN).sub('<layer id="4"', '<layer id="four"').sub('to-layer="4"', 'to-layer="four"')
    d = only_error(m.check(), "IRN010")
    assert "'four'" in d.message and d.line == m.line('<layer id="four"')


def test_duplicate_layer_id(tmp_path):
    m = Mut(tmp_path, GN).sub('<layer id="2" name="gn_bias"', '<layer id="1" name="gn_bias"')
    diags = m.check()
    d = errors(diags)[0]
    assert d.code == "IRN011"
    assert "duplicate layer id 1" in d.message
    first_line = m.line('name="gn_scale"')
    assert f"line {first_line}" in d.message and "'gn_scale'" in d.message
    assert d.line == m.line('name="gn_bias"')
    at_layer(d, "1", "gn_bias", "Const", "opset1")


def test_unknown_operation_type(tmp_path):
    m = Mut(tmp_path, GN).sub('type="GroupNormalization"', 'type="GroupNormalisation"')
    d = only_error(m.check(), "IRN012")
    assert "GroupNormalisation" in d.message and d.line == m.line('name="group_norm" type')
    at_layer(d, "3", "group_norm", "GroupNormalisation", "opset12")


def test_unknown_opset_names_the_known_ones(tmp_path):
    m = Mut(tmp_path, GN).sub('version="opset12"', 'version="opset1"')
    d = only_error(m.check(), "IRN012")
    assert "GroupNormalization in opset 'opset1'" in d.message
    assert "opset12" in d.message  # where irnorm does know it
    at_layer(d, "3", "group_norm", "GroupNormalization", "opset1")


@pytest.mark.parametrize("opset", ["opset99", "opset18", "opset0"])
def test_an_opset_openvino_does_not_define_is_refused(tmp_path, opset):
    """OpenVINO 2026.4 defines opset1..opset17 and refuses a layer naming another; so does irnorm
    (it used to run opset99's GroupNormalization as GroupNormalization-12)."""
    m = Mut(tmp_path, GN).sub('version="opset12"', f'version="{opset}"')
    d = only_error(m.check(), "IRN012")
    assert f"unknown opset '{opset}'" in d.message and "opset1 to opset17" in d.message
    at_layer(d, "3", "group_norm", "GroupNormalization", opset)
    newest = Mut(tmp_path, GN, "newest").sub('version="opset12"', 'version="opset17"')
    assert errors(newest.check()) == []  # the newest opset still has GroupNormalization-12


def test_decompression_convert_feeding_a_result_as_openvino_writes_it(tmp_path):
    """An f16-compressed Const whose decompression Convert feeds a Result: OpenVINO writes FP16 on
    the Convert's output port and on its consumers' ports, and reads the file back (the tensor is
    f32).  irnorm accepts the file too (it refused it with IRN031) and matches OpenVINO."""
    ov = pytest.importorskip("openvino")
    import openvino.opset1 as op1
    from ovutil import compare_with_openvino

    x = op1.parameter([2, 3], np.float32, name="x")
    c = op1.constant(np.arange(6, dtype=np.float32).reshape(2, 3) / 7)
    y = op1.add(x, c)
    y.output(0).get_tensor().set_names({"y"})
    c.output(0).get_tensor().set_names({"c"})
    xml = tmp_path / "m.xml"
    ov.save_model(ov.Model([op1.result(y), op1.result(c)], [x], "m"), str(xml), compress_to_fp16=True)
    assert 'precision="FP16" names="c"' in xml.read_text()  # what the serializer writes
    assert errors(irnorm.check(xml)) == []
    got = compare_with_openvino(xml, {"x": np.ones((2, 3), np.float32)})
    assert got["c"].dtype == np.float32


def test_extension_opset_name_is_not_a_number(tmp_path):
    m = Mut(tmp_path, GN).sub('version="opset12"', 'version="opsetX"')
    assert "opsetX" in only_error(m.check(), "IRN012").message


@pytest.mark.parametrize("bad", ["abc", "-1", "1.5", "²", ""])
def test_malformed_port_id(tmp_path, bad):
    m = Mut(tmp_path, L2).sub('<port id="2" precision="FP32" names="y">',
                              f'<port id="{bad}" precision="FP32" names="y">')
    diags = m.check()
    d = errors(diags)[0]
    assert d.code == "IRN013" and repr(bad) in d.message and d.line == m.line('names="y"')
    at_layer(d, "2", "normalize_l2", "NormalizeL2", "opset1")
    # the edge from that port now points nowhere, and the Result lost its producer: reported too
    assert [e.code for e in errors(diags)] == ["IRN013", "IRN014", "IRN015"]


def test_duplicate_port_id(tmp_path):
    m = Mut(tmp_path, L2).sub('<port id="1" precision="I64">', '<port id="0" precision="I64">')
    codes = [e.code for e in errors(m.check())]
    assert codes[0] == "IRN013" and "used twice" in errors(m.check())[0].message


@pytest.mark.parametrize("bad", ["abc", "-2", "1.5", "1_0", "٨", "99999999999999999999", ""])
def test_malformed_dim(tmp_path, bad):
    m = Mut(tmp_path, GN).sub("<dim>8</dim>", f"<dim>{bad}</dim>")
    d = only_error(m.check(), "IRN013")
    assert f"<dim>{bad}</dim>" in d.message and "integer" in d.message
    assert d.line == m.line(f"<dim>{bad}</dim>")
    at_layer(d, "0", "x", "Parameter", "opset1")


def test_unknown_precision(tmp_path):
    m = Mut(tmp_path, GN).sub('<port id="0" precision="FP32">\n\t\t\t\t\t<dim>8</dim>',
                              '<port id="0" precision="FP33">\n\t\t\t\t\t<dim>8</dim>')
    d = only_error(m.check(), "IRN013")
    assert "unknown precision 'FP33'" in d.message and d.line == m.line('precision="FP33"')
    at_layer(d, "1", "gn_scale", "Const", "opset1")


def test_edge_to_missing_layer(tmp_path):
    m = Mut(tmp_path, GN).sub('<edge from-layer="2" from-port="0"', '<edge from-layer="22" from-port="0"')
    diags = m.check()
    assert [e.code for e in errors(diags)] == ["IRN014", "IRN015"]
    d = errors(diags)[0]
    assert "layer 22, which does not exist" in d.message and d.line == m.line('from-layer="22"')
    assert errors(diags)[1].layer_name == "group_norm"  # ... so its input 2 has no producer
    assert [w.code for w in diags if w.severity == "warning"] == ["IRN090"]  # and gn_bias feeds nothing


def test_edge_to_missing_port(tmp_path):
    m = Mut(tmp_path, GN).sub('to-layer="3" to-port="2"', 'to-layer="3" to-port="7"')
    d = errors(m.check())[0]
    assert d.code == "IRN014" and "has no input port 7" in d.message and d.line == m.line('to-port="7"')


@pytest.mark.parametrize("attr", ["from-layer", "to-port"])
def test_malformed_edge(tmp_path, attr):
    m = Mut(tmp_path, GN).sub('<edge from-layer="3" from-port="3" to-layer="4" to-port="0" />',
                              {"from-layer": '<edge from-port="3" to-layer="4" to-port="0" />',
                               "to-port": '<edge from-layer="3" from-port="3" to-layer="4" to-port="x" />'}[attr])
    d = errors(m.check())[0]
    assert d.code == "IRN014" and "malformed edge" in d.message and attr in d.message


def test_input_port_without_producer(tmp_path):
    m = Mut(tmp_path, GN).sub('<edge from-layer="2" from-port="0" to-layer="3" to-port="2" />', "")
    diags = m.check()
    d = only_error(diags, "IRN015")
    assert "input port 2 is not connected" in d.message
    assert d.line == m.line('<port id="2" precision="FP32">')
    at_layer(d, "3", "group_norm", "GroupNormalization", "opset12")


def test_input_port_with_two_producers(tmp_path):
    edge = '<edge from-layer="2" from-port="0" to-layer="3" to-port="2" />'
    m = Mut(tmp_path, GN).sub(edge, edge + '\n\t\t<edge from-layer="1" from-port="0" to-layer="3" to-port="2" />')
    d = only_error(m.check(), "IRN015")
    assert "input port 2 has more than one producer" in d.message
    assert d.line == m.line('<edge from-layer="1" from-port="0" to-layer="3" to-port="2"')
    at_layer(d, "3", "group_norm", "GroupNormalization", "opset12")


def test_cycle(tmp_path):
    # group_norm's data comes from its own output, instead of from x
    m = Mut(tmp_path, GN).sub('<edge from-layer="0" from-port="0" to-layer="3" to-port="0" />',
                              '<edge from-layer="3" from-port="3" to-layer="3" to-port="0" />')
    diags = m.check()
    d = only_error(diags, "IRN016")
    assert "cycle through layers 3 'group_norm'" in d.message
    assert "y/result" not in d.message  # downstream of the cycle, not on it
    at_layer(d, "3", "group_norm", "GroupNormalization", "opset12")
    assert [(w.code, w.layer_name) for w in diags if w.severity == "warning"] == [("IRN090", "x")]


def test_two_layer_cycle(tmp_path):
    # normalize_l2 -> normalize_l2' -> normalize_l2: data of the first comes from the second
    m = Mut(tmp_path, CHAIN).sub('<edge from-layer="5" from-port="3" to-layer="7" to-port="0" />',
                                 '<edge from-layer="10" from-port="2" to-layer="7" to-port="0" />')
    block = re.search(r'(\t\t<layer id="7" name="normalize_l2".*?</layer>\n)', m.xml, re.S).group(1)
    m.sub("\t</layers>", block.replace('id="7" name="normalize_l2"', 'id="10" name="l2_again"') + "\t</layers>")
    m.sub("\t</edges>", '\t\t<edge from-layer="7" from-port="2" to-layer="10" to-port="0" />\n'
                        '\t\t<edge from-layer="6" from-port="0" to-layer="10" to-port="1" />\n\t</edges>')
    d = only_error(m.check(), "IRN016")
    assert "7 'normalize_l2'" in d.message and "10 'l2_again'" in d.message and "l2_out/result" not in d.message


def test_wrong_number_of_input_ports(tmp_path):
    m = Mut(tmp_path, GN).sub('\t\t\t\t<port id="2" precision="FP32">\n\t\t\t\t\t<dim>8</dim>\n\t\t\t\t</port>\n'
                              '\t\t\t</input>', "\t\t\t</input>")
    m.sub('<edge from-layer="2" from-port="0" to-layer="3" to-port="2" />', "")
    diags = m.check()
    d = only_error(diags, "IRN017")
    assert "has 2 input ports, GroupNormalization-12 takes 3" in d.message
    at_layer(d, "3", "group_norm", "GroupNormalization", "opset12")


def test_const_with_an_input_port(tmp_path):
    # "Parameters and Consts have no inputs"
    m = Mut(tmp_path, GN).sub('<data element_type="f32" shape="8" offset="0" size="32" />',
                              '<data element_type="f32" shape="8" offset="0" size="32" />\n\t\t\t<input>'
                              '<port id="1" precision="FP32"><dim>2</dim></port></input>')
    diags = m.check()
    assert errors(diags)[0].code == "IRN017" and "Const-1 takes 0" in errors(diags)[0].message
    assert {e.code for e in errors(diags)} == {"IRN017", "IRN015"}  # and that port has no producer


def test_no_result(tmp_path):
    m = Mut(tmp_path, GN).resub(r'\t\t<layer id="4" name="y/result".*?</layer>\n', "")
    m.sub('<edge from-layer="3" from-port="3" to-layer="4" to-port="0" />', "")
    diags = m.check()
    d = only_error(diags, "IRN018")
    assert "no Result" in d.message and d.file == str(m.path)
    assert diags == [d]  # not also "dangling" for every layer


def test_dangling_layer_is_a_warning(tmp_path):
    # drop l2_out's Result: NormalizeL2 and its axes Const now feed nothing
    m = Mut(tmp_path, CHAIN).resub(r'\t\t<layer id="8" name="l2_out/result".*?</layer>\n', "")
    m.sub('<edge from-layer="7" from-port="2" to-layer="8" to-port="0" />', "")
    diags = m.check()
    assert errors(diags) == []
    dangling = [d for d in diags if d.code == "IRN090"]
    assert [(d.severity, d.layer_name) for d in dangling] == [("warning", "l2_axes"), ("warning", "normalize_l2")]
    assert dangling[1].line == m.line('name="normalize_l2" type') and "no Result" in dangling[1].message
    model = irnorm.load(m.path)  # still loads and runs; the dangling part is not run
    assert [s.name for s in model.outputs] == ["gn_out"]


def test_fp16_compressed_weights_warning(tmp_path):
    m = Mut(tmp_path, CHAIN)
    diags = m.check()
    assert [(d.code, d.severity) for d in diags] == [("IRN091", "warning")]
    assert "fp16-compressed" in diags[0].message and "2 Const(s)" in diags[0].message
    assert diags[0].layer_name == "gn_scale" and diags[0].line == m.line('name="gn_scale" type="Convert"')
    assert irnorm.validate(m.write()) == diags  # warnings do not fail validation


def test_subgraph_body_is_refused(tmp_path):
    m = Mut(tmp_path, GN).sub('<data num_groups="4"', "<body><layers/><edges/></body>\n\t\t\t<data num_groups=\"4\"")
    d = only_error(m.check(), "IRN006")
    assert "<body>" in d.message
    at_layer(d, "3", "group_norm", "GroupNormalization", "opset12")


def test_legacy_preprocess_is_refused(tmp_path):
    m = Mut(tmp_path, GN).sub("\t<layers>", "\t<pre-process reference-layer-name=\"x\"/>\n\t<layers>")
    d = only_error(m.check(), "IRN006")
    assert "pre-process" in d.message and d.line == 3


# ---- attributes --------------------------------------------------------------------

EPS = 'epsilon="1.0000000000000001e-05"'


@pytest.mark.parametrize(("old", "new", "code", "words"), [
    ('num_groups="4"', 'num_groups="2.7"', "IRN021", "num_groups=\"2.7\": '2.7' is not an integer"),
    ('num_groups="4"', 'num_groups="abc"', "IRN021", "'abc' is not an integer"),
    ('num_groups="4"', 'num_groups=""', "IRN021", "is not an integer"),
    ('num_groups="4"', 'num_groups="0"', "IRN023", "num_groups=\"0\": must be at least 1"),
    ('num_groups="4"', 'num_groups="-4"', "IRN023", "must be at least 1"),
    (EPS, 'epsilon="-1"', "IRN023", "epsilon=\"-1\": must be positive"),
    (EPS, 'epsilon="0"', "IRN023", "must be positive"),
    (EPS, 'epsilon="nan"', "IRN021", "not a finite number"),
    (EPS, 'epsilon="1e-5x"', "IRN021", "not a number"),
    (' ' + EPS, "", "IRN020", "required attribute 'epsilon' is missing"),
    ('num_groups="4" ', "", "IRN020", "required attribute 'num_groups' is missing"),
    (EPS, EPS + ' axis="1"', "IRN022", "unknown attribute 'axis' (allowed: epsilon, num_groups)"),
])
def test_group_norm_attribute(tmp_path, old, new, code, words):
    m = Mut(tmp_path, GN).sub(old, new)
    d = only_error(m.check(), code)
    assert words in d.message, d.message
    assert d.line == m.line('name="group_norm" type') + 1  # the <data> element's line
    at_layer(d, "3", "group_norm", "GroupNormalization", "opset12")


def test_group_norm_data_element_missing(tmp_path):
    m = Mut(tmp_path, GN).sub(f'\t\t\t<data num_groups="4" {EPS} />\n', "")
    diags = m.check()
    assert [d.code for d in errors(diags)] == ["IRN020", "IRN020"]
    assert all(d.line == m.line('name="group_norm" type') for d in errors(diags))


@pytest.mark.parametrize(("groups", "words"), [
    (3, "C=8 channels are not divisible by num_groups=3"),
    (16, "num_groups=16 exceeds the channel count C=8"),
])
def test_group_norm_groups_against_channels(tmp_path, groups, words):
    m = Mut(tmp_path, GN).sub('num_groups="4"', f'num_groups="{groups}"')
    d = only_error(m.check(), "IRN023")
    assert words in d.message and d.line == m.line('name="group_norm" type')
    at_layer(d, "3", "group_norm", "GroupNormalization", "opset12")


def test_group_norm_any_divisor_is_fine(tmp_path):
    for g in (1, 2, 4, 8):
        m = Mut(tmp_path, GN).sub('num_groups="4"', f'num_groups="{g}"')
        assert errors(m.check()) == [], g


@pytest.mark.parametrize(("old", "new", "code", "words"), [
    ('eps_mode="add"', 'eps_mode="bogus"', "IRN021", "eps_mode=\"bogus\": 'bogus' is not one of add, max"),
    ('eps_mode="add"', 'eps_mode=""', "IRN021", "is not one of add, max"),
    ('eps="1.000000013351432e-10"', 'eps="0"', "IRN023", "eps=\"0\": must be positive"),
    ('eps="1.000000013351432e-10"', 'eps="-1e-10"', "IRN023", "must be positive"),
    ('eps="1.000000013351432e-10" ', "", "IRN020", "required attribute 'eps' is missing"),
    (' eps_mode="add"', "", "IRN020", "required attribute 'eps_mode' is missing"),
    ('eps_mode="add"', 'eps_mode="add" across_spatial="true"', "IRN022", "unknown attribute 'across_spatial'"),
])
def test_normalize_l2_attribute(tmp_path, old, new, code, words):
    m = Mut(tmp_path, L2).sub(old, new)
    d = only_error(m.check(), code)
    assert words in d.message, d.message
    assert d.line == m.line("<data eps")
    at_layer(d, "2", "normalize_l2", "NormalizeL2", "opset1")


def test_eps_mode_is_case_insensitive_like_openvino(tmp_path):
    assert errors(Mut(tmp_path, L2).sub('eps_mode="add"', 'eps_mode="MAX"').check()) == []


def _bool_attrs() -> list[tuple[str, str]]:
    """(op label, attribute) for every registered attribute that reads true/false."""
    out = []
    for op in all_ops():
        for a in op.schema.attrs:
            try:
                if a.parse("true") is True and a.parse("false") is False:
                    out.append((op.label(), a.name))
            except (AttrError, ValueError, TypeError):
                pass
    return out


def test_bool_attributes_refuse_yes():
    """Every bool attribute of every registered op: only true/false (and 1/0) are bools."""
    attrs = _bool_attrs()
    if not attrs:
        pytest.skip("no registered op has a bool attribute yet")
    for label, name in attrs:
        op = next(o for o in all_ops() if o.label() == label)
        a = next(a for a in op.schema.attrs if a.name == name)
        for bad in ("yes", "no", "True ish", "2", ""):
            with pytest.raises(AttrError) as e:
                a.parse(bad)
            assert e.value.code == "IRN021", (label, name, bad)


def test_bool_attribute_yes_in_a_real_ir(tmp_path):
    """MVN-6's normalize_variance="yes" in an OpenVINO-written file (once MVN-6 is registered)."""
    if lookup("MVN", "opset6") is None:
        pytest.skip("MVN-6 is not registered yet")
    m = Mut(tmp_path, "layer_norm_mvn").sub('normalize_variance="true"', 'normalize_variance="yes"')
    d = [e for e in errors(m.check()) if e.layer_type == "MVN"][0]
    assert d.code == "IRN021" and "normalize_variance=\"yes\"" in d.message and d.line == m.line("normalize_variance")


# ---- op shape rules ----------------------------------------------------------------


def test_group_norm_scale_not_c(tmp_path):
    m = Mut(tmp_path, GN).sub('shape="8" offset="0" size="32" />\n\t\t\t<output>\n\t\t\t\t<port id="0" '
                              'precision="FP32">\n\t\t\t\t\t<dim>8</dim>',
                              'shape="4" offset="0" size="16" />\n\t\t\t<output>\n\t\t\t\t<port id="0" '
                              'precision="FP32">\n\t\t\t\t\t<dim>4</dim>')
    m.sub('<port id="1" precision="FP32">\n\t\t\t\t\t<dim>8</dim>', '<port id="1" precision="FP32">\n'
                                                                    '\t\t\t\t\t<dim>4</dim>')
    d = only_error(m.check(), "IRN032")
    assert "scale has 4 values but data has C=8 channels" in d.message and d.line == m.line('name="group_norm" type')
    at_layer(d, "3", "group_norm", "GroupNormalization", "opset12")


def test_group_norm_scale_not_1d(tmp_path):
    m = Mut(tmp_path, GN).sub('shape="8" offset="0" size="32" />\n\t\t\t<output>\n\t\t\t\t<port id="0" '
                              'precision="FP32">\n\t\t\t\t\t<dim>8</dim>',
                              'shape="2,4" offset="0" size="32" />\n\t\t\t<output>\n\t\t\t\t<port id="0" '
                              'precision="FP32">\n\t\t\t\t\t<dim>2</dim>\n\t\t\t\t\t<dim>4</dim>')
    m.sub('<port id="1" precision="FP32">\n\t\t\t\t\t<dim>8</dim>', '<port id="1" precision="FP32">\n'
                                                                    '\t\t\t\t\t<dim>2</dim><dim>4</dim>')
    d = only_error(m.check(), "IRN032")
    assert "scale must be 1-D [C], got [2,4]" in d.message


def test_group_norm_rank1_data(tmp_path):
    m = reshape_everywhere(Mut(tmp_path, GN), (2, 8, 5, 5), (8,))
    d = only_error(m.check(), "IRN032")
    assert "data must be at least 2-D" in d.message and "[8]" in d.message
    at_layer(d, "3", "group_norm", "GroupNormalization", "opset12")


def test_group_norm_rank2_and_rank5_data_are_fine(tmp_path):
    for shape in [(2, 8), (1, 8, 2, 3, 2)]:
        m = reshape_everywhere(Mut(tmp_path, GN), (2, 8, 5, 5), shape)
        assert errors(m.check()) == [], shape


def _axes(m: Mut, values: list, dtype=np.int64) -> Mut:
    """Rewrite normalize_l2's axes Const (the whole .bin) with these values."""
    arr = np.asarray(values, dtype)
    m.bin.write_bytes(arr.tobytes())
    n, size = arr.size, arr.nbytes
    et = {np.dtype(np.int64): ("i64", "I64"), np.dtype(np.int32): ("i32", "I32"),
          np.dtype(np.float32): ("f32", "FP32")}[arr.dtype]
    m.sub('element_type="i64" shape="1" offset="0" size="8"', f'element_type="{et[0]}" shape="{n}" offset="0" '
                                                               f'size="{size}"')
    m.sub('precision="I64">\n\t\t\t\t\t<dim>1</dim>', f'precision="{et[1]}">\n\t\t\t\t\t<dim>{n}</dim>', count=-1)
    return m


@pytest.mark.parametrize(("values", "words"), [
    ([4], "axes value 4 is out of range [-4, 3] for rank 4"),
    ([-5], "axes value -5 is out of range [-4, 3] for rank 4"),
    ([1, -3], "axes [1, -3] has repeated axes"),
    ([2, 2], "has repeated axes"),
])
def test_normalize_l2_bad_axes(tmp_path, values, words):
    m = _axes(Mut(tmp_path, L2), values)
    d = only_error(m.check(), "IRN032")
    assert words in d.message and d.line == m.line('name="normalize_l2" type')
    at_layer(d, "2", "normalize_l2", "NormalizeL2", "opset1")


@pytest.mark.parametrize("values", [[], [0], [-1], [1, 2, 3], [3, 0], [-4, -3, -2, -1]])
def test_normalize_l2_good_axes(tmp_path, values):
    assert errors(_axes(Mut(tmp_path, L2), values).check()) == []


def test_normalize_l2_float_axes(tmp_path):
    m = _axes(Mut(tmp_path, L2), [1.0], np.float32)
    d = only_error(m.check(), "IRN033")
    assert "axes must be an integer tensor, got f32" in d.message


def test_normalize_l2_axes_from_a_parameter(tmp_path):
    m = Mut(tmp_path, L2).sub('<layer id="1" name="l2_axes" type="Const" version="opset1">\n'
                              '\t\t\t<data element_type="i64" shape="1" offset="0" size="8" />',
                              '<layer id="1" name="l2_axes" type="Parameter" version="opset1">\n'
                              '\t\t\t<data element_type="i64" shape="1" />')
    d = only_error(m.check(), "IRN034")
    assert "input 1 (axes) must be a constant" in d.message
    at_layer(d, "2", "normalize_l2", "NormalizeL2", "opset1")


# ---- declared dims and precisions --------------------------------------------------


def test_input_port_dims_disagree_with_producer(tmp_path):
    m = Mut(tmp_path, GN).sub('<port id="0" precision="FP32">\n\t\t\t\t\t<dim>2</dim>',
                              '<port id="0" precision="FP32">\n\t\t\t\t\t<dim>3</dim>')
    d = only_error(m.check(), "IRN030")
    assert d.message == "input port 0 declares dims [3,8,5,5] but its producer 'x' gives [2,8,5,5]"
    assert d.line == m.line('<port id="0" precision="FP32">\n\t\t\t\t\t<dim>3</dim>')
    at_layer(d, "3", "group_norm", "GroupNormalization", "opset12")


def test_input_port_rank_disagrees_with_producer(tmp_path):
    m = Mut(tmp_path, GN).sub('<port id="1" precision="FP32">\n\t\t\t\t\t<dim>8</dim>',
                              '<port id="1" precision="FP32">\n\t\t\t\t\t<dim>8</dim><dim>1</dim>')
    assert "declares dims [8,1]" in only_error(m.check(), "IRN030").message


def test_output_port_dims_disagree_with_shape_rule(tmp_path):
    m = Mut(tmp_path, GN).sub('names="y">\n\t\t\t\t\t<dim>2</dim>', 'names="y">\n\t\t\t\t\t<dim>7</dim>')
    diags = m.check()
    d = errors(diags)[0]
    assert d.code == "IRN030"
    assert d.message == "output port 3 declares dims [7,8,5,5] but the operation gives [2,8,5,5]"
    assert d.line == m.line('names="y"')
    at_layer(d, "3", "group_norm", "GroupNormalization", "opset12")
    assert len(errors(diags)) == 1


def test_dynamic_declared_dims_agree_with_anything(tmp_path):
    m = Mut(tmp_path, GN).sub('names="y">\n\t\t\t\t\t<dim>2</dim>', 'names="y">\n\t\t\t\t\t<dim>-1</dim>')
    assert errors(m.check()) == []


def test_parameter_data_shape_disagrees_with_its_port(tmp_path):
    m = Mut(tmp_path, GN).sub('shape="2,8,5,5"', 'shape="2,8,5,6"')
    diags = errors(m.check())
    d = diags[0]
    assert d.code == "IRN030" and d.line == m.line('names="x"')
    assert d.message == 'output port 0 declares dims [2,8,5,5] but its <data shape="2,8,5,6"> gives [2,8,5,6]'
    at_layer(d, "0", "x", "Parameter", "opset1")
    assert {e.code for e in diags} == {"IRN030"}  # downstream ports, written for [2,8,5,5], disagree too


@pytest.mark.parametrize("where", ["output", "input"])
def test_precision_mismatch(tmp_path, where):
    m = Mut(tmp_path, GN)
    if where == "output":
        m.sub('<port id="3" precision="FP32"', '<port id="3" precision="FP16"')
        want = "output port 3 declares precision FP16 but the operation gives f32"
        at = ('<port id="3" precision="FP16"', "3", "group_norm")
    else:
        m.sub('<port id="0" precision="FP32">\n\t\t\t\t\t<dim>2</dim>\n\t\t\t\t\t<dim>8</dim>\n'
              '\t\t\t\t\t<dim>5</dim>\n\t\t\t\t\t<dim>5</dim>\n\t\t\t\t</port>\n\t\t\t</input>',
              '<port id="0" precision="I64">\n\t\t\t\t\t<dim>2</dim>\n\t\t\t\t\t<dim>8</dim>\n'
              '\t\t\t\t\t<dim>5</dim>\n\t\t\t\t\t<dim>5</dim>\n\t\t\t\t</port>\n\t\t\t</input>')
        want = "input port 0 declares precision I64 but its producer 'group_norm' gives f32"
        at = ('<port id="0" precision="I64"', "4", "y/result")
    d = only_error(m.check(), "IRN031")
    assert d.message == want and d.line == m.line(at[0]) and (d.layer_id, d.layer_name) == at[1:]


def test_lowercase_precision_spelling_is_accepted(tmp_path):
    assert errors(Mut(tmp_path, GN).sub('precision="FP32"', 'precision="f32"', count=-1).check()) == []


# ---- weights -----------------------------------------------------------------------


def test_missing_bin(tmp_path):
    m = Mut(tmp_path, GN)
    m.bin.unlink()
    d = only_error(m.check(), "IRN040")
    assert str(m.bin) in d.message and "No such file" in d.message and d.file == str(m.bin)


def test_missing_bin_does_not_cascade_into_constant_errors(tmp_path):
    m = Mut(tmp_path, L2)
    m.bin.unlink()
    only_error(m.check(), "IRN040")  # not also "axes must be a constant"


def test_no_bin_needed_without_consts(tmp_path):
    m = Mut(tmp_path, GN)
    m.bin.unlink()
    m.resub(r'\t\t<layer id="1" name="gn_scale".*?</layer>\n\t\t<layer id="2" name="gn_bias".*?</layer>\n', "")
    m.sub('<layer id="0" name="x"', '<layer id="1" name="s" type="Parameter" version="opset1"><data shape="8" '
          'element_type="f32"/><output><port id="0" precision="FP32" names="s"><dim>8</dim></port></output>'
          '</layer>\n\t\t<layer id="2" name="b" type="Parameter" version="opset1"><data shape="8" element_type="f32"/>'
          '<output><port id="0" precision="FP32" names="b"><dim>8</dim></port></output></layer>\n'
          '\t\t<layer id="0" name="x"')
    assert errors(m.check()) == []


def test_const_outside_bin(tmp_path):
    m = Mut(tmp_path, GN).sub('offset="32" size="32"', 'offset="40" size="32"')
    d = only_error(m.check(), "IRN041")
    assert d.message == "offset=40 size=32 reaches byte 72, past the end of the weights file (64 bytes)"
    assert d.line == m.line('name="gn_bias"')
    at_layer(d, "2", "gn_bias", "Const", "opset1")


def test_truncated_bin(tmp_path):
    m = Mut(tmp_path, GN)
    m.bin.write_bytes(m.bin.read_bytes()[:50])
    d = only_error(m.check(), "IRN041")
    assert "past the end of the weights file (50 bytes)" in d.message and d.layer_name == "gn_bias"


def test_empty_bin(tmp_path):
    m = Mut(tmp_path, GN)
    m.bin.write_bytes(b"")
    assert [d.code for d in errors(m.check())] == ["IRN041", "IRN041"]


def test_huge_offset(tmp_path):
    m = Mut(tmp_path, GN).sub('offset="32" size="32"', f'offset="{2**70}" size="32"')
    assert "past the end" in only_error(m.check(), "IRN041").message


@pytest.mark.parametrize(("size", "code"), [("28", "IRN042"), ("0", "IRN042"), ("-4", "IRN023"), ("x", "IRN021")])
def test_const_size(tmp_path, size, code):
    m = Mut(tmp_path, GN).sub('offset="32" size="32"', f'offset="32" size="{size}"')
    d = only_error(m.check(), code)
    if code == "IRN042":
        assert d.message == f"size={size} but shape [8] of f32 needs 32 bytes"
    at_layer(d, "2", "gn_bias", "Const", "opset1")


def test_const_unsupported_element_type(tmp_path):
    m = Mut(tmp_path, GN).sub('<data element_type="f32" shape="8" offset="0" size="32" />',
                              '<data element_type="string" shape="8" offset="0" size="4" />')
    d = only_error(m.check(), "IRN043")
    assert "element type 'string' is not supported" in d.message
    at_layer(d, "1", "gn_scale", "Const", "opset1")


@pytest.mark.parametrize("et,size", [("u4", 4), ("i4", 4), ("nf4", 4), ("f8e4m3", 8), ("u1", 1)])
def test_compressed_const_read_by_a_computing_layer(tmp_path, et, size):
    """A compressed-weight Const (tests/test_compressed_weights.py) is read; a layer other than Convert reading it
    is refused at that layer (here GroupNormalization's scale)."""
    m = Mut(tmp_path, GN).sub('<data element_type="f32" shape="8" offset="0" size="32" />',
                              f'<data element_type="{et}" shape="8" offset="0" size="{size}" />')
    found = errors(m.check())
    # (the ports still declare FP32: IRN031 for those too)
    assert {e.code for e in found} == {"IRN031", "IRN043"}
    d = next(e for e in found if e.code == "IRN043")
    assert f"reads a {et} tensor: irnorm supports {et} only as constant weights that a Convert decompresses" \
        in d.message
    assert d.layer_type == "GroupNormalization"


def test_const_unknown_element_type(tmp_path):
    m = Mut(tmp_path, GN).sub('<data element_type="f32" shape="8"', '<data element_type="float" shape="8"')
    assert "'float' is not an element type" in only_error(m.check(), "IRN021").message


def test_const_dynamic_shape(tmp_path):
    m = Mut(tmp_path, GN).sub('<data element_type="f32" shape="8"', '<data element_type="f32" shape="?"')
    assert "Const shape must be static" in errors(m.check())[0].message


# ---- resources ---------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(10**15, 8, 10**15, 5), (2, 8, 2**62, 4), (2**40, 8, 2**20, 1)])
def test_shape_overflowing_int64_is_a_validation_error(tmp_path, shape):
    m = reshape_everywhere(Mut(tmp_path, GN), (2, 8, 5, 5), shape)
    d = only_error(m.check(), "IRN050")
    assert "more than int64 can count" in d.message
    at_layer(d, "0", "x", "Parameter", "opset1")


def test_absurd_size_is_a_validation_error(tmp_path):
    m = reshape_everywhere(Mut(tmp_path, GN), (2, 8, 5, 5), (2**20, 8, 2**20, 8))  # 2**46 elements x 4 bytes
    assert "absurd size" in only_error(m.check(), "IRN050").message


# ---- everything at once, and the formats ---------------------------------------------


def test_all_independent_problems_are_reported(tmp_path):
    m = Mut(tmp_path, CHAIN)
    m.sub('epsilon="1.0000000000000001e-05"', 'epsilon="1e-5" bogus="1"')  # 1: unknown attribute on GN
    m.sub('eps_mode="add"', 'eps_mode="bogus"')  # 2: bad enum on NormalizeL2
    m.sub('<port id="3" precision="FP32" names="gn_out">', '<port id="3" precision="FP16" names="gn_out">')  # 3
    diags = errors(m.check())
    assert [(d.code, d.layer_name) for d in diags] == [
        ("IRN022", "group_norm"), ("IRN021", "normalize_l2"), ("IRN031", "group_norm")]
    assert [d.line for d in diags] == [m.line("bogus="), m.line('eps_mode="bogus"'), m.line('precision="FP16" names')]
    with pytest.raises(irnorm.ValidationError) as e:
        irnorm.validate(m.path)
    assert len(e.value.errors) == 3 and e.value.code == "IRN022" and e.value.line == diags[0].line
    assert str(e.value).count("\n") == 2  # one line per problem


def test_diagnostic_format(tmp_path):
    m = Mut(tmp_path, GN).sub('num_groups="4"', 'num_groups="2.7"')
    d = only_error(m.check(), "IRN021")
    line = m.line("num_groups=")
    assert d.format() == (f"{m.path}:{line}: error: layer 3 'group_norm' (GroupNormalization-opset12): "
                          "attribute num_groups=\"2.7\": '2.7' is not an integer [IRN021]")
    assert str(d) == d.format()
    w = irnorm.Diagnostic("IRN090", "dangling", severity="warning", file="m.xml", line=3, layer_id="1",
                          layer_name="c", layer_type="Const", layer_version="opset1")
    assert w.format() == "m.xml:3: warning: layer 1 'c' (Const-opset1): dangling [IRN090]"
    assert irnorm.Diagnostic("IRN018", "no Result", file="m.xml").format() == "m.xml: error: no Result [IRN018]"


def test_exceptions_carry_the_diagnostics(tmp_path):
    m = Mut(tmp_path, GN).sub('epsilon="1.0000000000000001e-05"', 'epsilon="-1"')
    m.write()
    for call in (irnorm.validate, irnorm.load):
        with pytest.raises(irnorm.ValidationError) as e:
            call(m.path)
        err = e.value
        assert isinstance(err, irnorm.IrnormError)
        assert (err.code, err.file, err.line, err.layer_id, err.layer_name) == (
            "IRN023", str(m.path), m.line("epsilon="), "3", "group_norm")
        data = json.loads(err.to_json())
        assert data[0]["code"] == "IRN023" and data[0]["layer_type"] == "GroupNormalization"


def test_exception_classes_by_kind(tmp_path):
    m = Mut(tmp_path, GN)
    m.bin.unlink()
    with pytest.raises(irnorm.ModelFileError):
        irnorm.load(m.write())
    m = reshape_everywhere(Mut(tmp_path, GN), (2, 8, 5, 5), (10**15, 8, 10**15, 5))
    with pytest.raises(irnorm.ResourceLimitError):
        irnorm.load(m.write())
    with pytest.raises(irnorm.ModelFileError):
        irnorm.load(tmp_path / "nope.xml")


def test_every_code_used_here_is_documented():
    src = Path(__file__).read_text()
    for code in set(re.findall(r'"(IRN\d{3})"', src)):
        assert code in irnorm.CODES, code


# ---- regressions found by fuzzing --------------------------------------------------


def test_const_with_dynamic_rank_shape_is_reported(tmp_path):
    """shape="..." parses to None (dynamic rank): a legal value, not a parse failure, so the
    rule must run and refuse it (it used to be skipped silently, and load() crashed)."""
    m = Mut(tmp_path, GN).sub('<data element_type="f32" shape="8" offset="0"', '<data element_type="f32" shape="..." '
                                                                              'offset="0"')
    d = only_error(m.check(), "IRN043")
    assert "Const shape must be static, got '...'" in d.message and d.layer_name == "gn_scale"


def test_parameter_with_dynamic_rank_is_reported(tmp_path):
    m = Mut(tmp_path, GN).sub('shape="2,8,5,5"', 'shape="..."')
    d = errors(m.check())[0]
    assert d.code == "IRN032" and "dynamic-rank inputs" in d.message and d.layer_name == "x"
    with pytest.raises(irnorm.ValidationError):
        irnorm.load(m.path)


@pytest.mark.parametrize("attr", ["type", "version"])
def test_empty_type_or_version(tmp_path, attr):
    m = Mut(tmp_path, L2).sub('name="l2_axes" type="Const" version="opset1"',
                              {"type": 'name="l2_axes" type="" version="opset1"',
                               "version": 'name="l2_axes" type="Const" version=" "'}[attr])
    d = only_error(m.check(), "IRN010")
    assert f"layer attribute '{attr}' is empty" in d.message and d.layer_name == "l2_axes"
    with pytest.raises(irnorm.ValidationError):
        irnorm.load(m.path)
