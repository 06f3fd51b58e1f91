"""MediaBridge over a real engine: the calls the controller makes reach the engine intact."""

from __future__ import annotations

import time

from node._core import Engine, ulaw_encode
from node.iax2.constants import ControlSubclass, Format
from node.media.bridge import MediaBridge, Topology


def test_a_radio_key_pushed_by_the_controller_plays_out_in_order_with_the_audio() -> None:
    # Regression: the controller passes (callno, "control", subclass, ts) for RADIO_KEY/UNKEY,
    # and the bridge used to take (callno, kind, ts) and forward a call the engine refuses: the
    # TypeError discarded the rest of the received batch (seen with a keying softphone in
    # tests/interop/test_two_nodes.py).
    engine = Engine("127.0.0.1:0")
    try:
        bridge = MediaBridge(engine, Topology())
        bridge.add_leg(7, 9, ("127.0.0.1", 9), int(Format.ULAW), 0)
        frame = ulaw_encode(b"\x00\x10" * 160)
        for i in range(10):
            bridge.push_voice(7, int(Format.ULAW), 20 + 20 * i, frame)
        bridge.push_control(7, "control", int(ControlSubclass.RADIO_KEY), 30)
        events: list[tuple] = []
        for _ in range(250):
            events += engine.drain_events()
            if any(e[0] == "control" for e in events):
                break
            time.sleep(0.02)
        controls = [e for e in events if e[0] == "control"]
        assert controls == [("control", 7, ("control", int(ControlSubclass.RADIO_KEY)), 30, b"")]
        assert not [e for e in events if e[0] == "command_failed"]
    finally:
        engine.stop()
