// The checkout page (/checkout/{hold_id}): a countdown to the hold's expiry, the
// card entry and Pay. One Idempotency-Key per card attempt: a retry after an
// unknown outcome (network error, 503) reuses it, so nothing is charged twice;
// a declined card gets a new key for the next card. 3-D Secure sends the
// shopper to the provider's page, which sends them back to the order page.

import { api, flash, newKey } from "./api.js";

const PAGE = JSON.parse(document.getElementById("checkout-data").textContent);
const HOLD = PAGE.hold;
const WORDS = PAGE.words;
const POLL_MS = 1500;
const $ = id => document.getElementById(id);
const skewMs = Date.parse(PAGE.now) - Date.now();   // server clock minus ours
const orderKey = `onsale-order-${HOLD.hold_id}`;

let key = null, keyCard = null;   // the key and the card it was made for
let timer = null;

function remainingMs() {
  return Date.parse(HOLD.expires_at) - (Date.now() + skewMs);
}

function tick() {
  const left = remainingMs();
  if (left <= 0) {
    $("countdown-value").textContent = "0:00";
    clearInterval(timer);
    if (!$("pay-form").hidden) expired("Your hold on these seats has expired. Please choose seats again.");
    return;
  }
  const seconds = Math.ceil(left / 1000);
  $("countdown-value").textContent = `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

function expired(text) {
  flash(text);
  $("pay-form").hidden = true;
  $("countdown").hidden = true;
  pending(null);
  $("back-to-seats").textContent = "Choose seats again";
}

function pending(text) {
  $("pay-pending").hidden = !text;
  $("pay-pending-text").textContent = text || "";
  $("pay-button").disabled = Boolean(text);
}

function showOrderLink(orderId) {
  $("order-link").hidden = false;
  $("order-link").querySelector("a").href = `/orders/${orderId}`;
}

async function pay(event) {
  event.preventDefault();
  const card = $("card").value.trim();
  if (!card) { flash("Please enter a card number."); $("card").focus(); return; }
  if (!key || card !== keyCard) { key = newKey(); keyCard = card; }
  flash("");
  pending("Paying…");
  let order;
  try {
    order = await api(`/api/holds/${HOLD.hold_id}/checkout`,
                      { method: "POST", body: { payment_method: card }, headers: { "Idempotency-Key": key } });
  } catch (error) {
    payFailed(error);
    return;
  }
  follow(order);
}

function payFailed(error) {
  pending(null);
  const orderId = error.problem && error.problem.order_id;
  if ((error.code === "checkout_in_progress" || error.code === "hold_checked_out") && orderId) {
    flash(`${error.sentence} Taking you to your order…`, "info");
    location.assign(`/orders/${orderId}`);
    return;
  }
  if (["hold_expired", "hold_expiring", "hold_not_found"].includes(error.code)) {
    expired(error.sentence);
    return;
  }
  if (error.status === 403) $("pay-gate").hidden = false;
  flash(error.sentence);   // the key stays: retrying the same card repeats the same request
}

// What to do with the order a checkout (or a poll) answered.
function follow(order) {
  sessionStorage.setItem(orderKey, order.order_id);
  const status = order.payment_status;
  if (status === "REQUIRES_ACTION" && order.next_action) {
    pending(`${WORDS.REQUIRES_ACTION} Taking you to your bank's page…`);
    location.assign(order.next_action.redirect_to_url.url);
  } else if (status === "DECLINED" && order.order_status === "PENDING") {
    pending(null);
    key = null;   // the next card is a new attempt
    flash(WORDS.DECLINED);
    $("card").select();
  } else if (status === "PENDING" || status === "UNKNOWN") {
    pending(WORDS[status]);
    setTimeout(() => poll(order.order_id), POLL_MS);
  } else {
    pending(WORDS[status] || "Finishing your order…");
    location.assign(`/orders/${order.order_id}`);
  }
}

async function poll(orderId) {
  try {
    follow(await api(`/api/orders/${orderId}`));
  } catch (error) {
    if (error.status === 0 || error.status >= 500) {   // keep waiting: the answer will come
      setTimeout(() => poll(orderId), POLL_MS * 2);
    } else {
      pending(null);
      flash(error.sentence);
    }
  }
}

function start() {
  for (const hint of document.querySelectorAll(".card-hint")) {
    hint.addEventListener("click", () => { $("card").value = hint.dataset.card; $("card").focus(); });
  }
  $("pay-form").addEventListener("submit", pay);
  const known = sessionStorage.getItem(orderKey);
  if (known) showOrderLink(known);
  if (HOLD.status === "HELD") {
    tick();
    timer = setInterval(tick, 1000);
  }
}

start();
