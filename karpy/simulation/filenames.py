"""What `-f` names, as kubectl reads it: files, directories (`-R` to recurse) and `-`.

A directory contributes its `.json`, `.yaml` and `.yml` files in name order (subdirectories
too with `-R`); a file named on the command line is read whatever its extension. A directory
without any manifest is an error, as it is for kubectl, so a typo does not plan nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from karpy.simulation.documents import ScenarioError

__all__ = ["EXTENSIONS", "expand_filenames"]

EXTENSIONS = (".json", ".yaml", ".yml")


def _manifests(directory: Path, recursive: bool) -> Iterator[Path]:
    for entry in sorted(directory.iterdir()):
        if entry.is_dir():
            if recursive:
                yield from _manifests(entry, recursive)
        elif entry.suffix.lower() in EXTENSIONS:
            yield entry


def expand_filenames(paths: Sequence[str], *, recursive: bool = False) -> list[str]:
    """The files to read, in order; `-` (standard input) at most once."""
    out: list[str] = []
    stdin = False
    for path in paths:
        if path == "-":
            if stdin:
                raise ScenarioError("-f -: standard input can be read only once")
            stdin = True
            out.append(path)
            continue
        folder = Path(path)
        if not folder.is_dir():
            out.append(path)  # a file, or a missing one the reader names
            continue
        try:
            found = [str(p) for p in _manifests(folder, recursive)]
        except OSError as err:
            raise ScenarioError(f"{path}: cannot list the directory: {err.strerror}") from None
        if not found:
            more = "" if recursive else " (-R reads its subdirectories too)"
            raise ScenarioError(
                f"{path}: no manifest in the directory: recognized file extensions are "
                f"{', '.join(EXTENSIONS)}{more}"
            )
        out.extend(found)
    return out
