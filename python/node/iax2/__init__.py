"""Sans-I/O IAX2: frames' meaning, call and registration machines, and the asyncio transport."""
