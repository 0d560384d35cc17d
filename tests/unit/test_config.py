"""kernel.config: Settings.from_env."""

from __future__ import annotations

import dataclasses

import pytest

from onsale.kernel.config import ConfigError, Settings

BASE = {
    "DATABASE_URL": "postgresql://user@db.example/onsale",
    "ONSALE_SECRET_KEY": "s" * 16,
    "ONSALE_ADMIN_TOKEN": "a" * 16,
}


def load(**extra: str) -> Settings:
    return Settings.from_env({**BASE, **extra})


def fails(env: dict[str, str], *mentions: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env)
    message = str(info.value)
    for word in mentions:
        assert word in message, message
    return info.value


def test_minimal_environment_and_defaults() -> None:
    s = Settings.from_env(dict(BASE))
    assert s.database_url == BASE["DATABASE_URL"]
    assert s.secret_key == "s" * 16
    assert s.admin_token == "a" * 16
    assert s.redis_url is None
    assert s.hold_ttl_seconds == 300
    assert s.max_tickets_per_account == 6
    assert s.max_seats_per_hold == 6
    assert s.db_pool_min == 2
    assert s.db_pool_max == 8
    assert s.db_acquire_timeout == 0.5

    assert s.db_statement_timeout_ms == 5000
    assert s.sweep_interval == 1.0
    assert s.sweep_batch == 500
    assert s.cookie_secure is False
    assert s.session_max_age == 12 * 3600


def test_from_env_defaults_match_the_dataclass_defaults() -> None:
    direct = Settings(database_url=BASE["DATABASE_URL"], redis_url=None,
                      secret_key=BASE["ONSALE_SECRET_KEY"], admin_token=BASE["ONSALE_ADMIN_TOKEN"])
    assert Settings.from_env(dict(BASE)) == direct


def test_settings_are_frozen() -> None:
    s = load()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.hold_ttl_seconds = 5  # type: ignore[misc]


def test_reads_os_environ_when_no_mapping_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in BASE.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("ONSALE_HOLD_TTL_SECONDS", "42")
    assert Settings.from_env().hold_ttl_seconds == 42


def test_every_value_is_read() -> None:
    s = load(
        REDIS_URL="redis://cache:6379/0",
        ONSALE_HOLD_TTL_SECONDS="600",
        ONSALE_MAX_TICKETS_PER_ACCOUNT="8",
        ONSALE_MAX_SEATS_PER_HOLD="4",
        ONSALE_DB_POOL_MIN="0",
        ONSALE_DB_POOL_MAX="50",
        ONSALE_DB_ACQUIRE_TIMEOUT="0.5",
        ONSALE_DB_STATEMENT_TIMEOUT_MS="250",
        ONSALE_SWEEP_INTERVAL="2.5",
        ONSALE_SWEEP_BATCH="1000",
        ONSALE_COOKIE_SECURE="true",
        ONSALE_SESSION_MAX_AGE="600",
    )
    assert s.redis_url == "redis://cache:6379/0"
    assert s.hold_ttl_seconds == 600
    assert s.max_tickets_per_account == 8
    assert s.max_seats_per_hold == 4
    assert s.db_pool_min == 0
    assert s.db_pool_max == 50
    assert s.db_acquire_timeout == 0.5
    assert s.db_statement_timeout_ms == 250
    assert s.sweep_interval == 2.5
    assert s.sweep_batch == 1000
    assert s.cookie_secure is True
    assert s.session_max_age == 600


def test_empty_values_mean_default() -> None:
    s = load(REDIS_URL="", ONSALE_HOLD_TTL_SECONDS="", ONSALE_COOKIE_SECURE="",
             ONSALE_SWEEP_INTERVAL="")
    assert s.redis_url is None
    assert s.hold_ttl_seconds == 300
    assert s.cookie_secure is False
    assert s.sweep_interval == 1.0


# --- required values -----------------------------------------------------------------------


def test_empty_environment_names_the_database() -> None:
    fails({}, "DATABASE_URL")


@pytest.mark.parametrize("missing", sorted(BASE))
def test_each_required_variable(missing: str) -> None:
    env = {k: v for k, v in BASE.items() if k != missing}
    fails(env, missing)
    fails({**env, missing: ""}, missing)


@pytest.mark.parametrize("name", ["ONSALE_SECRET_KEY", "ONSALE_ADMIN_TOKEN"])
def test_secrets_need_sixteen_characters(name: str) -> None:
    fails({**BASE, name: "x" * 15}, name, "16")
    assert getattr(load(**{name: "y" * 16}), name.removeprefix("ONSALE_").lower()) == "y" * 16


