"""The commented configuration template `node serve` writes when the config file is missing.

It must load with `load_config` to exactly `NodeConfig()` (tests/test_config.py checks this) and
must never hold a secret. Conventions, relied on by the tests: prose comments start with `# `,
settings that are switched off start with `#` directly followed by the setting (`#mode = ...`,
`#[bridge]`), so removing that one `#` switches them on with the value shown.
"""

TEMPLATE = """\
# iax-node configuration (TOML).
#
# Written because the config file did not exist; the node runs with these safe defaults.
# Required sections: [listener] and [control]. Everything else is optional. Unknown sections
# and keys are errors, never silently ignored.
#
# Lines such as `#mode = "bridge"` are settings switched off: remove the `#` to use them. The
# value shown is the default, unless the comment says it is an example.
# Keys marked EXTENSION are not in the product spec; they exist because operators need them.
#
# SIGHUP (systemctl reload) re-reads this file and the peers file: [listener] settings other
# than bind, [secrets] peers_file and [links] nodes_file apply to new calls at once, calls that
# are up stay up; any other change needs a restart and the log names it. A file that does not
# load changes nothing.

# Offered codecs, best first:
#   ulaw_only     = mu-law, A-law
#   allow_slin    = mu-law, A-law, slin (slin only if the peer asks for it)
#   prefer_slin   = slin, mu-law, A-law
#   prefer_slin16 = slin16, slin, mu-law, A-law (the station mixes at 16 kHz)
# A caller whose requested format is in the common set gets that format; a caller with no codec
# in common is rejected ("Unable to negotiate codec", cause 65).
# Allowed: "ulaw_only", "allow_slin", "prefer_slin", "prefer_slin16".
codec_policy = "prefer_slin16"

[listener]
# Inbound IAX2 calls. Forward UDP 4569 to this host for calls from outside.
# Where the IAX2 UDP socket listens: "<ip>:<port>" or "[<ipv6>]:<port>".
bind = "0.0.0.0:4569"
# "auto" answers inbound calls at once; "manual" rings until POST /answer (or POST /reject).
answer = "auto"
# Cap on simultaneous inbound calls (1-32766, the IAX2 call-number space). Calls that ended and
# linger to re-ACK a HANGUP do not count. For hundreds of calls see docs/performance.md.
max_calls = 8
# Inbound authentication: "required" MD5-challenges every caller against the secret provisioned
# for its node id ([secrets] peers_file or NET_PEER_<NODE>) and rejects unknown usernames;
# "optional"; "off".
auth = "required"
# Allowlist of caller node ids, e.g. ["2000", "2001"]. Empty admits every caller (subject to
# auth and max_calls); a caller not on a non-empty list is rejected before answer.
allowed_nodes = []
# EXTENSION. IAX2 call tokens (anti-spoofing): "required" demands one, "auto" gives one to every
# caller that asks and still serves callers that never send one (e.g. iaxmodem), "off".
calltoken = "auto"

[control]
# The HTTP control channel, SSE event stream and status page. It has NO authentication, so it
# must be a loopback address (127.0.0.0/8, [::1] or localhost). For remote access put an SSH
# tunnel, VPN or authenticating reverse proxy in front of it.
bind = "127.0.0.1:8730"

[secrets]
# Where credentials come from. No secret is ever written in this template.
#   "env"     - at startup read NET_NODE (the node number, must equal [register].node_id) and
#               NET_SECRET (the node password) from the environment.
#   "control" - nothing at startup; send the credential after start with
#               POST /secrets {"username": "<node_id>", "secret": "<password>"}.
#   "config"  - the password is the inline key `secret` in this section, e.g.
#                   secret = ""
#               The node refuses to start unless this file is readable by its owner alone
#               (chmod 600) and refuses `secret` with any other source.
# Per-node inbound peer secrets (for listener.auth), whatever the source, come from environment
# variables NET_PEER_<NODE> (e.g. NET_PEER_2001) and from the peers file below.
# The AMI password ([ami] below) comes from the same source: NET_AMI_SECRET ("env"),
# POST /secrets {"username": "ami:<[ami] username>", "secret": "..."} ("control"), or the
# inline key of this section ("config"), e.g.
#                   ami_secret = ""
# Allowed: "env", "control", "config".
source = "env"
# EXTENSION. The peers file: one <node>=<secret> per line ('#' starts a comment line), e.g.
#     2001=the secret of node 2001
# Relative to this file's directory. Refused unless it is a regular file of mode 0600 (or 0400)
# owned by the user the node runs as (or root). A node may have a secret in the file or in
# NET_PEER_<NODE>, not both. Re-read on SIGHUP (systemctl reload): changes apply to the next
# inbound call; calls that are up stay up.
#peers_file = ""

# Registration with an upstream registrar, so the node is reachable by its node number.
# Omit the section to not register. The password is never here (see [secrets]). Example values:
#[register]
# EXTENSION. "iax2" (IAX2 REGREQ to `peer`) or "http" (AllStarLink 3's JSON POST to `url`).
# Use one, never both: callees check that our calls come from the address we registered.
#method = "iax2"
# Registrar address, "<host>:<port>" (method "iax2" only; required there).
#peer = "register.example.org:4569"
# EXTENSION. The HTTP registrar (method "http" only), for example:
# url = "https://register.allstarlink.org/"
# This node's number; also the register username.
#node_id = "2000"
# EXTENSION. Refresh interval in seconds (10-3600): the IAX2 REFRESH asked for, or how often the
# HTTP registration is re-posted.
#refresh = 60

# EXTENSION. Status posts to a stats collector, as app_rpt's statpost_url does (a GET with the
# node's links and counters every interval, and one on every key change). Needs [register]
# node_id. Omit the section to post nothing. Example values:
#[statpost]
# The collector (http:// or https://, no query).
#url = "http://stats.allstarlink.org/uhandler"
# Seconds between the full posts (30-600).
#interval_secs = 60

# The conference bridge; the topology can be changed live with POST /bridge.
#[bridge]
# "handset" (1:1 with the local radio), "bridge" (pure conference, local radio off),
# "conference" (same mix-minus engine), or (EXTENSION) "parrot" (each member hears what it said
# played back, tuned by [parrot]).
#mode = "bridge"
# Each member hears everyone but itself; false gives a full mix.
#mix_minus = true
# Add the local microphone as a conference source and feed the local speaker the sum of all.
#include_local_radio = false

# Local sound devices (POST /devices changes them live).
#[audio]
# Substring of the capture / playback device name; empty means the system default device.
#input = ""
#output = ""
# "cpal" (hardware) or "none" (hardware-free null backend for headless hosts).
#backend = "none"
# EXTENSION. Rate the sound card runs at: 0 = the station rate if the card takes it, else 48000
# (USB radio interfaces such as the CM108 take only 48000); or the station rate, or 48000.
#device_rate = 0
# EXTENSION. Gain in dB (-40.0 to 20.0) on the audio captured from the radio's receiver (toward
# the network) and on the audio played to its transmitter. Aim for voice peaks near -13 dBFS on
# the status page's audio meters (ASL's level for 3 kHz deviation); POST /levels sets them live.
#rx_gain_db = 0.0
#tx_gain_db = 0.0

# Station ID and event announcements.
#[announce]
#enabled = false
# Form of the station ID: "cw", "tts" or "off".
#id_mode = "cw"
# Seconds between periodic IDs (0-86400); 0 disables them.
#id_interval_secs = 0
# CW speed in words per minute (5-60).
#cw_wpm = 20
# CW tone frequency in Hz (200.0-3400.0).
#cw_tone_hz = 800.0
# When true the periodic ID KEYS THE TRANSMITTER: a real transmission.
#cw_keys_when_idle = false
# EXTENSION. The text of the station ID (1-32 of A-Z, 0-9, / and space), e.g. "W1AW".
# Required when a periodic ID is enabled.
#callsign = ""
# EXTENSION. Also send "to_air" announcements of events and commands over the transceive links,
# which KEYS THEM. The station ID and link connect/disconnect announcements never go to links.
#to_links = false

# Text-to-speech through an external binary.
#[announce.tts]
#enabled = false
# Name or path of the TTS executable (required when enabled), e.g. "piper".
#binary = ""
# Path to the voice model.
#voice = ""
# Rendering time-out in milliseconds (100-60000).
#timeout_ms = 4000
# Gain in dB (-60.0-20.0); negative attenuates.
#gain_db = 0.0

# Per-event announcements. destination: "to_air" (transmits) or "to_monitor" (local only).
#[announce.events.incoming_call]
#enabled = false
#destination = "to_monitor"
#[announce.events.hangup]
#enabled = false
#destination = "to_monitor"
#[announce.events.registered]
#enabled = false
#destination = "to_monitor"
#[announce.events.register_failed]
#enabled = false
#destination = "to_monitor"
#[announce.events.answered]
#enabled = false
#destination = "to_monitor"
# EXTENSION. Link connects and disconnects, ours and those other nodes report ("node 2000
# connected"), as AllStarLink nodes announce them.
#[announce.events.link_connected]
#enabled = false
#destination = "to_monitor"
#[announce.events.link_disconnected]
#enabled = false
#destination = "to_monitor"

# DTMF command execution (*1 disconnect, *2 monitor, *3 connect + node number). Off by default
# because it lets ANY connected member command the links.
#[dtmf]
#enabled = false
# Time allowed between the digits of a * sequence, in milliseconds (100-60000).
#inter_digit_timeout_ms = 3000
# EXTENSION. Also decode DTMF tones in the received audio (digits typed on a radio or an analog
# phone), muting them from the conference so they do not go out over the links. Digits are
# reported as events even when enabled = false; only commands need enabled.
#inband = true
# EXTENSION. Whose audio is listened to: "calls", "links", "local" (the local radio's receiver).
#inband_sources = ["calls", "links", "local"]

# Node-to-node links. A node number is looked up in this order: the address given with the
# command, then nodes_file, then DNS.
#[links]
# EXTENSION. Optional file resolving node numbers to addresses, one entry per line in the
# extnodes form <node>=radio@<ip>:<port>/<node>,<ip> (the last field is the address inbound
# calls from that node must come from, or NONE). Re-read on every lookup. Relative to this
# file's directory.
#nodes_file = ""
# EXTENSION. Look node numbers of 4 or more digits up in DNS as AllStarLink 3 does (SRV
# _iax._udp.<node>.<dns_domain>, then the target's A record).
#dns = true
#dns_domain = "nodes.allstarlink.org"
# Name servers, e.g. ["127.0.0.1:5353"]; empty uses the system resolver.
#dns_servers = []
# Time allowed for one lookup in milliseconds (100-30000).
#dns_timeout_ms = 3000
# EXTENSION. Refuse an inbound link whose source address is not the address its node number
# resolves to (what AllStarLink nodes do for "radio" callers).
#verify_source_ip = false
# Per-node settings; the table name is the node number. Example:
#[links.2000]
# "standard", or "wt-guest" for nodes whose guest context exposes only the web-transceiver
# extension (needs the [portal] section).
#shape = "standard"
# EXTENSION. USERNAME of our link calls to this node (default "radio", or this node's number
# when a peer secret for node 2000 is provisioned).
#username = "radio"
# EXTENSION. A permanent link: dialled at start and redialled for ever when lost.
#permanent = false
# EXTENSION. Mode of the permanent link: "transceive" (*3), "monitor" (*2) or "local_monitor"
# (*75: heard on the local radio only).
#mode = "transceive"
# EXTENSION. The node's address, instead of looking the number up: "<host>:<port>".
#addr = "192.0.2.10:4569"
# EXTENSION. "dstar" marks a D-Star gateway: while a link to it is up the node refuses to key.
#network = "allstar"

# EXTENSION. The operator's push-to-talk (POST /key).
#[keying]
# TX time-out in seconds (1-3600): a key held this long is released and reported.
#tx_timeout_secs = 180

# EXTENSION. The radio: its transmitter's PTT and its receiver's carrier detect (COS). Names
# follow ASL3's simpleusb.conf / rpt.conf in milliseconds; docs/radio.md maps them. The radio
# hears the conference only with [bridge] mode = "handset", or "conference" with
# include_local_radio = true.
#[radio]
# How the transmitter is keyed: "none", "cm108" (a CM108/CM119 USB interface's GPIO over hidraw),
# "serial" (a serial port's RTS or DTR) or "gpio" (a GPIO line, needs `pip install gpiod`).
#ptt = "none"
# The PTT device: /dev/hidrawN (cm108), /dev/ttyUSB0 (serial), gpiochip0 (gpio).
#ptt_device = ""
# Unset by default: the backend's default pin. cm108: GPIO number 1-8 (3 by default, as
# simpleusb); serial: "rts" (default) or "dtr"; gpio: the line's offset or name (required). E.g.
# ptt_pin = 3
# Key with the line low instead of high (simpleusb invertptt).
#ptt_invert = false
# Milliseconds (0-60000) the transmitter stays keyed after the conference goes quiet (hangtime).
#hang_time_ms = 500
# Where the carrier comes from: "none", "cm108" (a HID input, carrierfrom = usb), "serial" (CTS,
# DSR or CD), "gpio" (a GPIO line) or "vox" (the received audio's level).
#carrier = "none"
# The carrier's device; empty with carrier = "cm108" means ptt_device.
#carrier_device = ""
# Unset by default: the backend's default pin. cm108: "vol_down" (default, the usual COS wiring),
# "vol_up", "mute_play", "mute_rec" or a GPIO number 1-8; serial: "cts", "dsr" or "cd" (required);
# gpio: the line's offset or name (required). E.g.
# carrier_pin = "vol_down"
# The carrier is active with the input low / clear (carrierfrom = usbinvert).
#carrier_invert = false
# Milliseconds (0-5000) a carrier must last before it keys the node (rxondelay).
#rx_on_delay_ms = 0
# Milliseconds (0-1000) the received audio is held back, so the squelch tail is never sent
# (rxaudiodelay).
#rx_audio_delay_ms = 0
# carrier = "vox": threshold in dBFS RMS (-80.0 to 0.0, as the status page's rx meter reads), and
# how long (ms, 0-10000) the level must stay above it to open and below it to close.
#vox_threshold_db = -35.0
#vox_attack_ms = 40
#vox_release_ms = 800
# The courtesy tone played on the transmitter when a received transmission ends: steps of
# [first Hz, second Hz, ms] (0 Hz for none, both 0 a pause; at most 16), e.g.
# [[880, 0, 80], [660, 0, 80]]; [] for none.
#courtesy_tone = []
# Its peak level in dBFS (-60.0-0.0).
#courtesy_tone_level_db = -18.0

# EXTENSION. The Asterisk Manager Interface subset Allmon3 and Supermon poll (RptStatus XStat and
# SawStat, rpt stats/lstats/nodes/xnode, rpt cmd ilink, rpt fun). Its password comes from the
# secrets source (see [secrets]); it is never in this file unless source = "config".
#[ami]
#enabled = false
# Where AMI listens. AMI sends the password and every command in clear text, so a non-loopback
# address is refused unless allow_remote = true.
#bind = "127.0.0.1:5038"
#allow_remote = false
# The login name (Allmon3's `user`, Supermon's `user`).
#username = "admin"
# Connections served at once (1-1000); Allmon3 opens one per command besides its poller.
#max_connections = 16

# The web-transceiver portal account, required by wt-guest links. Example values:
#[portal]
# Portal account name.
#user = "N0CALL"
# A node the account owns.
#node = "2000"
# The NAME of the environment variable holding the portal password (never the password).
#credential_env = "PORTAL_PASSWORD"
# EXTENSION. The portal's base URL; web-transceiver tokens come from its
# /api/v2/auth-wt-legacy API.
#url = "https://www.allstarlink.org"

# Parrot tuning; consulted only in parrot mode, harmless otherwise.
#[parrot]
# Milliseconds (0-60000).
#playback_delay_ms = 3000
# Milliseconds (20-10000).
#silence_gap_ms = 800
# dBFS (-96.0-0.0).
#vox_threshold_db = -40.0

# The tunnel section: with [wireguard], every IAX2 datagram (calls, links, registration,
# inbound) goes through a userspace WireGuard tunnel to one peer (a hub, or another node), with
# no TUN device and no root; without it, plain UDP. Set up in docs/wireguard.md. Example values:
#[wireguard]
# Our IPv4 address inside the tunnel (wg-quick's Address; a /prefix is accepted and ignored).
# The node's IAX2 port there is [listener] bind's port (4569 when that is 0).
#address = "10.8.0.2"
# The NAME of the environment variable holding our private key (base64, from `wg genkey` or
# `node wg-keygen`); never the key itself.
#private_key_env = "WG_PRIVATE_KEY"
# The peer's public key (base64).
#peer_public_key = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="
# The peer's outer address, "<host>:<port>" (a name is resolved at start). Leave it out to wait
# for the peer to make contact (it is then learnt, and followed as it moves).
#endpoint = "hub.example.net:51820"
# IPv4 networks sent into the tunnel and accepted from it; ["0.0.0.0/0"] sends everything
# (registration too) through the peer.
#allowed_ips = ["10.8.0.0/24"]
# The outer UDP port (0-65535; 0 picks a free one, fine when this node dials its peer). It
# binds on [listener] bind's address.
#listen_port = 0
# Seconds between keepalives (0-65535, 0 off). With keepalives the tunnel also keeps itself up:
# it handshakes at start and again whenever the session lapses, which a node behind NAT or CGNAT
# needs to stay reachable.
#persistent_keepalive = 25
# The NAME of an environment variable holding a preshared key (base64), if the peer uses one.
#preshared_key_env = "WG_PRESHARED_KEY"
"""
