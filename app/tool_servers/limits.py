"""Every limit of tool use, declared once: the settings' defaults and the command line's are
made from these."""

STEP_LIMIT = 8  # model replies that may end in calls, in one turn of the agent loop
MAX_STEP_LIMIT = 100  # the most Settings → Tools allows
CALL_TIMEOUT_S = 60.0  # one tools/call, per server (ServerConfig.call_timeout_s)
MAX_CALL_TIMEOUT_S = 3600.0  # the longest Settings → Tools lets a call take
RESULT_CAP_BYTES = 32 * 1024  # of a result's text, before the model sees it (Settings → Tools)
MAX_RESULT_CAP_KB = 1024  # the most Settings → Tools lets a result keep
START_TIMEOUT_S = 30.0  # from spawning a server (or connecting) to its tool list
LIST_TIMEOUT_S = 15.0  # tools/list after a list_changed notification
IMAGE_CAP_BYTES = 2 * 1024 * 1024  # an image returned larger is named, not kept for a thumbnail
RESTART_BACKOFF_S = (1.0, 2.0, 5.0, 15.0, 60.0)  # waits before restarting a server that died
