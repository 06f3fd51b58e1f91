"""`node import-asl3`: an AllStarLink 3 configuration (/etc/asterisk) turned into a node.toml.

`conf` reads Asterisk's file format (templates, includes, overrides) without I/O, `mapper` maps
the parsed files to this node's keys (a `Plan`), `writer` renders the plan as a commented
node.toml and as the report, `command` does the file I/O. docs/migrating-from-asl3.md is the
mapping table.
"""
