"""Chat templates: untrusted Jinja run in a sandbox with limits on time, size and nesting, the
fallbacks for models that ship none, and the source checks made before a template runs."""
