// Event times in the venue's zone and the shopper's (web/static/js/local_time.js), and
// countdowns across a daylight-saving change (web/static/js/countdown.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { countdown, formatDuration, setServerNow } from "../../web/static/js/countdown.js";
import { inZone, offsetOf, yourTime } from "../../web/static/js/local_time.js";

test("an instant in a zone, on both sides of a daylight-saving change", () => {
  // Berlin springs forward at 01:00 UTC on 29 March 2026
  assert.equal(inZone("2026-03-29T00:30:00Z", "Europe/Berlin"), "Sun 29 Mar 2026, 01:30 CET");
  assert.equal(inZone("2026-03-29T01:30:00Z", "Europe/Berlin"), "Sun 29 Mar 2026, 03:30 CEST");
  // New York falls back at 06:00 UTC on 1 November 2026
  assert.equal(inZone("2026-11-01T05:30:00Z", "America/New_York", true), "01:30 EDT");
  assert.equal(inZone("2026-11-01T06:30:00Z", "America/New_York", true), "01:30 EST");
  assert.equal(offsetOf("2026-03-29T00:30:00Z", "Europe/Berlin"), 60);
  assert.equal(offsetOf("2026-03-29T01:30:00Z", "Europe/Berlin"), 120);
  assert.equal(offsetOf("2026-11-01T06:30:00Z", "America/New_York"), -300);
});

test("the shopper's own time is added only when it differs", () => {
  const iso = "2026-12-04T18:30:00Z";
  assert.equal(yourTime(iso, "Europe/London", "UTC"), "");  // GMT is UTC in winter
  assert.equal(yourTime("2026-07-04T18:30:00Z", "Europe/London", "UTC"), " (18:30 UTC your time)");
  assert.equal(yourTime(iso, "Europe/Berlin", "America/New_York"), " (13:30 EST your time)");
  assert.equal(yourTime(iso, "Europe/Berlin", "Pacific/Auckland"),
               " (Sat 5 Dec 2026, 07:30 GMT+13 your time)");
  assert.equal(yourTime(iso, "Europe/Berlin", "Europe/Paris"), "");
});

test("a countdown to an opening just after a daylight-saving change counts real time", () => {
  // The sale opens at 03:30 CEST on 29 March 2026 (01:30 UTC); "now" is 00:30 CET
  // (00:30 UTC), on the other side of the change: one hour left, not two.
  const opening = Date.parse("2026-03-29T01:30:00Z");
  setServerNow(Date.parse("2026-03-29T00:30:00Z"));
  const shown = { textContent: "" };
  const stop = countdown(shown, opening);
  stop();
  assert.equal(shown.textContent, formatDuration(3600));
  assert.equal(shown.textContent, "1 h 00 min 00 s");
  // Falling back in New York: 01:30 EDT to 01:30 EST is an hour, though the clock reads the same
  setServerNow(Date.parse("2026-11-01T05:30:00Z"));
  const again = { textContent: "" };
  countdown(again, Date.parse("2026-11-01T06:30:00Z"))();
  assert.equal(again.textContent, "1 h 00 min 00 s");
});

test("a wall-clock time at the venue becomes its UTC instant, across the change", async () => {
  const { venueToUtc } = await import("../../web/static/js/ops.js");
  assert.equal(venueToUtc("2030-03-31T01:30", "Europe/Berlin"), "2030-03-31T00:30:00.000Z");
  assert.equal(venueToUtc("2030-03-31T03:30", "Europe/Berlin"), "2030-03-31T01:30:00.000Z");
  assert.equal(venueToUtc("2030-07-01T19:30", "America/New_York"), "2030-07-01T23:30:00.000Z");
  assert.equal(venueToUtc("2030-12-01T19:30", "America/New_York"), "2030-12-02T00:30:00.000Z");
  assert.equal(venueToUtc("2030-12-01T19:30", "UTC"), "2030-12-01T19:30:00.000Z");
  assert.throws(() => venueToUtc("2030-12-01T19:30", "Europe/Atlantis"), RangeError);
});

test("a wall time the clocks skip or show twice reads the same way east and west of UTC", async () => {
  const { venueToUtc } = await import("../../web/static/js/ops.js");
  // Skipped (springing forward): the offset before the change, so an hour later on the
  // clock. Berlin 02:00 CET -> 03:00 CEST at 01:00 UTC; New York 02:00 EST -> 03:00 EDT
  // at 07:00 UTC.
  assert.equal(venueToUtc("2030-03-31T02:30", "Europe/Berlin"), "2030-03-31T01:30:00.000Z");
  assert.equal(venueToUtc("2030-03-10T02:30", "America/New_York"), "2030-03-10T07:30:00.000Z");
  // Shown twice (falling back): the first. Berlin 03:00 CEST -> 02:00 CET at 01:00 UTC;
  // New York 02:00 EDT -> 01:00 EST at 06:00 UTC.
  assert.equal(venueToUtc("2030-10-27T02:30", "Europe/Berlin"), "2030-10-27T00:30:00.000Z");
  assert.equal(venueToUtc("2030-11-03T01:30", "America/New_York"), "2030-11-03T05:30:00.000Z");
  // Just either side of the changes: one offset, one instant.
  assert.equal(venueToUtc("2030-10-27T03:00", "Europe/Berlin"), "2030-10-27T02:00:00.000Z");
  assert.equal(venueToUtc("2030-11-03T02:00", "America/New_York"), "2030-11-03T07:00:00.000Z");
  assert.equal(venueToUtc("2030-03-31T01:59", "Europe/Berlin"), "2030-03-31T00:59:00.000Z");
  assert.equal(venueToUtc("2030-03-31T03:00", "Europe/Berlin"), "2030-03-31T01:00:00.000Z");
  // A half-hour change (Lord Howe: 02:00 +11 -> 01:30 +10:30), and the far side of the
  // date line. Every answer here is what Python's zoneinfo gives with fold=0.
  assert.equal(venueToUtc("2030-04-07T01:45", "Australia/Lord_Howe"), "2030-04-06T14:45:00.000Z");
  assert.equal(venueToUtc("2030-04-07T02:30", "Australia/Lord_Howe"), "2030-04-06T16:00:00.000Z");
  assert.equal(venueToUtc("2030-12-01T19:30", "Pacific/Auckland"), "2030-12-01T06:30:00.000Z");
});
