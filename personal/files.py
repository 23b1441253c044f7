"""Reading untrusted JSON files: ONE place that turns every way they can be bad into a ValueError
naming the file (issue 28, item 9: a deeply nested or 5000-digit episode file exited 1 with a bare
``RecursionError`` / ``ValueError`` and no file name).

``json`` raises ``JSONDecodeError`` for syntax, but ``RecursionError`` for nesting deeper than the
interpreter's stack, ``ValueError`` for an integer of more than 4300 digits (CPython's int/str
limit), ``UnicodeDecodeError`` for bytes that are not UTF-8, ``OSError`` (``EOFError`` / gzip's
``BadGzipFile``) for unreadable or truncated files. :func:`parse_json` / :func:`read_json` raise
``error(f"{where}: ...")`` for all of them; callers pass their own error class (a ValueError).
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Callable, Type

Opener = Callable[[Path], Any]


def parse_json(text: str | bytes, where: str, error: Type[ValueError] = ValueError) -> Any:
    """``json.loads(text)``; ``error`` naming ``where`` (file[:line]) for any malformed input."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{where}: malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise error(f"{where}: JSON nested too deeply to read") from None
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        raise error(f"{where}: unreadable JSON value: {str(exc).split(';')[0]}") from None


def read_json(path: str | Path, error: Type[ValueError] = ValueError, gzipped: bool | None = None) -> Any:
    """The JSON document in ``path`` (gzipped when it ends in ``.gz``, or as told)."""
    path = Path(path)
    gz = path.suffix == ".gz" if gzipped is None else gzipped
    try:
        raw = gzip.decompress(path.read_bytes()) if gz else path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: file not found") from None
    except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError
        raise error(f"{path}: cannot read{' the gzipped file' if gz else ''} ({getattr(exc, 'strerror', None) or exc})") from None
    return parse_json(raw, str(path), error)
