"""Who may place a call: the trunk an INVITE comes from.

An INVITE is taken from a trunk whose allowed addresses hold the sender's
address, or when it answers our digest challenge (RFC 2617/7616, MD5 or
SHA-256, qop "auth") with a trunk's username and password. Nonces are
stateless: a timestamp and its HMAC under the server's key, good for
`NONCE_TTL_S`. `InviteLimiter` bounds INVITEs per source address (a token
bucket), so a flood is answered with 503 and costs no lookup."""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from aiosipua import parse_auth

from telephony.numbers import address_allowed
from telephony.selectors import TrunkCredentials

NONCE_TTL_S = 300
_HASHES: dict[str, Callable[[bytes], hashlib._Hash]] = {
    "MD5": hashlib.md5,
    "SHA-256": hashlib.sha256,
}


@dataclass(frozen=True)
class Challenge:
    """What to send in WWW-Authenticate; `stale` when a known nonce only expired."""

    realm: str
    nonce: str
    stale: bool = False

    def header(self) -> str:
        stale = ", stale=true" if self.stale else ""
        return (
            f'Digest realm="{self.realm}", nonce="{self.nonce}", algorithm=MD5, qop="auth"{stale}'
        )


class NonceBox:
    def __init__(self, key: bytes, clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._clock = clock

    def issue(self) -> str:
        stamp = f"{int(self._clock()):x}.{os.urandom(6).hex()}"
        return f"{stamp}.{self._sign(stamp)}"

    def check(self, nonce: str) -> str:
        """ "ok", "stale" (ours, expired) or "bad"."""
        stamp, _, signature = nonce.rpartition(".")
        if not stamp or not hmac.compare_digest(self._sign(stamp), signature):
            return "bad"
        try:
            issued = int(stamp.split(".", 1)[0], 16)
        except ValueError:
            return "bad"
        return "ok" if 0 <= self._clock() - issued <= NONCE_TTL_S else "stale"

    def _sign(self, stamp: str) -> str:
        return hmac.new(self._key, stamp.encode(), hashlib.sha256).hexdigest()[:32]


def digest_matches(
    params: dict[str, str], *, method: str, username: str, password: str, realm: str
) -> bool:
    """Whether an Authorization header's parameters answer for this username and password."""
    hasher = _HASHES.get(params.get("algorithm", "MD5").upper())
    if hasher is None or params.get("username") != username or params.get("realm") != realm:
        return False

    def h(text: str) -> str:
        return hasher(text.encode()).hexdigest()

    ha1 = h(f"{username}:{realm}:{password}")
    ha2 = h(f"{method}:{params.get('uri', '')}")
    nonce = params.get("nonce", "")
    if params.get("qop"):
        if params["qop"].lower() != "auth":
            return False
        expected = h(f"{ha1}:{nonce}:{params.get('nc', '')}:{params.get('cnonce', '')}:auth:{ha2}")
    else:
        expected = h(f"{ha1}:{nonce}:{ha2}")
    return hmac.compare_digest(expected, params.get("response", ""))


@dataclass(frozen=True)
class Verdict:
    trunk: TrunkCredentials | None = None
    challenge: Challenge | None = None  # 401 with this
    # neither: 403


class TrunkAuthenticator:
    def __init__(self, *, realm: str, key: bytes, password_of: Callable[[TrunkCredentials], str]):
        self.realm = realm
        self.nonces = NonceBox(key)
        self._password_of = password_of

    def authorize(
        self,
        trunks: list[TrunkCredentials],
        *,
        address: str,
        method: str,
        authorization: str | None,
    ) -> Verdict:
        for trunk in trunks:
            if trunk.allowed_addresses and address_allowed(address, trunk.allowed_addresses):
                return Verdict(trunk=trunk)
        digest_trunks = [t for t in trunks if t.username and t.password_encrypted]
        if not digest_trunks:
            return Verdict()
        if not authorization:
            return Verdict(challenge=Challenge(self.realm, self.nonces.issue()))
        try:
            credentials = parse_auth(authorization)
        except Exception:  # a header we cannot read is no answer
            return Verdict()
        if credentials.scheme.lower() != "digest":
            return Verdict()
        params = credentials.params
        state = self.nonces.check(params.get("nonce", ""))
        if state == "bad":
            return Verdict(challenge=Challenge(self.realm, self.nonces.issue()))
        for trunk in digest_trunks:
            if params.get("username") != trunk.username:
                continue
            if digest_matches(
                params,
                method=method,
                username=trunk.username,
                password=self._password_of(trunk),
                realm=self.realm,
            ):
                if state == "stale":
                    return Verdict(challenge=Challenge(self.realm, self.nonces.issue(), stale=True))
                return Verdict(trunk=trunk)
        return Verdict()


class InviteLimiter:
    """A token bucket per source address: `burst` INVITEs at once, `per_minute` after."""

    def __init__(
        self,
        *,
        per_minute: float,
        burst: int,
        max_sources: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self._clock = clock
        self._max_sources = max_sources
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def allow(self, address: str) -> bool:
        now = self._clock()
        tokens, last = self._buckets.pop(address, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        allowed = tokens >= 1.0
        self._buckets[address] = (tokens - 1.0 if allowed else tokens, now)
        while len(self._buckets) > self._max_sources:
            self._buckets.popitem(last=False)
        return allowed
