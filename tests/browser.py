"""Headless Chromium from Debian (chromium, chromium-driver) driven by Selenium: no browser download, no
network, a fresh profile per session."""

from __future__ import annotations

import contextlib
import shutil
import tempfile

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
DRIVER = ("chromedriver",)


def find(names) -> str | None:
    return next((p for p in map(shutil.which, names) if p), None)


def missing() -> str | None:
    """Why no browser test can run here, or None."""
    try:
        import selenium  # noqa: F401  (only whether it is installed)
    except ImportError:
        return "selenium is not installed (the test extra)"
    if not find(CHROMIUM):
        return "no Chromium (Debian package chromium)"
    if not find(DRIVER):
        return "no chromedriver (Debian package chromium-driver)"
    return None


@contextlib.contextmanager
def chromium(width: int = 1400, height: int = 1000):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="dragnet-chromium-") as profile:
        opts = webdriver.ChromeOptions()
        opts.binary_location = find(CHROMIUM)
        for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage",
                    f"--user-data-dir={profile}", f"--window-size={width},{height}",
                    # no network: every host name fails to resolve, and there is no proxy to reach
                    "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
                    "--proxy-bypass-list=<-loopback>"):
            opts.add_argument(arg)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(options=opts, service=Service(find(DRIVER)))
        try:
            yield driver
        finally:
            driver.quit()
