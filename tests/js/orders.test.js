// "My orders" (web/static/js/orders.js): each order's state in the page's words, and
// when the page reads its orders again.
import assert from "node:assert/strict";
import { test } from "node:test";

import { needsRefresh, stateWords } from "../../web/static/js/orders.js";

const WORDS = { CAPTURED: "Paid", UNKNOWN: "Payment being confirmed", DECLINED: "Card declined" };

test("an order's state in the page's words", () => {
  const order = (payment_status, order_status = "CONFIRMED", in_progress = false) =>
    ({ payment_status, order_status, in_progress });
  assert.equal(stateWords(order("CAPTURED"), WORDS), "Paid");
  assert.equal(stateWords(order("CAPTURED", "CONFIRMED", true), WORDS), "Paid, tickets on the way");
  assert.equal(stateWords(order("CAPTURED", "CANCELLED"), WORDS), "Cancelled");
  assert.equal(stateWords(order("UNKNOWN", "PENDING", true), WORDS), "Payment being confirmed");
  assert.equal(stateWords(order("SOMETHING_NEW", "PENDING", true), WORDS), "SOMETHING_NEW");
});

test("the page reads again while an order converges or a database did not answer", () => {
  const settled = { in_progress: false };
  assert.equal(needsRefresh({ orders: [settled, settled], complete: true }), false);
  assert.equal(needsRefresh({ orders: [settled, { in_progress: true }], complete: true }), true);
  assert.equal(needsRefresh({ orders: [], complete: false }), true);
  assert.equal(needsRefresh({ orders: [], complete: true }), false);
});
