"""The shipped systemd files and the release workflow, checked with the real tools where they exist.

`systemd-analyze verify` needs ExecStart's binary to exist, so it checks a copy of the unit that
points at this environment's `iax-node` (the unit never names `node`, which is Node.js on many
Raspberry Pi hosts); `systemd-sysusers` and `systemd-tmpfiles` run against a
scratch root. The workflow cannot run here: it is parsed and held against pyproject.toml and
Cargo.toml.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from node.daemon import EXIT_CONFIG

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
SYSTEMD = ROOT / "packaging" / "systemd"
UNIT = SYSTEMD / "iax-node.service"
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
INSTALLED_NODE = "/opt/iax-node/bin/iax-node"


def unit_settings(text: str) -> dict[str, dict[str, list[str]]]:
    """`[Section]` -> key -> every value (systemd keys may repeat), comments dropped."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def this_node() -> Path:
    """The `iax-node` console script of the environment running the tests (the unit's program)."""
    node = Path(sys.executable).parent / Path(INSTALLED_NODE).name
    if not node.exists():
        pytest.skip(f"no {node.name} script next to {sys.executable} (reinstall: scripts/test.sh)")
    return node


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (scripts/test.sh installs systemd)")
    return path


# --- the unit -----------------------------------------------------------------------------------


def test_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = tool("systemd-analyze")
    text = UNIT.read_text()
    assert text.count(INSTALLED_NODE) == 2  # ExecStart and ExecStopPost
    copy = tmp_path / "iax-node.service"
    copy.write_text(text.replace(INSTALLED_NODE, str(this_node())))
    result = subprocess.run(
        [analyze, "verify", str(copy)], capture_output=True, text=True, timeout=120
    )
    # verify exits 0 even for settings it ignores ("Failed to parse ..."): any output is a fault.
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "" and result.stderr.strip() == "", result.stderr


def test_verify_does_catch_a_broken_unit(tmp_path: Path) -> None:
    # The check above can fail: a missing binary and a misspelt value are both reported.
    analyze = tool("systemd-analyze")
    copy = tmp_path / "iax-node.service"
    copy.write_text(UNIT.read_text().replace("ProtectSystem=strict", "ProtectSystem=strictest"))
    result = subprocess.run(
        [analyze, "verify", str(copy)], capture_output=True, text=True, timeout=120
    )
    assert "is not executable" in result.stderr
    assert "ProtectSystem" in result.stderr or "protect system" in result.stderr


