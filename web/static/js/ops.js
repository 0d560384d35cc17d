// The operator console's sign-in and API calls. The operator pastes the admin
// token once; it stays in this tab's sessionStorage (gone when the tab closes)
// and goes with every /api/ops call as "Authorization: Bearer ...".

import { api, ApiError, flash, newKey } from "./api.js";
import { offsetOf } from "./local_time.js";

const KEY = "onsale.ops.token";
const WRONG_TOKEN = "That operator token was not accepted. Paste the ONSALE_ADMIN_TOKEN of " +
                    "this onsale and try again.";

export function token() {
  return sessionStorage.getItem(KEY) || "";
}

export function signOut() {
  sessionStorage.removeItem(KEY);
}

// Where to go after signing in: only console pages.
export function safeNext(value) {
  return value && value.startsWith("/ops") && !value.startsWith("//") ? value : "/ops/";
}

function toSignin(expired) {
  const next = encodeURIComponent(location.pathname + location.search);
  location.assign(`/ops/signin?next=${next}${expired ? "&expired=1" : ""}`);
}

// Redirects to the sign-in page when this tab has no token; returns whether it has one.
export function requireToken() {
  if (token()) return true;
  toSignin(false);
  return false;
}

// An /api/ops call with the token; a refused token sends the operator back to sign in.
export async function opsApi(path, options = {}) {
  const headers = { ...(options.headers || {}), Authorization: `Bearer ${token()}` };
  if (options.method && options.method !== "GET") headers["Idempotency-Key"] = newKey();
  try {
    return await api(path, { ...options, headers });
  } catch (error) {
    if (error instanceof ApiError && error.code === "admin_required") {
      signOut();
      toSignin(true);
    }
    throw error;
  }
}

// The sentence for an operator: the human sentence plus the server's detail.
export function explain(error) {
  const detail = error && error.problem && error.problem.detail;
  const base = (error && error.sentence) || String(error);
  return detail && !/Error$/.test(detail) ? `${base} ${detail}` : base;
}

export function initNav() {
  const out = document.getElementById("ops-signout");
  if (out) {
    out.addEventListener("click", () => { signOut(); location.assign("/ops/signin"); });
  }
}

export function initSignin() {
  const form = document.getElementById("ops-signin");
  const input = document.getElementById("admin-token");
  const params = new URLSearchParams(location.search);
  if (params.get("expired")) flash("Your operator session ended. Paste the token again.", "info");
  form.addEventListener("submit", async event => {
    event.preventDefault();
    const value = input.value.trim();
    if (!value) {
      input.setAttribute("aria-invalid", "true");
      flash("Paste the operator token first.");
      return;
    }
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      // Any operator route checks the token; the audit answers from its cache.
      await api("/api/ops/audit", { headers: { Authorization: `Bearer ${value}` } });
      sessionStorage.setItem(KEY, value);
      flash("");
      location.assign(safeNext(params.get("next")));
    } catch (error) {
      input.setAttribute("aria-invalid", "true");
      flash(error instanceof ApiError && error.code === "admin_required" ? WRONG_TOKEN
            : explain(error));
    } finally {
      button.disabled = false;
    }
  });
}

/**
 * The UTC instant of a wall-clock time at the venue ("2030-03-31T03:30" in
 * Europe/Berlin is 01:30 UTC). Near a daylight-saving change the zone has two offsets,
 * the one before and the one after; a wall time that one of them makes true is that
 * instant. A time the clocks skip (02:30 as Berlin springs forward) is read with the
 * offset before the change, so it moves forward by the gap (03:30 CEST); a time they
 * show twice (02:30 as Berlin falls back) is the first of the two. The same in every
 * zone, east or west of UTC: what Python's zoneinfo does with fold=0, and Temporal's
 * "compatible".
 * @param {string} wall a datetime-local value, YYYY-MM-DDTHH:MM
 * @param {string} zone an IANA zone
 * @returns {string} ISO 8601 in UTC
 */
export function venueToUtc(wall, zone) {
  const guess = Date.parse(`${wall}:00Z`);
  if (!Number.isFinite(guess)) throw new RangeError(`not a time: ${wall}`);
  const DAY = 86_400_000;
  const offsetAt = (/** @type {number} */ ms) => offsetOf(new Date(ms).toISOString(), zone);
  const before = offsetAt(guess - DAY); // no zone changes its offset twice in two days
  const after = offsetAt(guess + DAY);
  const instants = [...new Set([before, after])]
    .map(offset => guess - offset * 60000)
    .filter(at => guess - offsetAt(at) * 60000 === at) // the wall time it makes true
    .sort((a, b) => a - b);
  const at = instants.length ? instants[0] : guess - before * 60000; // skipped: forward
  return new Date(at).toISOString();
}

export function initIndex() {
  initNav();
  if (!requireToken()) return;
  const form = document.getElementById("new-event-form");
  if (!form) return;
  const $ = (/** @type {string} */ id) => /** @type {HTMLInputElement} */ (document.getElementById(id));
  const zones = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
  $("time-zones").replaceChildren(...["UTC", ...zones].map(zone => {
    const option = document.createElement("option");
    option.value = zone;
    return option;
  }));
  form.addEventListener("submit", async event => {
    event.preventDefault();
    const zone = $("new-zone").value.trim() || "UTC";
    /** @type {Record<string, unknown>} */
    const body = { name: $("new-name").value, seats: Number($("new-seats").value),
                   venue_name: $("new-venue").value, time_zone: zone,
                   queue_policy: $("new-policy").value };
    if ($("new-onsale").value) {
      try {
        body.onsale_at = venueToUtc($("new-onsale").value, zone);
      } catch {
        flash(`${zone} is not a time zone this browser knows: check its spelling.`);
        return;
      }
    }
    const button = $("new-event-save");
    button.disabled = true;
    try {
      const made = await opsApi("/api/ops/events", { method: "POST", body });
      location.assign(`/ops/events/${made.event_id}`);
    } catch (error) {
      flash(explain(error));
      button.disabled = false;
    }
  });
}
