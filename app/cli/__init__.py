"""The command line: `hearth inspect | prompt | chat | models | serve | pull | conversations`.

It loads no widgets and none of the window's owner objects (tests/test_walls.py); it may read
Qt's standard locations, the settings file and the instance lock (QtCore)."""
