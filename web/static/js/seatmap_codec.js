// The seat map's state, decoded from the snapshot and the WebSocket deltas
// (docs/seatmap-protocol.md). Pure: no DOM, no network, no clock (callers pass
// "now" in Unix seconds), so it can be read and tested on its own.
//
//   const state = fromSnapshot(snapshotJson);
//   applyDelta(state, deltaJson)   // true if applied; false: versions differ, refetch
//   statusOf(state, seatId, Date.now() / 1000)   // "available" | "held" | ...

/**
 * The snapshot document (seatmap/snapshot.py's SeatMap.document()).
 * @typedef {{type: "snapshot", event_id: number, version: string, seat_count: number,
 *            status: string, held?: number[], ga?: Array<[number, number, number]>}} Snapshot
 */
/**
 * A delta frame (seatmap/sequencer.py's delta_frame): changes are [seat, code] or
 * [seat, HELD, expiry]; ga lists [tier, stripe, available].
 * @typedef {{type: "delta", event_id: number, from: string, to: string,
 *            changes: Array<[number, number, number?]>, ga?: Array<[number, number, number]>}} Delta
 */
/**
 * The decoded seat map. codes[seatId] is the status digit (index 0 is unused).
 * @typedef {{eventId: number, version: string, seatCount: number, codes: Uint8Array,
 *            expiry: Map<number, number>, places: Map<string, number>}} SeatState
 */

export const STATUSES = ["available", "held", "pending", "sold", "blocked"];
const HELD = 1;
const BLOCKED = 4;

// A snapshot message or HTTP body -> {eventId, version, seatCount, codes, expiry, places}.
// codes[seatId] is the status digit (index 0 is unused); expiry maps each HELD
// seat to the Unix second from which it shows available again; places maps each
// general-admission stripe ("tier:stripe") to its available places.
/**
 * @param {Snapshot} snapshot
 * @returns {SeatState}
 */
export function fromSnapshot(snapshot) {
  if (!snapshot || snapshot.type !== "snapshot" || typeof snapshot.status !== "string") {
    throw new Error("not a seat-map snapshot");
  }
  const seatCount = snapshot.seat_count;
  const codes = new Uint8Array(seatCount + 1);
  codes[0] = BLOCKED;
  for (let i = 0; i < seatCount; i++) {
    const code = snapshot.status.charCodeAt(i) - 48;
    codes[i + 1] = code >= 0 && code <= BLOCKED ? code : BLOCKED;
  }
  const places = new Map();
  for (const [tier, stripe, available] of snapshot.ga || []) places.set(`${tier}:${stripe}`, available);
  return { eventId: snapshot.event_id, version: snapshot.version, seatCount, codes,
           expiry: decodeHeld(snapshot.held || []), places };
}

/**
 * Each general-admission tier's places left: tier id -> the sum over its stripes.
 * @param {SeatState | null} state
 * @returns {Map<number, number>}
 */
export function placesLeft(state) {
  /** @type {Map<number, number>} */
  const left = new Map();
  if (!state || !state.places) return left;
  for (const [key, available] of state.places) {
    const tier = Number(key.split(":")[0]);
    left.set(tier, (left.get(tier) || 0) + available);
  }
  return left;
}

// The snapshot's `held` list: (seat id, expiry) pairs, each number the
// difference from the previous pair's, the first pair absolute.
/**
 * @param {number[]} held
 * @returns {Map<number, number>} seat id -> expiry (Unix seconds)
 */
export function decodeHeld(held) {
  /** @type {Map<number, number>} */
  const expiry = new Map();
  let seat = 0, at = 0;
  for (let i = 0; i + 1 < held.length; i += 2) {
    seat += held[i];
    at += held[i + 1];
    expiry.set(seat, at);
  }
  return expiry;
}

// Apply a delta if and only if its `from` is our version. Returns whether it
// was applied and the ids of the seats it changed (empty when not applied).
/**
 * @param {SeatState | null} state
 * @param {Delta} delta
 * @returns {{applied: boolean, changed: number[]}}
 */
export function applyDelta(state, delta) {
  if (!state || delta.from !== state.version) return { applied: false, changed: [] };
  /** @type {number[]} */
  const changed = [];
  for (const [seatId, code, at] of delta.changes) {
    if (seatId < 1 || seatId > state.seatCount) continue;
    state.codes[seatId] = code;
    if (code === HELD && at !== undefined) state.expiry.set(seatId, at);
    else state.expiry.delete(seatId);   // HELD without an expiry: held until news
    changed.push(seatId);
  }
  for (const [tier, stripe, available] of delta.ga || []) {
    if (!state.places) state.places = new Map();
    state.places.set(`${tier}:${stripe}`, available);
  }
  state.version = delta.to;
  return { applied: true, changed };
}

// What a seat shows at `now` (Unix seconds): a HELD seat is available again
// from its expiry second on; an unknown seat id is "blocked" (not for sale).
/**
 * @param {SeatState | null} state
 * @param {number} seatId
 * @param {number} now Unix seconds
 * @returns {string}
 */
export function statusOf(state, seatId, now) {
  if (!state || !(seatId >= 1 && seatId <= state.seatCount)) return "blocked";
  const code = state.codes[seatId];
  if (code === HELD) {
    const at = state.expiry.get(seatId);
    if (at !== undefined && now >= at) return "available";
  }
  return STATUSES[code] || "blocked";
}

// The first expiry after `now`, or null: when the map must be drawn again
// even if nothing arrives.
/**
 * @param {SeatState | null} state
 * @param {number} now Unix seconds
 * @returns {number | null}
 */
export function nextExpiry(state, now) {
  /** @type {number | null} */
  let next = null;
  if (!state) return next;
  for (const at of state.expiry.values()) {
    if (at > now && (next === null || at < next)) next = at;
  }
  return next;
}

/**
 * Counts per status at `now`, e.g. {available: 49990, held: 4, ...}.
 * @param {SeatState | null} state
 * @param {number} now Unix seconds
 * @returns {Record<string, number>}
 */
export function countStatuses(state, now) {
  const counts = Object.fromEntries(STATUSES.map(s => [s, 0]));
  if (!state) return counts;
  for (let id = 1; id <= state.seatCount; id++) counts[statusOf(state, id, now)]++;
  return counts;
}
