// The order page (/orders/{order_id}): the server drew the order; this follows
// it (GET /api/orders/{id}) until its payment is final and, once paid, its
// tickets are there. Reading an order never changes it.

import { api, flash } from "./api.js";

const PAGE = JSON.parse(document.getElementById("order-data").textContent);
const FINAL = new Set(PAGE.final);
const $ = id => document.getElementById(id);

function isDone(order) {
  return FINAL.has(order.payment_status) && (order.payment_status !== "CAPTURED" || order.tickets.length > 0);
}

// The ticket's QR code (its signed value, docs/tickets.md), the value in text and a
// download link: the same figure the server draws.
function qrFigure(order, ticket, label) {
  const image = `/orders/${order.order_id}/tickets/${ticket.ticket_id}.svg`;
  const figure = document.createElement("figure");
  figure.className = "ticket-qr";
  const img = document.createElement("img");
  img.src = image;
  img.alt = `QR code of your ticket for ${label}`;
  const caption = document.createElement("figcaption");
  const value = document.createElement("samp");
  value.className = "ticket-value";
  value.textContent = ticket.value;
  const link = document.createElement("a");
  link.href = `${image}?download`;
  link.download = "";
  link.textContent = `Download the ticket for ${label}`;
  caption.append(value, " ", link);
  figure.append(img, caption);
  return figure;
}

function show(order) {
  const box = $("order-status");
  box.dataset.status = order.payment_status;
  box.dataset.orderStatus = order.order_status;
  box.className = `order-status status-${order.payment_status.toLowerCase()}`;
  $("order-words").textContent = PAGE.words[order.payment_status] || "";

  const next = $("order-next");
  next.replaceChildren();
  let href = null, text = null;
  if (order.next_action) { href = order.next_action.redirect_to_url.url; text = "Confirm the payment with your bank"; }
  else if (order.payment_status === "DECLINED" && order.order_status === "PENDING") {
    href = `/checkout/${order.hold_id}`; text = "Try another card";
  }
  if (href) {
    const a = document.createElement("a");
    a.className = "button";
    a.href = href;
    a.textContent = text;
    next.append(a);
  }
  next.hidden = !href;

  $("tickets").replaceChildren(...order.tickets.map(ticket => {
    const li = document.createElement("li");
    const code = document.createElement("code");
    code.textContent = ticket.code;
    let label;
    if (ticket.place) {  // a general-admission place
      li.dataset.place = ticket.place;
      label = `${order.ga ? order.ga.name : "General admission"}, place ${ticket.place}`;
    } else {
      li.dataset.seatId = ticket.seat_id;
      label = PAGE.labels[String(ticket.seat_id)] || `Seat ${ticket.seat_id}`;
    }
    li.append(`${label}: `, code, qrFigure(order, ticket, label));
    return li;
  }));
  $("tickets-none").hidden = order.tickets.length > 0;
}

async function follow(started) {
  let delay = Date.now() - started < 120000 ? 1000 : 5000;   // slower after two minutes
  try {
    const order = await api(`/api/orders/${PAGE.order.order_id}`);
    flash("");
    show(order);
    if (isDone(order)) { $("order-following").hidden = true; return; }
  } catch (error) {
    flash(error.sentence);
    if (error.status === 401 || error.status === 404) { $("order-following").hidden = true; return; }
    delay = Math.max(delay, 2000);
  }
  setTimeout(() => follow(started), delay);
}

if (!PAGE.done) follow(Date.now());
