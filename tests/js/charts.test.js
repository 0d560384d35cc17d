// The console's chart maths (web/static/js/charts.js): ticks, numbers, scales and
// the SVG paths of sparklines, lines, bands and histograms.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  bandPolygon, formatNumber, histogramPath, linePath, niceMax, plotArea, sparkPath,
} from "../../web/static/js/charts.js";

test("an axis tops out at 1, 2 or 5 times a power of ten", () => {
  assert.deepEqual([0, -5, NaN].map(niceMax), [1, 1, 1]);
  assert.deepEqual([1, 7, 12, 0.3, 450, 1000, 1001].map(niceMax), [1, 10, 20, 0.5, 500, 1000, 2000]);
});

test("figures in English, grouped from 10,000 on, a dash for none", () => {
  assert.equal(formatNumber(null), "–");
  assert.equal(formatNumber(undefined), "–");
  assert.equal(formatNumber(NaN), "–");
  assert.equal(formatNumber(1234.4), "1,234");
  assert.equal(formatNumber(0.4567, 2), "0.46");
  assert.equal(formatNumber(12.5, 1), "12.5");
  assert.equal(formatNumber(12345.6, 2), "12,346");   // big figures are whole
  assert.equal(formatNumber(-20000.4), "-20,000");
});

test("a sparkline: nulls lift the pen, the latest value gets a dot", () => {
  // 160 x 36: x from 2 to 158, y from 33 (the minimum, 0) up to 3 (the maximum).
  assert.deepEqual(sparkPath([1, null, 3]),
                   { d: "M2.0,23.0M158.0,3.0", dot: { cx: 158, cy: 3 }, points: 2 });
  assert.deepEqual(sparkPath([5, 5]), { d: "M2.0,3.0L158.0,3.0", dot: { cx: 158, cy: 3 }, points: 2 });
  assert.deepEqual(sparkPath([2, null]), { d: "M2.0,3.0", dot: null, points: 1 });
  assert.deepEqual(sparkPath([-1, 1], { width: 104, height: 16, min: 0 }),
                   { d: "M2.0,13.0L102.0,3.0", dot: { cx: 102, cy: 3 }, points: 2 });
  assert.deepEqual(sparkPath([]), { d: "", dot: null, points: 0 });
  assert.deepEqual(sparkPath([null, undefined]), { d: "", dot: null, points: 0 });
});

// 560 x 240 inside margins (52 left, 12 right and top, 36 below): 496 x 192.
const { sx, sy, w, h } = plotArea(560, 240, 0, 100, 8);

test("the plot area's scales: x across, y upwards from the bottom margin", () => {
  assert.deepEqual([w, h], [496, 192]);
  assert.deepEqual([sx(0), sx(50), sx(100)], [52, 300, 548]);
  assert.deepEqual([sy(0), sy(4), sy(8)], [204, 108, 12]);
  const flat = plotArea(560, 240, 5, 5, 8);   // one x value: a span of 1
  assert.deepEqual([flat.span, flat.sx(5), flat.sx(6)], [1, 52, 548]);
});

test("a line skips the points without a value", () => {
  assert.equal(linePath([[0, 0], [50, null], [100, 8]], sx, sy), "M52.0,204.0L548.0,12.0");
  assert.equal(linePath([[50, null]], sx, sy), "");
});

test("a band goes along its upper bounds and back along its lower ones", () => {
  assert.equal(bandPolygon([[0, 1, 4], [50, null, 6], [100, 2, null]], sx, sy),
               "52,108 300,60 548,156 52,180");
});

test("a histogram is a closed step outline", () => {
  const scales = plotArea(560, 240, 0, 20, 8);
  assert.equal(histogramPath([2, 4], 10, scales.sx, scales.sy),
               "M52,204L52,156L300,156L300,108L548,108L548,204");
  assert.equal(histogramPath([], 10, scales.sx, scales.sy), "M52,204L52,204");
});
