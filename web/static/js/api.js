// Calls to the onsale API from the pages. A failed call throws an ApiError whose
// `sentence` is the human text for its problem `code` (web/messages.py), so pages
// never show a status line or raw JSON.

/** @typedef {{sentences?: Record<string, string>, fallback?: string}} Messages */

/** @type {Messages | null} */
let messages = null;

// The page's sentences (base.html's #onsale-messages), read on first use; a page
// without them (or no page: Node's tests) has none.
function pageMessages() {
  if (messages === null) {
    const text = globalThis.document?.getElementById("onsale-messages")?.textContent;
    messages = /** @type {Messages} */ (JSON.parse(text || "{}"));
  }
  return messages;
}

/**
 * The human sentence for a problem code.
 * @param {string} code
 * @returns {string}
 */
export function sentence(code) {
  const known = pageMessages();
  return (known.sentences || {})[code] || known.fallback || "Something went wrong.";
}

export class ApiError extends Error {
  /**
   * @param {number} status the HTTP status, 0 when the server could not be reached
   * @param {{code?: string, [member: string]: any} | null} problem the problem+json body
   */
  constructor(status, problem) {
    const code = (problem && problem.code) || (status === 0 ? "network" : "internal_error");
    super(status === 0 ? "We could not reach onsale. Check your connection and try again."
                       : sentence(code));
    this.status = status;
    this.code = code;
    this.problem = problem || {};
    this.sentence = this.message;
    this.retryAfter = 0;   // seconds, from a Retry-After header
  }
}

/** A fresh Idempotency-Key. */
export function newKey() {
  return crypto.randomUUID ? crypto.randomUUID()
    : Array.from(crypto.getRandomValues(new Uint8Array(16)), b => b.toString(16).padStart(2, "0")).join("");
}

/**
 * @typedef {{method?: string, body?: unknown, headers?: Record<string, string>,
 *            upload?: {type: string, data: Blob}}} ApiOptions
 */

// api("/api/...", {method, body, headers}) -> parsed JSON (or null for 204).
// A body goes as JSON with its Content-Type (the API answers any other type with 415
// unsupported_media_type), except an `upload`: a file sent as it is, under its type, to
// the one route that reads one (the fairness lab's arrivals CSV, text/csv). The browser
// adds Origin, which the server checks on every POST, PUT, PATCH and DELETE (403
// cross_site_request from another site).
/**
 * @param {string} path
 * @param {ApiOptions} [options]
 * @returns {Promise<any>}
 */
export async function api(path, options = {}) {
  /** @type {RequestInit & {headers: Record<string, string>}} */
  const init = { method: options.method || "GET", credentials: "same-origin",
                 headers: { Accept: "application/json", ...(options.headers || {}) } };
  if (options.upload !== undefined) {
    init.headers["Content-Type"] = options.upload.type;
    init.body = options.upload.data;
  } else if (options.body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, null);
  }
  if (response.status === 204) return null;
  let body = null;
  try { body = await response.json(); } catch { body = null; }
  if (!response.ok) {
    const error = new ApiError(response.status, body);
    error.retryAfter = Number(response.headers.get("Retry-After") || 0);
    throw error;
  }
  return body;
}

/**
 * Show a sentence in the page's alert area (role=alert, read by screen readers).
 * @param {string} text
 */
export function flash(text, kind = "error") {
  const box = document.getElementById("flash");
  if (!box) return;
  box.textContent = text;
  box.className = `flash ${kind}`;
  box.hidden = !text;
}
