"""The Asterisk config reader: templates, includes, overrides, comments, errors with file:line."""

from __future__ import annotations

import fnmatch

import pytest

from node.asl3import.conf import Asl3ConfError, parse_conf


class MemFiles:
    """Files in memory, as the reader's `Files`."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def read(self, name: str) -> str | None:
        return self.files.get(name)

    def glob(self, pattern: str) -> list[str]:
        return sorted(n for n in self.files if fnmatch.fnmatch(n, pattern))


def parse(main: str, **others: str):
    files = {
        "rpt.conf": main,
        **{k.replace("__", "/").replace("_", "."): v for k, v in others.items()},
    }
    conf = parse_conf("rpt.conf", MemFiles(files))
    assert conf is not None
    return conf


def test_template_inheritance_and_override() -> None:
    conf = parse(
        "[node-main](!)\nduplex = 2 ; comment\nhangtime = 2000\n[1999](node-main)\nhangtime = 500\n"
    )
    node = conf.section("1999")
    assert node is not None
    assert node.value("hangtime") == "500"  # the stanza overrides its template
    assert node.value("DUPLEX") == "2"  # keys are case-insensitive, comments gone
    assert node.bases == ("node-main",)
    assert list(conf.names()) == ["1999"]  # a (!) template is no section of its own


def test_template_copied_where_inherited() -> None:
    conf = parse("[t]\na = 1\n[x](t)\n[t](+)\nb = 2\n")
    x = conf.section("x")
    assert x is not None and x.value("a") == "1" and x.value("b") is None


def test_multiple_templates_and_append() -> None:
    conf = parse("[a](!)\nk = a\nm = 1\n[b](!)\nk = b\n[n](a,b)\n[n](+)\nz = 9\n")
    n = conf.section("n")
    assert n is not None
    assert n.value("k") == "b" and n.value("m") == "1" and n.value("z") == "9"


def test_arrow_lists_and_effective_order() -> None:
    conf = parse("[general]\nregister => 1:x@h\nregister = 2:y@h\nallow=ulaw\nallow=gsm\n")
    g = conf.section("general")
    assert g is not None
    assert [e.value for e in g.all("register")] == ["1:x@h", "2:y@h"]
    assert g.all("register")[0].arrow
    assert [e.key for e in g.effective()] == ["register", "allow"]


def test_comments_block_and_escaped_semicolon() -> None:
    conf = parse("[s]\na = x\\;y ; tail\n;-- block\nb = 1\n--;\nc = 2 ;-- inline --; \n")
    s = conf.section("s")
    assert s is not None
    assert s.value("a") == "x;y" and s.value("b") is None and s.value("c") == "2"


def test_includes_in_place_and_tryinclude_missing() -> None:
    conf = parse(
        '[a]\nk = 1\n#include "custom/more.conf"\n#tryinclude custom/none.conf\n'
        "#tryinclude custom/rpt/*.conf\n[b]\n",
        custom__more_conf="[1999]\nrxchannel = Local/pseudo\n",
        custom__rpt__x_conf="[2000]\nrxchannel = USRP/127.0.0.1:1:2\n",
    )
    assert list(conf.names()) == ["a", "1999", "2000", "b"]
    node = conf.section("1999")
    assert node is not None and node.get("rxchannel").where == "custom/more.conf:2"


def test_includeifexists_is_asl1s_tryinclude() -> None:
    """ASL 1.x, DIAL and HamVOIP end rpt.conf with `#includeifexists custom/rpt.conf`: ASL 1.x's
    Asterisk reads it as an include whose file may be missing."""
    text = "[1999]\nrxchannel = dahdi/pseudo\n#includeifexists custom/rpt.conf\n"
    conf = parse(text, custom__rpt_conf="[1999](+)\nstatpost_url = http://stats.example\n")
    node = conf.section("1999")
    assert node is not None and node.get("statpost_url").where == "custom/rpt.conf:2"
    assert conf.notes == []
    missing = parse(text + "#INCLUDEIFEXISTS <custom/none.conf>\n")
    assert list(missing.names()) == ["1999"] and missing.notes == []


def test_append_to_a_template_is_refused_as_asterisk_does() -> None:
    with pytest.raises(Asl3ConfError, match=r"rpt.conf:3: \[t\]\(\+\) appends to a section"):
        parse("[t](!)\na = 1\n[t](+)\nb = 2\n")


def test_plus_equals_appends_and_directives_asterisk_skips_are_noted() -> None:
    conf = parse("[s]\nlist = a,\nlist += b\n#exec /bin/true\n#bogus x\n#include\n")
    assert conf.section("s").value("list") == "a, b"  # appended as written
    assert conf.notes == [
        "rpt.conf:4: #exec not run: inline its output",
        "rpt.conf:5: #bogus ignored, as Asterisk ignores it",
        "rpt.conf:6: #include ignored, as Asterisk ignores it",
    ]


def test_nested_block_comments_and_bom() -> None:
    conf = parse("\ufeff[s]\n;-- a ;-- b --; still --;\nk = v ; ;-- not a block\n")
    assert conf.section("s").effective()[0].value == "v"
    assert list(conf.names()) == ["s"]


def test_first_of_two_sections_is_found() -> None:
    conf = parse("[s]\na = 1\n[s]\na = 2\n")
    assert conf.section("s").value("a") == "1"


@pytest.mark.parametrize(
    ("text", "others", "where", "problem"),
    [
        ("k = 1\n", {}, "rpt.conf:1", "before any [section]"),
        ("[s]\n\njust words\n", {}, "rpt.conf:3", "no '='"),
        ("[s\n", {}, "rpt.conf:1", "no closing ']'"),
        ("[x](missing)\n", {}, "rpt.conf:1", "inherits from 'missing'"),
        ("[s]\n#include gone.conf\n", {}, "rpt.conf:2", "does not exist"),
        ("#include inc.conf\n", {"inc_conf": "[s]\n\n= 3\n"}, "inc.conf:3", "no key"),
        ("#include loop.conf\n", {"loop_conf": "#include loop.conf\n"}, "loop.conf:1", "too deep"),
    ],
)
def test_errors_name_file_and_line(text: str, others: dict, where: str, problem: str) -> None:
    with pytest.raises(Asl3ConfError) as err:
        parse(text, **others)
    assert str(err.value).startswith(where + ":")
    assert problem in str(err.value)
