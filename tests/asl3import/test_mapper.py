"""The mapper on small in-memory configurations: app_rpt's and chan_usrp's defaults."""

from __future__ import annotations

import pytest

from node.asl3import.conf import parse_text
from node.asl3import.mapper import Asl3Files, Plan, map_node


def plan_of(rpt: str, **others: str) -> Plan:
    files = {k: parse_text(f"{k}.conf", v) for k, v in others.items()}
    return map_node(Asl3Files(rpt=parse_text("rpt.conf", rpt), **files), None)


def values(plan: Plan, section: str) -> dict[str, object]:
    return {s.key: s.value for s in plan.sections.get(section, [])}


def test_usrp_without_a_listen_port_listens_on_its_peer_port_on_every_address() -> None:
    plan = plan_of("[3000]\nrxchannel = USRP/192.0.2.9:34001\n")
    assert values(plan, "usrp") == {"listen": "0.0.0.0:34001", "peer": "192.0.2.9:34001"}


def test_no_scheduler_key_means_no_schedule_even_with_a_schedule_stanza() -> None:
    rpt = "[schedule]\n1 = 00 07\n[macro]\n1 = *32000\n[3000]\nrxchannel = Local/pseudo\n"
    plan = plan_of(rpt)
    assert "schedule" not in plan.sections
    assert values(plan, "macro") == {"1": "*32000"}  # macro has a default stanza name
    plan = plan_of(rpt + "scheduler = schedule\n")
    assert values(plan, "schedule") == {"1": "00 07"}


def test_functions_unknown_here_are_left_out_and_reported() -> None:
    plan = plan_of("[functions]\n1 = ilink,1\n9 = nosuch,1\n[3000]\nrxchannel = Local/pseudo\n")
    assert values(plan, "functions") == {"1": "ilink,1"}
    assert any(d.startswith("rpt.conf:3 [functions] 9: nosuch,1") for d in plan.dropped)


def test_the_node_number_is_written_at_the_top_whether_or_not_it_registers() -> None:
    private = plan_of("[1999]\nrxchannel = Local/pseudo\n")
    assert values(private, "")["node_id"] == "1999"
    assert "register" not in private.sections
    registered = plan_of(
        "[3000]\nrxchannel = Local/pseudo\n",
        iax="[general]\nregister => 3000:pw@reg.example.net\n",
    )
    assert values(registered, "")["node_id"] == values(registered, "register")["node_id"] == "3000"


def test_secrets_are_named_never_carried() -> None:
    plan = plan_of(
        "[3000]\nrxchannel = Local/pseudo\n",
        iax="[general]\nregister => 3000:s3cret-one@reg.example.net:4570\n"
        "[3001]\ntype = user\nsecret = s3cret-two\n",
        manager="[general]\nenabled = yes\nbindaddr = 0.0.0.0\n[mon]\nsecret = s3cret-three\n"
        "read = all\nwrite =\n",
    )
    text = repr(plan)
    assert "s3cret" not in text
    assert values(plan, "register")["peer"] == "reg.example.net:4570"
    assert values(plan, "ami") == {
        "enabled": True,
        "bind": "0.0.0.0:5038",
        "allow_remote": True,
        "username": "mon",
        "read_only": True,
    }
    assert values(plan, "listener")["auth"] == "required"  # no [radio] user
    assert [s.split(":")[0] for s in plan.secrets] == [
        "NET_PEER_3001",
        "NET_NODE=3000 and NET_SECRET",
        "NET_AMI_SECRET",
    ]


def test_echolink_reported_only_when_asterisk_loads_it_and_the_voter_only_when_used() -> None:
    rpt = "[3000]\nrxchannel = Local/pseudo\n"
    echolink = "[el0]\ncall = W1AW-L\n"
    off = plan_of(rpt, echolink=echolink, modules="[modules]\nautoload = no\n")
    assert not any("EchoLink" in d or "voter" in d for d in off.dropped)
    on = plan_of(
        rpt,
        echolink=echolink,
        modules="[modules]\nautoload = yes\nnoload => chan_usbradio.so\n",
    )
    # A station without its EchoLink number cannot be carried over; the report says so.
    assert "echolink" not in on.sections
    assert (
        "echolink.conf:1 [el0]: EchoLink: its call or node is not a callsign and EchoLink number"
        in on.dropped
    )
    # chan_voter loaded but no node on it changes nothing; a node on it cannot be imported.
    assert not any("voter" in d for d in on.dropped) and on.blockers == []
    voted = plan_of("[3000]\nrxchannel = Voter/3000\n", modules="[modules]\nautoload = yes\n")
    assert [b.split(": ")[0] for b in voted.blockers] == ["rpt.conf:2 [3000] rxchannel Voter/3000"]


ECHOLINK_CONF = """[el0]
call = w1aw-l
pwd = not-copied-pw
name = Pat Sysop
qth = Springfield, a town with a name longer than this
email = pat@example.org
node = 123456
lat = 0.0
maxstns = 20
rtcptimeout = 10
recfile = /tmp/echolink_recorded.gsm
astnode = 3000
context = radio-secure
server1 = nasouth.echolink.org
server2 = naeast.echolink.org
server3 = servers.echolink.org
deny = w6xxx
permit = *-L,w1*
message = Hello\\nthere
"""


