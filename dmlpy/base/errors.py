"""The error model: every rejected input raises a DmlError carrying DirectML's HRESULT."""

import reprlib

E_INVALIDARG = 0x80070057
DXGI_ERROR_UNSUPPORTED = 0x887A0004
E_FAIL = 0x80004005
DXGI_ERROR_DEVICE_REMOVED = 0x887A0005


class DmlError(Exception):
    """Base of every error dmlpy raises on purpose; `hresult` is DirectML's code for it.

    `field` names the kind of desc attribute at fault ("data_type", "sizes", "strides",
    "dimension_count", ...) where there is one, for callers that translate errors.
    """

    hresult = E_FAIL

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field

    def __str__(self) -> str:
        return f"{self.message} (HRESULT 0x{self.hresult:08X})"


class InvalidArgumentError(DmlError, ValueError):
    """A desc, binding or argument breaks a rule (DirectML returns E_INVALIDARG)."""

    hresult = E_INVALIDARG


class IndexOutOfRangeError(InvalidArgumentError, IndexError):
    """An index past an array's dims or sizes: an IndexError too, as NumPy raises, so code that
    catches IndexError (and Python's iteration protocol) sees what it expects."""


class UnsupportedError(DmlError):
    """Valid, but beyond this device, its feature level or a dmlpy limit (DXGI_ERROR_UNSUPPORTED)."""

    hresult = DXGI_ERROR_UNSUPPORTED


class ShaderCompilationError(DmlError):
    """glslang rejected a generated shader or could not be run; the message has its log."""

    hresult = E_FAIL


class DeviceRemovedError(DmlError):
    """The object's device was closed, or the object was destroyed, before this use."""

    hresult = DXGI_ERROR_DEVICE_REMOVED


class InstallationError(UnsupportedError):
    """Something this machine needs is missing: the Vulkan loader or a driver (ICD), Kompute
    (kp), or dmlpy's own shaders. The message says what to install and how to check."""


_REPR = reprlib.Repr()
_REPR.maxstring = 1024  # a path or a name stays whole; a 5,000-character string does not
_REPR.maxother = 80


def shown(value) -> str:
    """repr(value) for an error message, cut in the middle when huge. An integer too long for
    str() (Python refuses past 4,300 digits) is shown by its size in bits, and an object whose
    repr() fails by its type: a message about a bad value must not fail in its turn."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"<a {'negative ' if value < 0 else ''}{value.bit_length()}-bit integer>"
    try:
        return _REPR.repr(value)
    except Exception:  # a caller's __repr__ may raise anything
        return f"<a {type(value).__name__} whose repr() failed>"
