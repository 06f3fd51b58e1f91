"""The commented configuration template `node serve` writes when the config file is missing.

Generated from the key declarations by `node.config.template`, so it cannot drift from what the
loader accepts; kept here under its old name for the code and tests that read `TEMPLATE`.
"""

from node.config.template import render_template

TEMPLATE = render_template()
