"""Ports for servers a test or bench starts: below the ephemeral range, where no
outgoing connection takes them between the check and the server's bind."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from onsale import embedded


def test_a_free_port_is_below_the_ephemeral_range_and_bindable() -> None:
    low = embedded._ephemeral_low()
    for _ in range(20):
        port = embedded.free_port()
        assert max(1024, low - embedded.PORTS_BELOW) <= port < low
        with socket.socket() as s:
            s.bind(("0.0.0.0", port))


def test_a_port_in_use_is_never_given(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        busy = taken.getsockname()[1]
        taken.listen()
        real = embedded.random.randrange
        tries = iter([busy, busy])
        monkeypatch.setattr(embedded.random, "randrange",
                            lambda a, b: next(tries, None) or real(a, b))
        assert embedded.free_port() != busy


def test_a_port_given_is_not_given_again_before_its_server_binds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    first = embedded.free_port()  # nothing listens on it yet
    real = embedded.random.randrange
    tries = iter([first, first])
    monkeypatch.setattr(embedded.random, "randrange",
                        lambda a, b: next(tries, None) or real(a, b))
    assert embedded.free_port() != first


def test_without_the_kernel_file_the_linux_default_is_assumed(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(embedded, "EPHEMERAL_RANGE", tmp_path / "missing")
    assert embedded._ephemeral_low() == 32768
