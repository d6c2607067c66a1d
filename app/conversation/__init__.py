"""Qt-free rules about a conversation that the window and the command line share: which
messages the engine reads, how much of the context they fill, how an exchange is stored."""
