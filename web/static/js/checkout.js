// The checkout page (/checkout/{hold_id}): a countdown to the hold's expiry, the
// card entry and Pay. The card is tokenized in the browser at the payment provider
// (Stripe's PaymentMethods API with the publishable key, as Stripe.js does): the
// card number never reaches this site, only the pm_… id does. One Idempotency-Key
// per card attempt: a retry after an
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

const PROVIDER = PAGE.provider;
let key = null, keyCard = null;   // the key and the card it was made for
let token = null;                 // the PaymentMethod of keyCard, once the provider made it
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
  const card = $("card").value.replace(/[\s-]/g, "");
  const exp = $("card-exp").value.trim(), cvc = $("card-cvc").value.trim();
  if (!card) { flash("Please enter a card number."); $("card").focus(); return; }
  const entered = `${card}|${exp}|${cvc}`;
  if (!key || entered !== keyCard) { key = newKey(); keyCard = entered; token = null; }
  flash("");
  pending("Paying…");
  let order;
  try {
    if (!token) token = await tokenize(card, exp, cvc);
  } catch (error) {
    pending(null);
    key = null;
    flash(error.message);
    return;
  }
  try {
    order = await api(`/api/holds/${HOLD.hold_id}/checkout`,
                      { method: "POST", body: { payment_method: token }, headers: { "Idempotency-Key": key } });
  } catch (error) {
    payFailed(error);
    return;
  }
  follow(order);
}

// The card, straight to the provider: POST /v1/payment_methods, form-encoded with
// Stripe's bracket notation, authorized by the publishable key. Answers the pm_… id,
// or throws an Error whose message is the provider's sentence.
async function tokenize(number, exp, cvc) {
  const [month, year] = exp.split("/").map(part => part.trim());
  const form = new URLSearchParams({
    "type": "card", "card[number]": number, "card[exp_month]": month || "",
    "card[exp_year]": year && year.length === 2 ? `20${year}` : (year || ""), "card[cvc]": cvc });
  let response;
  try {
    response = await fetch(`${PROVIDER.api_base}/v1/payment_methods`, {
      method: "POST", body: form,
      headers: { "Authorization": `Bearer ${PROVIDER.publishable_key}`,
                 "Content-Type": "application/x-www-form-urlencoded" } });
  } catch {
    throw new Error("The payment provider could not be reached. Please try again.");
  }
  const answer = await response.json().catch(() => ({}));
  if (!response.ok || !answer.id) {
    const message = answer.error && answer.error.message;
    throw new Error(message || "The payment provider refused this card. Please check it.");
  }
  return answer.id;
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
    key = null; token = null;   // the next card is a new attempt
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
    hint.addEventListener("click", () => {
      $("card").value = hint.dataset.card;   // test cards take any future expiry and CVC
      if (!$("card-exp").value) $("card-exp").value = "12/34";
      if (!$("card-cvc").value) $("card-cvc").value = "123";
      $("pay-button").focus();
    });
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
