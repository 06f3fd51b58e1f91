"""app_rpt's output formats, checked against app_rpt's printf formats and the notes' examples."""

from __future__ import annotations

import datetime

from node.control.ami_rpt import (
    Flags,
    LinkRow,
    NodeView,
    Stats,
    TxStats,
    localnodes_text,
    lstats_text,
    nodes_text,
    nodestat_lines,
    rptstat_lines,
    sawstat_lines,
    show_variables_text,
    sort_tokens,
    stats_text,
    variables,
    xnode_text,
    xstat_lines,
)

UP = LinkRow(
    name="2001",
    peer="192.0.2.10",
    reconnects=0,
    outbound=True,
    connected_ms=62_345,
    established=True,
    mode="T",
    keyed=False,
    since_key=35,
    since_unkey=12,
)
CONNECTING = LinkRow("29999", "(none)", 3, False, 0, False, "C")
PHONE = LinkRow("0123", "192.0.2.9", 0, False, 1000, True, "T")


def printf(fmt: str, *args: object) -> str:
    """C's printf, the independent oracle for app_rpt's formats."""
    return fmt % args


VIEW = NodeView(
    node="2000",
    links=(UP, CONNECTING, PHONE),
    network=("T2001", "T2005", "R2004", "C29999"),
    rx_keyed=False,
    tx_keyed=True,
)


def test_xstat_conn_lines_are_app_rpts_printf() -> None:
    lines = xstat_lines(VIEW)
    assert lines[0] == "Node: 2000"
    # The notes' example, trailing blanks and all.
    assert lines[1] == (
        "Conn: 2001      192.0.2.10          0           OUT        00:01:02            "
        "ESTABLISHED         "
    )
    fmt = "Conn: %-10s%-20s%-12d%-11s%-20s%-20s"
    assert lines[2] == printf(fmt, "29999", "(none)", 3, "IN", "00:00:00", "CONNECTING")
    # The phone pseudo-link (name starting with 0) is not shown.
    assert not any("0123" in line for line in lines)
    assert lines[3] == "LinkedNodes: T2001, R2004, T2005, C29999"


def test_xstat_vars_and_flags() -> None:
    lines = xstat_lines(VIEW)
    assert "Var: RPT_RXKEYED=0" in lines and "Var: RPT_TXKEYED=1" in lines
    assert "Var: RPT_ALINKS=2,2001TU,29999CU" in lines
    assert "Var: RPT_LINKS=4,T2001,T2005,R2004,C29999" in lines
    assert "Var: RPT_NUMLINKS=4" in lines and "Var: RPT_NUMALINKS=2" in lines
    flags = lines[-13:]
    assert [f.split(": ")[0] for f in flags] == [
        "parrot_ena",
        "sys_ena",
        "tot_ena",
        "link_ena",
        "patch_ena",
        "patch_state",
        "sch_ena",
        "user_funs",
        "tail_type",
        "iconns",
        "tot_state",
        "ider_state",
        "tel_mode",
    ]
    # A node without autopatch and scheduler: those read disabled (1) in XStat.
    assert "".join(f.split(": ")[1] for f in flags) == "0000141000221"


def test_xstat_without_links() -> None:
    lines = xstat_lines(NodeView(node="2000"))
    assert lines[:2] == ["Node: 2000", "LinkedNodes: <NONE>"]
    assert "Var: RPT_ALINKS=" in lines and "Var: RPT_LINKS=0" in lines


def test_link_tokens_sort_by_name_as_strcmp() -> None:
    # mycompar: the mode letter is skipped and names compare as strings, not numbers.
    assert sort_tokens(["T3", "R20", "C100", "T2"]) == ["C100", "T2", "R20", "T3"]


def test_sawstat() -> None:
    assert sawstat_lines(VIEW) == ["Node: 2000", "Conn: 2001 0 35 12", "Conn: 29999 0 -1 -1"]


def test_rptstat() -> None:
    assert rptstat_lines(["2000"], 3725) == ["Nodes: 2000", "RptUptime: 01:02:05"]
    assert rptstat_lines([], 0) == ["<NONE>", "RptUptime: 00:00:00"]


def test_nodestat() -> None:
    lines = nodestat_lines(VIEW)
    assert lines[0] == "IsRemoteBase: NO"
    assert "TransmitterKeyed: YES" in lines and "SignalOnInput: NO" in lines
    assert "NodesCurrentlyConnectedToUs: 2001,29999,0123" in lines
    assert "TxTimeToday: 00:00:00:00" in lines
    assert "LastDtmfCommandExecuted: N/A" in lines


