"""`node tui`: an interactive terminal menu over the node's controller, in the node's process.

`node.tui.app` is the screen (Textual), `node.tui.view` the text it shows, `node.tui.dialogs` its
dialogs and `node.tui.run` the command, which starts the node and puts the screen on top.
"""
