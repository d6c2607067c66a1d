"""`hearth serve`: the loaded model as a local OpenAI-compatible server. Qt-free.

    requests.py     JSON bodies read into typed requests, refused with OpenAI's error shape
    errors.py       that shape (`ApiError`) and the status of every refusal
    completions.py  the seam to whatever runs the model: `Job` in, events out (`Completions`)
    queue.py        `EngineQueue`, the command line's `Completions`: a worker thread that owns
                    one Backend and serves queued jobs one at a time
    replies.py      a job's events on the event loop, and the client's disconnect watched
    shapes.py       OpenAI's reply bodies and stream chunks
    app.py          the Starlette app: routes, the API key, the body limit
    server.py       uvicorn on a bound socket: the address line, Ctrl+C and SIGTERM
"""
