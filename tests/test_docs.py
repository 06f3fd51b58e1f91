"""The README and docs/ hold together: every relative link and `#anchor` lands on a file and a
heading that exist, every page of docs/ is on the README's map, and the README's own examples
(the minimal `node.toml`, the commands it tells an operator to type) agree with the code."""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) and ![alt](target); the target ends at the first space (a title may follow).
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (a `#` in a shell or TOML sample is no heading)."""
    out: list[str] = []
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: inline markup dropped, lower case, punctuation removed
    (letters, digits, `_`, `-` and spaces stay), spaces turned into hyphens."""
    text = INLINE_CODE.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading keeps its text
    text = re.sub(r"<[^>]+>", "", text)
    text = text.strip().lower()
    kept = "".join(
        ch
        for ch in text
        if ch in "-_ " or unicodedata.category(ch)[0] in "LN" or unicodedata.category(ch) == "Mn"
    )
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor GitHub gives the page's headings (a repeated one gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose_lines(path.read_text()):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[str]:
    """The link targets of the page's prose (inline code and code blocks are not links)."""
    targets: list[str] = []
    for line in prose_lines(path.read_text()):
        targets.extend(LINK.findall(INLINE_CODE.sub("", line)))
    return targets


def is_external(target: str) -> bool:
    return re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) is not None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken: list[str] = []
    for target in links(page):
        if is_external(target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / unquote(file_part)).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(ROOT)}")
            continue
        if anchor and dest.suffix == ".md" and unquote(anchor) not in anchors(dest):
            broken.append(f"{target}: no heading with anchor #{anchor} in {dest.name}")
    assert not broken, f"{page.relative_to(ROOT)}:\n" + "\n".join(broken)


def test_the_checker_sees_links_headings_and_anchors(tmp_path: Path) -> None:
    # The test above can fail: a missing file, a missing heading and a code span are told apart.
    page = tmp_path / "page.md"
    page.write_text(
        "# Reloading (SIGHUP)\n\n## The peers file (`peers_file`)\n\n## Step 1\n\n## Step 1\n\n"
        "```sh\n# not a heading\n```\n\n"
        "[a](other.md#x) [b](#reloading-sighup) `[c](nowhere.md)` [d](https://example.org/)\n"
    )
    assert anchors(page) == {"reloading-sighup", "the-peers-file-peers_file", "step-1", "step-1-1"}
    assert links(page) == ["other.md#x", "#reloading-sighup", "https://example.org/"]
    assert slug("Station ID and announcements") == "station-id-and-announcements"
    assert slug("Resampling 8 kHz ↔ 16 kHz") == "resampling-8-khz--16-khz"


def test_the_readme_maps_every_page_of_docs() -> None:
    mapped = {Path(t.partition("#")[0]).name for t in links(README) if t.startswith("docs/")}
    missing = [doc.name for doc in DOCS if doc.name not in mapped]
    assert not missing, f"docs/ pages the README does not link: {missing}"


def readme_section(title: str) -> str:
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_the_readmes_two_commands_are_the_ones_ci_and_the_package_use() -> None:
    text = README.read_text()
    # A venv: Debian 12's and Raspberry Pi OS's own Python refuse `pip install` (PEP 668);
    # tests/test_readme_install.py runs this block on such a Python.
    first = "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/node serve"
    assert f"{first} --config node.toml" in text
    assert "bash scripts/test.sh" in text
    assert "exec bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["node"] == scripts["iax-node"] == "node.cli:main"
    assert "iax-node serve" in text


def test_the_readmes_minimal_node_toml_loads(tmp_path: Path) -> None:
    from node.config import load_config

    (block,) = re.findall(r"```toml\n(.*?)```", readme_section("A minimal node.toml"), re.S)
    path = tmp_path / "node.toml"
    path.write_text(block)
    config = load_config(path)
    assert config.node_id == "2001"
    assert config.dtmf.enabled is True
