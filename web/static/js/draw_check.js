// Checking a published draw's beacon round in the browser, offline
// (docs/edge.md#the-random-draw-and-how-to-verify-it): the round's BLS signature against
// the chain's public key with noble-curves' BLS12-381 (vendored, loaded only when a draw
// has a round to check), that it is the round the draw had to use, and its randomness.
// The same checks as `python -m onsale.edge.draw`.

/** drand's public chains, by chain hash: the key a document cannot replace. */
export const KNOWN_KEYS = {
  // quicknet
  "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971":
    "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5"
    + "776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a"
    + "4bc09e76eae8991ef5ece45a",
  // mainnet (the League of Entropy's default chain)
  "8990e7a9aaed2ffed73dbd7092123d6f289930540d7651336225dc172e51b2ce":
    "868f005eb8e6e4ca0a47c8a77ceaa5309a47978a7c71bc5cce96366b5d7a569937c529eeda66c7293784"
    + "a9402801af31",
};

const CHAINED = "pedersen-bls-chained";  // signatures on G2, the key on G1
/** @type {Record<string, string>} */
const DST = {
  "bls-unchained-g1-rfc9380": "BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_",
  [CHAINED]: "BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_NUL_",
};

/**
 * @param {string} hex
 * @returns {Uint8Array<ArrayBuffer>}
 */
export function hexToBytes(hex) {
  if (typeof hex !== "string" || hex.length % 2 !== 0 || /[^0-9a-f]/i.test(hex)) {
    throw new Error("not hex");
  }
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i += 1) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** @param {Uint8Array} bytes */
export function bytesToHex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** @param {Uint8Array<ArrayBuffer>} bytes */
async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

/**
 * What the chain signed for a round: sha256 of the round number (8 bytes, big-endian),
 * preceded on a chained chain by the previous round's signature.
 * @param {string} scheme @param {number} round @param {string} [previous]
 */
export async function roundMessage(scheme, round, previous = "") {
  const number = new Uint8Array(8);
  new DataView(number.buffer).setBigUint64(0, BigInt(round));
  if (scheme !== CHAINED) return sha256(number);
  const prev = hexToBytes(previous);
  const both = new Uint8Array(prev.length + 8);
  both.set(prev);
  both.set(number, prev.length);
  return sha256(both);
}

/**
 * @typedef {{name: string, hash: string, public_key: string, scheme: string,
 *            period: number, genesis_time: number}} Chain
 * @typedef {{round: number, signature: string, previous_signature?: string,
 *            randomness?: string}} Outcome
 */

/**
 * The round's randomness (hex) if its signature is the chain's; throws otherwise.
 * @param {any} bls noble-curves' bls12_381 @param {Chain} chain @param {Outcome} outcome
 */
export async function verifyRound(bls, chain, outcome) {
  const dst = DST[chain.scheme];
  if (!dst) throw new Error(`the scheme ${chain.scheme} is not one this page checks`);
  const known = /** @type {Record<string, string>} */ (KNOWN_KEYS)[chain.hash];
  if (known && known !== chain.public_key) {
    throw new Error("the document's public key is not the chain's");
  }
  const message = await roundMessage(chain.scheme, outcome.round, outcome.previous_signature);
  const signatures = chain.scheme === CHAINED ? bls.longSignatures : bls.shortSignatures;
  let valid = false;
  try {
    valid = signatures.verify(hexToBytes(outcome.signature), signatures.hash(message, dst),
                              hexToBytes(chain.public_key));
  } catch {
    valid = false;
  }
  if (!valid) throw new Error(`round ${outcome.round}: the signature is not ${chain.name}'s`);
  const randomness = bytesToHex(await sha256(hexToBytes(outcome.signature)));
  if (outcome.randomness != null && outcome.randomness !== randomness) {
    throw new Error("the published randomness is not sha256 of the round's signature");
  }
  return randomness;
}

/**
 * The round a draw had to use: the committed one, or the first due after the pre-queue
 * closed, if it closed late.
 * @param {{commitment: {chain: Chain, round: number}, closed_at: string | null}} beacon
 */
export function roundDue(beacon) {
  const { chain, round } = beacon.commitment;
  if (beacon.closed_at == null) return round;
  const closed = Date.parse(beacon.closed_at) / 1000;
  const at = closed < chain.genesis_time
    ? 0 : Math.floor((closed - chain.genesis_time) / chain.period) + 1;
  return Math.max(round, at + 1);
}

/**
 * What the page says about a published draw's beacon.
 * @param {() => Promise<any>} loadBls @param {any} beacon the draw document's `beacon`
 * @returns {Promise<{ok: boolean, text: string, randomness?: string}>}
 */
export async function checkBeacon(loadBls, beacon) {
  if (beacon == null) return { ok: true, text: "drawn with the organiser's seed alone" };
  const { commitment, outcome } = beacon;
  const chain = commitment.chain;
  if (outcome == null) return { ok: true, text: `waiting for ${chain.name} round ${commitment.round}` };
  if (outcome.fallback) {
    return { ok: true, text: `drawn with the seed alone, without ${chain.name} round `
      + `${commitment.round}: ${outcome.fallback.reason}` };
  }
  const due = roundDue(beacon);
  if (outcome.round !== due) {
    return { ok: false, text: `the draw used round ${outcome.round}, not round ${due}` };
  }
  try {
    const randomness = await verifyRound(await loadBls(), chain, outcome);
    const whose = chain.hash in KNOWN_KEYS ? `${chain.name}'s public key`
      : `the key the document gives for ${chain.name}`;
    return { ok: true, randomness,
             text: `${chain.name} round ${outcome.round} checks against ${whose}` };
  } catch (error) {
    return { ok: false, text: /** @type {Error} */ (error).message };
  }
}
