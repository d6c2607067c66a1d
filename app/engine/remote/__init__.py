"""A model on an OpenAI-compatible server, as a Backend: the request, the streamed reply, the
model list, and the server's failures in words a user can act on."""
