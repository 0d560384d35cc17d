// Draws every seat of a layout (seatmap_layout.js) on a <canvas>, with zoom and
// pan. It knows nothing about statuses: `colourOf(seatId)` names each seat's
// colour, `selectedIds()` lists the shopper's picks (drawn with a ring).
//
// The view is a scale and an offset: screen = layout * scale + offset (CSS pixels).
// The maths of the view (fit, zoom, centre, culling, what a key does) are pure
// functions below, tested without a browser (tests/js/seatmap_draw.test.js);
// SeatCanvas applies them to a <canvas>.

/** @typedef {import("./seatmap_layout.js").Layout} Layout */
/**
 * Where the layout sits on screen: screen = layout * scale + offset, in CSS pixels;
 * `zoom` is `scale` relative to `baseScale`, the scale at which the whole venue fits.
 * @typedef {{zoom: number, baseScale: number, scale: number, offsetX: number, offsetY: number}} View
 */
/** @typedef {{rect(x: number, y: number, w: number, h: number): void}} RectPath */

export const MIN_ZOOM = 1, MAX_ZOOM = 60;
const CENTRE_ZOOM = 6;   // centreOn zooms in at least this far

/**
 * The whole venue in a width x height box, centred, with two seat pitches of margin.
 * @param {Layout["bounds"]} bounds
 * @param {number} pitch
 * @param {number} width
 * @param {number} height
 * @returns {View}
 */
export function fitView(bounds, pitch, width, height) {
  const { minX, minY, maxX, maxY } = bounds;
  const pad = pitch * 2;
  const w = maxX - minX + pad * 2, h = maxY - minY + pad * 2;
  const baseScale = Math.min(width / w, height / h);
  return { zoom: 1, baseScale, scale: baseScale,
           offsetX: (width - (maxX + minX) * baseScale) / 2,
           offsetY: (height - (maxY + minY) * baseScale) / 2 };
}

/**
 * Zoom by `factor` (kept within MIN_ZOOM..MAX_ZOOM) keeping the layout point under the
 * screen point (sx, sy) in place.
 * @param {View} view
 * @param {number} factor
 * @param {number} sx
 * @param {number} sy
 * @returns {View}
 */
export function zoomView(view, factor, sx, sy) {
  const zoom = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, view.zoom * factor));
  const wx = (sx - view.offsetX) / view.scale, wy = (sy - view.offsetY) / view.scale;
  const scale = view.baseScale * zoom;
  return { zoom, baseScale: view.baseScale, scale, offsetX: sx - wx * scale, offsetY: sy - wy * scale };
}

/**
 * The layout point (x, y) in the middle of a width x height box, zooming in to at
 * least CENTRE_ZOOM.
 * @param {View} view
 * @param {number} x
 * @param {number} y
 * @param {number} width
 * @param {number} height
 * @returns {View}
 */
export function centreView(view, x, y, width, height) {
  const zoom = Math.max(view.zoom, CENTRE_ZOOM);
  const scale = view.zoom < CENTRE_ZOOM ? view.baseScale * CENTRE_ZOOM : view.scale;
  return { zoom, baseScale: view.baseScale, scale,
           offsetX: width / 2 - x * scale, offsetY: height / 2 - y * scale };
}

/**
 * A point relative to the canvas's top-left corner (CSS pixels) -> layout coordinates.
 * @param {View} view
 * @param {number} px
 * @param {number} py
 * @returns {[number, number]}
 */
export function toLayoutPoint(view, px, py) {
  return [(px - view.offsetX) / view.scale, (py - view.offsetY) / view.scale];
}

/**
 * The side of a seat's square on screen: 80 % of the pitch, never under a pixel.
 * @param {number} pitch
 * @param {number} scale
 */
export function seatSize(pitch, scale) {
  return Math.max(1, pitch * 0.8 * scale);
}

/**
 * How far from a click a seat is still picked, in layout units: 70 % of the pitch,
 * and never less than 6 screen pixels.
 * @param {number} pitch
 * @param {number} scale
 */
export function pickRadius(pitch, scale) {
  return Math.max(pitch * 0.7, 6 / scale);
}

/**
 * The seats' squares on a width x height screen, grouped by colour: one path per
 * colour (made by `newPath`), not 50,000 fills. Seats off screen are left out.
 * @template {RectPath} P
 * @param {Layout} layout
 * @param {View} view
 * @param {number} width
 * @param {number} height
 * @param {(seatId: number) => string} colourOf
 * @param {() => P} newPath
 * @returns {{groups: Map<string, P>, drawn: number, size: number}}
 */
