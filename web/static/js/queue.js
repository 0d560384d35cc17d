// The waiting room (web/templates/shop/queue.html; the API is in docs/edge.md).
//
// On load the page polls the queue if this browser already has a ticket (a
// reload, a second tab) and joins otherwise; joining is idempotent per
// account, so neither loses the place. Then it polls again after the
// server's `poll_after_seconds`. `#waiting-room[data-state]` is always the
// API's current state (queued states: prequeue, waiting, paused; then
// admitted, elsewhere or expired), or what the page is doing before it has
// one (joining, solving, queue_not_open, closed, error). Admitted: the API has
// set the onsale_admission_{event} cookie and the page goes to the seats.
import { api, flash } from "./api.js";
import { countdown, roughly, serverNow, setServerNow } from "./countdown.js";
import { checkBeacon } from "./draw_check.js";
import { sha256Hex, solve } from "./pow.js";

// noble-curves' BLS12-381 (57 kB), loaded only to check a published beacon round.
const loadBls = async () => (await import("/static/vendor/noble_bls/bls12-381.js")).bls12_381;

const room = document.getElementById("waiting-room");
const $ = (id) => document.getElementById(id);
const eventId = room.dataset.eventId;
const queueUrl = `/api/events/${eventId}/queue`;
const firstKey = `onsale.queue.${eventId}.first`; // position when first seen, for the bar

let pollTimer = null;
let stopCountdown = null;
let retryDelay = 2;
let seedShown = Boolean($("wr-draw-seed")?.textContent.trim());

setServerNow(Number(room.dataset.serverNow));

// ---- showing -----------------------------------------------------------------

// Only a change is written: each region below is polite and live, and a screen
// reader would read the same words again after every poll otherwise.
function say(id, text) {
  const element = $(id);
  if (element.textContent !== text) element.textContent = text;
}

function setState(state, text) {
  room.dataset.state = state;
  say("wr-status", text);
}

function showCountdown(label, iso, onDone) {
  if (stopCountdown) stopCountdown();
  stopCountdown = null;
  const target = Date.parse(iso);
  const box = $("wr-countdown");
  if (!iso || Number.isNaN(target) || target <= serverNow()) { box.hidden = true; return; }
  $("wr-countdown-label").textContent = label;
  box.hidden = false;
  stopCountdown = countdown($("wr-countdown-value"), target, () => {
    box.hidden = true;
    if (onDone) onDone();
  });
}

function hideCountdown() {
  if (stopCountdown) stopCountdown();
  stopCountdown = null;
  $("wr-countdown").hidden = true;
}

function showPosition(position, eta) {
  if (position == null && room.dataset.policy !== "random") { hideFigures(); return; }
  $("wr-figures").hidden = false;
  say("wr-position", position == null ? "given by the draw" : String(position));
  say("wr-eta", roughly(eta));
  const bar = $("wr-progress");
  bar.hidden = false;
  if (position == null) { bar.removeAttribute("value"); return; }
  let first = Number(localStorage.getItem(firstKey) || 0);
  if (!first || position > first) {
    first = Math.max(position, 1);
    localStorage.setItem(firstKey, String(first));
  }
  bar.value = Math.round(((first - position) / first) * 100);
}

function hideFigures() {
  $("wr-figures").hidden = true;
  $("wr-progress").hidden = true;
}

function action(label, run) {
  const button = $("wr-action");
  if (!label) { button.hidden = true; button.onclick = null; return; }
  button.textContent = label;
  button.hidden = false;
  button.disabled = false;
  button.onclick = () => { button.disabled = true; run(); };
}

function schedule(seconds, why) {
  clearTimeout(pollTimer);
  const wait = Math.max(1, Number(seconds) || 5);
  $("wr-refresh").textContent = why || `This page checks your place every ${wait} seconds `
    + "by itself. You can leave it open; reloading does not lose your place.";
  pollTimer = setTimeout(poll, wait * 1000);
}

function stop(text) {
  clearTimeout(pollTimer);
  $("wr-refresh").textContent = text || "";
}

// ---- the answer of a join or a poll -------------------------------------------

function show(body) {
  flash("");
  retryDelay = 2;
  action(null);
  const state = body.state;
  if (state !== "prequeue") hideCountdown();
  if (state === "admitted") {
    localStorage.removeItem(firstKey);
    setState(state, "It's your turn! Taking you to the seats…");
    hideFigures();
    stop("");
    window.location.assign(room.dataset.seatsUrl);
    return;
  }
  if (state === "prequeue") {
    const opened = body.onsale_at != null && Date.parse(body.onsale_at) <= Date.now();
    setState(state, body.position != null
      ? "The sale has not opened yet. You are in line and keep your place."
      : opened
        ? "The sale has opened and the draw is under way (it waits for the public beacon's "
          + "round when there is one). You are in the draw: your place comes shortly."
        : "The sale has not opened yet. You are in the draw: your place in line is drawn when the sale opens.");
    showCountdown("The sale opens in", body.onsale_at, poll);
    showPosition(body.position, body.eta_seconds);
  } else if (state === "waiting") {
    setState(state, "You are in line. Please keep this page open.");
    showPosition(body.position, body.eta_seconds);
  } else if (state === "paused") {
    setState(state, "Admission is paused for the moment. You keep your place in line, "
      + "and this page carries on by itself when it resumes.");
    showPosition(body.position, body.eta_seconds);
  } else if (state === "elsewhere") {
    setState(state, "You are already shopping this sale in another browser or on another "
      + "device. Only one place can shop at a time for each account.");
    hideFigures();
    action("Shop here instead", () => join());
  } else if (state === "expired") {
    localStorage.removeItem(firstKey);
    setState(state, "Your place in line was released because this page was closed for too "
      + "long, or you did not start shopping in time. You can join again, at the back of the line.");
    hideFigures();
    action("Join again", () => join());
    stop("");
    return;
  } else {
    setState(state || "error", "The waiting room answered something this page does not know. "
      + "It will check again.");
  }
  if (room.dataset.policy === "random" && state !== "prequeue") revealSeed(body.place);
  schedule(body.poll_after_seconds);
}

