// The venue layout (the event's links.venue, columnar) turned into what the
// map and the picker need: typed arrays of positions, sections -> rows -> seats,
// labels and a grid for finding the seat under the pointer. Pure: no DOM.

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
  const sections = new Map();
  for (let i = 0; i < n; i++) {
    const section = cols.section[i], row = cols.row[i];
    if (!sections.has(section)) sections.set(section, new Map());
    const rows = sections.get(section);
    if (!rows.has(row)) rows.set(row, []);
    rows.get(row).push(ids[i]);
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
  const layout = { n, ids, x, y, tierOf, indexOf, sections, tiers, cols,
                   bounds: { minX, minY, maxX, maxY }, pitch: seatPitch(x, y, n) };
  layout.grid = buildGrid(layout);
  return layout;
}

// A typical distance between neighbouring seats (the first few pairs), so
// seats are drawn at a size that fits whatever units the layout uses.
function seatPitch(x, y, n) {
  let best = Infinity;
  for (let i = 1; i < Math.min(n, 200); i++) {
    const d = Math.hypot(x[i] - x[i - 1], y[i] - y[i - 1]);
    if (d > 0 && d < best) best = d;
  }
  return Number.isFinite(best) ? best : 1;
}

function buildGrid(layout) {
  const { n, x, y, bounds, pitch } = layout;
  const cell = pitch * 2;
  const cols = Math.max(1, Math.ceil((bounds.maxX - bounds.minX) / cell) + 1);
  const cells = new Map();
  for (let i = 0; i < n; i++) {
    const key = Math.floor((y[i] - bounds.minY) / cell) * cols + Math.floor((x[i] - bounds.minX) / cell);
    if (!cells.has(key)) cells.set(key, []);
    cells.get(key).push(i);
  }
  return { cell, cols, cells };
}

// The seat id nearest to (wx, wy) in layout units, if within `radius`; else null.
export function seatNear(layout, wx, wy, radius) {
  const { grid, bounds, x, y, ids } = layout;
  const cx = Math.floor((wx - bounds.minX) / grid.cell), cy = Math.floor((wy - bounds.minY) / grid.cell);
  const reach = Math.max(1, Math.ceil(radius / grid.cell));
  let best = null, bestD = radius;
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

// {seatId, section, row, number, tierId, tier, priceMinor} of a seat id, or null.
export function seatInfo(layout, seatId) {
  const i = seatId >= 0 && seatId < layout.indexOf.length ? layout.indexOf[seatId] : -1;
  if (i < 0) return null;
  const tierId = layout.tierOf[i];
  const tier = layout.tiers.get(tierId);
  return { seatId, section: layout.cols.section[i], row: layout.cols.row[i],
           number: layout.cols.number[i], tierId, tier: tier ? tier.name : "",
           priceMinor: tier ? tier.price_minor : 0 };
}

export function seatLabel(info) {
  return `Section ${info.section}, row ${info.row}, seat ${info.number}`;
}

// "150.00 USD", as the server-rendered pages write money (web/seat_pages.py).
const ZERO_DECIMAL = new Set(["BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG",
                              "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF"]);
export function money(amountMinor, currency) {
  const digits = ZERO_DECIMAL.has(String(currency).toUpperCase()) ? 0 : 2;
  const major = (amountMinor / 10 ** digits).toLocaleString("en-US", {
    minimumFractionDigits: digits, maximumFractionDigits: digits });
  return `${major} ${currency}`;
}
