"""A drand-style chain of the tests' own (a BLS key made here, rounds signed on demand)
and an HTTP relay serving it, for draws that wait for a round (there is no network here,
and the public chains' future rounds cannot be made). The verification side is the
production code's; only the signing is here."""

from __future__ import annotations

import hashlib
import json
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from py_ecc.bls.hash_to_curve import hash_to_G1
from py_ecc.bls.point_compression import compress_G1, compress_G2
from py_ecc.optimized_bls12_381 import G2, curve_order, multiply
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from onsale.edge.beacon import RECURSION_LIMIT
from onsale.kernel.beacon_chain import UNCHAINED_G1, Chain

sys.setrecursionlimit(RECURSION_LIMIT)  # py_ecc raises it on import (edge/beacon.py)
DST = b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_"


class OwnChain:
    """An unchained G1 chain (quicknet's scheme) with a period of ``period`` seconds."""

    def __init__(self, period: int = 1, name: str = "testnet") -> None:
        self.secret = secrets.randbelow(curve_order - 1) + 1
        x, y = compress_G2(multiply(G2, self.secret))
        key = (x.to_bytes(48, "big") + y.to_bytes(48, "big")).hex()
        self.chain = Chain(name, hashlib.sha256(key.encode()).hexdigest(), key, UNCHAINED_G1,
                           period, int(time.time()) - 3600)

    def sign(self, number: int) -> str:
        message = hashlib.sha256(number.to_bytes(8, "big")).digest()
        point = multiply(hash_to_G1(message, DST, hashlib.sha256), self.secret)
        return int(compress_G1(point)).to_bytes(48, "big").hex()

    def info_file(self, folder: Path) -> Path:
        path = folder / f"{self.chain.name}.json"
        info = {"public_key": self.chain.public_key, "period": self.chain.period,
                "genesis_time": self.chain.genesis_time, "hash": self.chain.hash,
                "schemeID": self.chain.scheme, "name": self.chain.name}
        path.write_text(json.dumps(info))
        return path


class Relay:
    """``GET /{hash}/public/{round}`` as drand's relays answer it: 425 before the round
    is due; ``down``: 503 for everything; ``liar``: rounds signed by another key."""

    def __init__(self, chain: OwnChain) -> None:
        self.chain = chain
        self.down = False
        self.liar = OwnChain(chain.chain.period)
        self.asked: list[tuple[str, int]] = []
        self.app = Starlette(routes=[Route("/{chain}/public/{number:int}", self.public)])

    async def public(self, request: Request) -> JSONResponse:
        number: int = request.path_params["number"]
        host = request.url.hostname or ""
        self.asked.append((host, number))
        if self.down:
            return JSONResponse({"error": "down"}, status_code=503)
        if request.path_params["chain"] != self.chain.chain.hash:
            return JSONResponse({"error": "unknown chain"}, status_code=404)
        if time.time() < self.chain.chain.time_of(number):
            return JSONResponse({"error": "too early"}, status_code=425)
        signer = self.liar if host == "liar" else self.chain
        signature = signer.sign(number)
        body: dict[str, Any] = {
            "round": number, "signature": signature,
            "randomness": hashlib.sha256(bytes.fromhex(signature)).hexdigest()}
        return JSONResponse(body)