def test_echolink_conf_becomes_the_echolink_section_without_its_password() -> None:
    rpt = "[3000]\nrxchannel = Local/pseudo\n"
    plan = plan_of(rpt, echolink=ECHOLINK_CONF)
    assert values(plan, "echolink") == {
        "callsign": "W1AW-L",
        "node_number": "123456",
        "directory": ["nasouth.echolink.org", "naeast.echolink.org", "servers.echolink.org"],
        "location": "Springfield, a town with a",
        "sysop": "Pat Sysop",
        "max_stations": 20,
        "allow": ["*-L", "W1*"],
        "deny": ["W6XXX"],
        "welcome": "Hello\nthere",
    }
    assert "not-copied-pw" not in repr(plan)
    assert any("NET_ECHOLINK_PASSWORD" in s and "echolink.conf:3" in s for s in plan.secrets)
    dropped = "\n".join(plan.dropped)
    assert "[el0] rtcptimeout" in dropped and "[el0] recfile" in dropped
    assert "lat" not in dropped and "astnode" not in dropped  # defaults, and this node


def test_asl3s_shipped_echolink_conf_maps_to_nothing() -> None:
    from pathlib import Path

    shipped = Path("/work/shared/peers/asl3/asl3-peer.tgz")
    if not shipped.exists():
        pytest.skip("the ASL3 peer is not here")
    import tarfile

    with tarfile.open(shipped) as tar:
        member = tar.extractfile("asl3-peer/etc/asterisk/echolink.conf")
        assert member is not None
        text = member.read().decode()
    plan = plan_of("[1999]\nrxchannel = Local/pseudo\n", echolink=text)
    assert "echolink" not in plan.sections and not any("echolink" in d for d in plan.dropped)


def test_the_jitter_buffer_keys_of_iax_conf_are_carried_within_range() -> None:
    rpt = "[3000]\nrxchannel = Local/pseudo\n"
    plan = plan_of(rpt, iax="[general]\njittertargetextra = 120\nmaxjitterbuffer = 9000\n")
    bridge = values(plan, "bridge")
    assert (bridge["jitter_target_extra_ms"], bridge["jitter_max_ms"]) == (120, 4000)
    carried = "[general] jittertargetextra -> [bridge] jitter_target_extra_ms"
    assert any(carried in c for c in plan.carried)
    # A buffer too small for its margin is made big enough, and the note says why.
    plan = plan_of(rpt, iax="[general]\njittertargetextra = 300\nmaxjitterbuffer = 250\n")
    bridge = values(plan, "bridge")
    assert (bridge["jitter_target_extra_ms"], bridge["jitter_max_ms"]) == (300, 460)
    setting = next(s for s in plan.sections["bridge"] if s.key == "jitter_max_ms")
    assert "maxjitterbuffer" in setting.source and "raised" in setting.note
    plan = plan_of(rpt, iax="[general]\njitterbuffer = no\n")
    assert "jitter_target_extra_ms" not in values(plan, "bridge")
    assert any("[general] jitterbuffer" in d and "always runs" in d for d in plan.dropped)


RADIO = "[3000]\nrxchannel = SimpleUSB/usb\n"
USB = "[usb]\ndevstr = 1-1:1.0\ncarrierfrom = usb\n"


def test_alsaradio_keys_rts_and_reads_dsr_inverted_as_chan_alsaradio_does() -> None:
    alsa = (
        "[general]\ncarrierfrom = serialdsr\nrxondelay = 2\n"
        "[ard0]\ninput_device = plughw:1,0\nserial_device = /dev/ttyUSB0\ninvertptt = 1\n"
    )
    plan = plan_of("[3000]\nrxchannel = alsaradio/ard0\n", alsaradio=alsa)
    assert values(plan, "radio") == {
        "ptt": "serial",
        "ptt_device": "/dev/ttyUSB0",
        "ptt_pin": "rts",
        "ptt_invert": True,
        "carrier": "serial",
        "carrier_device": "/dev/ttyUSB0",
        "carrier_pin": "dsr",
        "carrier_invert": True,  # serialdsr: a carrier while DSR is clear
        "rx_on_delay_ms": 40,
        "hang_time_ms": 5000,  # app_rpt's default hang time
    }
    assert values(plan, "audio")["backend"] == "cpal"
    assert any("ALSA devices plughw:1,0 (input), default (output)" in c for c in plan.checks)
    flipped = plan_of(
        "[3000]\nrxchannel = alsaradio/ard0\n",
        alsaradio=alsa.replace("= serialdsr", "= serialdsrinvert"),
    )
    assert values(flipped, "radio")["carrier_invert"] is False