def test_error_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)


# --- integers ------------------------------------------------------------------------------

INTS = [
    ("ONSALE_HOLD_TTL_SECONDS", "hold_ttl_seconds", 1, 3600),
    ("ONSALE_MAX_TICKETS_PER_ACCOUNT", "max_tickets_per_account", 1, 100),
    ("ONSALE_MAX_SEATS_PER_HOLD", "max_seats_per_hold", 1, 100),
    ("ONSALE_DB_POOL_MIN", "db_pool_min", 0, 1000),
    ("ONSALE_DB_POOL_MAX", "db_pool_max", 1, 1000),
    ("ONSALE_DB_STATEMENT_TIMEOUT_MS", "db_statement_timeout_ms", 10, 600000),
    ("ONSALE_SWEEP_BATCH", "sweep_batch", 1, 100000),
    ("ONSALE_SESSION_MAX_AGE", "session_max_age", 60, 30 * 86400),
    ("ONSALE_PAYMENT_GRACE_SECONDS", "payment_grace_seconds", 0, 86400),
    ("ONSALE_CHECKOUT_MIN_REMAINING_SECONDS", "checkout_min_remaining_seconds", 0, 3600),
    ("ONSALE_PAYMENT_FIRST_CHECK_SECONDS", "payment_first_check_seconds", 0, 3600),
    ("ONSALE_PAYMENT_RETRY_SECONDS", "payment_retry_seconds", 1, 3600),
    ("ONSALE_OUTBOX_STREAM_MAXLEN", "outbox_stream_maxlen", 1000, 1_000_000_000),
    ("ONSALE_OUTBOX_RETENTION_SECONDS", "outbox_retention_seconds", 60, 365 * 86400),
]


@pytest.mark.parametrize(("var", "attr", "lo", "hi"), INTS)
def test_integer_bounds_are_inclusive(var: str, attr: str, lo: int, hi: int) -> None:
    # The pool minimum may not exceed the maximum, so give it room at its top.
    room = {"ONSALE_DB_POOL_MAX": "1000"} if var == "ONSALE_DB_POOL_MIN" else {}
    assert getattr(load(**{var: str(lo)}), attr) == lo
    assert getattr(load(**{**room, var: str(hi)}), attr) == hi


@pytest.mark.parametrize(("var", "attr", "lo", "hi"), INTS)
def test_integers_out_of_range(var: str, attr: str, lo: int, hi: int) -> None:
    fails({**BASE, var: str(lo - 1)}, var, str(lo), str(hi))
    fails({**BASE, var: str(hi + 1)}, var, str(lo), str(hi))


@pytest.mark.parametrize(("var", "attr", "lo", "hi"), INTS)
@pytest.mark.parametrize("raw", ["abc", "1.5", "5s", "0x10", "1e3", "--5", "true"])
def test_malformed_integers(var: str, attr: str, lo: int, hi: int, raw: str) -> None:
    fails({**BASE, var: raw}, var, repr(raw))


# --- numbers -------------------------------------------------------------------------------

FLOATS = [
    ("ONSALE_DB_ACQUIRE_TIMEOUT", "db_acquire_timeout"),
    ("ONSALE_SWEEP_INTERVAL", "sweep_interval"),
]


@pytest.mark.parametrize(("var", "attr"), FLOATS)
@pytest.mark.parametrize(("raw", "value"), [("0.25", 0.25), ("3", 3.0), ("1e-3", 0.001)])
def test_numbers(var: str, attr: str, raw: str, value: float) -> None:
    assert getattr(load(**{var: raw}), attr) == value


@pytest.mark.parametrize(("var", "attr"), FLOATS)
@pytest.mark.parametrize("raw", ["0", "-1", "-0.5", "0.0"])
def test_numbers_must_be_positive(var: str, attr: str, raw: str) -> None:
    fails({**BASE, var: raw}, var, "positive")


@pytest.mark.parametrize(("var", "attr"), FLOATS)
@pytest.mark.parametrize("raw", ["abc", "1,5", "2s", "one"])
def test_malformed_numbers(var: str, attr: str, raw: str) -> None:
    fails({**BASE, var: raw}, var, repr(raw))


@pytest.mark.parametrize(("var", "attr"), FLOATS)
def test_nan_is_not_a_positive_number(var: str, attr: str) -> None:
    """float('nan') parses, and ``nan <= 0`` is False, so the positivity check lets it in."""
    fails({**BASE, var: "nan"}, var)


