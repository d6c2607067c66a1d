"""The engine: what runs a model, and nothing else. Qt-free.

    backend.py      the interface every model runner implements (`Backend`)
    opening.py      `open_backend`: the one place that picks the implementation for a source
    types.py        the typed values every room passes around (ModelSettings, ReplyStats, …)
    sampling.py     sampling parameters, presets and the model author's defaults
    context.py      fitting a conversation into the context window
    stops.py        stop strings; lookup.py  prompt-lookup drafts; memory_plan.py  what a load costs
    llama/          llama.cpp: the only package that imports llama_cpp
    gguf/           reading a GGUF file's header, without loading it
    templates/      chat templates in a sandbox
    kv/             saved KV state per conversation
    remote/         a model on an OpenAI-compatible server
"""
