// Tiny dependency-free SVG charts for the operator console: a sparkline, a
// line chart with an optional band (p10-p90), a histogram and grouped bars.
// Every function draws into an <svg> element it empties first, and sets
// data-points on it (how many values it drew) so tests can tell it drew.
// The maths (ticks, scales, paths) are pure functions, tested without a browser
// (tests/js/charts.test.js).

/** @typedef {{label: string, color: string}} LegendItem */
/** @typedef {(value: number) => string} Format */

const NS = "http://www.w3.org/2000/svg";
export const COLORS = { fifo: "#0b5fff", random: "#c2185b", bots: "#b06000", humans: "#137333",
                        population: "#8a939e" };

/**
 * @param {string} name
 * @param {Record<string, string | number>} [attrs]
 * @param {string} [text]
 */
function el(name, attrs = {}, text) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * @param {SVGSVGElement} svg
 * @param {number} width
 * @param {number} height
 * @param {string} [label]
 */
function reset(svg, width, height, label) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("role", "img");
  if (label) svg.setAttribute("aria-label", label);
  return svg;
}

/**
 * @param {ReadonlyArray<unknown>} values
 * @returns {number[]}
 */
function finite(values) {
  return /** @type {number[]} */ (values.filter(v => typeof v === "number" && Number.isFinite(v)));
}

/**
 * Round numbers for axis ticks: 0, 1, 2, 5, 10, 20, 50, ...
 * @param {number} value
 */
export function niceMax(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const m of [1, 2, 5, 10]) if (m * power >= value) return m * power;
  return 10 * power;
}

/**
 * A figure in English: "–" when there is none, grouped thousands from 10,000 on.
 * @param {number | null | undefined} value
 */
export function formatNumber(value, digits = 0) {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  if (Math.abs(value) >= 10_000) return Math.round(value).toLocaleString("en");
  return Number(value).toLocaleString("en", { maximumFractionDigits: digits });
}

/**
 * A sparkline's drawing, as numbers: the path through the values (nulls and other
 * non-numbers lift the pen, leaving gaps), the dot on the latest value if it is a
 * number, and how many values it drew. The y range starts at `min` (or lower).
 * @param {Array<number | null | undefined>} values
 * @returns {{d: string, dot: {cx: number, cy: number} | null, points: number}}
 */