def test_rpiradio_pins_default_as_chan_rpiradio_and_invertcor() -> None:
    plan = plan_of("[3000]\nrxchannel = RPiRadio/rpi0\n", rpiradio="[rpi0]\ninvertcor = 1\n")
    radio = values(plan, "radio")
    assert (radio["ptt_pin"], radio["carrier_pin"], radio["carrier_invert"]) == (22, 17, True)
    assert plan.blockers == []


def test_the_time_out_under_either_name_and_disagreeing_names_are_a_check() -> None:
    hamvoip = plan_of("[3000]\nrxchannel = Local/pseudo\ntx_timeout = 240000\n")
    assert values(hamvoip, "keying") == {"tx_timeout_secs": 240}
    both = plan_of("[3000]\nrxchannel = Local/pseudo\ntotime = 180000\ntx_timeout = 240000\n")
    assert values(both, "keying") == {"tx_timeout_secs": 180}
    assert any("tx_timeout = 240000 (HamVOIP's name) and totime = 180000" in c for c in both.checks)


@pytest.mark.parametrize(
    ("keys", "checked"),
    [
        ("idrecording = /etc/asterisk/local/node-id\n", "the station ID is a sound file"),
        ("idrecording = |iNOTSET\n", "the ID text NOTSET is not a callsign"),
        ("idrecording = |i\n", "the ID text (empty) is not a callsign"),
    ],
)
def test_a_radio_that_identified_without_an_id_text_here_is_a_check(
    keys: str, checked: str
) -> None:
    plan = plan_of(RADIO + keys, simpleusb=USB)
    assert "announce" not in plan.sections
    assert any(checked in c for c in plan.checks)


def test_morse_ids_defaults_and_limits_as_app_rpt_reads_them() -> None:
    plan = plan_of(
        RADIO + "idrecording = |mN0CALL\nidtime = 9000000\nbeaconing = 1\n", simpleusb=USB
    )
    announce = values(plan, "announce")
    # |m is Morse at [morse] frequency (800 Hz when unset); idtime is capped at 2400000 ms.
    assert (announce["cw_tone_hz"], announce["cw_wpm"], announce["id_interval_secs"]) == (
        800.0,
        20,
        2400,
    )
    assert any("9000000 ms: app_rpt takes at most 2400000" in d for d in plan.dropped)
    assert any("beaconing: an ID while idle" in d for d in plan.dropped)
    plain = plan_of(RADIO + "idrecording = |iN0CALL\n", simpleusb=USB)
    assert values(plain, "announce")["cw_tone_hz"] == 330.0  # app_rpt's idfrequency
    assert values(plain, "announce")["id_interval_secs"] == 300  # app_rpt's idtime


def test_only_keys_that_change_behaviour_are_reported() -> None:
    quiet = (
        "nounkeyct = 0\nbeaconing = no\nholdofftelem = 1\nlinktolink = no\nparrotmode = 0\n"
        "lnkactenable = 0\nlnkacttime = 1800\ncontext = radio\nerxgain = -3\naltHangTime = 400\n"
        "telemnomdb = -3\ntelemduckdb = -15\nfuncchar = *\nrptinacttime = 0\npoliteid = 30000\n"
    )
    plan = plan_of("[3000]\nrxchannel = Local/pseudo\n" + quiet)
    assert [d for d in plan.dropped if "[3000]" in d] == []
    loud = plan_of(
        "[3000]\nrxchannel = Local/pseudo\nlinktolink = yes\nparrotmode = 2\nlnkactenable = 1\n"
        "funcchar = A\nmystery = 1\n"
    )
    assert [d.split(": ")[0] for d in loud.dropped if "[3000]" in d] == [
        f"rpt.conf:{n} [3000] {k}"
        for n, k in (
            (3, "linktolink"),
            (4, "parrotmode"),
            (5, "lnkactenable"),
            (6, "funcchar"),
            (7, "mystery"),
        )
    ]


def test_without_iax_conf_the_node_listens_as_asls_shipped_iax_conf() -> None:
    plan = plan_of("[3000]\nrxchannel = Local/pseudo\n")
    assert values(plan, "listener") == {"bind": "0.0.0.0:4569", "auth": "off"}
    assert values(plan, "links")["verify_source_ip"] is True
    assert values(plan, "")["codec_policy"] == "ulaw_only"
    assert any(c.startswith("there is no iax.conf") for c in plan.checks)
    assert not any("iax.conf [general]" in c for c in plan.carried)


def test_duplex_0_keys_the_transmitter_for_neither_the_id_nor_the_courtesy_tone() -> None:
    keys = "idrecording = |iN0CALL\nunlinkedct = ct2\n"
    full = plan_of(RADIO + keys, simpleusb=USB)
    assert values(full, "announce")["cw_keys_when_idle"] is True
    assert values(full, "radio")["courtesy_tone"] == [[660, 880, 150]]  # app_rpt's built-in ct2
    half = plan_of(RADIO + keys + "duplex = 0\n", simpleusb=USB)
    assert values(half, "announce")["cw_keys_when_idle"] is False
    assert values(half, "radio")["courtesy_tone"] == []
