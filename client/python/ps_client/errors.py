"""Exceptions of ps_client: one class per status family.

Every error the C++ SDK or a server reports is an ``absl::Status``; the
binding raises the class of its code, carrying the code and the message
(the server's own text when the server produced it)::

    try:
        client.pull_dense("weights", offset=10**9, count=4).wait()
    except ps_client.OutOfRange as e:
        print(e.code, e.code_name, e.message)

All classes derive from :class:`PsError`; a few also derive from the builtin
exception a Python programmer would expect (``InvalidArgument`` is a
``ValueError``, ``NotFound`` a ``LookupError``, ``DeadlineExceeded`` a
``TimeoutError``, ``Unavailable`` a ``ConnectionError``).
"""

__all__ = [
    "PsError", "Cancelled", "Unknown", "InvalidArgument", "DeadlineExceeded",
    "NotFound", "AlreadyExists", "PermissionDenied", "ResourceExhausted",
    "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented",
    "Internal", "Unavailable", "DataLoss", "Unauthenticated", "from_status",
]


class PsError(Exception):
    """Base class: a non-OK status from the client SDK or a server.

    Attributes:
        code: the absl::StatusCode / gRPC code number (e.g. 5 for NOT_FOUND).
        code_name: its name, e.g. ``"NOT_FOUND"``.
        message: the status message.
    """

    code = 2
    code_name = "UNKNOWN"

    def __init__(self, message=""):
        super().__init__(message)
        self.message = message

    def __str__(self):
        return f"{self.code_name}: {self.message}"


class Cancelled(PsError):
    """CANCELLED: the request was cancelled (e.g. its client was closed)."""
    code, code_name = 1, "CANCELLED"


class Unknown(PsError):
    """UNKNOWN: an error without a better code."""
    code, code_name = 2, "UNKNOWN"


class InvalidArgument(PsError, ValueError):
    """INVALID_ARGUMENT: the request itself is wrong (length, NaN gradient,
    bad config value); retrying it cannot help."""
    code, code_name = 3, "INVALID_ARGUMENT"


class DeadlineExceeded(PsError, TimeoutError):
    """DEADLINE_EXCEEDED: no answer in time."""
    code, code_name = 4, "DEADLINE_EXCEEDED"


class NotFound(PsError, LookupError):
    """NOT_FOUND: unknown table (or config file)."""
    code, code_name = 5, "NOT_FOUND"


class AlreadyExists(PsError):
    """ALREADY_EXISTS: e.g. create_table with a name in use."""
    code, code_name = 6, "ALREADY_EXISTS"


class PermissionDenied(PsError):
    """PERMISSION_DENIED."""
    code, code_name = 7, "PERMISSION_DENIED"


class ResourceExhausted(PsError):
    """RESOURCE_EXHAUSTED: e.g. a message over server.max_message_bytes."""
    code, code_name = 8, "RESOURCE_EXHAUSTED"


class FailedPrecondition(PsError):
    """FAILED_PRECONDITION: the system is not in a state for this call
    (partition mismatch, worker-only call from a non-worker, no checkpoint
    directory); do not retry until that is fixed."""
    code, code_name = 9, "FAILED_PRECONDITION"


class Aborted(PsError):
    """ABORTED."""
    code, code_name = 10, "ABORTED"


class OutOfRange(PsError, IndexError):
    """OUT_OF_RANGE: a range outside the table."""
    code, code_name = 11, "OUT_OF_RANGE"


class Unimplemented(PsError, NotImplementedError):
    """UNIMPLEMENTED: the server does not support the call."""
    code, code_name = 12, "UNIMPLEMENTED"


class Internal(PsError):
    """INTERNAL: a broken invariant (a bug; please report it)."""
    code, code_name = 13, "INTERNAL"


class Unavailable(PsError, ConnectionError):
    """UNAVAILABLE: a server cannot be reached (after the configured
    reconnect attempts); the call may succeed when retried later."""
    code, code_name = 14, "UNAVAILABLE"


class DataLoss(PsError):
    """DATA_LOSS."""
    code, code_name = 15, "DATA_LOSS"


class Unauthenticated(PsError):
    """UNAUTHENTICATED: missing or wrong bearer token."""
    code, code_name = 16, "UNAUTHENTICATED"


_BY_CODE = {cls.code: cls for cls in PsError.__subclasses__()}


def from_status(code, message):
    """The exception (not raised) for status ``code`` with ``message``.

    An unknown code gives a :class:`PsError` with that code.
    """
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls(message)
    error = PsError(message)
    error.code, error.code_name = code, f"CODE_{code}"
    return error
