"""Every problem code the API can return, as a sentence for a shopper or an
operator. The pages show these, never a status line or raw JSON
(``web/static/js/api.js`` reads them from the page; tests/unit/test_web_messages.py
checks that every code in ``kernel.problems.TITLES`` has one)."""

from __future__ import annotations

SENTENCES: dict[str, str] = {
    "invalid_json": "Something went wrong sending your request. Please try again.",
    "invalid_request": "Some of the information you entered is not valid. Please check it.",
    "unsupported_media_type": "Something went wrong sending your request. Please reload the "
                              "page and try again.",
    "cross_site_request": "This request did not come from an onsale page, so it was refused. "
                          "Please open onsale directly and try again.",
    "invalid_seats": "That seat selection is not valid. Pick between 1 and 6 seats.",
    "invalid_email": "Please enter a valid email address.",
    "weak_password": "Your password must be between 8 and 256 characters.",
    "email_taken": "An account with this email already exists. Sign in instead.",
    "bad_credentials": "That email and password do not match an account.",
    "authentication_required": "Please sign in to continue.",
    "session_unavailable": "We cannot check your sign-in right now. Please try again in "
                           "a moment.",
    "sign_in_busy": "Lots of people are signing in right now. Please try again in a moment.",
    "admin_required": "This page is for operators. Sign in with the operator token.",
    "idempotency_key_required": "Something went wrong sending your request. Please try again.",
    "idempotency_conflict": "This request was already sent with different details. "
                            "Please start again.",
    "event_not_found": "We could not find this event.",
    "shard_not_found": "There is no shard with that number.",
    "shard_not_active": "That shard takes no new events. Choose another.",
    "event_already_open": "This event can no longer move: its queue opens soon or has "
                          "opened, or it has holds.",
    "move_not_verified": "The event's copy did not match, so it stayed where it was. "
                         "Try again.",
    "venue_not_found": "We could not load this seat map. Please reload the page.",
    "hold_not_found": "We could not find these seats for your account. They may have "
                      "been released.",
    "hold_not_releasable": "These seats can no longer be released: their payment has started.",
    "hold_expired": "Your hold on these seats has expired. Please choose seats again.",
    "sale_not_open": "The sale for this event has not opened yet.",
    "price_changed": "The price changed after you picked these seats. Please choose again.",
    "seats_unavailable": "Sorry, some of those seats were just taken by someone else.",
    "sold_out": "Sorry, that tier just sold out.",
    "insufficient_quantity": "Fewer places are left than you asked for: try a smaller number.",
    "invalid_quantity": "That number of places cannot be bought in one go.",
    "ga_tier_not_found": "That ticket type is not on sale for this event.",
    "ticket_limit_exceeded": "That would take you over the ticket limit for this event.",
    "inventory_unavailable": "Reservations are temporarily unavailable. Please try again "
                             "in a moment.",
    "hold_checked_out": "These seats have already been paid for.",
    "checkout_in_progress": "A payment for these seats is already in progress.",
    "hold_expiring": "Too little time is left on your hold to pay. Please choose seats again.",
    "invalid_payment_method": "Please check the card number.",
    "payments_unavailable": "Payments are not available right now. Your seats stay held; "
                            "please try again shortly.",
    "order_not_found": "We could not find this order for your account.",
    "invalid_signature": "The payment notification could not be verified.",
    "invalid_webhook": "The payment notification could not be read.",
    "admission_required": "Please join the queue for this event first.",
    "admission_invalid": "Your access to this sale is not valid. Please join the queue again.",
    "admission_expired": "Your shopping session has ended. Please join the queue again.",
    "admission_wrong_event": "Your access is for another event. Please join this event's "
                             "queue.",
    "admission_wrong_account": "This access belongs to another account. Please join the "
                               "queue with your own account.",
    "admission_revoked": "You entered the sale on another device or tab, so this one was "
                         "signed out of the sale.",
    "admission_unavailable": "We cannot check your access right now. Please try again "
                             "in a moment.",
    "too_many_sockets": "The seat map is open in too many tabs. Close one to see live "
                        "updates here.",
    "not_in_queue": "You are not in the queue for this event yet.",
    "queue_not_open": "The queue for this event has not opened yet.",
    "queue_closed": "The queue for this event is closed.",
    "queue_unavailable": "The waiting room is busy. You keep your place; we will retry.",
    "rate_limited": "You are going a little fast. Please wait a moment and try again.",
    "pow_required": "Your browser needs to finish a short check before joining.",
    "pow_invalid": "The browser check did not pass. Please try again.",
    "pow_replayed": "That browser check was already used. Your browser will do a new one.",
    "risk_refused": "This join looks automated. Join from an ordinary browser, or wait a few "
                    "minutes and try again.",
    "policy_frozen": "The queue policy cannot change once the sale is open.",
    "draw_page_not_found": "The draw has fewer pages than that. Start again from the first page.",
    "beacon_not_committed": "This event's draw uses the seed alone: there is no beacon round.",
    "beacon_recorded": "The draw already has its beacon round, or a fallback.",
    "beacon_not_overdue": "The beacon round is not overdue yet. The draw waits for it.",
    "invalid_arrivals": "The arrivals file could not be read.",
    "lab_unavailable": "The lab stopped during this run. Please run it again.",
    "not_found": "We could not find that page.",
    "method_not_allowed": "That action is not available here.",
    "internal_error": "Something went wrong on our side. Please try again.",
    "headers_too_large": "Your browser sent more than this site accepts. Clear this site's "
                         "cookies and try again.",
    "payload_too_large": "That was more than this site accepts in one go.",
    "request_timeout": "The connection was too slow. Please try again.",
    "overloaded": "The site is very busy right now. Please try again in a moment.",
}

FALLBACK = "Something went wrong. Please try again."


def sentence(code: str | None) -> str:
    """The human sentence for a problem code (a generic one for unknown codes)."""
    return SENTENCES.get(code or "", FALLBACK)
