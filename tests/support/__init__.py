"""What the tests share: scripted backends, servers, the window stack, settings files, walks of
the widget tree. One package, importable as `support` (pyproject.toml puts tests/ on the path),
so no test reaches a helper through the folder pytest happened to collect first."""
