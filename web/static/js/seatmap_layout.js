// The venue layout (the event's links.venue, columnar) turned into what the
// map and the picker need: typed arrays of positions, sections -> rows -> seats,
// labels and a grid for finding the seat under the pointer. Pure: no DOM.

/**
 * The venue document (GET /api/events/{id}/venue): one array per column, a row per seat.
 * @typedef {{seat_id: number[], section: string[], row: string[], number: number[],
 *            x: number[], y: number[], tier_id: number[]}} SeatColumns
 * @typedef {{tier_id: number, name: string, price_minor: number}} Tier
 * @typedef {{seats: SeatColumns, tiers?: Tier[]}} Venue
 * @typedef {{minX: number, minY: number, maxX: number, maxY: number}} Bounds
 * @typedef {{cell: number, cols: number, cells: Map<number, number[]>}} Grid
 */
/**
 * What layoutFrom builds: n seats in layout order; indexOf maps a seat id to its
 * position in the typed arrays (-1: no such seat); sections -> rows -> seat ids by number.
 * @typedef {{n: number, ids: Int32Array, x: Float32Array, y: Float32Array, tierOf: Int32Array,
 *            indexOf: Int32Array, sections: Map<string, Map<string, number[]>>,
 *            tiers: Map<number, Tier>, cols: SeatColumns, bounds: Bounds, pitch: number,
 *            grid: Grid}} Layout
 */

/**
 * @param {Venue} venue
 * @returns {Layout}
 */
export function layoutFrom(venue) {
  const cols = venue.seats;
  const n = cols.seat_id.length;
  const ids = Int32Array.from(cols.seat_id);
  const x = Float32Array.from(cols.x);
  const y = Float32Array.from(cols.y);
  const tierOf = Int32Array.from(cols.tier_id);
  let maxId = 0;
  for (let i = 0; i < n; i++) if (ids[i] > maxId) maxId = ids[i];
  const indexOf = new Int32Array(maxId + 1).fill(-1);   // seat id -> position in the arrays
  for (let i = 0; i < n; i++) indexOf[ids[i]] = i;

  // sections in layout order, each with its rows in order, each with seat ids by number
  /** @type {Map<string, Map<string, number[]>>} */
  const sections = new Map();
  for (let i = 0; i < n; i++) {
    const section = cols.section[i], row = cols.row[i];
    let rows = sections.get(section);
    if (!rows) { rows = new Map(); sections.set(section, rows); }
    let seats = rows.get(row);
    if (!seats) { seats = []; rows.set(row, seats); }
    seats.push(ids[i]);
  }
  for (const rows of sections.values()) {
    for (const seats of rows.values()) {
      seats.sort((a, b) => cols.number[indexOf[a]] - cols.number[indexOf[b]]);
    }
  }

  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (let i = 0; i < n; i++) {
    if (x[i] < minX) minX = x[i];
    if (x[i] > maxX) maxX = x[i];
    if (y[i] < minY) minY = y[i];
    if (y[i] > maxY) maxY = y[i];
  }
  if (n === 0) minX = minY = maxX = maxY = 0;

  const tiers = new Map((venue.tiers || []).map(t => [t.tier_id, t]));
  const bounds = { minX, minY, maxX, maxY }, pitch = seatPitch(x, y, n);
  return { n, ids, x, y, tierOf, indexOf, sections, tiers, cols, bounds, pitch,
           grid: buildGrid(n, x, y, bounds, pitch) };
}

// A typical distance between neighbouring seats (the first few pairs), so
// seats are drawn at a size that fits whatever units the layout uses.
/**
 * @param {Float32Array} x
 * @param {Float32Array} y
 * @param {number} n
 */
export function seatPitch(x, y, n) {
  let best = Infinity;
  for (let i = 1; i < Math.min(n, 200); i++) {
    const d = Math.hypot(x[i] - x[i - 1], y[i] - y[i - 1]);
    if (d > 0 && d < best) best = d;
  }
  return Number.isFinite(best) ? best : 1;
}

// Square cells of two pitches, each listing the positions of the seats in it.
/**
 * @param {number} n
 * @param {Float32Array} x
 * @param {Float32Array} y
 * @param {Bounds} bounds
 * @param {number} pitch
 * @returns {Grid}
 */
function buildGrid(n, x, y, bounds, pitch) {
  const cell = pitch * 2;
  const cols = Math.max(1, Math.ceil((bounds.maxX - bounds.minX) / cell) + 1);
  /** @type {Map<number, number[]>} */
  const cells = new Map();
  for (let i = 0; i < n; i++) {
    const key = Math.floor((y[i] - bounds.minY) / cell) * cols + Math.floor((x[i] - bounds.minX) / cell);
    let list = cells.get(key);
    if (!list) { list = []; cells.set(key, list); }
    list.push(i);
  }
  return { cell, cols, cells };
}

/**
 * The seat id nearest to (wx, wy) in layout units, if within `radius`; else null.
 * @param {Layout} layout
 * @param {number} wx
 * @param {number} wy
 * @param {number} radius
 * @returns {number | null}
 */
export function seatNear(layout, wx, wy, radius) {
  const { grid, bounds, x, y, ids } = layout;
  const cx = Math.floor((wx - bounds.minX) / grid.cell), cy = Math.floor((wy - bounds.minY) / grid.cell);
  const reach = Math.max(1, Math.ceil(radius / grid.cell));
  /** @type {number | null} */
  let best = null;
  let bestD = radius;
  for (let gy = cy - reach; gy <= cy + reach; gy++) {
    for (let gx = cx - reach; gx <= cx + reach; gx++) {
      if (gx < 0 || gx >= grid.cols) continue;
      for (const i of grid.cells.get(gy * grid.cols + gx) || []) {
        const d = Math.hypot(x[i] - wx, y[i] - wy);
        if (d <= bestD) { bestD = d; best = ids[i]; }
      }
    }
  }
  return best;
}

/**
 * @typedef {{seatId: number, section: string, row: string, number: number, tierId: number,
 *            tier: string, priceMinor: number}} SeatInfo
 */
/**
 * What the page says about a seat id, or null when the layout has no such seat.
 * @param {Layout} layout
 * @param {number} seatId
 * @returns {SeatInfo | null}
 */
export function seatInfo(layout, seatId) {
  const i = seatId >= 0 && seatId < layout.indexOf.length ? layout.indexOf[seatId] : -1;
  if (i < 0) return null;
  const tierId = layout.tierOf[i];
  const tier = layout.tiers.get(tierId);
  return { seatId, section: layout.cols.section[i], row: layout.cols.row[i],
           number: layout.cols.number[i], tierId, tier: tier ? tier.name : "",
           priceMinor: tier ? tier.price_minor : 0 };
}

/** @param {Pick<SeatInfo, "section" | "row" | "number">} info */
export function seatLabel(info) {
  return `Section ${info.section}, row ${info.row}, seat ${info.number}`;
}

// "150.00 USD", as the server-rendered pages write money (web/seat_pages.py).
const ZERO_DECIMAL = new Set(["BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG",
                              "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF"]);
/**
 * @param {number} amountMinor
 * @param {string} currency
 */
export function money(amountMinor, currency) {
  const digits = ZERO_DECIMAL.has(String(currency).toUpperCase()) ? 0 : 2;
  const major = (amountMinor / 10 ** digits).toLocaleString("en-US", {
    minimumFractionDigits: digits, maximumFractionDigits: digits });
  return `${major} ${currency}`;
}
