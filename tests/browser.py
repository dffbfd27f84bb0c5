"""A real browser for the viewer's tests: Debian's Chromium, driven by Playwright.

Playwright drives the *system* Chromium (``executable_path``), so nothing is
downloaded: its own browser builds come from a CDN this machine cannot reach, and
``playwright install`` is never run. (Selenium would need Debian's chromedriver as
well, and gives no hook to see, block and count every request a page makes;
Playwright's ``route`` does.)

:func:`chromium` finds the browser; when it is missing and the tests run as root with
``apt-get``, it installs Debian's ``chromium`` once, under a file lock, so parallel
pytest-xdist workers wait for one installation. Otherwise a missing browser fails the
test under ``CI=true`` and skips it elsewhere. :func:`browser` is one headless browser
per test module; :func:`offline_page` a fresh page in which every request to anything
but this machine is refused and recorded, and the test fails when there was one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest

from tests.network_guard import is_loopback

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page, Route

__all__ = ["browser", "chromium", "guarded_context", "offline_page"]

_NAMES = ("chromium", "chromium-browser", "google-chrome")


def _find() -> str | None:
    return next((found for name in _NAMES if (found := shutil.which(name))), None)


def _install() -> str | None:
    """Install Debian's chromium once (root with apt-get only); the browser found after."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None
    import fcntl  # POSIX, as apt-get is

    lock = Path(tempfile.gettempdir()) / "himga-tests-chromium.lock"
    with lock.open("a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)  # one installer; the others wait, then find it
        if _find() is None:
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            for command in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
                subprocess.run(command, env=env, check=False, capture_output=True, timeout=900)
    return _find()


@pytest.fixture(scope="session")
def chromium() -> str:
    """The system Chromium's path (installed when missing and possible)."""
    found = _find() or _install()
    if found is None:
        message = "no Chromium (apt-get install chromium) for the viewer's browser tests"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Browser]:
    """One headless Chromium for a test module. Not for the session: Playwright's sync API
    runs an event loop on this thread while it is open, and every later test that calls
    ``asyncio.run`` in the same process would fail."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium,
            # root in a container has no user namespace for the sandbox; no phoning home
            args=["--no-sandbox", "--disable-background-networking", "--no-first-run"],
        )
        yield launched
        launched.close()


def guarded_context(browser: Browser) -> tuple[BrowserContext, list[str], list[str]]:
    """A browser context whose requests to anything but loopback (or ``file:``, ``data:``)
    are refused and recorded in the first list; its pages' script errors go to the second
    (:func:`offline_page` records them)."""
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    refused: list[str] = []

    def guard(route: Route) -> None:
        url = urlsplit(route.request.url)
        if url.scheme in ("file", "data", "about") or is_loopback(url.hostname):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    return context, refused, []


@pytest.fixture
def offline_page(browser: Browser) -> Iterator[Page]:
    """A page of a :func:`guarded_context`: the test fails at teardown naming each request
    beyond loopback, and on any script error of the page."""
    context, refused, errors = guarded_context(browser)
    page = context.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: _console(message, errors))
    yield page
    context.close()
    assert refused == [], f"the page asked for something beyond loopback: {refused}"
    assert errors == [], f"the page reported errors: {errors}"


def _console(message: Any, errors: list[str]) -> None:
    if message.type == "error":
        errors.append(message.text)
