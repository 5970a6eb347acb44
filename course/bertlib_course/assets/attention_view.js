// The drawing half of bertlib's attention explorer (course/bertlib_course/explore.py), an anywidget ES module.
// Python sends the attention maps as bytes: `count` maps of size x size, each value quantized to 0..255 of
// `scale`. One canvas draws a heatmap (query rows, key columns), token-to-token lines, or a grid of every
// head; hovering a token highlights what it attends to. No library and no network: this file is all of it.

const MAX_SIDE = 512; // pixels of the heatmap side; larger inputs use 1 pixel per cell and scroll

function colour(weight) {
  // white -> deep blue by the square root of the weight on a fixed 0..1 scale (as the static picture): heads
  // compare fairly, and weak links stay visible
  const t = Math.sqrt(Math.min(1, weight));
  return [Math.round(255 - 222 * t), Math.round(255 - 180 * t), Math.round(255 - 75 * t)];
}

function mapAt(bytes, size, index) {
  return bytes.subarray(index * size * size, (index + 1) * size * size);
}

function drawHeatmap(ctx, map, size, cell, left, top, scale) {
  const image = ctx.createImageData(size, size);
  const palette = Array.from({ length: 256 }, (_, byte) => colour(byte / 255 * scale));
  for (let i = 0; i < size * size; i++) {
    const [r, g, b] = palette[map[i]];
    image.data[4 * i] = r;
    image.data[4 * i + 1] = g;
    image.data[4 * i + 2] = b;
    image.data[4 * i + 3] = 255;
  }
  // Draw at 1 pixel per cell, then scale up without smoothing: fast at 512 x 512.
  const scratch = document.createElement("canvas");
  scratch.width = size;
  scratch.height = size;
  scratch.getContext("2d").putImageData(image, 0, 0);
  ctx.imageSmoothingEnabled = cell < 1; // scaling up: sharp cells; scaling down: smooth, so no row is skipped
  ctx.imageSmoothingQuality = "high";
  ctx.drawImage(scratch, left, top, size * cell, size * cell);
}