def test_unit_runs_the_daemon_as_documented() -> None:
    text = UNIT.read_text()
    # Both console scripts are installed; the unit runs the one Node.js can never shadow.
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["iax-node"] == scripts["node"] == "node.cli:main"
    assert Path(INSTALLED_NODE).name == "iax-node"
    assert "/bin/node " not in text
    service = unit_settings(text)["Service"]
    assert service["Type"] == ["notify"]
    assert service["ExecStart"] == [f"{INSTALLED_NODE} serve --config /etc/iax-node/node.toml"]
    assert service["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert service["Restart"] == ["on-failure"]
    assert service["RestartPreventExitStatus"] == [str(EXIT_CONFIG)]
    assert EXIT_CONFIG == 78
    # The PTT is forced off after every stop, the ones the daemon does not live through too.
    assert service["ExecStopPost"] == [
        f"{INSTALLED_NODE} ptt-release --config /etc/iax-node/node.toml"
    ]
    assert service["User"] == ["iax-node"]
    assert set(service["SupplementaryGroups"][0].split()) >= {"audio", "plugdev"}
    assert service["ReadWritePaths"] == ["-/etc/iax-node"]
    for key, value in (
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("NoNewPrivileges", "yes"),
        ("CapabilityBoundingSet", ""),
        ("RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX AF_NETLINK"),
        ("DevicePolicy", "closed"),
    ):
        assert service[key] == [value], key
    allowed = {entry.split()[0] for entry in service["DeviceAllow"]}
    assert {"char-alsa", "char-hidraw", "char-gpiochip"} <= allowed
    assert any(d.startswith("char-tty") for d in allowed)
    assert int(service["LimitNOFILE"][0]) >= 1024


@pytest.mark.parametrize("key", ["ExecStart", "ExecStopPost"])
def test_unit_command_lines_are_ones_the_cli_accepts(tmp_path: Path, key: str) -> None:
    # The unit's arguments, against the real CLI: `serve --config PATH` and
    # `ptt-release --config PATH` must parse.
    (line,) = unit_settings(UNIT.read_text())["Service"][key]
    args = line.split()[1:]
    result = subprocess.run(
        [str(this_node()), *args, "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "--config" in result.stdout


def test_ptt_release_runs_as_exec_stop_post_with_a_config_without_radio(tmp_path: Path) -> None:
    # What ExecStopPost runs for a node without a radio: nothing to release, success (a failing
    # ExecStopPost would mark every clean stop of such a node as failed).
    config = tmp_path / "node.toml"
    config.write_text("[listener]\n[control]\n")
    result = subprocess.run(
        [str(this_node()), "ptt-release", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_udev_rule_gives_cm108_hidraw_nodes_to_the_units_group() -> None:
    rules = [
        line
        for line in (ROOT / "packaging" / "udev" / "90-iax-node-cm108.rules")
        .read_text()
        .splitlines()
        if line.strip() and not line.startswith("#")
    ]
    (rule,) = rules
    fields = dict(
        (k.strip(), v.strip().strip('"'))
        for k, v in (re.split(r"\+?==?", part, maxsplit=1) for part in rule.split(", "))
    )
    assert fields["SUBSYSTEM"] == "hidraw"
    assert fields["ATTRS{idVendor}"] == "0d8c"  # C-Media
    assert (fields["GROUP"], fields["MODE"]) == ("plugdev", "0660")
    service = unit_settings(UNIT.read_text())["Service"]
    assert "plugdev" in service["SupplementaryGroups"][0].split()


def test_sysusers_and_tmpfiles_create_the_user_and_config_directory(tmp_path: Path) -> None:
    sysusers = tool("systemd-sysusers")
    tmpfiles = tool("systemd-tmpfiles")
    if os.geteuid() != 0:
        pytest.skip("systemd-tmpfiles --root sets ownership, which needs root")
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    subprocess.run(
        [sysusers, f"--root={root}", str(SYSTEMD / "iax-node.sysusers.conf")],
        check=True,
        capture_output=True,
        timeout=60,
    )
    passwd = {
        line.split(":")[0]: line.split(":")
        for line in (root / "etc/passwd").read_text().splitlines()
    }
    user = passwd["iax-node"]
    assert user[6] == "/usr/sbin/nologin"
    uid = int(user[2])
    subprocess.run(
        [tmpfiles, "--create", f"--root={root}", str(SYSTEMD / "iax-node.tmpfiles.conf")],
        check=True,
        capture_output=True,
        timeout=60,
    )
    info = (root / "etc" / "iax-node").stat()
    assert info.st_uid == uid
    assert info.st_mode & 0o777 == 0o750
    # The unit's user, its writable path and its --config all name what these files create.
    service = unit_settings(UNIT.read_text())["Service"]
    assert service["User"] == ["iax-node"]
    assert "/etc/iax-node/" in service["ExecStart"][0]


# --- the release workflow -----------------------------------------------------------------------


def workflow() -> dict:
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(doc, dict)
    # YAML 1.1 reads the bare key `on` as the boolean true.
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


def steps_using(job: dict, action: str) -> list[dict]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith(action)]


def test_workflow_builds_on_version_tags() -> None:
    doc = workflow()
    assert doc["on"]["push"]["tags"] == ["v*"]
    assert doc["permissions"] == {"contents": "read"}
    assert {"wheels", "sdist", "smoke", "publish"} <= set(doc["jobs"])


def test_workflow_builds_abi3_manylinux_wheels_matching_the_project() -> None:
    doc = workflow()
    wheels = doc["jobs"]["wheels"]
    assert set(wheels["strategy"]["matrix"]["target"]) == {"x86_64", "aarch64"}
    (build,) = steps_using(wheels, "PyO3/maturin-action@v1")
    assert build["with"]["target"] == "${{ matrix.target }}"
    assert build["with"]["manylinux"] in ("2014", "auto", "2_17")
    args = build["with"]["args"].split()
    assert "--release" in args and "--locked" in args
    # One abi3 wheel per architecture: no interpreter list, so the stable ABI decides the tag.
    assert "-i" not in args and "--interpreter" not in args

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
    abi3 = [f for f in cargo["dependencies"]["pyo3"]["features"] if f.startswith("abi3-py")]
    assert abi3 == ["abi3-py310"]
    minimum = "3." + abi3[0].removeprefix("abi3-py3")
    assert pyproject["project"]["requires-python"] == f">={minimum}"
    # maturin turns on the feature that pulls in pyo3 (and with it abi3).
    assert "python" in pyproject["tool"]["maturin"]["features"]
    assert cargo["features"]["python"] == ["dep:pyo3"]
    # The smoke job installs the wheel on the oldest CPython the abi3 tag claims.
    smoke = doc["jobs"]["smoke"]["strategy"]["matrix"]
    assert minimum in smoke["python"]
    assert set(smoke["target"]) == {"x86_64", "aarch64"}


def test_workflow_builds_an_sdist_and_uploads_everything() -> None:
    doc = workflow()
    (sdist,) = steps_using(doc["jobs"]["sdist"], "PyO3/maturin-action@v1")
    assert sdist["with"]["command"] == "sdist"
    for job in ("wheels", "sdist", "systemd"):
        uploads = steps_using(doc["jobs"][job], "actions/upload-artifact@")
        assert uploads and uploads[0]["with"]["if-no-files-found"] == "error", job
    assert (
        steps_using(doc["jobs"]["systemd"], "actions/upload-artifact@")[0]["with"]["path"]
        == str(SYSTEMD.relative_to(ROOT)) + "/"
    )


def test_publishing_is_opt_in_and_uses_trusted_publishing() -> None:
    doc = workflow()
    publish = doc["jobs"]["publish"]
    assert "vars.PUBLISH_TO_PYPI == 'true'" in publish["if"]
    assert publish["permissions"] == {"id-token": "write"}
    assert steps_using(publish, "pypa/gh-action-pypi-publish@")
    # Trusted publishing: no token or password anywhere in the workflow.
    assert not re.search(r"secrets\.|password|api.?token", WORKFLOW.read_text(), re.IGNORECASE)
