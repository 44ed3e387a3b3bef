"""Hostile files: the reader refuses them quickly, resolves nothing, reads no file but
the model and its own weights, opens no connection, and never allocates before the
shape arithmetic is checked.

How "nothing was read" is proved: entities, DTDs and XIncludes point at a FIFO with
no writer.  Opening a FIFO for reading blocks until someone writes, so a reader that
touched it would hang; the check runs in a subprocess with a timeout.  Network
references point at a listening socket that must see no connection attempt.
"""

from __future__ import annotations

import builtins
import codecs
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SAMPLES

import irnorm
from irnorm.cli import cli
from irnorm.ir import reader

IR = SAMPLES / "ir"
SECRET = "TOPSECRET-7f3a9c"
GN_XML = (IR / "group_norm_f32w.xml").read_text()
BODY = '<net name="n" version="11"><layers/><edges/></net>'


def only(diags: list[irnorm.Diagnostic], code: str) -> irnorm.Diagnostic:
    assert [d.code for d in diags] == [code], "\n".join(d.format() for d in diags)
    return diags[0]


def write(tmp_path: Path, text: str | bytes, name: str = "model.xml") -> Path:
    p = tmp_path / name
    if isinstance(text, str):
        p.write_text(text)
    else:
        p.write_bytes(text)
    return p


@pytest.fixture
def secret(tmp_path):
    p = tmp_path / "secret.txt"
    p.write_text(SECRET)
    return p


@pytest.fixture
def opened(monkeypatch):
    """Every path opened through Python's open() or os.open() while the test runs."""
    seen: list[str] = []
    real, real_os = builtins.open, os.open

    def spy(file, *a, **k):
        seen.append(os.fspath(file) if not isinstance(file, int) else f"fd:{file}")
        return real(file, *a, **k)

    def os_spy(path, *a, **k):
        seen.append(os.fspath(path))
        return real_os(path, *a, **k)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(os, "open", os_spy)
    return seen


def xxe(target: str) -> str:
    return (f'<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY x SYSTEM "{target}">]>\n'
            f'<net name="&x;" version="11"><layers/></net>\n')


def billion_laughs(levels: int = 10) -> str:
    ents = '<!ENTITY l0 "lol">' + "".join(
        f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, levels))
    return f'<?xml version="1.0"?>\n<!DOCTYPE net [{ents}]>\n<net name="&l{levels - 1};" version="11"><layers/></net>'


def utf7_escape(s: str) -> str:
    """Spell the markup characters of s in UTF-7's base64 form, so '<!DOCTYPE' never appears as bytes."""
    import base64

    return "".join("+" + base64.b64encode(c.encode("utf-16-be")).decode().rstrip("=") + "-" if c in '<>![]&"'
                   else c for c in s)


# ---- entities, DTDs, XInclude ----------------------------------------------------------


def test_xxe_is_refused_and_the_secret_never_appears(tmp_path, secret, opened):
    p = write(tmp_path, xxe(secret.as_uri()))
    opened.clear()
    d = only(irnorm.check(p), "IRN003")
    assert d.line == 2 and "DTD" in d.message
    assert SECRET not in d.format() and SECRET not in irnorm.IrnormError([d]).to_json()
    assert str(secret) not in opened and opened == [str(p)]
    r = CliRunner().invoke(cli, ["validate", str(p)])
    assert r.exit_code == 1 and SECRET not in r.output and "IRN003" in r.output
    r = CliRunner().invoke(cli, ["validate", "--json", str(p)])
    assert SECRET not in r.output and "IRN003" in r.output
    with pytest.raises(irnorm.ModelFileError) as e:
        irnorm.load(p)
    assert e.value.code == "IRN003" and SECRET not in str(e.value)


