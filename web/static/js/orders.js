// "My orders" (/orders): the server drew the page of orders; this refreshes the ones
// still converging on their payment (GET /api/orders, the same page) every few seconds
// until none is, and says each one's state in the same words. Reading never changes
// an order.

import { api } from "./api.js";

const REFRESH_MS = 3000;

/**
 * An order's state in a few words, as the server's page says it (web/account_pages.py).
 * @param {{order_status: string, payment_status: string, in_progress: boolean}} order
 * @param {Record<string, string>} words
 * @returns {string}
 */
export function stateWords(order, words) {
  if (order.order_status === "CANCELLED" && order.payment_status === "CAPTURED") return "Cancelled";
  if (order.payment_status === "CAPTURED" && order.in_progress) return "Paid, tickets on the way";
  return words[order.payment_status] || order.payment_status;
}

/**
 * Whether the page must read its orders again: one still converges, or a database
 * did not answer.
 * @param {{orders: Array<{in_progress: boolean}>, complete: boolean}} doc
 * @returns {boolean}
 */
export function needsRefresh(doc) {
  return !doc.complete || doc.orders.some(order => order.in_progress);
}

function start() {
  const data = document.getElementById("orders-data");
  if (!data) return;
  const page = JSON.parse(data.textContent || "{}");
  if (!page.following) return;

  async function refresh() {
    let doc;
    try {
      doc = await api(page.api);
    } catch {
      setTimeout(refresh, REFRESH_MS * 2);  // keep what is shown; try again later
      return;
    }
    const known = new Set();
    for (const order of doc.orders) {
      const row = document.querySelector(`tr[data-order-id="${order.order_id}"]`);
      if (!row) continue;
      known.add(order.order_id);
      const cell = row.querySelector(".order-state");
      const text = stateWords(order, page.words);
      if (row.dataset.status !== order.payment_status || cell.dataset.words !== text) {
        row.dataset.status = order.payment_status;
        cell.dataset.words = text;
        cell.textContent = text;  // only a change is announced (a polite live region)
        if (order.in_progress) {
          const spinner = document.createElement("span");
          spinner.className = "spinner";
          spinner.setAttribute("aria-hidden", "true");
          cell.append(" ", spinner);
        }
      }
    }
    const following = document.getElementById("orders-following");
    const incomplete = document.getElementById("orders-incomplete");
    // An order the page did not show (a database answered again): the page is redrawn.
    if (doc.orders.length !== known.size || (incomplete && doc.complete)) {
      window.location.reload();
      return;
    }
    if (needsRefresh(doc)) {
      setTimeout(refresh, REFRESH_MS);
    } else if (following) {
      following.hidden = true;
    }
  }
  setTimeout(refresh, REFRESH_MS);
}

if (typeof document !== "undefined") start();
