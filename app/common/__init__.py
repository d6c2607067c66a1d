"""Small Qt-free helpers every room may use: foreign text made safe to show, the newest-request
ticket, logging to a file."""
