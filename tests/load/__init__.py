"""End-to-end load tests: the engine under N legs on loopback."""
