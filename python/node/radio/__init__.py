"""The radio edge: the transmitter's PTT line, the receiver's carrier detect, and the timing
around them (hang time, TX time-out, carrier on-delay)."""
