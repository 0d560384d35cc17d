// Calls to the onsale API from the pages. A failed call throws an ApiError whose
// `sentence` is the human text for its problem `code` (web/messages.py), so pages
// never show a status line or raw JSON.

const MESSAGES = JSON.parse(document.getElementById("onsale-messages")?.textContent || "{}");

export function sentence(code) {
  return (MESSAGES.sentences || {})[code] || MESSAGES.fallback || "Something went wrong.";
}

export class ApiError extends Error {
  constructor(status, problem) {
    const code = (problem && problem.code) || (status === 0 ? "network" : "internal_error");
    super(status === 0 ? "We could not reach onsale. Check your connection and try again."
                       : sentence(code));
    this.status = status;
    this.code = code;
    this.problem = problem || {};
    this.sentence = this.message;
  }
}

export function newKey() {
  return crypto.randomUUID ? crypto.randomUUID()
    : Array.from(crypto.getRandomValues(new Uint8Array(16)), b => b.toString(16).padStart(2, "0")).join("");
}

// api("/api/...", {method, body, headers}) -> parsed JSON (or null for 204).
// A body always goes as JSON with its Content-Type (the API answers any other type
// with 415 unsupported_media_type); the browser adds Origin, which the server checks
// on every POST, PUT, PATCH and DELETE (403 cross_site_request from another site).
export async function api(path, options = {}) {
  const init = { method: options.method || "GET", credentials: "same-origin",
                 headers: { Accept: "application/json", ...(options.headers || {}) } };
  if (options.body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (_) {
    throw new ApiError(0, null);
  }
  if (response.status === 204) return null;
  let body = null;
  try { body = await response.json(); } catch (_) { body = null; }
  if (!response.ok) {
    const error = new ApiError(response.status, body);
    error.retryAfter = Number(response.headers.get("Retry-After") || 0);
    throw error;
  }
  return body;
}

// Show a sentence in the page's alert area (role=alert, read by screen readers).
export function flash(text, kind = "error") {
  const box = document.getElementById("flash");
  if (!box) return;
  box.textContent = text;
  box.className = `flash ${kind}`;
  box.hidden = !text;
}