# --- booleans ------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["1", "true", "TRUE", "True", "yes", "YES", "on", "On"])
def test_true_values(raw: str) -> None:
    assert load(ONSALE_COOKIE_SECURE=raw).cookie_secure is True


@pytest.mark.parametrize("raw", ["0", "false", "FALSE", "no", "No", "off", "OFF"])
def test_false_values(raw: str) -> None:
    # False is also the default; test_true_values and test_malformed_booleans show the
    # variable is read at all.
    assert load(ONSALE_COOKIE_SECURE=raw).cookie_secure is False


@pytest.mark.parametrize("raw", ["maybe", "2", "-1", "y", "n", "enabled", "t", "f", " "])
def test_malformed_booleans(raw: str) -> None:
    fails({**BASE, "ONSALE_COOKIE_SECURE": raw}, "ONSALE_COOKIE_SECURE", repr(raw))


def test_unrelated_variables_are_ignored() -> None:
    assert load(ONSALE_UNKNOWN="whatever", PATH="/bin") == load()


def test_pool_min_above_max_is_a_config_error() -> None:
    from onsale.kernel.config import ConfigError, Settings

    env = {"DATABASE_URL": "postgresql://x/y", "ONSALE_SECRET_KEY": "s" * 16,
           "ONSALE_ADMIN_TOKEN": "a" * 16, "ONSALE_DB_POOL_MIN": "30", "ONSALE_DB_POOL_MAX": "10"}
    with pytest.raises(ConfigError, match="must not exceed"):
        Settings.from_env(env)


# --- payments --------------------------------------------------------------------------------

STRIPE = {"ONSALE_STRIPE_API_BASE": "http://127.0.0.1:8100/",
          "ONSALE_STRIPE_SECRET_KEY": "sk_test_" + "k" * 16,
          "ONSALE_STRIPE_PUBLISHABLE_KEY": "pk_test_" + "p" * 16,
          "ONSALE_STRIPE_WEBHOOK_SECRET": "whsec_" + "w" * 16}


def test_payments_are_off_without_a_secret_key() -> None:
    s = load()
    assert (s.payments_configured, s.stripe_secret_key, s.stripe_api_base) == (
        False, "", "https://api.stripe.com")
    assert (s.payment_grace_seconds, s.checkout_min_remaining_seconds) == (600, 15)


def test_provider_settings_are_read_and_the_urls_normalised() -> None:
    s = load(**STRIPE, ONSALE_STRIPE_TIMEOUT="2.5", ONSALE_PUBLIC_URL="https://shop.example/")
    assert s.payments_configured
    assert (s.stripe_api_base, s.stripe_secret_key, s.stripe_publishable_key,
            s.stripe_webhook_secret, s.stripe_timeout, s.public_url) == (
        "http://127.0.0.1:8100", "sk_test_" + "k" * 16, "pk_test_" + "p" * 16,
        "whsec_" + "w" * 16, 2.5, "https://shop.example")


def test_the_api_base_defaults_to_stripe_and_restricted_keys_are_accepted() -> None:
    env = {k: v for k, v in STRIPE.items() if k != "ONSALE_STRIPE_API_BASE"}
    s = load(**{**env, "ONSALE_STRIPE_SECRET_KEY": "rk_live_" + "r" * 16})
    assert (s.stripe_api_base, s.stripe_secret_key) == ("https://api.stripe.com",
                                                        "rk_live_" + "r" * 16)


def test_the_other_keys_are_needed_only_with_a_secret_key() -> None:
    s = load(ONSALE_STRIPE_PUBLISHABLE_KEY="", ONSALE_STRIPE_WEBHOOK_SECRET="")
    assert not s.payments_configured