def test_lstats_sorted_naturally_with_milliseconds() -> None:
    view = NodeView(node="2000", links=(CONNECTING, UP))
    text = lstats_text(view)
    lines = text.split("\n")
    assert lines[0] == (
        "NODE      PEER                RECONNECTS  DIRECTION  CONNECT TIME        CONNECT STATE"
    )
    assert lines[1].startswith("----      ----")
    assert lines[2] == printf(
        "%-10s%-20s%-12d%-11s%-20s%s",
        "2001",
        "192.0.2.10",
        0,
        "OUT",
        "00:01:02:345",
        "ESTABLISHED",
    )
    assert lines[3].startswith("29999") and lines[3].endswith("CONNECTING")
    assert text.endswith("CONNECTING\n")


def test_nodes_eight_to_a_line() -> None:
    view = NodeView(node="2000", network=tuple(f"T{2000 + i}" for i in range(10)))
    header = "\n************************* CONNECTED NODES *************************\n\n"
    assert nodes_text(view) == header + (
        "T2000, T2001, T2002, T2003, T2004, T2005, T2006, T2007\nT2008, T2009\n\n"
    )
    assert nodes_text(NodeView(node="2000")) == header + "<NONE>\n\n"


def test_xnode_inverts_the_switches() -> None:
    text = xnode_text(VIEW)
    first = text.split("\n")[0]
    assert first == printf(
        "%-10s%-20s%-12d%-11s%-20s%s",
        "2001",
        "192.0.2.10",
        0,
        "OUT",
        "00:01:02",
        "ESTABLISHED",
    )
    assert "CONNECTING\n\n\nT2001, R2004, T2005, C29999\n\nRPT_NUMLINKS=4\n" in text
    assert "RPT_AUTOPATCHUP=0\n\nparrot_ena=0\nsys_ena=1\n" in text
    assert "patch_ena=0\n" in text and "sch_ena=0\n" in text
    assert text.endswith("tel_mode=1\n\n")


def test_stats_page() -> None:
    stats = Stats(keyups_today=2, keyups_total=5, tx_ms_total=3_723_004, last_command="*32001")
    view = NodeView(
        node="2000",
        links=tuple(LinkRow(str(2001 + i), "(none)", 0, True, 0, False, "C") for i in range(5)),
        stats=stats,
        uptime_s=3600,
        flags=Flags(user_functions_disabled=True),
    )
    text = stats_text(view)
    lines = text.split("\n")
    assert lines[0] == "************************ NODE 2000 STATISTICS *************************"
    assert lines[1] == ""
    assert lines[2] == "Selected system state............................: 0"
    assert "Keyups since system initialization...............: 5" in lines
    assert "TX time since system initialization..............: 01:02:03:04" in lines
    assert "Last DTMF command executed.......................: *32001" in lines
    assert "Uptime...........................................: 01:00:00" in lines
    assert "User functions...................................: DISABLED" in lines
    # Four names to a line, then a continuation line of 49 blanks.
    i = lines.index("Nodes currently connected to us..................: 2001, 2002, 2003, 2004")
    assert lines[i + 1] == " " * 49 + ": 2005"
    assert text.endswith("DISABLED\n\n")


def test_stats_page_without_links() -> None:
    assert "Nodes currently connected to us..................: <NONE>\n" in stats_text(
        NodeView(node="2000")
    )


def test_localnodes_and_variables() -> None:
    assert localnodes_text(["2000"]) == " " * 25 + "\nNode\n----\n2000\n\n"
    text = show_variables_text(VIEW)
    assert text.startswith("Variable listing for node 2000:\n   RPT_NUMLINKS=4\n")
    assert text.endswith(f"    -- {len(variables(VIEW))} variables\n")


def test_tx_stats_counts_keyups_and_time() -> None:
    day = datetime.date(2026, 1, 1)
    tx = TxStats(day)
    tx.observe(True, 10.0, day)
    tx.observe(True, 11.0, day)  # still keyed: no new keyup
    tx.observe(False, 12.5, day)
    tx.observe(True, 20.0, day)
    assert tx.report(21.0, day) == (2, 2, 3500, 3500)
    # Midnight: today's counters restart, the key in progress counts on from there.
    next_day = day + datetime.timedelta(days=1)
    assert tx.report(22.0, next_day) == (0, 2, 0, 4500)
    tx.observe(False, 23.0, next_day)
    assert tx.report(30.0, next_day) == (0, 2, 1000, 5500)
