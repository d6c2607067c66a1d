"""Tool servers (MCP), Qt-free: configured (config.py), supervised on one event-loop thread
(supervisor.py), their tools offered to the model (catalog.py), their results capped (results.py)."""