@pytest.mark.parametrize("doc", [
    '<?xml version="1.0"?>\n<!DOCTYPE net SYSTEM "{fifo}">\n' + BODY,  # external DTD
    '<?xml version="1.0"?>\n<!DOCTYPE net PUBLIC "-//x//y" "{fifo}">\n' + BODY,
    '<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY % p SYSTEM "{fifo}"> %p;]>\n' + BODY,  # parameter entity
    '<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY x SYSTEM "{fifo}">]>\n<net version="11"><layers>&x;</layers></net>',
    '<?xml version="1.0"?>\n<net version="11" xmlns:xi="http://www.w3.org/2001/XInclude"><layers>'
    '<xi:include href="{fifo}" parse="text"/></layers></net>',
])
def test_nothing_is_opened_fifo_proof(tmp_path, doc):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    p = write(tmp_path, doc.replace("{fifo}", fifo.as_uri()))
    code = f"import irnorm; print([d.code for d in irnorm.check({str(p)!r})])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['IRN003']"


def test_dtd_smuggled_in_utf7_is_refused_without_reading(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    doc = ('<?xml version="1.0" encoding="UTF-7"?>\n'
           + utf7_escape(f'<!DOCTYPE net [<!ENTITY x SYSTEM "{fifo.as_uri()}">]>')
           + '\n<net version="11"><layers><layer id="0" name="' + utf7_escape("&x;") + '"/></layers></net>')
    p = write(tmp_path, doc.encode("ascii"))
    assert b"<!DOCTYPE" not in p.read_bytes()
    code = f"import irnorm; print([d.code for d in irnorm.check({str(p)!r})])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "['IRN005']", out.stderr  # only UTF-8 IR is read at all


def test_billion_laughs_is_refused_quickly(tmp_path):
    p = write(tmp_path, billion_laughs(10))
    t = time.perf_counter()
    d = only(irnorm.check(p), "IRN003")
    assert time.perf_counter() - t < 1.0
    assert "lol" not in d.message


def test_billion_laughs_in_utf7_is_refused_quickly(tmp_path):
    doc = billion_laughs(10)
    head, rest = doc.split("\n", 1)
    dtd, body = rest.split("\n", 1)
    p = write(tmp_path, (head.replace('"1.0"', '"1.0" encoding="UTF-7"') + "\n" + utf7_escape(dtd) + "\n"
                         + body.replace("&", utf7_escape("&"))).encode("ascii"))
    t = time.perf_counter()
    only(irnorm.check(p), "IRN005")
    assert time.perf_counter() - t < 1.0


@pytest.mark.parametrize("kind", ["entity", "dtd", "xinclude", "port9"])
def test_network_references_never_connect(tmp_path, kind):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.setblocking(False)
    url = f"http://127.0.0.1:{srv.getsockname()[1]}/x"
    try:
        doc = {
            "entity": xxe(url),
            "dtd": f'<?xml version="1.0"?>\n<!DOCTYPE net SYSTEM "{url}">\n{BODY}',
            "xinclude": f'<net version="11" xmlns:xi="http://www.w3.org/2001/XInclude"><layers>'
                        f'<xi:include href="{url}"/></layers></net>',
            "port9": xxe("http://127.0.0.1:9/"),
        }[kind]
        t = time.perf_counter()
        d = only(irnorm.check(write(tmp_path, doc)), "IRN003")
        assert time.perf_counter() - t < 1.0  # no connect attempt, no timeout waited out
        with pytest.raises(BlockingIOError):
            srv.accept()  # nobody knocked
        assert d.file == str(tmp_path / "model.xml")
    finally:
        srv.close()


@pytest.mark.parametrize("ns", ["http://www.w3.org/2001/XInclude", "http://www.w3.org/2003/XInclude"])
def test_xinclude_element_is_refused(tmp_path, secret, ns):
    doc = (f'<?xml version="1.0"?>\n<net version="11" xmlns:inc="{ns}">\n<layers>\n'
           f'<inc:include href="{secret}" parse="text"/></layers></net>')
    d = only(irnorm.check(write(tmp_path, doc)), "IRN003")
    assert "XInclude" in d.message and d.line == 4 and SECRET not in d.format()


def test_processing_instructions_and_comments_are_ignored(tmp_path):
    p = write(tmp_path, GN_XML.replace("<layers>", '<?xml-stylesheet href="http://x/y.xsl"?><!-- hi --><layers>'))
    shutil.copy(IR / "group_norm_f32w.bin", tmp_path / "model.bin")
    assert [d for d in irnorm.check(p) if d.severity == "error"] == []


# ---- reader limits -----------------------------------------------------------------


def test_very_deep_nesting_is_refused_quickly(tmp_path):
    depth = 200_000
    p = write(tmp_path, '<net version="11"><layers>' + "<a>" * depth + "</a>" * depth + "</layers></net>")
    t = time.perf_counter()
    d = only(irnorm.check(p), "IRN004")
    assert time.perf_counter() - t < 1.0 and "depth" in d.message.lower()


def test_moderate_nesting_over_the_irnorm_limit(tmp_path):
    depth = reader.MAX_DEPTH + 5
    p = write(tmp_path, '<net version="11"><layers>' + "<a>" * depth + "</a>" * depth + "</layers></net>")
    d = only(irnorm.check(p), "IRN004")
    assert f"deeper than {reader.MAX_DEPTH}" in d.message


def test_huge_attribute_is_refused(tmp_path):
    p = write(tmp_path, GN_XML.replace('name="x"', f'name="{"x" * (reader.MAX_ATTR_CHARS + 1)}"', 1))
    t = time.perf_counter()
    d = only(irnorm.check(p), "IRN004")
    assert time.perf_counter() - t < 1.0
    assert f"over the limit of {reader.MAX_ATTR_CHARS}" in d.message and d.line == 4


def test_huge_dim_text_is_a_diagnostic(tmp_path):
    shutil.copy(IR / "group_norm_f32w.bin", tmp_path / "model.bin")
    p = write(tmp_path, GN_XML.replace("<dim>8</dim>", f"<dim>{'9' * 500_000}</dim>", 1))
    d = only([d for d in irnorm.check(p) if d.severity == "error"], "IRN013")
    assert len(d.message) < 200


def test_file_over_the_size_limit_is_refused_before_reading(tmp_path, monkeypatch, opened):
    p = write(tmp_path, GN_XML)
    monkeypatch.setattr(reader, "MAX_XML_BYTES", 1000)
    d = only(irnorm.check(p), "IRN004")
    assert "over the reader limit of 1000" in d.message
    assert str(p) not in opened


# ---- odd files ---------------------------------------------------------------------


def test_weights_path_written_in_the_xml_is_never_used(tmp_path, opened):
    evil = tmp_path / "evil.bin"
    shutil.copy(IR / "group_norm_f32w.bin", evil)  # valid weights, but not the model's
    doc = GN_XML.replace('<net name="group_norm" version="11">',
                         f'<net name="group_norm" version="11" weights="{evil}" bin="{evil}">')
    doc = doc.replace("<rt_info>", f'<rt_info>\n\t\t<info name="weights" value="{evil}" />', 1)
    p = write(tmp_path, doc)
    opened.clear()
    d = only(irnorm.check(p), "IRN040")  # model.bin is missing, and that is what is said
    assert d.file == str(tmp_path / "model.bin")
    assert str(evil) not in opened
    assert [d for d in irnorm.check(p, weights=evil) if d.severity == "error"] == []  # --weights is honoured
    assert str(evil) in opened


def test_weights_default_is_the_xml_path_with_bin(tmp_path):
    shutil.copy(IR / "group_norm_f32w.bin", tmp_path / "model.v2.bin")
    p = write(tmp_path, GN_XML, "model.v2.xml")
    m = irnorm.load(p)
    assert m.graph.weights.path == str(tmp_path / "model.v2.bin")


@pytest.mark.parametrize("bom", [True, False])
def test_utf16_document_is_refused(tmp_path, bom):
    text = GN_XML.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
    data = (codecs.BOM_UTF16_LE if bom else b"") + text.encode("utf-16-le")
    d = only(irnorm.check(write(tmp_path, data)), "IRN005")
    assert "UTF-8" in d.message


@pytest.mark.parametrize("enc", ["ISO-8859-1", "UTF-7", "cp037"])
def test_non_utf8_encoding_declaration_is_refused(tmp_path, enc):
    d = only(irnorm.check(write(tmp_path, GN_XML.replace('version="1.0"?>', f'version="1.0" encoding="{enc}"?>'))),
             "IRN005")
    assert enc in d.message and "UTF-8" in d.message


@pytest.mark.parametrize("enc", ["UTF-8", "utf-8", "US-ASCII"])
def test_utf8_declaration_and_bom_are_fine(tmp_path, enc):
    shutil.copy(IR / "group_norm_f32w.bin", tmp_path / "model.bin")
    text = GN_XML.replace('version="1.0"?>', f'version="1.0" encoding="{enc}"?>')
    p = write(tmp_path, codecs.BOM_UTF8 + text.encode())
    assert [d for d in irnorm.check(p) if d.severity == "error"] == []


def test_empty_file(tmp_path):
    d = only(irnorm.check(write(tmp_path, b"")), "IRN002")
    assert "empty" in d.message.lower()


@pytest.mark.parametrize(("data", "code"), [
    (bytes(range(1, 256)) * 4, "IRN002"),  # garbage without NULs: not well-formed
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100), "IRN005"),  # binary: not a UTF-8 document
    (b"\xff" * 1000, "IRN002"),
    (b"<net version='11'><layers>" + "é".encode("latin-1") + b"</layers></net>", "IRN002"),  # invalid UTF-8
    (GN_XML.encode()[: len(GN_XML) // 2], "IRN002"),  # truncated
])
def test_garbage(tmp_path, data, code):
    d = only(irnorm.check(write(tmp_path, data)), code)
    assert d.file == str(tmp_path / "model.xml")


def test_directory_instead_of_file(tmp_path):
    (tmp_path / "dir.xml").mkdir()
    d = only(irnorm.check(tmp_path / "dir.xml"), "IRN001")
    assert "not a regular file" in d.message


def test_fifo_and_device_are_not_read(tmp_path):
    os.mkfifo(tmp_path / "fifo.xml")
    assert only(irnorm.check(tmp_path / "fifo.xml"), "IRN001")  # would block if opened
    assert only(irnorm.check("/dev/zero"), "IRN001")  # would never end if read


def test_weights_that_are_not_regular_files(tmp_path):
    """A FIFO beside the model, /dev/zero or a directory as --weights: IRN040, without blocking."""
    p = write(tmp_path, GN_XML)
    os.mkfifo(tmp_path / "model.bin")
    code = (f"import irnorm; print([(d.code, d.message) for d in irnorm.check({str(p)!r})]); "
            f"print([d.code for w in ('/dev/zero', {str(tmp_path)!r}) for d in irnorm.check({str(p)!r}, w)])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    assert first == str([("IRN040", f"weights file {tmp_path / 'model.bin'} is not a regular file")])
    assert second == "['IRN040', 'IRN040']"


def test_missing_file(tmp_path):
    d = only(irnorm.check(tmp_path / "nope.xml"), "IRN001")
    assert "No such file" in d.message


def test_unreadable_file(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    p = write(tmp_path, GN_XML)
    p.chmod(0)
    assert only(irnorm.check(p), "IRN001")


def test_symlinked_model_is_allowed_and_weights_sit_beside_the_link(tmp_path):
    """Decision: a symlink to a model is followed (it is a regular file to the user); the
    weights default is the link's path with .bin (what OpenVINO does), not the target's."""
    real = tmp_path / "real"
    real.mkdir()
    shutil.copy(IR / "group_norm_f32w.xml", real / "model.xml")
    shutil.copy(IR / "group_norm_f32w.bin", real / "model.bin")
    link = tmp_path / "link.xml"
    link.symlink_to(real / "model.xml")
    d = only(irnorm.check(link), "IRN040")
    assert d.file == str(tmp_path / "link.bin")
    (tmp_path / "link.bin").symlink_to(real / "model.bin")
    assert irnorm.load(link).run({"x": __import__("numpy").zeros((2, 8, 5, 5), "float32")})["y"].shape == (2, 8, 5, 5)


# ---- sizes: refused before anything is allocated -------------------------------------


def _shaped(tmp_path: Path, shape: tuple[int, ...]) -> Path:
    old = "".join(f"\n\t\t\t\t\t<dim>{d}</dim>" for d in (2, 8, 5, 5))
    new = "".join(f"\n\t\t\t\t\t<dim>{d}</dim>" for d in shape)
    doc = GN_XML.replace('shape="2,8,5,5"', f'shape="{",".join(map(str, shape))}"').replace(old, new)
    shutil.copy(IR / "group_norm_f32w.bin", tmp_path / "model.bin")
    return write(tmp_path, doc)


@pytest.mark.parametrize("shape", [
    (10**15, 8, 10**15, 5),
    (2, 8, 2**62, 4),
    (2**31, 8, 2**31, 2**31),
    (2**20, 8, 2**20, 8),  # fits int64, but 256 TiB
])
def test_absurd_parameter_shapes_are_refused_in_milliseconds(tmp_path, shape):
    p = _shaped(tmp_path, shape)
    t = time.perf_counter()
    with pytest.raises(irnorm.ResourceLimitError) as e:
        irnorm.load(p)
    assert time.perf_counter() - t < 0.5
    assert e.value.code == "IRN050" and e.value.layer_name == "x"


def test_absurd_const_shape_is_a_size_error_not_an_allocation(tmp_path):
    shutil.copy(IR / "group_norm_f32w.bin", tmp_path / "model.bin")
    p = write(tmp_path, GN_XML.replace('shape="8" offset="0" size="32"',
                                       f'shape="{2**40},{2**40}" offset="0" size="32"'))
    t = time.perf_counter()
    codes = [d.code for d in irnorm.check(p) if d.severity == "error"]
    assert time.perf_counter() - t < 0.5
    assert codes == ["IRN042"]  # size= disagrees with the shape; nothing was read or allocated


def test_max_memory_refuses_a_plan_that_needs_more(tmp_path):
    p = _shaped(tmp_path, (64, 8, 64, 64))  # 8 MiB input + 8 MiB output
    with pytest.raises(irnorm.ResourceLimitError) as e:
        irnorm.load(p, max_memory=1 << 20)
    assert e.value.code == "IRN051" and "16.0 MiB" in str(e.value) and "1.0 MiB" in str(e.value)
    irnorm.load(p, max_memory=64 << 20)  # enough
    r = CliRunner().invoke(cli, ["run", str(p), "--max-memory", "1M"])
    assert r.exit_code != 0 and isinstance(r.exception, irnorm.ResourceLimitError)


def test_max_memory_cli_exit_code_and_message(tmp_path):
    p = _shaped(tmp_path, (64, 8, 64, 64))
    out = subprocess.run([sys.executable, "-m", "irnorm", "run", str(p), "--max-memory", "1M"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "IRN051" in out.stderr and "Traceback" not in out.stderr
    assert out.stdout == ""


def test_dynamic_model_checks_memory_per_run():
    m = irnorm.load(IR / "group_norm_dynamic.xml", max_memory=1 << 20)
    import numpy as np

    assert m.run({"x": np.zeros((1, 16, 4, 4), np.float32)})["y"].shape == (1, 16, 4, 4)
    with pytest.raises(irnorm.ResourceLimitError) as e:
        m.run({"x": np.zeros((1, 16, 128, 128), np.float32)})  # 1 MiB in, 1 MiB out
    assert e.value.code == "IRN051"



@pytest.mark.parametrize("where", ["comment", "comment before the root", "CDATA-free text"])
def test_a_dtd_mentioned_in_text_is_not_a_dtd(tmp_path, where):
    """Only a real document type declaration (in the prolog) is hostile; "<!DOCTYPE" or "<!ENTITY"
    inside a comment is text (it made validate refuse the file with IRN003)."""
    xml = (SAMPLES / "ir" / "group_norm.xml").read_text()
    if where == "comment":
        xml = xml.replace("<layers>", "<layers><!-- no <!DOCTYPE or <!ENTITY here -->", 1)
    elif where == "comment before the root":
        xml = xml.replace("<net ", "<!-- a <!DOCTYPE mention -->\n<net ", 1)
    else:
        xml = xml.replace("</net>", "<!-- trailing <!ENTITY x 'y'> -->\n</net>", 1)
    path = tmp_path / "m.xml"
    path.write_text(xml)
    (tmp_path / "m.bin").write_bytes((SAMPLES / "ir" / "group_norm.bin").read_bytes())
    assert [d.code for d in irnorm.check(path) if d.severity == "error"] == []
