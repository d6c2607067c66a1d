"""The process around the window: starting the GUI, one instance at a time, the self-test,
SIGTERM and SIGINT, crash reports."""