// ---- errors --------------------------------------------------------------------

function signIn() {
  const here = window.location.pathname;
  window.location.assign(`/signin?next=${encodeURIComponent(here)}`);
}

function failed(error, retry) {
  switch (error.code) {
    case "authentication_required":
      signIn();
      return;
    case "not_in_queue":
      join();
      return;
    case "pow_required":
    case "pow_invalid":
    case "pow_replayed":
      work(error.problem);
      return;
    case "queue_not_open":
      setState("queue_not_open", error.sentence);
      hideFigures();
      showCountdown("The queue opens in", error.problem.prequeue_at, () => join());
      stop("You will join automatically when the queue opens.");
      return;
    case "queue_closed":
    case "event_not_found":
      setState("closed", error.sentence);
      hideFigures();
      hideCountdown();
      stop("");
      return;
    default: {
      // Busy, rate limited, network: say so and try again; the place is kept.
      flash(error.sentence, error.code === "rate_limited" ? "info" : "error");
      const wait = error.retryAfter || retryDelay;
      retryDelay = Math.min(retryDelay * 2, 30);
      clearTimeout(pollTimer);
      pollTimer = setTimeout(retry, wait * 1000);
      $("wr-refresh").textContent = `Trying again in ${wait} seconds.`;
    }
  }
}

// ---- talking to the queue -------------------------------------------------------

async function poll() {
  clearTimeout(pollTimer);
  try {
    show(await api(queueUrl));
  } catch (error) {
    failed(error, poll);
  }
}

let powTries = 0;

async function join(proof) {
  clearTimeout(pollTimer);
  if (room.dataset.state !== "solving") setState("joining", "Joining the queue…");
  try {
    const body = proof ? { pow: proof } : {};
    show(await api(queueUrl, { method: "POST", body }));
  } catch (error) {
    failed(error, () => join(proof));
  }
}

// Solve the challenge of a pow_required / pow_invalid / pow_replayed answer, then join
// again.
async function work(problem) {
  powTries += 1;
  if (powTries > 3 || !problem.challenge) {
    setState("error", "The browser check did not pass. Please reload the page to try again.");
    stop("");
    return;
  }
  setState("solving", "Your browser is doing a short check before joining the queue.");
  const box = $("wr-pow");
  const bar = $("wr-pow-progress");
  const status = $("wr-pow-status");
  box.hidden = false;
  status.hidden = false;
  status.textContent = "Browser check: starting…";
  const started = performance.now();
  try {
    const solution = await solve(problem.challenge, problem.difficulty, (tried, expected) => {
      // The average number of tries is known, not the exact one: approach 100 %.
      bar.value = Math.round(100 * (1 - Math.exp(-tried / expected)));
      status.textContent = `Browser check: ${tried.toLocaleString()} tries so far…`;
    });
    bar.value = 100;
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    status.textContent = `Browser check passed in ${seconds} s.`;
    box.hidden = true;
    await join({ challenge: problem.challenge, solution });
  } catch (error) {
    box.hidden = true;
    setState("error", error.sentence || error.message);
    stop("");
  }
}

// ---- the random draw -------------------------------------------------------------

async function revealSeed(place) {
  if (seedShown) return;
  try {
    const draw = await api(`${queueUrl}/draw?per_page=1`);  // the seed, not the whole list
    if (!draw || !draw.seed) return;
    seedShown = true;
    $("wr-draw-seed").textContent = draw.seed;
    $("wr-draw-seed-line").hidden = false;
    $("wr-draw-pending").hidden = true;
    const matches = (await sha256Hex(draw.seed)) === draw.commitment;
    $("wr-draw-check").textContent = matches
      ? `(matches the commitment${place ? `; your drawn place is ${place}` : ""})`
      : "(does NOT match the commitment published before the sale)";
    const line = $("wr-draw-beacon-check");
    if (line && draw.beacon) {
      line.textContent = "Checking the beacon round against the chain's public key…";
      const checked = await checkBeacon(loadBls, draw.beacon);
      line.textContent = checked.ok ? `Checked: ${checked.text}.`
        : `The beacon round does NOT check out: ${checked.text}.`;
      line.dataset.ok = String(checked.ok);
    }
  } catch {
    // The draw is informative; the queue goes on without it.
  }
}

if (seedShown) {
  seedShown = false; // shown by the server: check it against the commitment too
  revealSeed(null);
}
if (room.dataset.joined === "true") poll(); else join();
