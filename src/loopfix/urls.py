"""Server URLs given on the command line: what counts as one, checked before any work starts."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator

__all__ = ["ModelReference", "ServerUrl", "check_model_reference", "check_server_url", "is_url"]


def is_url(text: str) -> bool:
    """Whether a MODEL argument names a server rather than a model folder, file or hub id."""
    return text.startswith(("http://", "https://"))


def check_server_url(text: str) -> str:
    """`text` if it is an http(s) URL with a host and a valid port; else a ValueError saying what
    was expected (pydantic reports it against the field that holds it)."""
    expected = "expected http://HOST[:PORT][/PATH] or https://..."
    try:
        parts = urlsplit(text)
        port = parts.port  # raises on a port that is not a number in 0-65535
    except ValueError as error:
        raise ValueError(f"not a server URL ({error}); {expected}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise ValueError(f"not a server URL; {expected}")
    return text


def check_model_reference(text: str) -> str:
    """A MODEL argument that looks like a URL (has a scheme) must be a valid server URL; any
    other text is a folder, file, hub id or loopfix: name, checked when it loads."""
    return check_server_url(text) if "://" in text else text


ServerUrl = Annotated[str, AfterValidator(check_server_url)]
"""A config field holding a server's base URL, checked when the config is built."""
ModelReference = Annotated[str, AfterValidator(check_model_reference)]
"""A config field holding a MODEL argument (folder, file, hub id, loopfix:NAME or a URL)."""
