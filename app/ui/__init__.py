"""Widgets only. Nothing in here imports llama_cpp; widgets reach the engine through the owner
objects (app.session, app.model_session, app.download_manager), which reach it through app.bridge."""
