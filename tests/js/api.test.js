// The pages' API client (web/static/js/api.js) against a stand-in fetch and page:
// requests as the server wants them, problems turned into sentences.
import assert from "node:assert/strict";
import { webcrypto } from "node:crypto";
import { beforeEach, test } from "node:test";

globalThis.crypto ??= webcrypto;   // a global from Node 19 on (and in every browser)

// The page: base.html's sentences, and the #flash box.
const box = { textContent: "", className: "", hidden: true };
const page = {
  "onsale-messages": { textContent: JSON.stringify({
    sentences: { seats_unavailable: "Someone else just took one of those seats.",
                 rate_limited: "Too many tries: wait a moment." },
    fallback: "Something went wrong on our side." }) },
  flash: box,
};
globalThis.document = { getElementById: id => page[id] ?? null };

const { ApiError, api, flash, newKey, sentence } = await import("../../web/static/js/api.js");

let requests = [];
let answer = () => new Response(null, { status: 204 });
globalThis.fetch = async (path, init) => { requests.push([path, init]); return answer(); };
beforeEach(() => { requests = []; });

const json = (status, body, headers = {}) => () => new Response(JSON.stringify(body), {
  status, headers: { "Content-Type": "application/json", ...headers } });

test("a problem code reads as the page's sentence, else its fallback", () => {
  assert.equal(sentence("seats_unavailable"), "Someone else just took one of those seats.");
  assert.equal(sentence("no_such_code"), "Something went wrong on our side.");
});

test("an ApiError carries the status, the code, the problem and its sentence", () => {
  const error = new ApiError(409, { code: "seats_unavailable", unavailable_seat_ids: [3] });
  assert.ok(error instanceof Error);
  assert.equal(error.status, 409);
  assert.equal(error.code, "seats_unavailable");
  assert.deepEqual(error.problem.unavailable_seat_ids, [3]);
  assert.equal(error.sentence, "Someone else just took one of those seats.");
  assert.equal(error.message, error.sentence);
  const network = new ApiError(0, null);
  assert.equal(network.code, "network");
  assert.deepEqual(network.problem, {});
  assert.match(network.sentence, /^We could not reach onsale/);
  assert.equal(new ApiError(500, null).code, "internal_error");
  assert.equal(new ApiError(500, null).sentence, "Something went wrong on our side.");
});

test("a GET asks for JSON with the session cookie and answers the parsed body", async () => {
  answer = json(200, { events: [] });
  assert.deepEqual(await api("/api/events"), { events: [] });
  assert.deepEqual(requests, [["/api/events", {
    method: "GET", credentials: "same-origin", headers: { Accept: "application/json" } }]]);
});

test("a body always goes as JSON, beside the caller's headers", async () => {
  answer = json(201, { hold_id: "h1" });
  const hold = await api("/api/events/1/holds", { method: "POST", body: { seat_ids: [101, 102] },
                                                  headers: { "Idempotency-Key": "k1" } });
  assert.deepEqual(hold, { hold_id: "h1" });
  const [[, init]] = requests;
  assert.deepEqual(init, { method: "POST", credentials: "same-origin",
                           headers: { Accept: "application/json", "Idempotency-Key": "k1",
                                      "Content-Type": "application/json" },
                           body: '{"seat_ids":[101,102]}' });
});

test("204 answers null", async () => {
  answer = () => new Response(null, { status: 204 });
  assert.equal(await api("/api/session", { method: "DELETE" }), null);
});

test("a refusal throws its problem, with Retry-After in seconds", async () => {
  answer = json(429, { code: "rate_limited" }, { "Retry-After": "7" });
  await assert.rejects(api("/api/events/1/queue"), error => {
    assert.ok(error instanceof ApiError);
    assert.deepEqual([error.status, error.code, error.retryAfter, error.sentence],
                     [429, "rate_limited", 7, "Too many tries: wait a moment."]);
    return true;
  });
  answer = () => new Response("<h1>Bad gateway</h1>", { status: 502 });
  await assert.rejects(api("/api/events"), { status: 502, code: "internal_error", retryAfter: 0 });
});

test("no answer at all is the network problem", async () => {
  answer = () => { throw new TypeError("Failed to fetch"); };
  await assert.rejects(api("/api/events"), { status: 0, code: "network" });
});

test("flash shows a sentence in the alert box and hides it when empty", () => {
  flash("Seats held.", "ok");
  assert.deepEqual(box, { textContent: "Seats held.", className: "flash ok", hidden: false });
  flash("Nope.");
  assert.equal(box.className, "flash error");
  flash("");
  assert.equal(box.hidden, true);
});

test("idempotency keys are fresh UUIDs", () => {
  const keys = new Set(Array.from({ length: 50 }, newKey));
  assert.equal(keys.size, 50);
  for (const key of keys) assert.match(key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});
