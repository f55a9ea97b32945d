"""The Hugging Face Hub client's side that every layer shares: repo ids, ``hf://`` specs, and
its errors turned into one line.

The token comes from ``HF_TOKEN`` only and never reaches a message, a file or a log: every
error from the Hub client is turned into a UserError whose text is scrubbed of it.
"""
from __future__ import annotations

import contextlib
import importlib
import re
from typing import Iterator

from factprobe.core.errors import UserError
from factprobe.core.transport import (
    ACCEPT_ENCODING,
    DEFAULT_MAX_ANSWER_MB,
    MB,
    AnswerTooLarge,
    DeadlineExceeded,
    capping_hook,
    cause,
)

HF_PREFIX = "hf://"
# Hub repo ids: an optional namespace and a name, of letters, digits, '-', '_' and '.'.
_REPO_ID = re.compile(r"^(?:[A-Za-z0-9][\w.-]{0,95}/)?[A-Za-z0-9][\w.-]{0,95}$")
def check_repo_id(repo_id: str, *, namespace: bool = True) -> str:
    """
    >>> check_repo_id("my-org/trex-mc")
    'my-org/trex-mc'
    >>> check_repo_id("trex-mc")
    Traceback (most recent call last):
    ...
    factprobe.core.errors.UserError: repo id 'trex-mc' is not ORG/NAME (letters, digits, '-', '_', '.')
    """
    ok = (_REPO_ID.match(repo_id) and ("/" in repo_id or not namespace)
          and "--" not in repo_id and ".." not in repo_id)
    if not ok:
        raise UserError(f"repo id {repo_id!r} is not ORG/NAME (letters, digits, '-', '_', '.')")
    return repo_id


def parse_hf_spec(spec: str) -> tuple[str, str | None]:
    """``hf://ORG/NAME[@REVISION]`` -> (repo id, revision). ``hf://datasets/ORG/NAME`` (the
    fsspec spelling) is accepted too.

    >>> parse_hf_spec("hf://my-org/trex-mc@v1.0")
    ('my-org/trex-mc', 'v1.0')
    >>> parse_hf_spec("hf://datasets/my-org/trex-mc")
    ('my-org/trex-mc', None)
    """
    rest = spec[len(HF_PREFIX):]
    if rest.startswith("datasets/") and rest.count("/") >= 2:
        rest = rest[len("datasets/"):]
    repo_id, _, revision = rest.partition("@")
    if "@" in spec and not revision:
        raise UserError(f"{spec}: nothing after '@'; give a branch, tag or commit, or drop '@'")
    return check_repo_id(repo_id, namespace=False), revision or None


def _network_errors() -> tuple[type[BaseException], ...]:
    """Transport errors of whichever HTTP library this huggingface_hub uses (requests, httpx,
    httpx2: it has changed across releases), plus the OS-level ones."""
    errors: list[type[BaseException]] = [OSError, ConnectionError, TimeoutError]
    for module, name in (("httpx2", "TransportError"), ("httpx", "TransportError"),
                         ("requests.exceptions", "RequestException")):
        with contextlib.suppress(ImportError, AttributeError):
            errors.append(getattr(importlib.import_module(module), name))
    return tuple(errors)


def _scrub(text: str, token: str | None) -> str:
    text = " ".join(str(text).split())
    if token:
        text = text.replace(token, "***")
    return re.sub(r"hf_[A-Za-z0-9]{8,}", "hf_***", text)


def _is_api(request) -> bool:
    return request.url.path.startswith("/api/")


def bound_hub_answers(max_bytes: int = DEFAULT_MAX_ANSWER_MB * MB) -> None:
    """Hold the Hub's API answers (repo metadata, file lists: JSON read whole into memory) to
    the size cap, and their body to ``HF_HUB_ETAG_TIMEOUT`` seconds, in this process.

    huggingface_hub releases that do not use an httpx client factory (before 1.0) keep their
    own limits."""
    try:
        from huggingface_hub import constants, set_client_factory
        from huggingface_hub.utils._http import default_client_factory
    except ImportError:
        return

    def accept(request) -> None:
        if _is_api(request):
            request.headers["Accept-Encoding"] = ACCEPT_ENCODING

    def factory():
        client = default_client_factory()
        hooks = client.event_hooks
        hooks["request"] = [*hooks.get("request", []), accept]
        hooks["response"] = [*hooks.get("response", []), capping_hook(
            max_bytes, _is_api, lambda: float(constants.HF_HUB_ETAG_TIMEOUT))]
        client.event_hooks = hooks
        return client

    set_client_factory(factory)


