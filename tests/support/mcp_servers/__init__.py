"""MCP servers the tool-server tests start as children: one written with the SDK (toolbox.py),
and scripts that misbehave in one way each (misbehaving.py). Each is run as
`[sys.executable, path, ...]`, so it needs nothing from the tests' own process."""