export function sparkPath(values, { width = 160, height = 36, min = 0 } = {}) {
  const nums = finite(values);
  if (!nums.length) return { d: "", dot: null, points: 0 };
  const lo = Math.min(min, ...nums);
  const hi = Math.max(lo + 1e-9, ...nums);
  const n = Math.max(2, values.length);
  /** @param {number} i */
  const x = i => (i / (n - 1)) * (width - 4) + 2;
  /** @param {number} v */
  const y = v => height - 3 - ((v - lo) / (hi - lo)) * (height - 6);
  let d = "";
  let pen = false;
  values.forEach((v, i) => {
    if (typeof v !== "number" || !Number.isFinite(v)) { pen = false; return; }
    d += `${pen ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
    pen = true;
  });
  const last = values.length - 1;
  const latest = values[last];
  return { d, dot: typeof latest === "number" ? { cx: x(last), cy: y(latest) } : null,
           points: nums.length };
}

/**
 * A sparkline of the last values (nulls leave gaps), with the latest dot.
 * @param {SVGSVGElement} svg
 * @param {Array<number | null | undefined>} values
 */
export function sparkline(svg, values, { width = 160, height = 36, min = 0 } = {}) {
  reset(svg, width, height);
  const { d, dot, points } = sparkPath(values, { width, height, min });
  svg.dataset.points = String(points);
  if (!points) return;
  svg.append(el("path", { d, class: "spark-line", fill: "none" }));
  if (dot) svg.append(el("circle", { ...dot, r: 2.5, class: "spark-dot" }));
}

/**
 * The plot area of a width x height chart inside its margins, and the scales from
 * data to SVG coordinates: x from xMin..xMax (a zero span counts as 1), y from 0..yMax
 * (upwards).
 * @param {number} width
 * @param {number} height
 * @param {number} xMin
 * @param {number} xMax
 * @param {number} yMax
 */
export function plotArea(width, height, xMin, xMax, yMax) {
  const pad = { l: 52, r: 12, t: 12, b: 36 };
  const w = width - pad.l - pad.r;
  const h = height - pad.t - pad.b;
  const span = xMax - xMin || 1;
  /** @param {number} v */
  const sx = v => pad.l + ((v - xMin) / span) * w;
  /** @param {number} v */
  const sy = v => pad.t + h - (v / yMax) * h;
  return { pad, w, h, span, sx, sy };
}

/**
 * @param {SVGSVGElement} svg
 * @param {number} width
 * @param {number} height
 * @param {number} xMax
 * @param {number} yMax
 * @param {{xLabel?: string, yLabel?: string, xMin?: number, xFormat?: Format}} [options]
 */
function frame(svg, width, height, xMax, yMax, { xLabel = "", yLabel = "", xMin = 0,
                                                  xFormat = formatNumber } = {}) {
  const { pad, w, h, span, sx, sy } = plotArea(width, height, xMin, xMax, yMax);
  const axes = el("g", { class: "axes" });
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    axes.append(el("line", { x1: pad.l, x2: pad.l + w, y1: sy(v), y2: sy(v), class: "grid" }));
    axes.append(el("text", { x: pad.l - 6, y: sy(v) + 4, "text-anchor": "end" }, formatNumber(v, 2)));
  }
  for (let i = 0; i <= 5; i++) {
    const v = xMin + (span * i) / 5;
    axes.append(el("text", { x: sx(v), y: pad.t + h + 16, "text-anchor": "middle" }, xFormat(v)));
  }
  axes.append(el("text", { x: pad.l + w / 2, y: height - 4, "text-anchor": "middle",
                           class: "axis-label" }, xLabel));
  axes.append(el("text", { x: 12, y: pad.t + h / 2, "text-anchor": "middle", class: "axis-label",
                           transform: `rotate(-90 12 ${pad.t + h / 2})` }, yLabel));
  svg.append(axes);
  return { sx, sy };
}

/**
 * @param {SVGSVGElement} svg
 * @param {number} width
 * @param {LegendItem[]} items
 */
function legend(svg, width, items) {
  const g = el("g", { class: "legend" });
  let x = width - 12;
  for (const item of [...items].reverse()) {
    const text = el("text", { x, y: 12, "text-anchor": "end" }, item.label);
    g.append(text);
    x -= item.label.length * 5.6 + 4;
    g.append(el("rect", { x: x - 10, y: 4, width: 10, height: 10, fill: item.color }));
    x -= 24;
  }
  svg.append(g);
}

/**
 * @typedef {{label: string, color: string, points: Array<[number, number | null]>,
 *            band?: Array<[number, number | null, number | null]>}} LineSeries
 */

/**
 * A line through the points whose y is not null (they are skipped, not gaps).
 * @param {LineSeries["points"]} points
 * @param {(x: number) => number} sx
 * @param {(y: number) => number} sy
 */
export function linePath(points, sx, sy) {
  let d = "";
  for (const [x, y] of points) {
    if (y === null) continue;
    d += `${d ? "L" : "M"}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`;
  }
  return d;
}

/**
 * The polygon of a band: along its upper bounds, then back along its lower ones
 * (null bounds skipped), as SVG points.
 * @param {NonNullable<LineSeries["band"]>} band
 * @param {(x: number) => number} sx
 * @param {(y: number) => number} sy
 */
export function bandPolygon(band, sx, sy) {
  /** @type {string[]} */
  const upper = [], lower = [];
  for (const [x, lo, hi] of band) {
    if (hi !== null) upper.push(`${sx(x)},${sy(hi)}`);
    if (lo !== null) lower.unshift(`${sx(x)},${sy(lo)}`);
  }
  return [...upper, ...lower].join(" ");
}

/**
 * Lines with an optional band (p10-p90) under each.
 * @param {SVGSVGElement} svg
 * @param {LineSeries[]} series
 * @param {{width?: number, height?: number, xLabel?: string, yLabel?: string, label?: string,
 *          xFormat?: Format, yMax?: number}} [options]
 */
export function lineChart(svg, series, { width = 560, height = 240, xLabel = "", yLabel = "",
                                         label = "", xFormat, yMax } = {}) {
  reset(svg, width, height, label);
  const xs = series.flatMap(s => s.points.map(p => p[0]));
  const ys = series.flatMap(s => [...s.points.map(p => p[1]), ...(s.band || []).map(b => b[2])]);
  const count = finite(ys).length;
  svg.dataset.points = String(count);
  if (!count) return;
  const xMin = Math.min(...xs);
  const xMax = Math.max(...xs);
  const top = yMax ?? niceMax(Math.max(...finite(ys)));
  const { sx, sy } = frame(svg, width, height, xMax, top, { xLabel, yLabel, xMin, xFormat });
  for (const s of series) {
    if (s.band && s.band.length) {
      svg.append(el("polygon", { points: bandPolygon(s.band, sx, sy), fill: s.color,
                                 "fill-opacity": 0.15, stroke: "none" }));
    }
    const d = linePath(s.points, sx, sy);
    svg.append(el("path", { d, fill: "none", stroke: s.color, "stroke-width": 2,
                            class: "series", "data-series": s.label }));
  }
  legend(svg, width, series);
}

/**
 * The step outline of a histogram, closed down to the x axis at both ends.
 * @param {number[]} counts
 * @param {number} binWidth
 * @param {(x: number) => number} sx
 * @param {(y: number) => number} sy
 */
export function histogramPath(counts, binWidth, sx, sy) {
  let d = `M${sx(0)},${sy(0)}`;
  counts.forEach((c, i) => {
    d += `L${sx(i * binWidth)},${sy(c)}L${sx((i + 1) * binWidth)},${sy(c)}`;
  });
  return `${d}L${sx(counts.length * binWidth)},${sy(0)}`;
}

/**
 * Histograms drawn as overlaid step outlines.
 * @param {SVGSVGElement} svg
 * @param {Array<{label: string, color: string, counts: number[], binWidth: number}>} series
 * @param {{width?: number, height?: number, xLabel?: string, yLabel?: string, label?: string}} [options]
 */
export function histogram(svg, series, { width = 560, height = 240, xLabel = "", yLabel = "",
                                         label = "" } = {}) {
  reset(svg, width, height, label);
  const total = series.reduce((n, s) => n + s.counts.length, 0);
  svg.dataset.points = String(total);
  if (!total) return;
  const xMax = Math.max(...series.map(s => s.counts.length * s.binWidth));
  const top = niceMax(Math.max(...series.flatMap(s => s.counts)));
  const { sx, sy } = frame(svg, width, height, xMax, top, { xLabel, yLabel });
  for (const s of series) {
    const d = histogramPath(s.counts, s.binWidth, sx, sy);
    svg.append(el("path", { d, fill: s.color, "fill-opacity": 0.18, stroke: s.color,
                            "stroke-width": 1.5, class: "series", "data-series": s.label }));
  }
  legend(svg, width, series);
}

/**
 * Grouped bars; values as shares (0..1) by default.
 * @param {SVGSVGElement} svg
 * @param {Array<{label: string, bars: Array<{label: string, value: number, color: string}>}>} groups
 * @param {{width?: number, height?: number, max?: number, percent?: boolean, label?: string}} [options]
 */
export function barChart(svg, groups, { width = 560, height = 220, max = 1, percent = true,
                                        label = "" } = {}) {
  reset(svg, width, height, label);
  const bars = groups.flatMap(g => g.bars);
  svg.dataset.points = String(bars.length);
  if (!bars.length) return;
  const pad = { l: 12, r: 12, t: 22, b: 30 };
  const slot = (width - pad.l - pad.r) / groups.length;
  const h = height - pad.t - pad.b;
  const top = Math.max(max, ...bars.map(b => b.value || 0));
  groups.forEach((g, gi) => {
    const bw = (slot - 24) / g.bars.length;
    g.bars.forEach((b, bi) => {
      const x = pad.l + gi * slot + 12 + bi * bw;
      const bh = ((b.value || 0) / top) * h;
      svg.append(el("rect", { x, y: pad.t + h - bh, width: bw - 4, height: bh, fill: b.color,
                              class: "bar", "data-bar": `${g.label}:${b.label}` }));
      const text = percent ? `${formatNumber((b.value || 0) * 100, 1)} %` : formatNumber(b.value, 1);
      svg.append(el("text", { x: x + (bw - 4) / 2, y: pad.t + h - bh - 4, "text-anchor": "middle",
                              class: "bar-value" }, text));
    });
    svg.append(el("text", { x: pad.l + gi * slot + slot / 2, y: height - 10, "text-anchor": "middle",
                            class: "axis-label" }, g.label));
  });
  const seen = new Map();
  for (const b of bars) seen.set(b.label, b.color);
  legend(svg, width, [...seen].map(([l, color]) => ({ label: l, color })));
}
