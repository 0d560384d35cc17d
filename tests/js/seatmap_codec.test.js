// The seat map's codec (web/static/js/seatmap_codec.js) and the WebSocket message
// decoder (seatmap_live.js) against frames the Python side produces: the literals
// below are what seatmap/snapshot.py's encode()/encode_gzip() and
// seatmap/sequencer.py's delta_frame() give for the same seat map, and
// tests/unit/test_browser_vectors.py asserts it (so both sides agree on the format).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  applyDelta, countStatuses, decodeHeld, fromSnapshot, nextExpiry, placesLeft, statusOf,
} from "../../web/static/js/seatmap_codec.js";
import { decodeMessage } from "../../web/static/js/seatmap_live.js";

// Event 7 at version 0/1A2B3C, 8 seats: 1 available, 2 held until 1795956240, 3 sold,
// 4 in payment, 5 held until 1795956228, 6 available, 7 a gap in the ids (blocked),
// 8 available; GA tier 9 has 120 + 30 places in two stripes, tier 10 none.
const SNAPSHOT_JSON =
  '{"type":"snapshot","event_id":7,"version":"0/1A2B3C","seat_count":8,"status":"01321040","held":[2,1795956240,3,-12],"ga":[[9,0,120],[9,1,30],[10,0,0]]}';
// The same document as the hub sends it in a binary frame (gzip, mtime 0).
const SNAPSHOT_GZIP_HEX =
  "1f8b0800000000000003158cc10ac2301044ff65cf2bee6e5a6b7a533fa3841234d88224c56c0b22febbdbdb9b99c77c413f4b821e6a8e4b9d8a0242da52d6717e40df216ce95de792cda0235fe4ea6e66d41475bc97352bf4678b1a75adbbc24e981a32654a2f3b1804b9f3ad6f4fd2103a3cb0048467b465f048c842018d18dd0e4cd65108bf3f3b3e35f397000000";
// Then: seat 1 held until 1795956300, seat 2 released, seat 5 sold, one place of
// tier 9's second stripe taken.
const DELTA_JSON =
  '{"type":"delta","event_id":7,"from":"0/1A2B3C","to":"0/1A2C00","changes":[[1,1,1795956300],[2,0],[5,3]],"ga":[[9,1,29]]}';

const BEFORE = 1795956000;   // every hold still running

const snapshot = () => fromSnapshot(JSON.parse(SNAPSHOT_JSON));
const statuses = (state, now) => Array.from({ length: 10 }, (_, id) => statusOf(state, id, now));

test("a snapshot decodes to one status code per seat, the holds' expiries and the GA places", () => {
  const state = snapshot();
  assert.equal(state.eventId, 7);
  assert.equal(state.version, "0/1A2B3C");
  assert.equal(state.seatCount, 8);
  assert.deepEqual([...state.codes], [4, 0, 1, 3, 2, 1, 0, 4, 0]);   // index 0 unused: blocked
  assert.deepEqual([...state.expiry], [[2, 1795956240], [5, 1795956228]]);
  assert.deepEqual([...state.places], [["9:0", 120], ["9:1", 30], ["10:0", 0]]);
  assert.deepEqual([...placesLeft(state)], [[9, 150], [10, 0]]);
});

test("what each seat shows: a hold shows available from its expiry second on", () => {
  const state = snapshot();
  assert.deepEqual(statuses(state, BEFORE), ["blocked", "available", "held", "sold", "pending",
    "held", "available", "blocked", "available", "blocked"]);
  assert.equal(statusOf(state, 5, 1795956227), "held");
  assert.equal(statusOf(state, 5, 1795956228), "available");
  assert.equal(statusOf(state, 2, 1795956228), "held");
  assert.equal(statusOf(state, 2, 1795956240), "available");
  assert.equal(statusOf(state, 4, 1900000000), "pending");   // payment: never lapses on the map
  assert.equal(statusOf(state, 1.5, BEFORE), "blocked");
  assert.equal(statusOf(null, 1, BEFORE), "blocked");
});

