"""A run folder left as it was found when a command fails before training wrote a checkpoint."""

from __future__ import annotations

import shutil
from pathlib import Path


class RunFolderGuard:
    """Remembers what a run folder held before a command, to remove what a failed command added.

    Nothing is removed once a checkpoint was written: a run that trained for a while can still be resumed.
    """

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.before: set[Path] | None = None  # None: the folder did not exist

    def snapshot(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.before = set(self.folder.rglob("*")) if self.folder.is_dir() else None

    def undo(self) -> None:
        """Remove the files and folders created since :meth:`snapshot` unless a checkpoint is among them."""
        if self.folder is None or not self.folder.is_dir():
            return
        added = set(self.folder.rglob("*")) - (self.before or set())
        if any(p.suffix == ".ckpt" for p in added):
            return
        if self.before is None:
            shutil.rmtree(self.folder, ignore_errors=True)
            return
        for path in sorted(added, key=lambda p: len(p.parts), reverse=True):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
