"""Headless Chromium driven by Selenium, for the page of `ptprof view`.

Selenium with Debian's chromium-driver: the driver is packaged with the browser (same version,
upgraded together), so nothing is downloaded (Selenium Manager is kept offline). Every console
message and every request the page makes is recorded: a test fails on a console error or a
request to any host but the server's; the resolver maps every other name to nowhere, so
nothing can leave the machine even if the page tried.
"""
import json
import os
import time

os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager fetch a driver

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = "/usr/lib/chromium/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


class Browser:
    def __init__(self, origin, width=1400, height=1000):
        self.origin = origin.rstrip("/")
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-extensions",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  f"--window-size={width},{height}",
                  "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1"):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
        self.driver.set_page_load_timeout(30)
        self.console = []
        self.requests = []

    def close(self):
        self.driver.quit()

    def open(self, path="/", origin=None):
        """Opens `path` of `origin` (a server; the current one if None)."""
        if origin:
            self.origin = origin.rstrip("/")
        self.driver.get(self.origin + path)

    def collect(self):
        """Console messages and requests since the last call."""
        for e in self.driver.get_log("browser"):
            self.console.append(e)
        for e in self.driver.get_log("performance"):
            msg = json.loads(e["message"])["message"]
            if msg.get("method") == "Network.requestWillBeSent":
                self.requests.append(msg["params"]["request"]["url"])

    def problems(self, allow=()):
        """Console errors and warnings, and requests to anywhere but the server, since the
        last call."""
        self.collect()
        out = []
        for e in self.console:
            if e["level"] in ("SEVERE", "WARNING") and not any(a in e["message"] for a in allow):
                out.append(f"console {e['level']}: {e['message']}")
        for url in self.requests:
            if not (url.startswith(self.origin + "/") or url == self.origin):
                out.append(f"request to another host: {url}")
        self.console, self.requests = [], []
        return out

    def find(self, testid, timeout=30):
        sel = f'[data-testid="{testid}"]'
        WebDriverWait(self.driver, timeout).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, sel))
        return self.driver.find_element(By.CSS_SELECTOR, sel)

    def all(self, testid):
        return self.driver.find_elements(By.CSS_SELECTOR, f'[data-testid="{testid}"]')

    def wait(self, predicate, timeout=30, what="condition"):
        end = time.time() + timeout
        while time.time() < end:
            try:
                v = predicate()
                if v:
                    return v
            except Exception:  # the page is still changing under us
                pass
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}")

    def click(self, testid):
        self.find(testid).click()

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def select(self, testid, value):
        """Chooses an option by value and lets the page see the change."""
        self.js("const s = document.querySelector(`[data-testid=${arguments[0]}]`);"
                "s.value = arguments[1]; s.dispatchEvent(new Event('change'));", testid, value)

    def texts(self, css):
        return [e.text for e in self.driver.find_elements(By.CSS_SELECTOR, css)]

    def leave(self):
        """Leaves the page (before its server stops: it polls), forgetting what it logged."""
        self.driver.get("about:blank")
        self.collect()
        self.console, self.requests = [], []

    def screenshot(self, path):
        # The whole page: the window grown to the document's height first.
        h = self.driver.execute_script(
            "return Math.min(6000, document.documentElement.scrollHeight)")
        w = self.driver.get_window_size()["width"]
        self.driver.set_window_size(w, max(800, h + 20))
        self.driver.save_screenshot(path)
        self.driver.set_window_size(w, 1000)