test("the next expiry is the first one strictly after now", () => {
  const state = snapshot();
  assert.equal(nextExpiry(state, BEFORE), 1795956228);
  assert.equal(nextExpiry(state, 1795956228), 1795956240);
  assert.equal(nextExpiry(state, 1795956240), null);
  assert.equal(nextExpiry(null, BEFORE), null);
});

test("statuses are counted at a given second", () => {
  const state = snapshot();
  assert.deepEqual(countStatuses(state, BEFORE),
                   { available: 3, held: 2, pending: 1, sold: 1, blocked: 1 });
  assert.deepEqual(countStatuses(state, 1795956230),
                   { available: 4, held: 1, pending: 1, sold: 1, blocked: 1 });
  assert.deepEqual(countStatuses(null, BEFORE),
                   { available: 0, held: 0, pending: 0, sold: 0, blocked: 0 });
});

test("held pairs are differences from the previous pair, the first absolute", () => {
  assert.deepEqual([...decodeHeld([2, 1795956240, 3, -12])], [[2, 1795956240], [5, 1795956228]]);
  assert.deepEqual([...decodeHeld([])], []);
  assert.deepEqual([...decodeHeld([4])], []);   // half a pair is ignored
});

test("a delta from our version applies: codes, expiries, places and the version", () => {
  const state = snapshot();
  const { applied, changed } = applyDelta(state, JSON.parse(DELTA_JSON));
  assert.equal(applied, true);
  assert.deepEqual(changed, [1, 2, 5]);
  assert.equal(state.version, "0/1A2C00");
  assert.deepEqual(statuses(state, BEFORE), ["blocked", "held", "available", "sold", "pending",
    "sold", "available", "blocked", "available", "blocked"]);
  assert.deepEqual([...state.expiry], [[1, 1795956300]]);   // released and sold seats: none
  assert.deepEqual([...placesLeft(state)], [[9, 149], [10, 0]]);
});

test("a delta from another version is never applied: the page must fetch a snapshot", () => {
  const state = snapshot();
  applyDelta(state, JSON.parse(DELTA_JSON));
  const again = applyDelta(state, JSON.parse(DELTA_JSON));   // from 0/1A2B3C, we are at 0/1A2C00
  assert.deepEqual(again, { applied: false, changed: [] });
  assert.equal(state.version, "0/1A2C00");
  assert.deepEqual(applyDelta(null, JSON.parse(DELTA_JSON)), { applied: false, changed: [] });
});

test("a delta's seat ids outside the map are skipped", () => {
  const state = snapshot();
  const delta = { type: "delta", event_id: 7, from: "0/1A2B3C", to: "0/1A2B40",
                  changes: [[0, 3], [9, 3], [6, 3]] };
  assert.deepEqual(applyDelta(state, delta), { applied: true, changed: [6] });
  assert.equal(statusOf(state, 6, BEFORE), "sold");
});

test("a snapshot's unknown status characters read as blocked; anything else is refused", () => {
  const state = fromSnapshot({ type: "snapshot", event_id: 1, version: "0/1", seat_count: 4,
                               status: "0x9" });   // one short: the missing seat is blocked too
  assert.deepEqual([...state.codes], [4, 0, 4, 4, 4]);
  assert.deepEqual([...state.expiry], []);
  assert.deepEqual([...placesLeft(state)], []);
  assert.throws(() => fromSnapshot(JSON.parse(DELTA_JSON)), /not a seat-map snapshot/);
  assert.throws(() => fromSnapshot(null), /not a seat-map snapshot/);
});

test("a text frame is JSON; a binary frame is gzip-compressed JSON", async () => {
  assert.deepEqual(await decodeMessage(DELTA_JSON), JSON.parse(DELTA_JSON));
  const frame = new Blob([Buffer.from(SNAPSHOT_GZIP_HEX, "hex")]);
  const message = await decodeMessage(frame);
  assert.deepEqual(message, JSON.parse(SNAPSHOT_JSON));
  assert.deepEqual(fromSnapshot(message).codes, snapshot().codes);
});

test("a binary frame that is not gzip is refused (the feed closes the socket)", async () => {
  await assert.rejects(decodeMessage(new Blob([Buffer.from(SNAPSHOT_JSON)])));
});
