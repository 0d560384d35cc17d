// The seat map's view maths (web/static/js/seatmap_draw.js): fit, zoom, centre,
// culling and grouping by colour, keys; and SeatCanvas driving a stand-in canvas.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  MAX_ZOOM, SeatCanvas, centreView, fitView, keyAction, pickRadius, seatPaths, seatSize,
  toLayoutPoint, zoomView,
} from "../../web/static/js/seatmap_draw.js";
import { layoutFrom } from "../../web/static/js/seatmap_layout.js";

// Five seats, 10 units apart: x 0..110, y 0..10 (as in seatmap_layout.test.js).
const layout = layoutFrom({
  seats: { seat_id: [10, 11, 12, 20, 21], section: ["A", "A", "A", "B", "B"],
           row: ["1", "1", "2", "1", "1"], number: [2, 1, 1, 1, 2],
           x: [0, 10, 0, 100, 110], y: [0, 0, 10, 0, 0], tier_id: [1, 1, 2, 2, 2] },
});
// A 300 x 100 canvas: with two pitches of margin the venue is 150 x 50 units, so 2 px a unit.
const FIT = { zoom: 1, baseScale: 2, scale: 2, offsetX: 40, offsetY: 40 };

class RecordingPath {
  constructor() { this.rects = []; }
  rect(x, y, w, h) { this.rects.push([x, y, w, h]); }
}

test("fit: the whole venue, centred, with two pitches of margin", () => {
  assert.deepEqual(fitView(layout.bounds, layout.pitch, 300, 100), FIT);
  // The venue's centre (55, 5) is the canvas's (150, 50).
  assert.deepEqual(toLayoutPoint(FIT, 150, 50), [55, 5]);
  // A tall canvas: the width decides.
  assert.deepEqual(fitView(layout.bounds, layout.pitch, 150, 400),
                   { zoom: 1, baseScale: 1, scale: 1, offsetX: 20, offsetY: 195 });
});

test("zoom keeps the point under the pointer in place, within 1x..60x", () => {
  const twice = zoomView(FIT, 2, 150, 50);
  assert.deepEqual(twice, { zoom: 2, baseScale: 2, scale: 4, offsetX: -70, offsetY: 30 });
  assert.deepEqual(toLayoutPoint(twice, 150, 50), [55, 5]);
  const atSeat = zoomView(FIT, 3, 240, 40);   // seat 20 stays under the pointer
  assert.deepEqual(toLayoutPoint(atSeat, 240, 40), [100, 0]);
  assert.deepEqual(zoomView(FIT, 0.5, 0, 0), FIT);                 // never below the fit
  assert.equal(zoomView(FIT, 1000, 0, 0).zoom, MAX_ZOOM);
  assert.equal(zoomView(FIT, 1000, 0, 0).scale, 2 * MAX_ZOOM);
});

test("centring on a seat zooms in to at least 6x, never out", () => {
  assert.deepEqual(centreView(FIT, 100, 0, 300, 100),
                   { zoom: 6, baseScale: 2, scale: 12, offsetX: -1050, offsetY: 50 });
  const close = { zoom: 10, baseScale: 2, scale: 20, offsetX: 0, offsetY: 0 };
  assert.deepEqual(centreView(close, 100, 0, 300, 100),
                   { zoom: 10, baseScale: 2, scale: 20, offsetX: -1850, offsetY: 50 });
});

test("seat squares and the pick radius follow the scale, with floors", () => {
  assert.equal(seatSize(10, 2), 16);
  assert.equal(seatSize(1, 0.5), 1);
  assert.equal(pickRadius(10, 2), 7);
  assert.equal(pickRadius(10, 0.1), 60);   // far out: 6 screen pixels
});

