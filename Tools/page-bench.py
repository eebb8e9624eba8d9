#!/usr/bin/env python3
"""How long the spectators' page takes a live message at a race's scale, in headless Chromium.

The page's script (Sources/HTTPAPI/Pages/Templates/run.js, or --script, e.g. an older one from
`git show REV:Sources/HTTPAPI/Pages/Templates/run.js`) is loaded into a copy of the page's
elements with a stand-in WebSocket, given a snapshot of --runners runners, then --messages
updates of a fifth of the field each (the city race: a fifth of the runners report each second)
with a whole new order. Each message is followed by a frame, as the browser would draw it;
printed: the milliseconds a message, from the first update to the last frame.

With --map, on Leaflet (Debian's libjs-leaflet, as served by `make run`; the tiles point nowhere).

Needs Debian's chromium and Playwright from PyPI (the browser it drives is Debian's):
    python3 -m venv .build/page-bench && .build/page-bench/bin/pip install playwright
    .build/page-bench/bin/python Tools/page-bench.py --runners 5000 --map
"""
import argparse
import pathlib
import tempfile
import time

from playwright.sync_api import sync_playwright

LEAFLET = pathlib.Path("/usr/share/javascript/leaflet")

HARNESS = """<!doctype html><html><head><meta charset="utf-8">{leaflet}</head><body>
<h1 id="title"></h1><p id="status"></p>
<main data-run-id="bench"{tiles}><section id="map">
<svg id="course" viewBox="0 0 1000 1000"><polyline id="path" points=""></polyline><g id="runners"></g></svg>
<div id="leaflet" hidden style="width:800px;height:600px"></div></section>
<table><tbody id="leaderboard"></tbody></table></main>
<pre id="result">pending</pre>
<script>
window.onerror = (message, file, line) => {{ document.getElementById("result").textContent = "error: " + message + " at line " + line; }};
window.WebSocket = class {{ constructor() {{ window.benchSocket = this; this.readyState = 1; }} send() {{}} }};
window.WebSocket.OPEN = 1;
</script>
<script src="{script}"></script>
<script>
(async () => {{
  const n = {runners}, messages = {messages}, socket = window.benchSocket;
  const frame = () => new Promise(done => requestAnimationFrame(() => setTimeout(done, 0)));
  const state = (i, t) => [i, 4547550 + (i % 700) * 3 + t, 917250 + (i % 500) * 2, 1000 + i + t, 100 * t, 300, 0];
  const order = [...Array(n).keys()];
  socket.onmessage({{ data: JSON.stringify({{ type: "snapshot", v: 2, epoch: 0, order,
    run: {{ name: "Bench", lengthMeters: 42195, path: {{ type: "LineString", coordinates: [[9.17, 45.47], [9.25, 45.5]] }} }},
    runners: order.map(i => ["id" + i, "Runner " + i]), states: order.map(i => state(i, 0)) }}) }});
  await frame();
  const started = performance.now();
  for (let t = 1; t <= messages; t++) {{
    const moved = [];
    for (let k = 0; k < n / 5; k++) moved.push((k * 5 + t) % n);
    for (let k = 0; k + 1 < n; k += 7) [order[k], order[k + 1]] = [order[k + 1], order[k]];
    socket.onmessage({{ data: JSON.stringify({{ type: "update", runners: moved.map(i => state(i, t)), ranks: [], order }}) }});
    await frame();
  }}
  const dots = document.querySelectorAll("#runners g, .leaflet-overlay-pane [data-runner]").length;
  document.getElementById("result").textContent = ((performance.now() - started) / messages).toFixed(1) + " ms a message ("
    + dots + " dots, " + document.querySelectorAll(".leaflet-tooltip, #runners text").length + " names, "
    + document.querySelectorAll("#leaderboard tr").length + " leaderboard rows)";
}})();
</script></body></html>
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runners", type=int, default=5000)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--map", action="store_true", help="on Leaflet, as with MAP_TILE_URL set")
    parser.add_argument("--script", default=str(pathlib.Path(__file__).parent.parent / "Sources/HTTPAPI/Pages/Templates/run.js"))
    options = parser.parse_args()
    leaflet = f'<link rel="stylesheet" href="{LEAFLET}/leaflet.css"><script src="{LEAFLET}/leaflet.js"></script>' if options.map else ""
    tiles = ' data-tile-url="http://127.0.0.1:9/{z}/{x}/{y}.png"' if options.map else ""
    with tempfile.TemporaryDirectory() as folder:
        page_file = pathlib.Path(folder) / "page.html"
        page_file.write_text(
            HARNESS.format(leaflet=leaflet, tiles=tiles, script=pathlib.Path(options.script).resolve(), runners=options.runners, messages=options.messages)
        )
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu", "--allow-file-access-from-files"])
            page = browser.new_page()
            began = time.time()
            page.goto(page_file.as_uri(), timeout=900_000, wait_until="commit")
            # The page is loading still when `goto` returns (it waits for the response only).
            page.wait_for_function("(document.getElementById('result')?.textContent ?? 'pending') !== 'pending'", timeout=900_000)
            print(f"{options.runners} runners{' on the map' if options.map else ''}: {page.inner_text('#result')}; {time.time() - began:.1f} s from loading the page")
            browser.close()


if __name__ == "__main__":
    main()
