"""A public randomness beacon's chain: which rounds are due when, and which round a
draw commits to (pure; the signature check is ``onsale.edge.beacon``'s).

A chain is named by ``ONSALE_BEACON`` (docs/edge.md#a-draw-nobody-can-predict): one of
drand's public chains this module knows (``quicknet``, ``mainnet``), or a file holding
another chain's ``/info`` document (a chain of one's own, a test chain), or ``off``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from onsale.kernel.timefmt import utc_iso

UNCHAINED_G1 = "bls-unchained-g1-rfc9380"   # signatures on G1, the key on G2 (quicknet)
CHAINED = "pedersen-bls-chained"            # signatures on G2, the key on G1 (mainnet)
SCHEMES = (UNCHAINED_G1, CHAINED)


class ChainError(ValueError):
    """A chain description that is not one."""


@dataclass(frozen=True)
class Chain:
    """A drand chain, as its ``/info`` document describes it."""

    name: str
    hash: str            # the chain hash: sha256 of its info, its name on every API
    public_key: str      # hex: the group's key (G2 for UNCHAINED_G1, G1 for CHAINED)
    scheme: str
    period: int          # seconds between rounds
    genesis_time: int    # Unix seconds of round 1

    def round_at(self, unix: float) -> int:
        """The latest round due at ``unix`` (0 before the genesis)."""
        if unix < self.genesis_time:
            return 0
        return int((unix - self.genesis_time) // self.period) + 1

    def time_of(self, round_: int) -> int:
        """When ``round_`` is due (Unix seconds)."""
        return self.genesis_time + (round_ - 1) * self.period

    def first_round_after(self, unix: float) -> int:
        """The first round due strictly after ``unix``: nobody knows its value then."""
        return self.round_at(unix) + 1

    def document(self) -> dict[str, Any]:
        return asdict(self)


QUICKNET = Chain(
    "quicknet", "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971",
    "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5"
    "776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a"
    "4bc09e76eae8991ef5ece45a", UNCHAINED_G1, 3, 1692803367)
MAINNET = Chain(
    "mainnet", "8990e7a9aaed2ffed73dbd7092123d6f289930540d7651336225dc172e51b2ce",
    "868f005eb8e6e4ca0a47c8a77ceaa5309a47978a7c71bc5cce96366b5d7a569937c529eeda66c7293784"
    "a9402801af31", CHAINED, 30, 1595431050)
CHAINS = {c.name: c for c in (QUICKNET, MAINNET)}
KNOWN_HASHES = {c.hash: c for c in CHAINS.values()}


def chain_from_info(info: dict[str, Any], name: str = "") -> Chain:
    """A chain from its drand ``/info`` document (``hash``, ``public_key``, ``period``,
    ``genesis_time``, ``schemeID``) or from ``Chain.document()``'s shape."""
    try:
        scheme = str(info.get("schemeID") or info["scheme"])
        chain = Chain(str(name or info.get("name") or info["hash"][:12]), str(info["hash"]),
                      str(info["public_key"]), scheme, int(info["period"]),
                      int(info["genesis_time"]))
        bytes.fromhex(chain.hash)
        bytes.fromhex(chain.public_key)
    except (KeyError, TypeError, ValueError) as exc:
        raise ChainError(f"not a chain's info document ({exc})") from None
    if scheme not in SCHEMES:
        raise ChainError(f"scheme {scheme!r} is not one onsale checks ({', '.join(SCHEMES)})")
    if chain.period < 1:
        raise ChainError("the period must be at least 1 s")
    known = KNOWN_HASHES.get(chain.hash)
    if known is not None and {**known.document(), "name": chain.name} != chain.document():
        raise ChainError(f"the hash is {known.name}'s, the rest of the document is not")
    return chain


def chain_setting(value: str) -> Chain | None:
    """``ONSALE_BEACON``: ``off`` (or empty), a known chain's name, or an info file."""
    value = value.strip()
    if value in ("", "off"):
        return None
    if value in CHAINS:
        return CHAINS[value]
    path = Path(value)
    if not path.is_file():
        raise ChainError(f"{value!r} is neither off, {', '.join(CHAINS)} nor a chain's "
                         "info file")
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ChainError(f"{value}: {exc}") from None
    if not isinstance(info, dict):
        raise ChainError(f"{value}: not a JSON object")
    return chain_from_info(info)


def commitment_document(chain: Chain, onsale_at: float) -> dict[str, Any]:
    """What an event publishes with its seed's hash: the chain, and the round the draw
    will mix in, the first one due after the sale opens."""
    return {"chain": chain.document(), "round": chain.first_round_after(onsale_at)}


def committed_chain(committed: dict[str, Any]) -> Chain:
    return chain_from_info(committed["chain"])


def round_to_draw(committed: dict[str, Any], closed_at: float) -> int:
    """The round a draw mixes in: the committed one, or, when the pre-queue closed
    after it was due (a late admitter), the first due after the close, so that nobody
    can have seen the round while the participants could still change."""
    chain = committed_chain(committed)
    return max(int(committed["round"]), chain.first_round_after(closed_at))


def beacon_summary(committed: dict[str, Any] | None,
                   outcome: dict[str, Any] | None) -> dict[str, Any] | None:
    """The beacon as the event document shows it to shoppers: the chain and round, and
    whether the draw used it (``drawn``), still waits for it (``waiting``) or fell back
    to the seed alone (``fallback``, with the operator's reason)."""
    if committed is None:
        return None
    chain = committed_chain(committed)
    state, reason, drawn_round = "waiting", None, None
    if outcome is not None and "fallback" in outcome:
        state, reason = "fallback", str(outcome["fallback"]["reason"])
    elif outcome is not None:
        state, drawn_round = "drawn", int(outcome["round"])
    return {"chain": chain.name, "chain_hash": chain.hash, "round": int(committed["round"]),
            "due_at": utc_iso(datetime.fromtimestamp(chain.time_of(int(committed["round"])), UTC)),
            "state": state,
            "drawn_round": drawn_round, "fallback_reason": reason}
