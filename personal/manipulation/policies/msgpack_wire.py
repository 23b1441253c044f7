"""The openpi msgpack-numpy wire format, decoded safely: ONE module for every peer, client or server.

Upstream convention (Physical-Intelligence/openpi, ``packages/openpi-client/src/openpi_client/
msgpack_numpy.py``, installed here as ``openpi_client.msgpack_numpy``): an ndarray travels as the
map ``{b"__ndarray__": True, b"data": <bytes>, b"dtype": <dtype.str>, b"shape": <list>}``, a NumPy
scalar as ``{b"__npgeneric__": True, b"data": <item>, b"dtype": <dtype.str>}``; everything else is
plain msgpack. Its packer refuses object, void and complex arrays, but its ``unpackb`` trusts the
peer's dtype and shape: ``np.ndarray(buffer=..., dtype="|O")`` takes the peer's bytes as object
pointers, which crashed the process (SIGSEGV) on the server (issue 15) and in our client (issue 28).

Here:
- :func:`packb` / :class:`Packer` are openpi's own (what we send is what openpi sends);
- :func:`unpackb` decodes only numeric arrays (bool, int, uint, float) whose byte length matches
  their shape, refuses frames over ``max_bytes`` before parsing, and bounds nesting; anything else
  raises :class:`WireError` (a ValueError) with a one-line reason.
"""
from __future__ import annotations

import math

import msgpack
import numpy as np
from openpi_client.msgpack_numpy import Packer, packb  # noqa: F401 - re-exported: honest peers' encoder

NUMERIC_KINDS = "biuf"  # bool, int, uint, float
MAX_DIMS = 8
MAX_DEPTH = 64  # maps/arrays nested deeper than this are refused (msgpack's own limit is far higher)
DEFAULT_MAX_BYTES = 32 * 1024 * 1024  # two 224x224 LIBERO images are 0.3 MB


class WireError(ValueError):
    """A frame that is not openpi msgpack-numpy with numeric arrays only."""


def unpackb(raw: bytes | bytearray | memoryview | str, max_bytes: int = DEFAULT_MAX_BYTES, what: str = "") -> object:
    """One msgpack-numpy frame -> Python/NumPy objects (numeric arrays only); WireError otherwise,
    its message prefixed by ``what`` (e.g. the peer and the frame) when given."""
    what = f"{what}: " if what else ""
    if isinstance(raw, str):
        raise WireError(f"{what}expected a binary msgpack frame, got text")
    if len(raw) > max_bytes:
        raise WireError(f"{what}{len(raw)} bytes is over the limit of {max_bytes} bytes")
    try:
        out = msgpack.unpackb(bytes(raw), object_hook=_numeric_array, max_bin_len=max_bytes, max_str_len=max_bytes)
    except WireError as exc:
        raise WireError(f"{what}{exc}") from None
    except Exception as exc:  # noqa: BLE001 - msgpack raises several types (ExtraData, StackError, ValueError ...)
        raise WireError(f"{what}not valid msgpack: {type(exc).__name__}: {exc}") from None
    _check_depth(out, what)
    return out


def _check_depth(obj, what: str) -> None:
    stack = [(obj, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise WireError(f"{what}nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)


def _numeric_dtype(spec) -> np.dtype:
    if not isinstance(spec, (str, bytes)):
        raise WireError(f"array dtype must be a dtype string such as '<f4', got {type(spec).__name__}")
    try:
        dtype = np.dtype(spec.decode() if isinstance(spec, bytes) else spec)
    except (TypeError, ValueError, UnicodeDecodeError, SyntaxError) as exc:
        raise WireError(f"array dtype {spec!r} is not a NumPy dtype ({exc})") from None
    if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise WireError(f"array dtype {dtype.str!r} is not numeric (accepted kinds: bool, int, uint, float)")
    return dtype


def _numeric_array(obj: dict):
    if b"__ndarray__" in obj:
        dtype = _numeric_dtype(obj.get(b"dtype"))
        shape, data = obj.get(b"shape"), obj.get(b"data")
        if not isinstance(shape, (list, tuple)) or len(shape) > MAX_DIMS or \
                not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
            raise WireError(f"array shape must be up to {MAX_DIMS} non-negative ints, got {shape!r}")
        if not isinstance(data, bytes):
            raise WireError(f"array data must be bytes, got {type(data).__name__}")
        if len(data) != math.prod(shape) * dtype.itemsize:
            raise WireError(f"array of shape {list(shape)} and dtype {dtype.str} needs "
                            f"{math.prod(shape) * dtype.itemsize} bytes, got {len(data)}")
        return np.frombuffer(data, dtype=dtype).reshape(shape)
    if b"__npgeneric__" in obj:
        dtype, value = _numeric_dtype(obj.get(b"dtype")), obj.get(b"data")
        if not isinstance(value, (bool, int, float)):
            raise WireError(f"numpy scalar data must be a number, got {type(value).__name__}")
        try:
            return dtype.type(value)
        except (OverflowError, ValueError) as exc:
            raise WireError(f"numpy scalar {value!r} does not fit {dtype.str}: {exc}") from None
    return obj
