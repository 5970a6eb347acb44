"""How long the attention explorer takes to redraw at 128 and 512 tokens (issue 13), and what its assets weigh.

A redraw is what happens when a learner picks another head: Python selects and quantizes the maps and sends them
(`AttentionExplorer.redraw`), then the browser draws them (`attention_view.js`). Both halves are timed: Python
here, the drawing in headless Chromium on a page that runs the shipped ES module with a stand-in for anywidget's
model (no Jupyter needed). Inputs are real: all-MiniLM-L6-v2's attention on a long paragraph. Without Chromium
(`apt-get install chromium`), only the Python half is measured.

Prints `name: value` lines; the last is the 512-token redraw in the browser (heatmap of one head), in ms.
"""

import base64
import functools
import http.server
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _record import headline  # bench/_record.py: the run's record

from bertlib.model.checkpoint import load_hf_checkpoint
from bertlib.text.tokenizer import WordPieceTokenizer
from bertlib_course import explore, paths

PAGE = """<!doctype html><html><body><div id="root"></div><pre id="result">running</pre>
<script type="module">
import view from "./attention_view.js";
const payloads = %(payloads)s;
function bytes(b64) { const raw = atob(b64); const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i); return new DataView(out.buffer); }
const values = {}, listeners = {};
const model = { get: (name) => values[name], set: (name, value) => { values[name] = value; },
  save_changes: () => {}, on: (event, callback) => { (listeners[event] = listeners[event] || []).push(callback); } };
function load(payload) { for (const [name, value] of Object.entries(payload)) values[name] = name === "maps" ? bytes(value) : value; }
load(payloads[0].payload);
view.render({ model, el: document.getElementById("root") });
const results = {};
for (const { name, payload } of payloads) {
  const times = [];
  for (let repeat = 0; repeat < %(repeats)d; repeat++) {
    load(payload);
    const started = performance.now();
    for (const callback of listeners["change:maps"]) callback();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  results[name] = times[Math.floor(times.length / 2)];
}
load(payloads[%(shown)d].payload);
for (const callback of listeners["change:maps"]) callback();
const canvas = document.querySelector("canvas"), box = canvas.getBoundingClientRect();
canvas.dispatchEvent(new MouseEvent("mousemove", { clientX: box.left + 200, clientY: box.top + 150 }));
document.getElementById("result").textContent = JSON.stringify(results);
</script></body></html>"""


def browser_times(payloads, shown, repeats=7):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        return None, None
    folder = Path(tempfile.mkdtemp())
    shutil.copy(explore.ASSETS / "attention_view.js", folder)
    page = PAGE % {"payloads": json.dumps(payloads), "repeats": repeats, "shown": shown}
    (folder / "index.html").write_text(page)
    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)  # loopback only
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=60000"]
    try:
        dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True, timeout=300).stdout
        screenshot = folder / "attention_512.png"
        subprocess.run([*flags, f"--screenshot={screenshot}", "--window-size=900,800", url], capture_output=True,
                       timeout=300)
    finally:
        server.shutdown()
    result = dom.split('<pre id="result">')[1].split("</pre>")[0]
    return json.loads(result), screenshot if screenshot.exists() else None


def main():
    backbone = load_hf_checkpoint(paths.minilm_dir())
    tokenizer = WordPieceTokenizer.from_vocab_file(paths.minilm_dir() / "vocab.txt")
    paragraph = " ".join(["BERT reads a sentence in both directions at once, and every token attends to every "
                          "other token in every layer, which is why attention costs grow with the square of the "
                          "input length."] * 20)
    payloads = []
    for length in (128, 512):
        started = time.perf_counter()
        explorer = explore.attention(backbone, tokenizer, paragraph, max_length=length)
        print(f"attention_compute_s_{length}: {time.perf_counter() - started:.2f}")
        explorer.widget  # noqa: B018 (builds the view, so redraw sends to it as in a notebook)
        for head, name in ((0, "head"), ("grid", "grid")):
            times = []
            for repeat in range(7):
                started = time.perf_counter()
                payload = explorer.redraw(layer=repeat % 6, head=head)
                times.append(time.perf_counter() - started)
            print(f"attention_redraw_python_ms_{name}_{length}: {1000 * statistics.median(times):.1f}")
            payload = {**payload, "maps": base64.b64encode(payload["maps"]).decode(), "mode": "heatmap"}
            payloads.append({"name": f"heatmap_{name}_{length}", "payload": payload})
            if head == 0:
                payloads.append({"name": f"lines_{length}", "payload": {**payload, "mode": "lines"}})
    assets = sum(path.stat().st_size for path in explore.ASSETS.iterdir() if path.is_file())
    print(f"explore_assets_bytes: {assets}")
    shown = len(payloads) - 3  # the 512-token heatmap of one head
    times, screenshot = browser_times(payloads, shown)
    if times is None:
        print("attention_redraw_browser_ms_512: unavailable (no chromium)")
        return
    for name, value in times.items():
        print(f"attention_redraw_browser_ms_{name}: {value:.1f}")
    if screenshot is not None and "--keep-screenshot" in sys.argv:
        shutil.copy(screenshot, Path.cwd() / screenshot.name)
        print(f"screenshot: {Path.cwd() / screenshot.name}", file=sys.stderr)
    headline("attention_redraw_browser_ms_512", times["heatmap_head_512"], unit="ms", digits=1,
             details={"explore_assets_bytes": assets})


if __name__ == "__main__":
    main()
