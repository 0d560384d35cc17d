// The seat map page (/events/{id}/seats): draws every seat, keeps it live,
// lets the shopper pick up to max_seats_per_hold seats (on the canvas or with
// the keyboard picker, or "best available") and holds them, then goes to
// checkout. Places of general-admission tiers are held by quantity, with each
// tier's "N left" kept live from the same feed (an event may have no seats at all).
// Pieces: seatmap_codec.js (status), seatmap_layout.js (venue),
// seatmap_draw.js (canvas), seatmap_live.js (snapshot + WebSocket).
//
// For tests and keyboard users: window.onsaleSeatmap = {status(seatId), liveStatus(seatId), version,
// select(seatId), selected(), drawn, seatCount, live, placesLeft(tierId)}.

import { api, flash, newKey, sentence } from "./api.js";
import { nextExpiry, placesLeft, statusOf } from "./seatmap_codec.js";
import { attachControls, SeatCanvas } from "./seatmap_draw.js";
import { layoutFrom, money, seatInfo, seatLabel, seatNear } from "./seatmap_layout.js";
import { SeatmapFeed } from "./seatmap_live.js";

const PAGE = JSON.parse(document.getElementById("seat-page-data").textContent);
const EVENT = PAGE.event;
const MAX_SEATS = EVENT.max_seats_per_hold;
const GA_TIERS = EVENT.ga_tiers || [];
const GA_CHOICE = `onsale.ga.${EVENT.event_id}`;  // quantities picked on the event page
const TIER_COLOURS = ["#1f6feb", "#d97706", "#059669", "#9333ea", "#db2777",
                      "#0891b2", "#65a30d", "#b45309", "#4f46e5", "#be123c"];
// Taken seats in greys, darker the more final: held, in payment, sold.
const TAKEN = { held: "#c4c9d0", pending: "#9ca3af", sold: "#5f6672" };
const NOT_FOR_SALE = "#ebebeb";
const TAKEN_FOR_MS = 10000;   // how long a seat the hold API called taken shows taken without news
const $ = id => document.getElementById(id);

let layout = null, view = null, feed = null, state = null;
const selection = new Set();          // seat ids, in the order picked
const takenNow = new Map();           // seat id -> until (ms): the hold API just said it is taken
const tierColour = new Map(EVENT.price_tiers.map((t, i) => [t.tier_id, TIER_COLOURS[i % TIER_COLOURS.length]]));
let drawnAt = 0;                      // Unix seconds of the last draw (expiries after it redraw)
let lastAttempt = null;               // {body, key, unknown}: retry an unknown outcome with the same key
let holding = false;                  // a hold request is out (or won): our own seats turn "held"

const nowSeconds = () => Date.now() / 1000;

function status(seatId) {
  const shown = statusOf(state, seatId, nowSeconds());
  if (shown === "available" && (takenNow.get(seatId) || 0) > Date.now()) return "held";
  return shown;
}

function colourOf(seatId) {
  const shown = status(seatId);
  if (shown === "available") return tierColour.get(layout.tierOf[layout.indexOf[seatId]]) || TIER_COLOURS[0];
  return shown === "blocked" ? NOT_FOR_SALE : (TAKEN[shown] || TAKEN.sold);
}

function redraw() {
  drawnAt = nowSeconds();
  if (view) view.request();
}

// ---- selection -------------------------------------------------------------

function describe(seatId) {
  const info = layout && seatInfo(layout, seatId);
  return info ? seatLabel(info) : `Seat ${seatId}`;
}

// Add a seat; returns whether it was added (and says why not).
function select(id) {
  const seatId = Number(id);
  if (!layout || !seatInfo(layout, seatId)) { flash("There is no such seat on this map."); return false; }
  if (selection.has(seatId)) return true;
  if (status(seatId) !== "available") { flash(`${describe(seatId)} is not available.`); return false; }
  if (selection.size >= MAX_SEATS) {
    flash(`You can hold up to ${MAX_SEATS} seats at a time. Remove one to add another.`);
    return false;
  }
  selection.add(seatId);
  flash("");
  selectionChanged();
  return true;
}

