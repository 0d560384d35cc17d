// The operator console's pure parts (web/static/js/ops.js, ops_event.js, fairness.js):
// where sign-in may send the operator back to, the sentences and figures it shows,
// and the fairness lab's request body.
import assert from "node:assert/strict";
import { test } from "node:test";

import { admissionRate, fileBlob, scenarioFrom, uploadQuery } from "../../web/static/js/fairness.js";
import { explain, safeNext } from "../../web/static/js/ops.js";
import { bytes, riskWords, seconds } from "../../web/static/js/ops_event.js";

test("after sign-in only a console page is a place to go back to", () => {
  assert.equal(safeNext("/ops/events/7?tab=audit"), "/ops/events/7?tab=audit");
  assert.equal(safeNext("/ops/fairness"), "/ops/fairness");
  for (const elsewhere of ["//evil.example/ops", "https://evil.example/ops", "/account", "",
                           null, undefined]) {
    assert.equal(safeNext(elsewhere), "/ops/", String(elsewhere));
  }
});

test("an operator's sentence adds the server's detail, not an exception's name", () => {
  assert.equal(explain({ sentence: "That change is not allowed.",
                         problem: { detail: "queue_policy is frozen once the sale opens" } }),
               "That change is not allowed. queue_policy is frozen once the sale opens");
  assert.equal(explain({ sentence: "Something went wrong.", problem: { detail: "KeyError" } }),
               "Something went wrong.");
  assert.equal(explain({ sentence: "Nope.", problem: {} }), "Nope.");
  assert.equal(explain(new Error("boom")), "Error: boom");
});

test("the dashboard's durations and sizes", () => {
  assert.deepEqual([null, undefined, 0, 45, 89.6, 90, 5399, 5400, 9000].map(seconds),
                   ["–", "–", "0 s", "45 s", "90 s", "2 min", "90 min", "1.5 h", "2.5 h"]);
  assert.deepEqual([null, 0, 512, 1023, 1024, 1536, 3 * 1024 ** 2].map(bytes),
                   ["–", "0 B", "512 B", "1023 B", "1.0 KiB", "1.5 KiB", "3.0 MiB"]);
});

const form = fields => {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) data.append(name, value);
  return data;
};

test("the lab's body from a preset profile: numbers typed, blanks left to the server", () => {
  assert.deepEqual(scenarioFrom(form({
    event_id: "7", profile: "preset", preset: "spike", arrivals: "1 2 3", visitors: "5000",
    seconds: " 600 ", seats: "", rate_min: "", bot_share_percent: "12.5", dedupe_accounts: "on",
  })), { event_id: 7, preset: "spike", visitors: 5000, seconds: 600, bot_share: 0.125,
         dedupe_accounts: true });
});

test("the lab's body from pasted counts: the counts replace visitors and seconds", () => {
  assert.deepEqual(scenarioFrom(form({
    event_id: "", profile: "counts", preset: "spike", arrivals: " 10, 20;30\n 40 ,",
    visitors: "5000", seconds: "600", seed: "42",
  })), { arrivals: [10, 20, 30, 40], seed: 42, bot_share: 0, dedupe_accounts: false });
  // No counts pasted: the preset after all.
  assert.deepEqual(scenarioFrom(form({ profile: "counts", preset: "steady", arrivals: "  " })),
                   { preset: "steady", bot_share: 0, dedupe_accounts: false });
});

test("an uploaded CSV's query: the settings, not the crowd's size, span or opening", () => {
  const query = uploadQuery(form({
    event_id: "7", profile: "csv", preset: "spike", visitors: "5000", seconds: "600",
    onsale_second: "300", seats: "1500", seed: "3", bot_share_percent: "8",
    dedupe_accounts: "on", opens_at: " 2026-01-01T10:00:00Z ",
  }));
  assert.equal(query.toString(), "event_id=7&seats=1500&seed=3&bot_share=0.08&"
               + "dedupe_accounts=true&opens_at=2026-01-01T10%3A00%3A00Z");
  assert.equal(uploadQuery(form({ profile: "csv", opens_at: "" })).toString(),
               "bot_share=0&dedupe_accounts=false");
});

test("a file of the answer becomes a Blob: text as it is, a chart from base64", async () => {
  const csv = fileBlob({ media_type: "text/csv", encoding: "utf-8", content: "policy\nfifo\n" });
  assert.equal(csv.type, "text/csv");
  assert.equal(await csv.text(), "policy\nfifo\n");
  const png = fileBlob({ media_type: "image/png", encoding: "base64", content: "iVBORw0KGgo=" });
  assert.deepEqual([...new Uint8Array(await png.arrayBuffer())],
                   [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
});

test("admissions per bucket become a rate per minute at each bucket's start", () => {
  assert.deepEqual(admissionRate({ counts: [3, 0, 6], bucket_seconds: 30 }),
                   [[0, 6], [30, 0], [60, 12]]);
  assert.deepEqual(admissionRate({ counts: [], bucket_seconds: 10 }), []);
});

test("the risk bands in words: each band that is set, or off", () => {
  assert.equal(riskWords({ raised: null, high: null, refused: null }),
               "Off: every join is treated as low risk (the event's own proof of work only).");
  assert.equal(riskWords({}), riskWords({ raised: null }));
  assert.equal(riskWords({ raised: 30, high: 60, refused: 90 }),
               "Scores of 30 or more: more proof of work; 60 or more: much more; 90 or more: refused.");
  assert.equal(riskWords({ raised: null, high: null, refused: 80 }),
               "Scores of 80 or more: refused.");
});
