"""Images attached to messages (#30): checked on the way in, normalized, and read back as pixels.
Qt-free and llama-free, beside store and library: the window, the command line, the server, the
store and the engine's process all use it."""