function unselect(seatId) {
  if (selection.delete(seatId)) selectionChanged();
}

function selectionChanged() {
  const list = $("selection");
  list.replaceChildren();
  let total = 0;
  for (const seatId of selection) {
    const info = seatInfo(layout, seatId);
    total += info.priceMinor;
    const item = document.createElement("li");
    item.dataset.seatId = seatId;
    item.append(`${seatLabel(info)} · ${info.tier} · ${money(info.priceMinor, EVENT.currency)} `);
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "link";
    remove.textContent = "Remove";
    remove.setAttribute("aria-label", `Remove ${seatLabel(info)}`);
    remove.addEventListener("click", () => unselect(seatId));
    item.append(remove);
    list.append(item);
  }
  $("selection-total").textContent = money(total, EVENT.currency);
  $("selection-count").textContent = selection.size
    ? `(${selection.size} of up to ${MAX_SEATS} seats)` : `(no seats yet, up to ${MAX_SEATS})`;
  $("hold-button").disabled = selection.size === 0;
  redraw();
}

// Seats that stopped being available leave the selection, with a word why.
function dropTakenSeats() {
  if (holding) return;
  const gone = [...selection].filter(id => status(id) !== "available");
  if (!gone.length) return;
  gone.forEach(id => selection.delete(id));
  selectionChanged();
  flash(`Someone else just took ${gone.map(describe).join("; ")}. We removed it from your seats.`, "info");
}

// ---- the keyboard picker: section -> row -> seat ----------------------------

function option(value, text, disabled = false) {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = text;
  o.disabled = disabled;
  return o;
}

function fillSections() {
  const sections = $("pick-section");
  sections.replaceChildren(...[...layout.sections.keys()].map(s => option(s, `Section ${s}`)));
  sections.disabled = false;
  fillRows();
}

function fillRows() {
  const rows = layout.sections.get($("pick-section").value) || new Map();
  const keep = $("pick-row").value;
  $("pick-row").replaceChildren(...[...rows.entries()].map(([row, seats]) => {
    const free = seats.filter(id => status(id) === "available").length;
    return option(row, `Row ${row} (${free} free)`);
  }));
  if (rows.has(keep)) $("pick-row").value = keep;
  $("pick-row").disabled = rows.size === 0;
  fillSeats();
}

function fillSeats() {
  const rows = layout.sections.get($("pick-section").value) || new Map();
  const seats = rows.get($("pick-row").value) || [];
  const keep = $("pick-seat").value;
  $("pick-seat").replaceChildren(...seats.map(id => {
    const info = seatInfo(layout, id);
    const free = status(id) === "available";
    return option(id, `Seat ${info.number} · ${info.tier} · ${money(info.priceMinor, EVENT.currency)}${free ? "" : " · taken"}`, !free);
  }));
  if (seats.includes(Number(keep)) && status(Number(keep)) === "available") $("pick-seat").value = keep;
  else {
    const first = seats.find(id => status(id) === "available");
    if (first !== undefined) $("pick-seat").value = String(first);
  }
  $("pick-seat").disabled = seats.length === 0;
  $("pick-add").disabled = seats.length === 0;
}

// ---- holds -----------------------------------------------------------------

async function requestHold(body, describeEmpty) {
  const text = JSON.stringify(body);
  const key = lastAttempt && lastAttempt.unknown && lastAttempt.body === text ? lastAttempt.key : newKey();
  const attempt = { body: text, key, unknown: false };
  lastAttempt = attempt;
  setBusy(true);
  holding = true;
  try {
    const hold = await api(`/api/events/${EVENT.event_id}/holds`,
                           { method: "POST", body, headers: { "Idempotency-Key": key } });
    flash("Seats held. Taking you to checkout…", "ok");
    location.assign(`/checkout/${hold.hold_id}`);
  } catch (error) {
    holding = false;
    setBusy(false);
    attempt.unknown = error.status === 0 || error.status === 503;   // same key next time
    holdFailed(error, describeEmpty);
  }
}

