// The proof of work (web/static/js/pow.js) against edge/pow.py: the solutions below
// are what its reference solver answers (tests/unit/test_browser_vectors.py).
import assert from "node:assert/strict";
import { createHash, webcrypto } from "node:crypto";
import { test } from "node:test";

import { leadingZeroBits, sha256Hex, solve } from "../../web/static/js/pow.js";

globalThis.crypto ??= webcrypto;   // a global from Node 19 on (and in every browser)

const CHALLENGE = "onsale-test-vector";

test("leading zero bits of a digest", () => {
  assert.equal(leadingZeroBits(new Uint8Array([0x80, 0])), 0);
  assert.equal(leadingZeroBits(new Uint8Array([0x01, 0xff])), 7);
  assert.equal(leadingZeroBits(new Uint8Array([0x00, 0x00, 0x3f])), 18);
  assert.equal(leadingZeroBits(new Uint8Array([0, 0])), 16);
  assert.equal(leadingZeroBits(new Uint8Array([])), 0);
});

test("sha256 in hex, as the draw's commitment is written", async () => {
  assert.equal(await sha256Hex("abc"),
               "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert.equal(await sha256Hex("é"), createHash("sha256").update("é", "utf8").digest("hex"));
});

test("solve finds the first counter the reference solver finds, reporting each batch", async () => {
  const progress = [];
  assert.equal(await solve(CHALLENGE, 8, (tried, expected) => progress.push([tried, expected])), "6b");
  assert.deepEqual(progress, [[0x6b + 1, 256]]);
  progress.length = 0;
  assert.equal(await solve(CHALLENGE, 12, (tried, expected) => progress.push([tried, expected])),
               "1985");
  assert.equal(progress.length, 26);            // 25 full batches of 256, then the find
  assert.deepEqual(progress[0], [256, 4096]);
  assert.deepEqual(progress[25], [0x1985 + 1, 4096]);
  const digest = createHash("sha256").update(`${CHALLENGE}:1985`).digest();
  assert.ok(leadingZeroBits(digest) >= 12);
});

test("difficulty 0: the first counter", async () => {
  assert.equal(await solve(CHALLENGE, 0, () => {}, 4), "0");
});
