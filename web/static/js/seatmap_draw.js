// Draws every seat of a layout (seatmap_layout.js) on a <canvas>, with zoom and
// pan. It knows nothing about statuses: `colourOf(seatId)` names each seat's
// colour, `selectedIds()` lists the shopper's picks (drawn with a ring).
//
// The view is a scale and an offset: screen = layout * scale + offset (CSS pixels).

const MIN_ZOOM = 1, MAX_ZOOM = 60;

export class SeatCanvas {
  constructor(canvas, layout, { colourOf, selectedIds }) {
    this.canvas = canvas;
    this.layout = layout;
    this.colourOf = colourOf;
    this.selectedIds = selectedIds;
    this.zoom = 1;          // relative to "whole venue"
    this.scale = 1;
    this.offsetX = 0;
    this.offsetY = 0;
    this.drawn = 0;         // seats drawn by the last frame (tests read it)
    this.frame = null;
    this.resize();
    this.fit();
  }

  // Match the canvas's pixels to its CSS size (sharp on high-density screens).
  resize() {
    const ratio = window.devicePixelRatio || 1;
    const rect = this.canvas.getBoundingClientRect();
    this.width = Math.max(1, rect.width);
    this.height = Math.max(1, rect.height);
    this.canvas.width = Math.round(this.width * ratio);
    this.canvas.height = Math.round(this.height * ratio);
    this.ratio = ratio;
  }

  // The whole venue in view, centred.
  fit() {
    const { minX, minY, maxX, maxY } = this.layout.bounds;
    const pad = this.layout.pitch * 2;
    const w = maxX - minX + pad * 2, h = maxY - minY + pad * 2;
    this.baseScale = Math.min(this.width / w, this.height / h);
    this.zoom = 1;
    this.scale = this.baseScale;
    this.offsetX = (this.width - (maxX + minX) * this.scale) / 2;
    this.offsetY = (this.height - (maxY + minY) * this.scale) / 2;
    this.request();
  }

  // Zoom by `factor` keeping the layout point under (sx, sy) in place.
  zoomAt(factor, sx = this.width / 2, sy = this.height / 2) {
    const zoom = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, this.zoom * factor));
    const wx = (sx - this.offsetX) / this.scale, wy = (sy - this.offsetY) / this.scale;
    this.zoom = zoom;
    this.scale = this.baseScale * zoom;
    this.offsetX = sx - wx * this.scale;
    this.offsetY = sy - wy * this.scale;
    this.request();
  }

  panBy(dx, dy) {
    this.offsetX += dx;
    this.offsetY += dy;
    this.request();
  }

  // Bring a seat into the middle of the view (zooming in if far out).
  centreOn(seatId) {
    const i = this.layout.indexOf[seatId];
    if (i === undefined || i < 0) return;
    if (this.zoom < 6) { this.zoom = 6; this.scale = this.baseScale * 6; }
    this.offsetX = this.width / 2 - this.layout.x[i] * this.scale;
    this.offsetY = this.height / 2 - this.layout.y[i] * this.scale;
    this.request();
  }

  // Client coordinates (a pointer event) -> layout coordinates.
  toLayout(clientX, clientY) {
    const rect = this.canvas.getBoundingClientRect();
    return [(clientX - rect.left - this.offsetX) / this.scale,
            (clientY - rect.top - this.offsetY) / this.scale];
  }

  // Draw at the next animation frame (many changes in one frame draw once).
  request() {
    if (this.frame === null) this.frame = requestAnimationFrame(() => { this.frame = null; this.draw(); });
  }

  draw() {
    const ctx = this.canvas.getContext("2d");
    const { n, ids, x, y, pitch } = this.layout;
    ctx.setTransform(this.ratio, 0, 0, this.ratio, 0, 0);
    ctx.clearRect(0, 0, this.width, this.height);
    const size = Math.max(1, pitch * 0.8 * this.scale);
    const half = size / 2;
    // Group seats by colour: one path and one fill per colour, not 50,000 fills.
    const groups = new Map();
    let drawn = 0;
    for (let i = 0; i < n; i++) {
      const sx = x[i] * this.scale + this.offsetX, sy = y[i] * this.scale + this.offsetY;
      if (sx < -size || sy < -size || sx > this.width + size || sy > this.height + size) continue;
      const colour = this.colourOf(ids[i]);
      let path = groups.get(colour);
      if (!path) { path = new Path2D(); groups.set(colour, path); }
      path.rect(sx - half, sy - half, size, size);
      drawn++;
    }
    for (const [colour, path] of groups) {
      ctx.fillStyle = colour;
      ctx.fill(path);
    }
    // The shopper's seats: a ring that stays visible however far out we are.
    ctx.lineWidth = 2;
    ctx.strokeStyle = "#111";
    for (const seatId of this.selectedIds()) {
      const i = this.layout.indexOf[seatId];
      if (i === undefined || i < 0) continue;
      const sx = x[i] * this.scale + this.offsetX, sy = y[i] * this.scale + this.offsetY;
      ctx.fillStyle = "#111";
      ctx.fillRect(sx - half, sy - half, size, size);
      ctx.beginPath();
      ctx.arc(sx, sy, Math.max(5, size), 0, Math.PI * 2);
      ctx.stroke();
    }
    this.drawn = drawn;
  }
}

// Wheel, drag and keys on the canvas; a click that did not drag picks a seat.
export function attachControls(view, canvas, onPick) {
  let drag = null;
  canvas.addEventListener("wheel", event => {
    event.preventDefault();
    const rect = canvas.getBoundingClientRect();
    view.zoomAt(event.deltaY < 0 ? 1.25 : 0.8, event.clientX - rect.left, event.clientY - rect.top);
  }, { passive: false });
  canvas.addEventListener("pointerdown", event => {
    drag = { x: event.clientX, y: event.clientY, moved: false };
    canvas.setPointerCapture(event.pointerId);
  });
  canvas.addEventListener("pointermove", event => {
    if (!drag) return;
    const dx = event.clientX - drag.x, dy = event.clientY - drag.y;
    if (drag.moved || Math.hypot(dx, dy) > 4) {
      drag.moved = true;
      view.panBy(dx, dy);
      drag.x = event.clientX;
      drag.y = event.clientY;
    }
  });
  canvas.addEventListener("pointerup", event => {
    const wasClick = drag && !drag.moved;
    drag = null;
    if (!wasClick) return;
    const [wx, wy] = view.toLayout(event.clientX, event.clientY);
    const radius = Math.max(view.layout.pitch * 0.7, 6 / view.scale);
    onPick(wx, wy, radius);
  });
  canvas.addEventListener("pointercancel", () => { drag = null; });
  canvas.addEventListener("keydown", event => {
    const step = 40;
    const keys = { ArrowLeft: [step, 0], ArrowRight: [-step, 0], ArrowUp: [0, step], ArrowDown: [0, -step] };
    if (keys[event.key]) view.panBy(...keys[event.key]);
    else if (event.key === "+" || event.key === "=") view.zoomAt(1.25);
    else if (event.key === "-") view.zoomAt(0.8);
    else if (event.key === "0") view.fit();
    else return;
    event.preventDefault();
  });
}