function holdFailed(error, describeEmpty) {
  if (error.status === 401 || error.status === 403) { showGate(error); return; }
  if (error.code === "sold_out" || error.code === "insufficient_quantity") {
    const n = error.problem.available;
    flash(n ? `${error.sentence} ${n} left.` : error.sentence);
    if (feed) feed.resync();
    return;
  }
  if (error.code === "seats_unavailable") {
    const ids = error.problem.unavailable_seat_ids || [];
    if (!ids.length) { flash(describeEmpty()); return; }
    const until = Date.now() + TAKEN_FOR_MS;
    ids.forEach(id => { takenNow.set(id, until); selection.delete(id); });
    selectionChanged();
    fillRows();
    flash(`${error.sentence} Taken: ${ids.map(describe).join("; ")}. ` +
          "The map is refreshed; please pick other seats.");
    if (feed) feed.resync();
    return;
  }
  flash(error.sentence);
}

function setBusy(busy) {
  if ($("hold-button")) $("hold-button").disabled = busy || selection.size === 0;
  if ($("best-button")) $("best-button").disabled = busy;
  for (const tier of GA_TIERS) $(`ga-hold-${tier.tier_id}`).disabled = busy || left(tier.tier_id) === 0;
}

// ---- general admission: places by quantity ----------------------------------

// Places left in a tier: the live feed's sum over its stripes, else the page's figure.
function left(tierId) {
  const live = placesLeft(state);
  if (live.has(tierId)) return live.get(tierId);
  const tier = GA_TIERS.find(t => t.tier_id === tierId);
  return tier ? tier.available : 0;
}

function showPlaces() {
  for (const tier of GA_TIERS) {
    const n = left(tier.tier_id);
    $(`ga-left-${tier.tier_id}`).textContent = n.toLocaleString("en");
    if (!holding) $(`ga-hold-${tier.tier_id}`).disabled = n === 0;
  }
}

function holdPlaces(event, tier) {
  event.preventDefault();
  const quantity = Number($(`ga-quantity-${tier.tier_id}`).value);
  requestHold({ ga: { tier_id: tier.tier_id, quantity } }, () => sentence("insufficient_quantity"));
}

function gaControls() {
  let picked = {};
  try { picked = JSON.parse(sessionStorage.getItem(GA_CHOICE) || "{}"); } catch { picked = {}; }
  for (const tier of GA_TIERS) {
    const choose = $(`ga-quantity-${tier.tier_id}`);
    if (picked[tier.tier_id]) choose.value = String(picked[tier.tier_id]);
    $(`ga-form-${tier.tier_id}`).addEventListener("submit", event => holdPlaces(event, tier));
  }
  showPlaces();
}

function holdSelection() {
  if (!selection.size) return;
  requestHold({ seat_ids: [...selection] }, () => sentence("seats_unavailable"));
}

function holdBest(event) {
  event.preventDefault();
  const quantity = Number($("best-quantity").value);
  const together = $("best-together").checked;
  requestHold({ best_available: { quantity, together } }, () =>
    `No ${quantity} seat${quantity > 1 ? "s" : ""}${together && quantity > 1 ? " side by side" : ""} ` +
    `are free right now. Try fewer seats${together ? " or turn off 'Seats together'" : ""}.`);
}

// ---- live updates and refusals ---------------------------------------------

function onState(newState, changed) {
  state = newState;
  if (changed) changed.forEach(id => takenNow.delete(id));
  else takenNow.clear();
  showPlaces();
  if (!layout) return;
  dropTakenSeats();
  fillRows();
  redraw();
}

function onLive(mode, pollSeconds) {
  const box = $("live-status");
  box.dataset.mode = mode;
  box.textContent = mode === "live" ? "Live updates on"
    : mode === "paused" ? `Live updates paused: the map refreshes every ${pollSeconds} s.`
    : "Connecting to live updates…";
}

function showGate(error) {
  $("seat-gate-text").textContent = error.sentence;
  const link = $("seat-gate-link");
  if (error.status === 401) {
    link.href = `/signin?next=${encodeURIComponent(location.pathname)}`;
    link.textContent = "Sign in";
  } else {
    link.href = PAGE.queue_url;
    link.textContent = "Go to the waiting room";
  }
  $("seat-gate").hidden = false;
  flash("");
}

