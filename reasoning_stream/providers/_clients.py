"""The clients of a provider pipe: given or built, sync or async, and closed by whoever owns them.

- ``run()`` uses a given sync client, or one the pipe builds once and keeps until
  :meth:`Clients.close`; a given async client is a ``UsageError`` saying what to do.
- ``arun()`` uses a given async client; with only a sync client given it iterates ``run()``'s
  loop in a worker thread; with none it builds an async client for this run and closes it at
  the end (its connections belong to the running event loop, asyncio or trio, and the next
  ``arun()`` may be on another). Pass ``client=`` to keep connections across runs.

The SDKs are optional extras, imported only when a pipe builds a client (:func:`require`),
and a missing key or SDK is one ``UsageError`` before any request.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any, ClassVar

import httpx

from .._exceptions import UsageError
from .._redact import split_url_credentials
from ._spec import spec
from ._transports.lean import check_lean_client, lean_client, lean_endpoint, lean_url

__all__ = ["DEMO_KEY", "Clients", "async_by", "demo_over_sdk", "demo_over_url", "require"]


def require(module: str, extra: str) -> ModuleType:
    """Import an optional SDK, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise UsageError(
            f"this pipe needs the {module!r} package: pip install 'reasoning-stream[{extra}]'"
        ) from error


DEMO_KEY = "demo-key-not-secret"
"""The key a demo pipe sends to the local replay server (never a real credential)."""

DemoBuild = Callable[[str, str, "str | None"], Any]


def demo_over_sdk(pipe: Callable[..., Any], client_class: str, path: str = "") -> DemoBuild:
    """A ``Demo.build``: ``pipe`` over its SDK's ``client_class`` (``pipe.sdk``) at the demo's
    URL plus ``path``, with the demo key and no SDK retries."""

    def build(model: str, url: str, name: str | None) -> Any:
        module = require(getattr(pipe, "sdk", None) or "", getattr(pipe, "extra", "all"))
        client = getattr(module, client_class)(base_url=url + path, api_key=DEMO_KEY, max_retries=0)
        return pipe(model, client=client, name=name)

    return build


def demo_over_url(pipe: Callable[..., Any], path: str) -> DemoBuild:
    """A ``Demo.build``: ``pipe`` on its own httpx transport at the demo's URL plus ``path``."""

    def build(model: str, url: str, name: str | None) -> Any:
        return pipe(model, base_url=url + path, api_key=DEMO_KEY, name=name)

    return build


def async_by(client: Any, *method: str) -> bool:
    """Whether ``client`` is async: ``httpx.AsyncClient``, or an SDK client whose ``method``
    (a path of attribute names, ``"chat", "completions", "create"``) is a coroutine function.

    The SDK clients share no public base class; their decorators may hide the coroutine,
    so the method is unwrapped first.
    """
    if isinstance(client, httpx.Client | httpx.AsyncClient):
        return isinstance(client, httpx.AsyncClient)
    target = client
    for name in method:
        target = getattr(target, name, None)
    return target is not None and inspect.iscoroutinefunction(inspect.unwrap(target))


