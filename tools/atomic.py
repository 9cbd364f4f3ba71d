"""Outputs that appear only when complete: write to a temporary name in the same folder, then rename.

A call killed mid-write leaves at most a `.<name>.<random>.partial` file, never a file under its final
name that looks finished. Every writer of an output file goes through `atomic_output`:

    with atomic_output(path) as tmp:
        np.save(tmp, array)          # or rasterio.open(tmp, "w", ...), fig.savefig(tmp), torch.save(..., tmp)

The temporary name keeps the final suffix, so libraries that pick a format from the name (GDAL,
matplotlib) write the right one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from tools.progress import note_output

PARTIAL_MARK = ".partial"


def partial_name(path: Path) -> Path:
    """The temporary sibling of `path`: hidden, unique, and with the same final suffix."""
    return path.with_name(f".{path.stem}.{uuid.uuid4().hex[:8]}{PARTIAL_MARK}{path.suffix}")


def is_partial(path: Path) -> bool:
    """Whether `path` is an unfinished output left by a killed writer."""
    return path.name.startswith(".") and PARTIAL_MARK in path.name


@contextlib.contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` when the block ends without error.

    On an exception (a cancel included) the temporary file is removed and `path` is left as it was.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial_name(final)
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"the writer did not create {tmp}")
        os.replace(tmp, final)
        note_output(final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


@contextlib.contextmanager
def atomic_folder(path: str | Path) -> Iterator[Path]:
    """Like `atomic_output`, for a folder: yield a temporary sibling path (not created) to fill, then put it
    in place of `path` (an older folder there is replaced); on an exception the temporary folder is removed.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.{uuid.uuid4().hex[:8]}{PARTIAL_MARK}")
    try:
        yield tmp
        if not tmp.is_dir():
            raise FileNotFoundError(f"the writer did not create the folder {tmp}")
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        note_output(final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """Write `text` to `path` atomically and return `path`."""
    final = Path(path)
    with atomic_output(final) as tmp:
        tmp.write_text(text, encoding=encoding)
    return final


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` atomically and return `path`."""
    final = Path(path)
    with atomic_output(final) as tmp:
        tmp.write_bytes(data)
    return final