// ---- start -----------------------------------------------------------------

function legend() {
  const items = EVENT.price_tiers.map(t =>
    [tierColour.get(t.tier_id), `${t.name} · ${money(t.price_minor, EVENT.currency)}`]);
  items.push([TAKEN.held, "Held by someone"], [TAKEN.pending, "Being paid for"],
             [TAKEN.sold, "Sold"], [NOT_FOR_SALE, "Not for sale"], ["#111", "Your seats"]);
  $("seat-legend").replaceChildren(...items.map(([colour, text]) => {
    const li = document.createElement("li");
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = colour;
    li.append(swatch, text);
    return li;
  }));
}

async function start() {
  feed = new SeatmapFeed(EVENT.event_id, { onState, onLive, onRefused: showGate });
  gaControls();
  if (!EVENT.seat_count) {  // general admission only: no map to draw
    try {
      await feed.loadSnapshot();
    } catch (error) {
      if (error.status === 401 || error.status === 403) { $("seat-layout").hidden = true; showGate(error); }
      else flash(error.sentence);
      return;
    }
    feed.connect();
    return;
  }
  legend();
  let venue;
  try {
    // The layout's immutable, content-addressed URL (links.venue): cached by the
    // browser and any CDN for good, so a reload asks nothing of core.
    const venueUrl = (EVENT.links && EVENT.links.venue) || `/api/events/${EVENT.event_id}/venue`;
    [venue] = await Promise.all([api(venueUrl), feed.loadSnapshot()]);
  } catch (error) {
    if (error.status === 401 || error.status === 403) {
      $("seat-layout").hidden = true;
      showGate(error);
    } else {
      flash(error.sentence);
      $("live-status").textContent = "The seat map could not be loaded.";
    }
    return;
  }
  layout = layoutFrom(venue);
  const canvas = $("seat-canvas");
  view = new SeatCanvas(canvas, layout, { colourOf, selectedIds: () => selection });
  attachControls(view, canvas, (wx, wy, radius) => {
    const seatId = seatNear(layout, wx, wy, radius);
    if (seatId === null) return;
    if (selection.has(seatId)) unselect(seatId);
    else select(seatId);
  });
  $("zoom-in").addEventListener("click", () => view.zoomAt(1.5));
  $("zoom-out").addEventListener("click", () => view.zoomAt(1 / 1.5));
  $("zoom-reset").addEventListener("click", () => view.fit());
  window.addEventListener("resize", () => { view.resize(); view.fit(); });
  $("pick-section").addEventListener("change", fillRows);
  $("pick-row").addEventListener("change", fillSeats);
  $("picker").addEventListener("submit", event => {
    event.preventDefault();
    const seatId = Number($("pick-seat").value);
    if (seatId && select(seatId)) view.centreOn(seatId);
  });
  $("hold-button").addEventListener("click", holdSelection);
  $("best").addEventListener("submit", holdBest);
  $("best-button").disabled = false;
  fillSections();
  selectionChanged();
  // A held seat shows available from its expiry second on: draw again when one passes.
  setInterval(() => {
    const next = nextExpiry(state, drawnAt);
    if (next !== null && next <= nowSeconds()) { redraw(); fillRows(); }
    for (const [id, until] of takenNow) if (until <= Date.now()) { takenNow.delete(id); redraw(); }
  }, 250);
  feed.connect();
}

window.onsaleSeatmap = {
  status,
  // What the live map says, without the page's own "the hold API just called it taken" mark.
  liveStatus: seatId => statusOf(state, seatId, nowSeconds()),
  colour: seatId => colourOf(seatId),  // the fill the canvas uses for it
  get version() { return state ? state.version : null; },
  select,
  unselect,
  selected: () => [...selection],
  get drawn() { return view ? view.drawn : 0; },
  get seatCount() { return layout ? layout.n : 0; },
  get live() { return feed ? feed.mode : "connecting"; },
  placesLeft: tierId => left(Number(tierId)),
};

start();
