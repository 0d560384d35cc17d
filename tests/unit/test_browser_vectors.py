"""The browser's seat-map codec and proof-of-work solver agree with the Python side.

tests/js/seatmap_codec.test.js decodes a snapshot document, its gzip-compressed
binary frame and a delta frame, and tests/js/pow.test.js solves a challenge, all
written there as literals (node --test, `make test`). These are the literals the
Python side produces: if seatmap/snapshot.py, seatmap/sequencer.py or edge/pow.py
change their output, this test fails and names the literal to update on both sides.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from onsale.edge.pow import leading_zero_bits, solve
from onsale.seatmap.sequencer import Entry, delta_frame
from onsale.seatmap.snapshot import (
    HELD,
    PAYMENT_PENDING,
    SOLD,
    SeatMap,
    decode,
    encode,
    encode_gzip,
)

JS_TESTS = Path(__file__).resolve().parents[1] / "js"

SNAPSHOT_JSON = (
    b'{"type":"snapshot","event_id":7,"version":"0/1A2B3C","seat_count":8,"status":"01321040",'
    b'"held":[2,1795956240,3,-12],"ga":[[9,0,120],[9,1,30],[10,0,0]]}')
SNAPSHOT_GZIP_HEX = (
    "1f8b0800000000000003158cc10ac2301044ff65cf2bee6e5a6b7a533fa3841234d88224c56c0b22febbdb"
    "db9b99c77c413f4b821e6a8e4b9d8a0242da52d6717e40df216ce95de792cda0235fe4ea6e66d41475bc97"
    "352bf4678b1a75adbbc24e981a32654a2f3b1804b9f3ad6f4fd2103a3cb0048467b465f048c842018d18dd"
    "0e4cd65108bf3f3b3e35f397000000")
DELTA_JSON = (
    b'{"type":"delta","event_id":7,"from":"0/1A2B3C","to":"0/1A2C00",'
    b'"changes":[[1,1,1795956300],[2,0],[5,3]],"ga":[[9,1,29]]}')
POW_CHALLENGE = "onsale-test-vector"
POW_SOLUTIONS = {8: "6b", 12: "1985"}


def seat_map() -> SeatMap:
    """Event 7: seat 2 and 5 held, 3 sold, 4 in payment (its deadline is not shown),
    7 never set (a gap: blocked); two GA tiers."""
    m = SeatMap(7, 0x1A2B3C)
    m.apply([(1, 0, None), (2, HELD, 1795956240), (3, SOLD, None),
             (4, PAYMENT_PENDING, 1795956999), (5, HELD, 1795956228), (6, 0, None),
             (8, 0, None)])
    m.apply_places([(9, 0, 120), (9, 1, 30), (10, 0, 0)])
    return m


def delta() -> Entry:
    return Entry("delta", 7, 0x1A2B3C, 0x1A2C00,
                 [(1, HELD, 1795956300), (2, 0, None), (5, SOLD, None)], places=[(9, 1, 29)])


def js_test(name: str) -> str:
    return (JS_TESTS / name).read_text()


def js_literal(text: str, name: str) -> str:
    """A string constant of a JS test: `const NAME =` then one quoted literal."""
    match = re.search(rf"const {name} =\s*(['\"])(.*?)\1;", text, re.DOTALL)
    assert match, f"no literal {name}"
    return match.group(2)


def test_the_snapshot_document_is_the_literal_the_browser_decodes() -> None:
    assert encode(seat_map()) == SNAPSHOT_JSON
    assert js_literal(js_test("seatmap_codec.test.js"), "SNAPSHOT_JSON") == SNAPSHOT_JSON.decode()


def test_the_binary_frame_is_the_literal_the_browser_inflates() -> None:
    frame = bytes.fromhex(SNAPSHOT_GZIP_HEX)
    assert frame[:4] == b"\x1f\x8b\x08\x00" and frame[4:8] == b"\0\0\0\0"  # gzip, mtime 0
    assert gzip.decompress(frame) == SNAPSHOT_JSON == gzip.decompress(encode_gzip(seat_map()))
    assert decode(frame) == seat_map()
    assert js_literal(js_test("seatmap_codec.test.js"), "SNAPSHOT_GZIP_HEX") == SNAPSHOT_GZIP_HEX


def test_the_delta_frame_is_the_literal_the_browser_applies() -> None:
    assert delta_frame(delta()) == DELTA_JSON
    assert js_literal(js_test("seatmap_codec.test.js"), "DELTA_JSON") == DELTA_JSON.decode()
    # What the JS test then checks the browser shows, on the Python side.
    applied = seat_map()
    applied.apply(delta().changes)
    applied.apply_places(delta().places)
    assert applied.status.decode() == "10323040"
    assert applied.expires == {1: 1795956300}
    assert applied.places_left() == {9: 149, 10: 0}


def test_the_proof_of_work_solutions_are_the_reference_solvers() -> None:
    text = js_test("pow.test.js")
    assert f'const CHALLENGE = "{POW_CHALLENGE}";' in text
    for difficulty, solution in POW_SOLUTIONS.items():
        assert solve(POW_CHALLENGE, difficulty) == solution
        assert f'solve(CHALLENGE, {difficulty}, ' in text and f'"{solution}"' in text
    assert leading_zero_bits(bytes([0, 0, 0x3F])) == 18