test("seats are grouped into one path per colour", () => {
  const colourOf = id => (id < 20 ? "red" : "blue");
  const { groups, drawn, size } = seatPaths(layout, FIT, 300, 100, colourOf,
                                            () => new RecordingPath());
  assert.equal(drawn, 5);
  assert.equal(size, 16);
  assert.deepEqual([...groups.keys()], ["red", "blue"]);
  assert.deepEqual(groups.get("red").rects, [[32, 32, 16, 16], [52, 32, 16, 16], [32, 52, 16, 16]]);
  assert.deepEqual(groups.get("blue").rects, [[232, 32, 16, 16], [252, 32, 16, 16]]);
});

test("seats off the canvas (by more than a square) are not drawn", () => {
  const twice = zoomView(FIT, 2, 150, 50);   // scale 4: seats at x -70, -30, -70, 330, 370
  const asked = [];
  const { groups, drawn } = seatPaths(layout, twice, 300, 100, id => { asked.push(id); return "c"; },
                                      () => new RecordingPath());
  assert.equal(drawn, 2);
  assert.deepEqual(asked, [11, 20]);
  assert.deepEqual(groups.get("c").rects, [[-46, 14, 32, 32], [314, 14, 32, 32]]);
});

test("keys: arrows pan by 40 px, + = - zoom, 0 fits, others do nothing", () => {
  assert.deepEqual(keyAction("ArrowLeft"), { pan: [40, 0] });
  assert.deepEqual(keyAction("ArrowRight"), { pan: [-40, 0] });
  assert.deepEqual(keyAction("ArrowUp"), { pan: [0, 40] });
  assert.deepEqual(keyAction("ArrowDown"), { pan: [0, -40] });
  assert.deepEqual(keyAction("+"), { zoom: 1.25 });
  assert.deepEqual(keyAction("="), { zoom: 1.25 });
  assert.deepEqual(keyAction("-"), { zoom: 0.8 });
  assert.deepEqual(keyAction("0"), { fit: true });
  assert.equal(keyAction("a"), null);
  assert.equal(keyAction("Enter"), null);
  assert.equal(keyAction("toString"), null);
});

test("SeatCanvas draws a frame through the same maths, the picks ringed", t => {
  // Stand-ins for the browser: a 300 x 100 canvas on a 2x screen, frames run by hand.
  const frames = [];
  const calls = [];
  const ctx = new Proxy({}, {
    get: (_, name) => (...args) => calls.push([name, ...args]),
    set: (_, name, value) => { calls.push([`${String(name)}=`, value]); return true; },
  });
  const canvas = { width: 0, height: 0, getContext: () => ctx,
                   getBoundingClientRect: () => ({ left: 8, top: 20, width: 300, height: 100 }) };
  Object.assign(globalThis, { window: { devicePixelRatio: 2 }, Path2D: RecordingPath,
                              requestAnimationFrame: cb => frames.push(cb) });
  t.after(() => { delete globalThis.window; delete globalThis.Path2D;
                  delete globalThis.requestAnimationFrame; });

  const view = new SeatCanvas(canvas, layout, { colourOf: () => "#1f6feb", selectedIds: () => [21] });
  assert.deepEqual([canvas.width, canvas.height], [600, 200]);
  assert.equal(view.scale, 2);
  assert.deepEqual(view.toLayout(158, 70), [55, 5]);   // client point = canvas (150, 50)
  view.panBy(10, 0);
  assert.equal(frames.length, 1);                      // one frame for many changes
  frames.shift()();
  assert.equal(view.drawn, 5);
  const fills = calls.filter(c => c[0] === "fill");
  assert.equal(fills.length, 1);
  assert.deepEqual(fills[0][1].rects[0], [42, 32, 16, 16]);
  assert.deepEqual(calls.find(c => c[0] === "fillRect"), ["fillRect", 262, 32, 16, 16]);
  assert.deepEqual(calls.find(c => c[0] === "arc"), ["arc", 270, 40, 16, 0, Math.PI * 2]);
  view.centreOn(12);
  assert.deepEqual([view.zoom, view.scale, view.offsetX, view.offsetY], [6, 12, 150, -70]);
  view.centreOn(13);                                   // no such seat: nothing moves
  assert.deepEqual([view.zoom, view.offsetX], [6, 150]);
});