class Clients:
    """What :class:`~._pipe.ProviderPipe` knows of clients (a mixin: the pipe holds the state)."""

    name: str
    provider: str | None
    client: Any
    base_url: str | None
    endpoint: str | None
    timeout: float | None
    _api_key: str | None
    _built: Any
    secret_env: tuple[str, ...] = ()
    """Environment variables holding this provider's credentials (redacted from errors)."""
    extra: str = "all"
    """The package extra that installs this pipe's SDK."""
    sdk: ClassVar[str | None] = None
    """The module the pipe imports to build its client (``None``: httpx, a core dependency)."""
    sync_client_hint: ClassVar[str] = "a sync client"
    """What to pass for ``run()``, named in the error when only an async client was given."""
    client_classes: ClassVar[tuple[str, str] | None] = None
    """The sync and the async client class of :attr:`sdk` (``("OpenAI", "AsyncOpenAI")``)."""

    def _client_options(self) -> dict[str, Any]:
        """Keyword arguments for an SDK client the pipe builds.

        Only what was given of ``base_url``, ``api_key`` and ``timeout``: the SDK's own
        defaults (and environment variables) stand for the rest, except retries. The SDKs
        retry 429s and 5xx twice by default, behind the caller's back and after the first
        attempt's sleep; the pipe's own :meth:`~Pipe.set_retries` is the one retry policy.
        """
        options: dict[str, Any] = {"max_retries": 0}
        base_url = self.base_url
        if base_url is None:
            # The SDK would read its own variable (``OPENAI_BASE_URL``, ...) as it is, and
            # log and quote the password in it: read it here to take the password out.
            from_env = self._base_url_from_env()
            if from_env and split_url_credentials(from_env)[1] is not None:
                base_url = from_env
        if base_url is not None:
            # A proxy's user:password@ goes out as the Basic Authorization header httpx
            # would make of it (it replaces the key's header, as before), never in a URL
            # that the SDK and httpx log and quote in errors.
            options["base_url"], authorization = split_url_credentials(base_url)
            if authorization is not None:
                options["default_headers"] = {"Authorization": authorization}
        if self._api_key is not None:
            options["api_key"] = self._api_key
        if self.timeout is not None:
            options["timeout"] = self.timeout
        return options

    def is_async_client(self, client: Any) -> bool:
        """Whether ``client`` is the SDK's async client (a provider package says how)."""
        return False

    def build_client(self, *, asynchronous: bool) -> Any:
        """A new client: the SDK's (:attr:`client_classes`) from :meth:`_client_options`, or on
        ``transport="httpx"`` an httpx client with the pipe's timeout."""
        if getattr(self, "transport", "sdk") == "httpx":
            return lean_client(asynchronous=asynchronous, timeout=self.timeout)
        if self.sdk is None or self.client_classes is None:
            raise NotImplementedError(f"{type(self).__name__} builds no client")
        module = require(self.sdk, self.extra)
        return getattr(module, self.client_classes[asynchronous])(**self._client_options())

    def close_client(self, client: Any) -> None:
        """Release a sync client the pipe built."""
        client.close()

    async def aclose_client(self, client: Any) -> None:
        """Release an async client the pipe built for one run (httpx's is ``aclose()``)."""
        await (client.aclose() if isinstance(client, httpx.AsyncClient) else client.close())

    def sync_client(self) -> Any:
        """The client ``run()`` uses: the given sync one, or one built once and kept."""
        given = self.client
        if given is not None:
            if self.is_async_client(given):
                raise UsageError(
                    f"{self.name} was given an async client: pass {self.sync_client_hint} "
                    "to use run(), or use `await pipe.arun(...)`"
                )
            return given
        if self._built is None:
            self.check_can_build_client()
            self._built = self.build_client(asynchronous=False)
        return self._built

    def _async_client(self) -> tuple[Any, bool] | None:
        """``(client, built for this run)`` for ``arun()``; ``None``: use a worker thread."""
        given = self.client
        if given is not None:
            return (given, False) if self.is_async_client(given) else None
        self.check_can_build_client()
        return self.build_client(asynchronous=True), True

    def needs_api_key(self) -> bool:
        """Whether a client this pipe builds needs a key (the provider spec says; Ollama's
        and Bedrock's do not)."""
        found = spec(self.provider)
        return found is not None and found.key_needed

    def sdk_module(self) -> str | None:
        """The module :meth:`build_client` imports; ``None`` on the lean httpx transport."""
        return None if getattr(self, "transport", "sdk") == "httpx" else self.sdk

    def check_can_build_client(self) -> None:
        """Before the pipe builds a client, and so before any request: the key and the SDK.

        One ``UsageError`` for every provider: it names the environment variables the key is
        read from and, when the SDK is missing as well, the extra that installs it.
        """
        module = self.sdk_module()
        missing_sdk = module is not None and not _importable(module)
        install = f"pip install 'reasoning-stream[{self.extra}]'"
        if self.needs_api_key() and not self._has_api_key():
            found = spec(self.provider)
            names = " or ".join(found.key_env if found is not None else self.secret_env)
            needs = "an API key"
            if missing_sdk:
                needs += f" and the {module!r} package ({install})"
            local = (
                " (any non-empty string for a local server that checks none)"
                if module is not None and self.base_url is not None
                else ""
            )
            raise UsageError(
                f"{self.name} needs {needs}: set {names}, or pass api_key={local}, or pass a "
                "ready client="
            )
        if missing_sdk:
            raise UsageError(f"{self.name} needs the {module!r} package: {install}")

    def _has_api_key(self) -> bool:
        if self._api_key:
            return True
        found = spec(self.provider)
        names = (*(found.key_env if found is not None else ()), *self.secret_env)
        return any(os.environ.get(name) for name in names)

    def close(self) -> None:
        """Release the sync client the pipe built itself; clients passed in stay the caller's."""
        built, self._built = self._built, None
        if built is not None:
            self.close_client(built)

    async def aclose(self) -> None:
        """Nothing to close: an async client the pipe builds lives for one ``arun()`` only."""

    # ------------------------------------------------------------------ lean transport

    def take_http_client(self, transport: str, http_client: Any, *, sdk: str) -> None:
        """Check ``transport`` with the given ``client=`` and ``http_client=``; keep the one to
        use, and take the endpoint from an httpx client given when the pipe names none.

        ``sdk`` names the SDK's client for the messages (``"an anthropic.Anthropic client"``).
        """
        self.client = check_lean_client(transport, self.client, http_client, sdk=sdk)
        self.endpoint = lean_endpoint(http_client, self.endpoint)

    def lean_url(self, client: Any, path: str, *, base: str | None, default: str) -> str:
        """Where the lean transport posts ``path``: under ``base`` (``base_url=`` or the SDK's
        environment variable), else relative to the given client's own ``base_url``, else
        under the API's ``default`` root."""
        given = self.client is not None and bool(str(client.base_url))
        if base is None and not given:
            base = self._base_url_from_env()
        return lean_url(path, base=base, client_given=given, default=default)

    def _base_url_from_env(self) -> str | None:
        """The API root in the provider's environment variable (``OPENAI_BASE_URL``, ...),
        which its SDK would read: the lean transport reads it too."""
        found = spec(self.provider)
        env = found.base_url_env if found is not None else None
        return os.environ.get(env) or None if env else None


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
