// The proof of work a join may ask for (hashcash, edge/pow.py): find a
// `solution` such that sha256(challenge + ":" + solution) starts with
// `difficulty` zero bits. Solutions are counters in hex, like the reference
// solver. Hashes run in batches through SubtleCrypto, so the page stays
// responsive and can show progress.

const encoder = new TextEncoder();

/**
 * How many zero bits a digest starts with (edge/pow.py's leading_zero_bits).
 * @param {Iterable<number>} bytes
 */
export function leadingZeroBits(bytes) {
  let bits = 0;
  for (const byte of bytes) {
    if (byte === 0) { bits += 8; continue; }
    return bits + Math.clz32(byte) - 24;
  }
  return bits;
}

/**
 * @param {string} challenge
 * @param {string} solution
 */
async function work(challenge, solution) {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(`${challenge}:${solution}`));
  return leadingZeroBits(new Uint8Array(digest));
}

// Resolves to the solution. onProgress(tried, expected) is called after each
// batch; `expected` is the average number of tries (2^difficulty).
/**
 * @param {string} challenge
 * @param {number} difficulty
 * @param {(tried: number, expected: number) => void} [onProgress]
 * @returns {Promise<string>}
 */
export async function solve(challenge, difficulty, onProgress = () => {}, batch = 256) {
  if (!(globalThis.crypto && crypto.subtle)) {
    throw new Error("This browser check needs a secure (https) connection.");
  }
  const expected = 2 ** difficulty;
  for (let start = 0; ; start += batch) {
    const tries = [];
    for (let n = start; n < start + batch; n += 1) tries.push(work(challenge, n.toString(16)));
    const bits = await Promise.all(tries);
    const found = bits.findIndex((b) => b >= difficulty);
    if (found >= 0) {
      onProgress(start + found + 1, expected);
      return (start + found).toString(16);
    }
    onProgress(start + batch, expected);
  }
}

/**
 * The SHA-256 of a text (UTF-8) in lowercase hex.
 * @param {string} text
 */
export async function sha256Hex(text) {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
