"""Tool calling and structured output, Qt-free and llama-free: the typed request (types.py),
each family's call syntax (formats.py, detected from the template itself), the streamed
parse of a reply into text and calls (parsing.py), and the JSON schemas a call or a reply
must satisfy (schema.py). The grammar that holds a model to them is built in engine/llama/."""
