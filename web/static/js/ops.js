// The operator console's sign-in and API calls. The operator pastes the admin
// token once; it stays in this tab's sessionStorage (gone when the tab closes)
// and goes with every /api/ops call as "Authorization: Bearer ...".

import { api, ApiError, flash, newKey } from "./api.js";

const KEY = "onsale.ops.token";
const WRONG_TOKEN = "That operator token was not accepted. Paste the ONSALE_ADMIN_TOKEN of " +
                    "this onsale and try again.";

export function token() {
  return sessionStorage.getItem(KEY) || "";
}

export function signOut() {
  sessionStorage.removeItem(KEY);
}

// Where to go after signing in: only console pages.
export function safeNext(value) {
  return value && value.startsWith("/ops") && !value.startsWith("//") ? value : "/ops/";
}

function toSignin(expired) {
  const next = encodeURIComponent(location.pathname + location.search);
  location.assign(`/ops/signin?next=${next}${expired ? "&expired=1" : ""}`);
}

// Redirects to the sign-in page when this tab has no token; returns whether it has one.
export function requireToken() {
  if (token()) return true;
  toSignin(false);
  return false;
}

// An /api/ops call with the token; a refused token sends the operator back to sign in.
export async function opsApi(path, options = {}) {
  const headers = { ...(options.headers || {}), Authorization: `Bearer ${token()}` };
  if (options.method && options.method !== "GET") headers["Idempotency-Key"] = newKey();
  try {
    return await api(path, { ...options, headers });
  } catch (error) {
    if (error instanceof ApiError && error.code === "admin_required") {
      signOut();
      toSignin(true);
    }
    throw error;
  }
}

// The sentence for an operator: the human sentence plus the server's detail.
export function explain(error) {
  const detail = error && error.problem && error.problem.detail;
  const base = (error && error.sentence) || String(error);
  return detail && !/Error$/.test(detail) ? `${base} ${detail}` : base;
}

export function initNav() {
  const out = document.getElementById("ops-signout");
  if (out) {
    out.addEventListener("click", () => { signOut(); location.assign("/ops/signin"); });
  }
}

export function initSignin() {
  const form = document.getElementById("ops-signin");
  const input = document.getElementById("admin-token");
  const params = new URLSearchParams(location.search);
  if (params.get("expired")) flash("Your operator session ended. Paste the token again.", "info");
  form.addEventListener("submit", async event => {
    event.preventDefault();
    const value = input.value.trim();
    if (!value) {
      input.setAttribute("aria-invalid", "true");
      flash("Paste the operator token first.");
      return;
    }
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      // Any operator route checks the token; the audit answers from its cache.
      await api("/api/ops/audit", { headers: { Authorization: `Bearer ${value}` } });
      sessionStorage.setItem(KEY, value);
      flash("");
      location.assign(safeNext(params.get("next")));
    } catch (error) {
      input.setAttribute("aria-invalid", "true");
      flash(error instanceof ApiError && error.code === "admin_required" ? WRONG_TOKEN
            : explain(error));
    } finally {
      button.disabled = false;
    }
  });
}

export function initIndex() {
  initNav();
  requireToken();
}