@pytest.mark.parametrize(("override", "needle"), [
    ({"ONSALE_STRIPE_API_BASE": "ftp://x"}, "ONSALE_STRIPE_API_BASE"),
    ({"ONSALE_STRIPE_SECRET_KEY": "k" * 24}, "ONSALE_STRIPE_SECRET_KEY"),  # no sk_/rk_
    ({"ONSALE_STRIPE_SECRET_KEY": "pk_test_" + "k" * 16}, "ONSALE_STRIPE_SECRET_KEY"),
    ({"ONSALE_STRIPE_SECRET_KEY": "sk_short"}, "ONSALE_STRIPE_SECRET_KEY"),
    ({"ONSALE_STRIPE_PUBLISHABLE_KEY": ""}, "ONSALE_STRIPE_PUBLISHABLE_KEY"),
    ({"ONSALE_STRIPE_PUBLISHABLE_KEY": "sk_test_" + "p" * 16}, "ONSALE_STRIPE_PUBLISHABLE_KEY"),
    ({"ONSALE_STRIPE_WEBHOOK_SECRET": ""}, "ONSALE_STRIPE_WEBHOOK_SECRET"),
    ({"ONSALE_STRIPE_WEBHOOK_SECRET": "w" * 24}, "ONSALE_STRIPE_WEBHOOK_SECRET"),
    ({"ONSALE_STRIPE_TIMEOUT": "0"}, "ONSALE_STRIPE_TIMEOUT"),
    ({"ONSALE_CRASH_AT": "somewhere"}, "ONSALE_CRASH_AT"),
])
def test_bad_provider_settings_are_config_errors(override: dict[str, str], needle: str) -> None:
    from onsale.kernel.config import ConfigError, Settings

    with pytest.raises(ConfigError, match=needle):
        Settings.from_env({**BASE, **STRIPE, **override})


def test_the_old_psp_settings_no_longer_configure_payments() -> None:
    s = load(ONSALE_PSP_URL="http://127.0.0.1:8100", ONSALE_PSP_API_KEY="k" * 16,
             ONSALE_PSP_WEBHOOK_SECRET="w" * 16)
    assert not s.payments_configured


def test_crash_points_are_accepted_by_name() -> None:
    assert load(ONSALE_CRASH_AT="after_sale_commit").crash_at == "after_sale_commit"


# --- sessions and sign-in (docs/configuration.md#sessions-and-sign-in) ---------------------


def test_session_and_sign_in_defaults() -> None:
    s = load()
    assert (s.session_store_timeout, s.signin_window_seconds, s.signin_limit_ip,
            s.signin_limit_email, s.signin_lockout_after, s.signin_lockout_seconds,
            s.signin_lockout_max_seconds, s.password_workers, s.password_queue) == (
        0.5, 60, 60, 10, 5, 30, 900, 2, 16)


def test_session_and_sign_in_values_are_read() -> None:
    s = load(ONSALE_SESSION_STORE_TIMEOUT="0.25", ONSALE_SIGNIN_WINDOW_SECONDS="30",
             ONSALE_SIGNIN_LIMIT_IP="500", ONSALE_SIGNIN_LIMIT_EMAIL="3",
             ONSALE_SIGNIN_LOCKOUT_AFTER="4", ONSALE_SIGNIN_LOCKOUT_SECONDS="10",
             ONSALE_SIGNIN_LOCKOUT_MAX_SECONDS="600", ONSALE_PASSWORD_WORKERS="4",
             ONSALE_PASSWORD_QUEUE="0")
    assert (s.session_store_timeout, s.signin_window_seconds, s.signin_limit_ip,
            s.signin_limit_email, s.signin_lockout_after, s.signin_lockout_seconds,
            s.signin_lockout_max_seconds, s.password_workers, s.password_queue) == (
        0.25, 30, 500, 3, 4, 10, 600, 4, 0)


@pytest.mark.parametrize(("var", "raw"), [
    ("ONSALE_SIGNIN_LIMIT_IP", "0"), ("ONSALE_SIGNIN_LIMIT_EMAIL", "-1"),
    ("ONSALE_SIGNIN_LOCKOUT_AFTER", "0"), ("ONSALE_SIGNIN_WINDOW_SECONDS", "0"),
    ("ONSALE_PASSWORD_WORKERS", "0"), ("ONSALE_PASSWORD_WORKERS", "65"),
    ("ONSALE_PASSWORD_QUEUE", "-1"), ("ONSALE_SESSION_STORE_TIMEOUT", "0"),
    ("ONSALE_SESSION_STORE_TIMEOUT", "11"), ("ONSALE_SESSION_STORE_TIMEOUT", "nan"),
])
def test_session_and_sign_in_values_are_checked(var: str, raw: str) -> None:
    fails({**BASE, var: raw}, var)


def test_the_longest_lockout_is_at_least_the_first() -> None:
    fails({**BASE, "ONSALE_SIGNIN_LOCKOUT_SECONDS": "60",
           "ONSALE_SIGNIN_LOCKOUT_MAX_SECONDS": "30"}, "ONSALE_SIGNIN_LOCKOUT_MAX_SECONDS")
