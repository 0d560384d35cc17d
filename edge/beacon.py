"""A public randomness beacon's rounds, checked offline (pure, no I/O): drand's chains,
when a round is due, and whether a round's signature is the chain's (issue 27: a draw
that even the operator cannot predict mixes in a round published after the commitment).

A drand round is a BLS12-381 threshold signature by the chain's group key over the round
number (unchained) or over the previous round's signature and the number (chained); its
randomness is sha256 of the signature. Nobody, the operator included, knows a round's
value before the chain's members publish it, and anybody can check it against the
chain's public key. The pairing check is py_ecc's (the Ethereum Foundation's
implementation), not ours.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from typing import Any

from onsale.kernel.beacon_chain import CHAINED, UNCHAINED_G1, Chain

# py_ecc raises the interpreter's recursion limit to 100,000 when it is imported, for
# its unoptimised curves, which this module does not use. With that limit a deeply
# nested JSON body overflows the C stack and kills the process (SIGSEGV) instead of
# raising RecursionError, so the limit goes back to what it was.
RECURSION_LIMIT = sys.getrecursionlimit()

from py_ecc.bls.hash_to_curve import hash_to_G1, hash_to_G2  # noqa: E402
from py_ecc.bls.point_compression import decompress_G1, decompress_G2  # noqa: E402
from py_ecc.bls.typing import G1Compressed, G2Compressed  # noqa: E402
from py_ecc.fields import optimized_bls12_381_FQ12 as FQ12  # noqa: E402
from py_ecc.optimized_bls12_381.optimized_curve import G1, G2, is_on_curve, neg  # noqa: E402
from py_ecc.optimized_bls12_381.optimized_curve import b as B1  # noqa: E402
from py_ecc.optimized_bls12_381.optimized_curve import b2 as B2  # noqa: E402
from py_ecc.optimized_bls12_381.optimized_pairing import final_exponentiate, pairing  # noqa: E402

sys.setrecursionlimit(RECURSION_LIMIT)

_DST = {UNCHAINED_G1: b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_",
        CHAINED: b"BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_NUL_"}


class BeaconError(ValueError):
    """A round that is not the chain's: a bad signature, another round's, or not due."""


@dataclass(frozen=True)
class Round:
    """A published round: its number, signature and (chained) the previous signature."""

    number: int
    signature: str                # hex
    previous_signature: str = ""  # hex; chained chains only

    @property
    def randomness(self) -> bytes:
        return hashlib.sha256(bytes.fromhex(self.signature)).digest()


def _g1(data: bytes) -> Any:
    point = decompress_G1(G1Compressed(int.from_bytes(data, "big")))
    if not is_on_curve(point, B1):
        raise BeaconError("not a point of the curve")
    return point


def _g2(data: bytes) -> Any:
    point = decompress_G2(G2Compressed((int.from_bytes(data[:48], "big"),
                                        int.from_bytes(data[48:], "big"))))
    if not is_on_curve(point, B2):
        raise BeaconError("not a point of the curve")
    return point


def message(chain: Chain, r: Round) -> bytes:
    """What the chain signed for round ``r``."""
    number = r.number.to_bytes(8, "big")
    if chain.scheme == CHAINED:
        return hashlib.sha256(bytes.fromhex(r.previous_signature) + number).digest()
    return hashlib.sha256(number).digest()


def verify(chain: Chain, r: Round) -> bytes:
    """The round's randomness if its signature is the chain's for its number, else
    ``BeaconError``. Offline: the chain's key is all it needs."""
    if chain.scheme not in _DST:
        raise BeaconError(f"unknown scheme {chain.scheme}")
    if r.number < 1:
        raise BeaconError("rounds start at 1")
    try:
        signature, key = bytes.fromhex(r.signature), bytes.fromhex(chain.public_key)
        bytes.fromhex(r.previous_signature)
        msg = message(chain, r)
        sha256: Any = hashlib.sha256
        product: Any
        if chain.scheme == UNCHAINED_G1:  # e(sig, g2) == e(H(m), pk)
            sig, pk = _g1(signature), _g2(key)
            h: Any = hash_to_G1(msg, _DST[UNCHAINED_G1], sha256)
            product = (pairing(G2, sig, final_exponentiate=False)
                       * pairing(neg(pk), h, final_exponentiate=False))
        else:  # e(pk, H(m)) == e(g1, sig)
            sig, pk = _g2(signature), _g1(key)
            h = hash_to_G2(msg, _DST[CHAINED], sha256)
            product = (pairing(h, pk, final_exponentiate=False)
                       * pairing(sig, neg(G1), final_exponentiate=False))
    except BeaconError:
        raise
    except (ValueError, TypeError, AssertionError) as exc:  # not hex, not a point
        raise BeaconError(f"round {r.number}: not a signature of this chain ({exc})") from None
    if final_exponentiate(product) != FQ12.one():
        raise BeaconError(f"round {r.number}: the signature is not {chain.name}'s")
    return r.randomness


def verify_due(chain: Chain, r: Round, now: float) -> bytes:
    """``verify``, and the round due by ``now``: a round from the future is not one the
    chain has published (a draw waits for it)."""
    if r.number > chain.round_at(now):
        raise BeaconError(f"round {r.number} is due at {chain.time_of(r.number)}, "
                          "not yet published")
    return verify(chain, r)