export function seatPaths(layout, view, width, height, colourOf, newPath) {
  const { n, ids, x, y, pitch } = layout;
  const { scale, offsetX, offsetY } = view;
  const size = seatSize(pitch, scale);
  const half = size / 2;
  /** @type {Map<string, P>} */
  const groups = new Map();
  let drawn = 0;
  for (let i = 0; i < n; i++) {
    const sx = x[i] * scale + offsetX, sy = y[i] * scale + offsetY;
    if (sx < -size || sy < -size || sx > width + size || sy > height + size) continue;
    const colour = colourOf(ids[i]);
    let path = groups.get(colour);
    if (!path) { path = newPath(); groups.set(colour, path); }
    path.rect(sx - half, sy - half, size, size);
    drawn++;
  }
  return { groups, drawn, size };
}

/**
 * What a key does on the map: a pan by (dx, dy) pixels, a zoom factor, a fit, or null.
 * @param {string} key
 * @returns {{pan: [number, number]} | {zoom: number} | {fit: true} | null}
 */
export function keyAction(key) {
  const step = 40;
  /** @type {Record<string, [number, number]>} */
  const pans = { ArrowLeft: [step, 0], ArrowRight: [-step, 0], ArrowUp: [0, step], ArrowDown: [0, -step] };
  if (Object.hasOwn(pans, key)) return { pan: pans[key] };
  if (key === "+" || key === "=") return { zoom: 1.25 };
  if (key === "-") return { zoom: 0.8 };
  if (key === "0") return { fit: true };
  return null;
}

export class SeatCanvas {
  /**
   * @param {HTMLCanvasElement} canvas
   * @param {Layout} layout
   * @param {{colourOf: (seatId: number) => string, selectedIds: () => Iterable<number>}} how
   */
  constructor(canvas, layout, { colourOf, selectedIds }) {
    this.canvas = canvas;
    this.layout = layout;
    this.colourOf = colourOf;
    this.selectedIds = selectedIds;
    this.zoom = 1;          // relative to "whole venue"
    this.baseScale = 1;
    this.scale = 1;
    this.offsetX = 0;
    this.offsetY = 0;
    this.width = 1;
    this.height = 1;
    this.ratio = 1;
    this.drawn = 0;         // seats drawn by the last frame (tests read it)
    /** @type {number | null} */
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

  /** @param {View} view */
  setView(view) {
    ({ zoom: this.zoom, baseScale: this.baseScale, scale: this.scale,
       offsetX: this.offsetX, offsetY: this.offsetY } = view);
    this.request();
  }

  // The whole venue in view, centred.
  fit() {
    this.setView(fitView(this.layout.bounds, this.layout.pitch, this.width, this.height));
  }

  /**
   * Zoom by `factor` keeping the layout point under (sx, sy) in place.
   * @param {number} factor
   */
  zoomAt(factor, sx = this.width / 2, sy = this.height / 2) {
    this.setView(zoomView(this, factor, sx, sy));
  }

  /**
   * @param {number} dx
   * @param {number} dy
   */
  panBy(dx, dy) {
    this.offsetX += dx;
    this.offsetY += dy;
    this.request();
  }

  /**
   * Bring a seat into the middle of the view (zooming in if far out).
   * @param {number} seatId
   */
  centreOn(seatId) {
    const i = this.layout.indexOf[seatId];
    if (i === undefined || i < 0) return;
    this.setView(centreView(this, this.layout.x[i], this.layout.y[i], this.width, this.height));
  }

  /**
   * Client coordinates (a pointer event) -> layout coordinates.
   * @param {number} clientX
   * @param {number} clientY
   */
  toLayout(clientX, clientY) {
    const rect = this.canvas.getBoundingClientRect();
    return toLayoutPoint(this, clientX - rect.left, clientY - rect.top);
  }

  // Draw at the next animation frame (many changes in one frame draw once).
  request() {
    if (this.frame === null) this.frame = requestAnimationFrame(() => { this.frame = null; this.draw(); });
  }

  draw() {
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    const { x, y } = this.layout;
    ctx.setTransform(this.ratio, 0, 0, this.ratio, 0, 0);
    ctx.clearRect(0, 0, this.width, this.height);
    const { groups, drawn, size } = seatPaths(this.layout, this, this.width, this.height,
                                              this.colourOf, () => new Path2D());
    const half = size / 2;
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

/**
 * Wheel, drag and keys on the canvas; a click that did not drag picks a seat.
 * @param {SeatCanvas} view
 * @param {HTMLCanvasElement} canvas
 * @param {(wx: number, wy: number, radius: number) => void} onPick
 */
export function attachControls(view, canvas, onPick) {
  /** @type {{x: number, y: number, moved: boolean} | null} */
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
    onPick(wx, wy, pickRadius(view.layout.pitch, view.scale));
  });
  canvas.addEventListener("pointercancel", () => { drag = null; });
  canvas.addEventListener("keydown", event => {
    const action = keyAction(event.key);
    if (!action) return;
    if ("pan" in action) view.panBy(...action.pan);
    else if ("zoom" in action) view.zoomAt(action.zoom);
    else view.fit();
    event.preventDefault();
  });
}
