// web/static/js/draw_check.js with the vendored noble-curves bundle, on rounds drand's
// chains published (the same fixtures as tests/unit/test_beacon.py).
import assert from "node:assert/strict";
import { webcrypto } from "node:crypto";
import { test } from "node:test";

import { bls12_381 } from "../../web/static/vendor/noble_bls/bls12-381.js";
import { checkBeacon, roundDue, verifyRound } from "../../web/static/js/draw_check.js";

globalThis.crypto ??= webcrypto;   // a global from Node 19 on (and in every browser)

const QUICKNET = {
  name: "quicknet", hash: "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971",
  public_key: "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5"
    + "776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a"
    + "4bc09e76eae8991ef5ece45a",
  scheme: "bls-unchained-g1-rfc9380", period: 3, genesis_time: 1692803367,
};
const MAINNET = {
  name: "mainnet", hash: "8990e7a9aaed2ffed73dbd7092123d6f289930540d7651336225dc172e51b2ce",
  public_key: "868f005eb8e6e4ca0a47c8a77ceaa5309a47978a7c71bc5cce96366b5d7a569937c529eeda66c7293784"
    + "a9402801af31",
  scheme: "pedersen-bls-chained", period: 30, genesis_time: 1595431050,
};
const QUICK_123 = {
  round: 123,
  signature: "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482"
    + "e26cd02df835d3546d23c4b13e0dfc92",
};
const MAIN_72785 = {
  round: 72785,
  signature: "82f5d3d2de4db19d40a6980e8aa37842a0e55d1df06bd68bddc8d60002e8e959eb9cfa368b3c1b77d18f02"
    + "a54fe047b80f0989315f83b12a74fd8679c4f12aae86eaf6ab5690b34f1fddd50ee3cc6f6cdf59e95526d5"
    + "a5d82aaa84fa6f181e42",
  previous_signature: "a609e19a03c2fcc559e8dae14900aaefe517cb55c840f6e69bc8e4f66c8d18e8a609685d9917efbfb0c37f"
    + "058c2de88f13d297c7e19e0ab24813079efe57a182554ff054c7638153f9b26a60e7111f71a0ff63d95717"
    + "04905d3ca6df0b031747",
};
const QUICK_123_RANDOMNESS = "fb8f7bc29bf24db51871ec8c79f3a1e4bd0557bc0dfcee9ed1d924e69d1c60dc";
const DUE_123 = QUICKNET.genesis_time + 122 * 3;
const iso = (unix) => new Date(unix * 1000).toISOString();
const load = async () => bls12_381;

test("real rounds of quicknet and mainnet verify", async () => {
  assert.equal(await verifyRound(bls12_381, QUICKNET, QUICK_123), QUICK_123_RANDOMNESS);
  const randomness = await verifyRound(bls12_381, MAINNET, MAIN_72785);
  assert.match(randomness, /^[0-9a-f]{64}$/);
});

test("a forged byte, the wrong round, a wrong previous signature or key are refused", async () => {
  const forged = { ...QUICK_123, signature: `${QUICK_123.signature.slice(0, -2)}93` };
  const cases = [
    [QUICKNET, forged], [QUICKNET, { ...QUICK_123, round: 124 }],
    [QUICKNET, { ...QUICK_123, signature: "zz" }],
    [MAINNET, { ...MAIN_72785, previous_signature: `6${MAIN_72785.previous_signature.slice(1)}` }],
    [{ ...QUICKNET, public_key: MAINNET.public_key }, QUICK_123],  // quicknet's hash, not its key
    [{ ...QUICKNET, scheme: "bls" }, QUICK_123],
    [QUICKNET, { ...QUICK_123, randomness: "00".repeat(32) }],
  ];
  for (const [chain, outcome] of cases) {
    await assert.rejects(verifyRound(bls12_381, chain, outcome));
  }
});

test("the round due is the committed one, or the first after a late close", () => {
  const beacon = (closed) => ({ commitment: { chain: QUICKNET, round: 123 }, closed_at: closed });
  assert.equal(roundDue(beacon(iso(DUE_123 - 1))), 123);
  assert.equal(roundDue(beacon(iso(DUE_123))), 124);
  assert.equal(roundDue(beacon(iso(DUE_123 + 31))), 134);
  assert.equal(roundDue(beacon(null)), 123);
});

test("what the page says about a draw's beacon", async () => {
  const committed = { chain: QUICKNET, round: 123 };
  const drawn = { commitment: committed, closed_at: iso(DUE_123 - 1),
                  outcome: { ...QUICK_123, randomness: QUICK_123_RANDOMNESS } };
  const good = await checkBeacon(load, drawn);
  assert.deepEqual([good.ok, good.randomness], [true, QUICK_123_RANDOMNESS]);
  assert.match(good.text, /quicknet round 123 checks against quicknet's public key/);
  const late = await checkBeacon(load, { ...drawn, closed_at: iso(DUE_123 + 1) });
  assert.deepEqual([late.ok, late.text], [false, "the draw used round 123, not round 124"]);
  const forged = await checkBeacon(load, { ...drawn, outcome: { ...drawn.outcome,
    signature: `${QUICK_123.signature.slice(0, -2)}93` } });
  assert.equal(forged.ok, false);
  const fell = await checkBeacon(load, { ...drawn, outcome: { fallback: {
    reason: "relays down", at: "t" } } });
  assert.deepEqual([fell.ok, fell.text],
                   [true, "drawn with the seed alone, without quicknet round 123: relays down"]);
  assert.equal((await checkBeacon(load, null)).text, "drawn with the organiser's seed alone");
  const notYet = await checkBeacon(async () => assert.fail("no check needed"),
                                   { ...drawn, outcome: null });
  assert.equal(notYet.text, "waiting for quicknet round 123");
});
