"""CM108 reports byte for byte, and the hidraw node driven through a pty (node.radio.cm108,
node.radio.ptt, node.radio.carrier)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from node.config import RadioConfig
from node.errors import RadioError
from node.radio.carrier import open_carrier
from node.radio.cm108 import Cm108, input_active, output_report
from node.radio.ptt import open_ptt, release_ptt
from tests.radio.fake_hidraw import KEY_GPIO3, UNKEY_GPIO3, FakeHidraw


def test_gpio3_key_and_unkey_reports_are_those_simpleusb_sends() -> None:
    # Report ID 0, HID_OR0 0, data (GPIO3 = bit 2), direction (GPIO3 an output), 0.
    assert output_report(3, True) == KEY_GPIO3 == b"\x00\x00\x04\x04\x00"
    assert output_report(3, False) == UNKEY_GPIO3 == b"\x00\x00\x00\x04\x00"
    assert output_report(1, True) == b"\x00\x00\x01\x01\x00"
    assert output_report(8, False) == b"\x00\x00\x00\x80\x00"
    for bad in (0, 9):
        with pytest.raises(ValueError, match="accepted: 1-8"):
            output_report(bad, True)


def test_input_reports_name_the_button_and_gpio_pins() -> None:
    assert input_active(bytes((0x02, 0, 0, 0)), "vol_down")
    assert not input_active(bytes((0x01, 0, 0, 0)), "vol_down")
    assert input_active(bytes((0x01, 0, 0, 0)), "vol_up")
    assert input_active(bytes((0x08, 0, 0, 0)), "mute_rec")
    assert input_active(bytes((0, 0x04, 0, 0)), 3)
    assert not input_active(bytes((0x04, 0, 0, 0)), 3)


def test_the_ptt_writes_the_reports_to_the_hidraw_node() -> None:
    with FakeHidraw() as hid:
        cfg = RadioConfig(ptt="cm108", ptt_device=hid.path)
        ptt = open_ptt(cfg)
        ptt.set(True)
        ptt.set(False)
        ptt.set(True)
        ptt.close()
        # Released at open, keyed, released, keyed, released at close.
        assert hid.reports() == [UNKEY_GPIO3, KEY_GPIO3, UNKEY_GPIO3, KEY_GPIO3, UNKEY_GPIO3]


def test_an_inverted_ptt_on_another_pin_drives_it_low_to_key() -> None:
    with FakeHidraw() as hid:
        cfg = RadioConfig(ptt="cm108", ptt_device=hid.path, ptt_pin=4, ptt_invert=True)
        ptt = open_ptt(cfg)
        ptt.set(True)
        assert hid.reports() == [b"\x00\x00\x08\x08\x00", b"\x00\x00\x00\x08\x00"]
        release_ptt(cfg)  # one write: GPIO4 high, released
        assert hid.reports()[2:] == [b"\x00\x00\x08\x08\x00"]
        ptt.close()


def test_the_carrier_follows_the_volume_down_input_reports() -> None:
    async def scenario(hid: FakeHidraw) -> list[bool]:
        cfg = RadioConfig(carrier="cm108", carrier_device=hid.path)
        carrier = open_carrier(cfg)
        assert carrier is not None
        seen: list[bool] = []
        changed = asyncio.Event()

        def on_change(active: bool) -> None:
            seen.append(active)
            changed.set()

        carrier.start(asyncio.get_running_loop(), on_change)
        # Pressed (COS), still pressed with volume up too, released, nothing, pressed.
        for buttons, edge in ((0x02, True), (0x03, False), (0x01, True), (0, False), (2, True)):
            changed.clear()
            hid.send_input(buttons)
            if edge:
                await asyncio.wait_for(changed.wait(), 5)
            else:
                await asyncio.sleep(0.1)  # a report without an edge: nothing to wait for
        carrier.close()
        return seen

    with FakeHidraw() as hid:
        assert asyncio.run(scenario(hid)) == [True, False, True]


def test_a_hidraw_node_that_cannot_be_opened_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RadioError, match=r"cannot open CM108 hidraw node .*/hidraw9: No such file"):
        Cm108(str(tmp_path / "hidraw9"))
