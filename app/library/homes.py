"""Hearth's own models folders, as the library is given them.

Where they are is the owners' business (owners/paths.py asks Qt for the user's data location);
the library takes them as arguments, so that it never imports Qt and a test can point it
anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelHomes:
    """The `models/` folder that ships with Hearth (beside the bundle, or in the source tree),
    and the user's own models folder."""

    shipped: Path
    user: Path