function topKeys(map, size, query, tokens, count) {
  // the `count` largest weights of one row, by insertion into a short sorted list (rows are up to 512 long)
  const best = [];
  for (let key = 0; key < size; key++) {
    const value = map[query * size + key];
    if (best.length === count && value <= best[count - 1][0]) continue;
    let i = best.length < count ? best.length : count - 1;
    best[i] = [value, key];
    while (i > 0 && best[i - 1][0] < value) {
      [best[i - 1], best[i]] = [best[i], best[i - 1]];
      i--;
    }
  }
  return best.map(([, key]) => key);
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "bertlib-attention";
  const info = document.createElement("div");
  info.className = "bertlib-attention-info";
  const scroller = document.createElement("div");
  scroller.className = "bertlib-attention-scroll";
  const canvas = document.createElement("canvas");
  scroller.appendChild(canvas);
  root.appendChild(info);
  root.appendChild(scroller);
  el.appendChild(root);
  const style = document.createElement("style");
  style.textContent = `
    .bertlib-attention { font: 12px sans-serif; }
    .bertlib-attention-info { min-height: 1.6em; margin: 2px 0 4px; white-space: pre-wrap; }
    .bertlib-attention-scroll { max-height: 640px; max-width: 100%; overflow: auto; border: 1px solid #ccc; }
  `;
  root.appendChild(style);

  let hovered = -1; // the hovered query token, or -1
  let layout = null; // where things were drawn, for hit tests

  function state() {
    const buffer = model.get("maps");
    const bytes = new Uint8Array(buffer.buffer ? buffer.buffer : buffer, buffer.byteOffset || 0,
                                 buffer.byteLength);
    return { bytes, tokens: model.get("tokens"), size: model.get("size"), count: model.get("count"),
             scale: model.get("scale"), mode: model.get("mode"), labels: model.get("head_labels") };
  }

  function draw() {
    const started = performance.now();
    const s = state();
    const ctx = canvas.getContext("2d");
    if (s.count > 1) {
      drawGrid(ctx, s);
    } else if (s.mode === "lines") {
      drawLines(ctx, s);
    } else {
      drawSingle(ctx, s);
    }
    model.set("last_draw_ms", performance.now() - started);
    model.save_changes();
  }

  function drawSingle(ctx, s) {
    const cell = Math.max(1, Math.floor(MAX_SIDE / s.size));
    const showLabels = cell >= 8;
    const margin = showLabels ? 90 : 4;
    canvas.width = margin + s.size * cell + 4;
    canvas.height = margin + s.size * cell + 4;
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    const map = mapAt(s.bytes, s.size, 0);
    drawHeatmap(ctx, map, s.size, cell, margin, margin, s.scale);
    if (showLabels) {
      ctx.fillStyle = "#222";
      ctx.font = `${Math.min(12, cell)}px sans-serif`;
      ctx.textBaseline = "middle";
      for (let i = 0; i < s.size; i++) {
        ctx.textAlign = "right";
        ctx.fillText(s.tokens[i], margin - 4, margin + (i + 0.5) * cell);
        ctx.save();
        ctx.translate(margin + (i + 0.5) * cell, margin - 4);
        ctx.rotate(-Math.PI / 2);
        ctx.textAlign = "left";
        ctx.fillText(s.tokens[i], 0, 0);
        ctx.restore();
      }
    }
    if (hovered >= 0) {
      ctx.strokeStyle = "#d62728";
      ctx.lineWidth = 2;
      ctx.strokeRect(margin, margin + hovered * cell, s.size * cell, cell);
      for (const key of topKeys(map, s.size, hovered, s.tokens, 5)) {
        ctx.strokeRect(margin + key * cell, margin + hovered * cell, cell, cell);
      }
    }
    layout = { kind: "heatmap", margin, cell, size: s.size };
  }

  function drawLines(ctx, s) {
    const row = Math.max(4, Math.min(18, Math.floor(640 / s.size)));
    const showLabels = row >= 9;
    const column = showLabels ? 110 : 40;
    const gap = 220;
    canvas.width = 2 * column + gap;
    canvas.height = s.size * row + 8;
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    const map = mapAt(s.bytes, s.size, 0);
    const y = (i) => 4 + (i + 0.5) * row;
    // Each query's 8 strongest keys (above 2% of the scale), batched into 8 opacity levels: one stroke per
    // level keeps 512 tokens fast. The hovered token's lines are drawn alone, in red.
    const levels = Array.from({ length: 8 }, () => []);
    for (let q = 0; q < s.size; q++) {
      if (hovered >= 0 && q !== hovered) continue;
      for (const k of topKeys(map, s.size, q, s.tokens, 8)) {
        const value = map[q * s.size + k];
        if (value >= 5) levels[Math.min(7, value >> 5)].push(q, k);
      }
    }
    levels.forEach((pairs, level) => {
      if (!pairs.length) return;
      const alpha = (level + 1) / 8;
      ctx.strokeStyle = hovered >= 0 ? `rgba(214,39,40,${alpha})` : `rgba(31,119,180,${0.7 * alpha})`;
      ctx.lineWidth = hovered >= 0 ? 1 + 2 * alpha : 1;
      ctx.beginPath();
      for (let i = 0; i < pairs.length; i += 2) {
        ctx.moveTo(column, y(pairs[i]));
        ctx.lineTo(column + gap, y(pairs[i + 1]));
      }
      ctx.stroke();
    });
    ctx.fillStyle = "#222";
    ctx.font = `${Math.min(12, row)}px sans-serif`;
    ctx.textBaseline = "middle";
    for (let i = 0; i < s.size; i++) {
      ctx.fillStyle = i === hovered ? "#d62728" : "#222";
      if (showLabels) {
        ctx.textAlign = "right";
        ctx.fillText(s.tokens[i], column - 4, y(i));
        ctx.textAlign = "left";
        ctx.fillText(s.tokens[i], column + gap + 4, y(i));
      } else {
        ctx.fillRect(column - 8, y(i) - 1, 6, 2);
        ctx.fillRect(column + gap + 2, y(i) - 1, 6, 2);
      }
    }
    layout = { kind: "lines", row, column, gap, size: s.size };
  }

  function drawGrid(ctx, s) {
    const columns = Math.min(4, s.count);
    const tile = 160; // each head's map in 160 x 160 pixels; more tokens than that are averaged by the browser
    const cell = tile / s.size;
    const pad = 18;
    const rows = Math.ceil(s.count / columns);
    canvas.width = columns * (tile + pad) + pad;
    canvas.height = rows * (tile + pad + 4) + pad;
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.font = "12px sans-serif";
    ctx.textBaseline = "bottom";
    ctx.textAlign = "left";
    for (let h = 0; h < s.count; h++) {
      const left = pad + (h % columns) * (tile + pad);
      const top = pad + Math.floor(h / columns) * (tile + pad + 4);
      drawHeatmap(ctx, mapAt(s.bytes, s.size, h), s.size, cell, left, top, s.scale);
      ctx.fillStyle = "#222";
      ctx.fillText(s.labels[h] || `head ${h}`, left, top - 2);
      if (hovered >= 0) {
        ctx.strokeStyle = "#d62728";
        ctx.strokeRect(left, top + hovered * cell, tile, Math.max(1, cell));
      }
    }
    layout = { kind: "grid", pad, tile, cell, columns, size: s.size };
  }

  function queryAt(event) {
    if (!layout) return -1;
    const box = canvas.getBoundingClientRect();
    const x = (event.clientX - box.left) * (canvas.width / box.width);
    const yPos = (event.clientY - box.top) * (canvas.height / box.height);
    if (layout.kind === "heatmap") {
      const index = Math.floor((yPos - layout.margin) / layout.cell);
      const inside = x >= layout.margin && index >= 0 && index < layout.size;
      return inside ? index : -1;
    }
    if (layout.kind === "lines") {
      const index = Math.floor((yPos - 4) / layout.row);
      return index >= 0 && index < layout.size ? index : -1;
    }
    const column = Math.floor((x - layout.pad) / (layout.tile + layout.pad));
    const row = Math.floor((yPos - layout.pad) / (layout.tile + layout.pad + 4));
    const top = layout.pad + row * (layout.tile + layout.pad + 4);
    const index = Math.floor((yPos - top) / layout.cell);
    return column >= 0 && column < layout.columns && index >= 0 && index < layout.size ? index : -1;
  }

  function describe(query) {
    const s = state();
    if (query < 0) {
      info.textContent = model.get("caption");
      return;
    }
    const map = mapAt(s.bytes, s.size, 0);
    const keys = topKeys(map, s.size, query, s.tokens, 5);
    const parts = keys.map((key) => `${s.tokens[key]}#${key} ${(map[query * s.size + key] / 255 * s.scale).toFixed(2)}`);
    // the sentence in the learner's language, sent by Python (bertlib_course.messages.translate)
    const words = model.get("words") || {};
    const sentence = words.attends_to || "{token} attends to: {keys}";
    info.textContent = sentence.replace("{token}", `${s.tokens[query]}#${query}`).replace("{keys}", parts.join(", ")) +
      (s.count > 1 ? (words.first_head || " (first head; the red row marks it in every head)") : "");
  }

  canvas.addEventListener("mousemove", (event) => {
    const query = queryAt(event);
    if (query !== hovered) {
      hovered = query;
      draw();
      describe(query);
    }
  });
  canvas.addEventListener("mouseleave", () => {
    hovered = -1;
    draw();
    describe(-1);
  });
  for (const name of ["maps", "mode", "size", "count", "tokens"]) {
    model.on(`change:${name}`, () => {
      hovered = -1;
      draw();
      describe(-1);
    });
  }
  model.on("change:caption", () => describe(hovered));
  model.on("change:words", () => describe(hovered));
  draw();
  describe(-1);
}

export default { render };
