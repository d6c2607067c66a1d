"""The QObjects that outlive windows (vorta's managers): the engine bridge and its thread, the
open conversation, the current model, downloads, remote servers, the local server, settings
and where Hearth keeps things. Widgets reach the engine and the store only through these."""
