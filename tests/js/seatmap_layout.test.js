// The venue layout (web/static/js/seatmap_layout.js): columns -> typed arrays,
// sections -> rows -> seats, the pointer's grid, labels and money.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  layoutFrom, money, seatInfo, seatLabel, seatNear, seatPitch,
} from "../../web/static/js/seatmap_layout.js";

// Two sections: A has row 1 (seats 10 and 11, numbered 2 and 1) and row 2 (seat 12);
// B has row 1 (seats 20 and 21). Layout units: seats 10 apart.
const VENUE = {
  seats: {
    seat_id: [10, 11, 12, 20, 21],
    section: ["A", "A", "A", "B", "B"],
    row: ["1", "1", "2", "1", "1"],
    number: [2, 1, 1, 1, 2],
    x: [0, 10, 0, 100, 110],
    y: [0, 0, 10, 0, 0],
    tier_id: [1, 1, 2, 2, 2],
  },
  tiers: [{ tier_id: 1, name: "Stalls", price_minor: 15000 },
          { tier_id: 2, name: "Circle", price_minor: 9950 }],
};

test("a layout indexes seats by id and keeps sections and rows in layout order", () => {
  const layout = layoutFrom(VENUE);
  assert.equal(layout.n, 5);
  assert.deepEqual([...layout.ids], [10, 11, 12, 20, 21]);
  assert.equal(layout.indexOf.length, 22);
  assert.deepEqual([10, 11, 12, 20, 21].map(id => layout.indexOf[id]), [0, 1, 2, 3, 4]);
  assert.equal(layout.indexOf[13], -1);
  assert.deepEqual([...layout.tierOf], [1, 1, 2, 2, 2]);
  // Seats of a row by number, not by id.
  assert.deepEqual([...layout.sections].map(([s, rows]) => [s, [...rows]]),
                   [["A", [["1", [11, 10]], ["2", [12]]]], ["B", [["1", [20, 21]]]]]);
  assert.deepEqual(layout.bounds, { minX: 0, minY: 0, maxX: 110, maxY: 10 });
  assert.equal(layout.pitch, 10);
  // Cells of two pitches (20 units), 7 to a row of the grid.
  assert.deepEqual(layout.grid.cell, 20);
  assert.deepEqual(layout.grid.cols, 7);
  assert.deepEqual([...layout.grid.cells], [[0, [0, 1, 2]], [5, [3, 4]]]);
});

test("the pitch is the shortest step between consecutive seats, 1 when there is none", () => {
  const xs = Float32Array.from([0, 3, 3, 10]), ys = Float32Array.from([0, 4, 4, 4]);
  assert.equal(seatPitch(xs, ys, 4), 5);        // 5, then 0 (ignored), then 7
  assert.equal(seatPitch(xs, ys, 1), 1);
  assert.equal(seatPitch(new Float32Array(0), new Float32Array(0), 0), 1);
});

test("an empty venue lays out to nothing, and nothing is ever near", () => {
  const layout = layoutFrom({ seats: { seat_id: [], section: [], row: [], number: [], x: [],
                                       y: [], tier_id: [] } });
  assert.equal(layout.n, 0);
  assert.deepEqual(layout.bounds, { minX: 0, minY: 0, maxX: 0, maxY: 0 });
  assert.equal(layout.pitch, 1);
  assert.equal(seatNear(layout, 0, 0, 5), null);
  assert.equal(seatInfo(layout, 1), null);
});

test("the seat under the pointer is the nearest one within the radius", () => {
  const layout = layoutFrom(VENUE);
  assert.equal(seatNear(layout, 9, 1, 7), 11);
  assert.equal(seatNear(layout, 1, 8, 7), 12);
  assert.equal(seatNear(layout, 104, 0, 7), 20);
  assert.equal(seatNear(layout, 109, -2, 7), 21);
  assert.equal(seatNear(layout, 50, 0, 7), null);       // between the sections
  assert.equal(seatNear(layout, 0, 0, 0), 10);          // exactly on it
  assert.equal(seatNear(layout, 130, 0, 25), 21);       // a radius wider than a cell
  assert.equal(seatNear(layout, -40, 0, 7), null);      // left of the grid
});

test("a seat's info and label, as the pages write them", () => {
  const layout = layoutFrom(VENUE);
  const info = seatInfo(layout, 12);
  assert.deepEqual(info, { seatId: 12, section: "A", row: "2", number: 1, tierId: 2,
                           tier: "Circle", priceMinor: 9950 });
  assert.equal(seatLabel(info), "Section A, row 2, seat 1");
  assert.equal(seatInfo(layout, 13), null);
  assert.equal(seatInfo(layout, 99), null);
  assert.equal(seatInfo(layout, -1), null);
  const untiered = layoutFrom({ seats: { ...VENUE.seats, tier_id: [5, 5, 5, 5, 5] } });
  assert.deepEqual(seatInfo(untiered, 10), { seatId: 10, section: "A", row: "1", number: 2,
                                              tierId: 5, tier: "", priceMinor: 0 });
});

test("money is written like the server-rendered pages: minor units, the currency's digits", () => {
  assert.equal(money(15000, "USD"), "150.00 USD");
  assert.equal(money(123456789, "EUR"), "1,234,567.89 EUR");
  assert.equal(money(5, "GBP"), "0.05 GBP");
  assert.equal(money(5000, "JPY"), "5,000 JPY");
  assert.equal(money(5000, "jpy"), "5,000 jpy");
  assert.equal(money(0, "KRW"), "0 KRW");
});