@contextlib.contextmanager
def hub_errors(what: str, repo_id: str, token: str | None = None, conflict: str = ""
               ) -> Iterator[None]:
    """Turn huggingface_hub failures into one UserError line that says what to do."""
    from huggingface_hub import constants
    from huggingface_hub import utils as hf  # the error classes, in every release since 0.23
    try:
        try:
            yield
        except Exception as exc:  # the limits on an answer may come wrapped in the Hub's errors
            if cause(exc, AnswerTooLarge):
                mb = cause(exc, AnswerTooLarge).max_bytes / MB
                raise UserError(f"cannot {what} {repo_id}: the Hugging Face Hub "
                                f"({constants.ENDPOINT}) sent an API answer larger than {mb:g} "
                                f"MB; check HF_ENDPOINT") from None
            if cause(exc, DeadlineExceeded):
                raise UserError(f"cannot {what} {repo_id}: the Hugging Face Hub "
                                f"({constants.ENDPOINT}) sent no complete answer within "
                                f"{constants.HF_HUB_ETAG_TIMEOUT} s (HF_HUB_ETAG_TIMEOUT); "
                                f"check HF_ENDPOINT or raise HF_HUB_ETAG_TIMEOUT") from None
            raise
    except UserError:
        raise
    except hf.OfflineModeIsEnabled:
        raise UserError(f"cannot {what} {repo_id}: HF_HUB_OFFLINE is set; unset it and connect "
                        f"to the network") from None
    except hf.RevisionNotFoundError:
        raise UserError(f"cannot {what} {repo_id}: no such revision (branch, tag or commit); "
                        f"check the part after '@'") from None
    except hf.RepositoryNotFoundError:
        raise UserError(f"cannot {what} {repo_id}: the dataset repo does not exist or this "
                        f"token cannot see it; check the id, and for a private repo set "
                        f"HF_TOKEN to a token with access") from None
    except hf.HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        access = "read access" if what == "download" else "write access"
        if status == 401:
            raise UserError(f"cannot {what} {repo_id}: the Hub rejected HF_TOKEN (401); set "
                            f"HF_TOKEN to a valid token with {access}") from None
        if status == 403:
            raise UserError(f"cannot {what} {repo_id}: HF_TOKEN has no {access} there (403); "
                            f"use a token with {access} to that namespace") from None
        if status == 409:
            raise UserError(f"cannot {what} {repo_id}: it already exists (409){conflict}"
                            ) from None
        detail = _scrub(getattr(exc, "server_message", None) or exc, token)[:300]
        raise UserError(f"cannot {what} {repo_id}: the Hub answered HTTP {status}: "
                        f"{detail}") from None
    except hf.LocalEntryNotFoundError as exc:
        # snapshot_download falls back to the local cache on any HTTP error, and reports the
        # miss; the Hub's own answer is further down the chain.
        answered = cause(exc, hf.HfHubHTTPError)
        if answered is not None:
            status = getattr(getattr(answered, "response", None), "status_code", None)
            detail = _scrub(getattr(answered, "server_message", None) or
                            str(answered).splitlines()[0], token)[:300]
            todo = ("try again later" if status is None or status >= 500 else
                    "check the repo id and revision")
            raise UserError(f"cannot {what} {repo_id}: the Hugging Face Hub "
                            f"({constants.ENDPOINT}) answered HTTP {status}: {detail}; {todo} "
                            f"(the dataset is not in the local cache)") from None
        offline = getattr(constants, "HF_HUB_OFFLINE", False)
        why = ("HF_HUB_OFFLINE is set" if offline else
               f"the Hugging Face Hub ({constants.ENDPOINT}) is unreachable")
        todo = "unset HF_HUB_OFFLINE and connect" if offline else "connect to the network"
        raise UserError(f"cannot {what} {repo_id}: {why} and the dataset is not in the local "
                        f"cache; {todo}, then retry") from None
    except _network_errors() as exc:
        raise UserError(f"cannot {what} {repo_id}: the Hugging Face Hub ({constants.ENDPOINT}) "
                        f"is unreachable ({exc.__class__.__name__}); check the network or "
                        f"HF_ENDPOINT") from None
