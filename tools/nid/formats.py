"""The natural-identifier types: how each is found in text and how same-distribution stand-ins are drawn.

A generated identifier (GID) keeps the alphabet, length and casing of the natural one (NID):
hex digests stay lower or upper case, Ethereum addresses carry a valid EIP-55 checksum when the NID
does, a serialVersionUID is a uniform signed 64-bit integer followed by `L`, a t.co code is 10 base62
characters, a UUID keeps its version and variant nibbles, an SRI hash is base64 of as many random
bytes as its digest, a short-link code (bit.ly, goo.gl, TinyURL, ow.ly, is.gd, buff.ly) keeps its
service's alphabet and its length, a cloud access key id keeps its prefix (AKIA, ASIA) and base32
alphabet. Generation is seeded per NID, so the GIDs of an identifier do not depend on which other
identifiers are generated with it.

Some formats coincide: 32 hex digits are an MD5 digest or an undashed UUID (when the version and
variant nibbles are those of a UUID: 1 in 8 random digests). Such a value is ambiguous
(`ambiguous_types`), and its GIDs keep those two nibbles whichever type is named, so they are
same-distribution stand-ins under either reading.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tools.errors import unknown_name
from tools.nid.keccak import is_checksum_address, to_checksum_address, to_checksum_addresses

if TYPE_CHECKING:
    import numpy as np

HEX_LOWER = "0123456789abcdef"
HEX_UPPER = "0123456789ABCDEF"
BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
LOWER36 = "0123456789abcdefghijklmnopqrstuvwxyz"
BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

_NB = r"(?<![0-9A-Za-z])"  # no alphanumeric character right before
_NA = r"(?![0-9A-Za-z])"  # no alphanumeric character right after


def _hex_casing(value: str) -> str:
    letters = [c for c in value if c.isalpha()]
    if letters and all(c.isupper() for c in letters):
        return "upper"
    if all(c.islower() for c in letters):
        return "lower"
    return "mixed"


def _draw(rng: np.random.Generator, alphabet: str, length: int) -> str:
    idx = rng.integers(0, len(alphabet), size=length)
    return "".join(alphabet[i] for i in idx)


def _hex_plausible(value: str) -> bool:
    """A random hex digest has digits and letters and one casing (a 32-digit number is not an MD5)."""
    body = value[2:] if value.startswith(("0x", "0X")) else value
    return any(c.isdigit() for c in body) and any(c.isalpha() for c in body) and _hex_casing(body) != "mixed"


@dataclass(frozen=True)
class NIDType:
    """One identifier format: a regex whose group `id` is the identifier, a generator and a plausibility check."""

    name: str
    description: str
    pattern: re.Pattern[str]
    _generate: Callable[[str, np.random.Generator], str]
    _plausible: Callable[[str], bool]
    _casing: Callable[[str], str]

    def generate_one(self, nid: str, rng: np.random.Generator) -> str:
        return self._generate(nid, rng)

    def plausible(self, value: str) -> bool:
        """False for values that cannot be a random draw of this format (e.g. serialVersionUID = 1L)."""
        return self._plausible(value)

    def casing(self, value: str) -> str:
        return self._casing(value)


def is_uuid_hex(value: str) -> bool:
    """32 hex digits whose version (index 12) and variant (index 16) nibbles are those of an RFC 9562 UUID."""
    return (len(value) == 32 and bool(re.fullmatch(r"[0-9a-fA-F]{32}", value)) and value[12] in "12345678"
            and value[16].lower() in "89ab")


def _gen_hex(nid: str, rng: np.random.Generator) -> str:
    alphabet = HEX_UPPER if _hex_casing(nid) == "upper" else HEX_LOWER
    out = _draw(rng, alphabet, len(nid))
    if is_uuid_hex(nid):
        out = out[:12] + nid[12] + out[13:16] + alphabet[8 + int(rng.integers(0, 4))] + out[17:]
    return out


def _hex_type(name: str, length: int, description: str) -> NIDType:
    def gen(nid: str, rng: np.random.Generator) -> str:
        return _gen_hex(nid, rng)

    pattern = re.compile(_NB + rf"(?P<id>[0-9a-f]{{{length}}}|[0-9A-F]{{{length}}})" + _NA)
    return NIDType(name, description, pattern, gen, _hex_plausible, _hex_casing)


def _gen_git(nid: str, rng: np.random.Generator) -> str:
    return _draw(rng, HEX_UPPER if _hex_casing(nid) == "upper" else HEX_LOWER, len(nid))


def _eth_casing(value: str) -> str:
    body = value[2:]
    if is_checksum_address(value) and _hex_casing(body) == "mixed":
        return "checksum"
    return _hex_casing(body) if _hex_casing(body) != "mixed" else "mixed_invalid"


def _gen_eth(nid: str, rng: np.random.Generator) -> str:
    body = _draw(rng, HEX_LOWER, 40)
    casing = _eth_casing(nid)
    if casing == "lower":
        return "0x" + body
    if casing == "upper":
        return "0x" + body.upper()
    return to_checksum_address(body)


def _eth_plausible(value: str) -> bool:
    return _eth_casing(value) != "mixed_invalid"


def _gen_svuid(nid: str, rng: np.random.Generator) -> str:
    import numpy as np

    raw = int(rng.integers(0, 2**64, dtype=np.uint64))
    signed = raw - 2**64 if raw >= 2**63 else raw
    return f"{signed}L"


def _svuid_plausible(value: str) -> bool:
    """serialver draws a hash-derived int64: fewer than 16 digits happens with probability ~1e-4."""
    return abs(int(value[:-1])) >= 10**15


def _gen_tco(nid: str, rng: np.random.Generator) -> str:
    return _draw(rng, BASE62, len(nid))


def _code_plausible(value: str) -> bool:
    """A random base62 code mixes at least two of lower case, upper case and digits (a vanity name does not)."""
    classes = (any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value))
    return sum(classes) >= 2


def _lower36_plausible(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _short_link_type(name: str, hosts: str, alphabet: str, lengths: tuple[int, int], description: str,
                     path: str = "") -> NIDType:
    """A short-link service: `hosts` a regex of its host names, the code after '/' (and `path`) the identifier."""
    chars = "0-9a-z" if alphabet == LOWER36 else "0-9A-Za-z"
    pattern = re.compile(r"(?<![0-9A-Za-z.-])(?:https?://)?(?:www\.)?(?:" + hosts + r")/" + path
                         + rf"(?P<id>[{chars}]{{{lengths[0]},{lengths[1]}}})(?![0-9A-Za-z_/-])")

    def gen(nid: str, rng: np.random.Generator) -> str:
        return _draw(rng, alphabet, len(nid))

    plausible = _lower36_plausible if alphabet == LOWER36 else _code_plausible
    return NIDType(name, description, pattern, gen, plausible, _base_casing)


def _aws_key_plausible(value: str) -> bool:
    """AWS documents AKIAIOSFODNN7EXAMPLE; keys ending in EXAMPLE are placeholders, not draws."""
    return not value.endswith("EXAMPLE")


def _gen_aws_key(nid: str, rng: np.random.Generator) -> str:
    # the first character after the prefix keeps its half of the alphabet: newer key ids set its top bit
    half = BASE32.index(nid[4]) // 16
    first = BASE32[16 * half + int(rng.integers(0, 16))]
    return nid[:4] + first + _draw(rng, BASE32, 15)


def _gen_uuid(nid: str, rng: np.random.Generator) -> str:
    alphabet = HEX_UPPER if _hex_casing(nid) == "upper" else HEX_LOWER
    chars = list(_draw(rng, alphabet, 36))
    for i in (8, 13, 18, 23):
        chars[i] = "-"
    chars[14] = nid[14]  # version nibble
    variant = nid[19].lower()
    if variant in "89ab":
        chars[19] = alphabet["89ab".index(str(rng.choice(list("89ab")))) + 8]
    return "".join(chars)


_SRI_BYTES = {44: 32, 64: 48, 88: 64}


def _gen_sri(nid: str, rng: np.random.Generator) -> str:
    import numpy as np

    nbytes = _SRI_BYTES.get(len(nid), max(1, (len(nid.rstrip("=")) * 3) // 4))
    return base64.b64encode(rng.integers(0, 256, size=nbytes, dtype=np.uint8).tobytes()).decode("ascii")


def _always(value: str) -> bool:
    return True


def _base_casing(value: str) -> str:
    return "mixed"


NID_TYPES: dict[str, NIDType] = {
    t.name: t
    for t in [
        NIDType(
            "git_commit",
            "a 40-hex git commit id after 'commit ' or in a /commit/, /blob/ or /tree/ URL",
            re.compile(r"(?:\bcommit\s+|/commits?/|/blob/|/tree/)(?P<id>[0-9a-f]{40})" + _NA),
            _gen_git,
            _hex_plausible,
            _hex_casing,
        ),
        _hex_type("sha512", 128, "a SHA-512 hex digest (128 hex digits)"),
        _hex_type("sha256", 64, "a SHA-256 hex digest (64 hex digits)"),
        _hex_type("sha1", 40, "a SHA-1 hex digest (40 hex digits)"),
        _hex_type("md5", 32, "an MD5 hex digest (32 hex digits)"),
        NIDType(
            "eth_address",
            "an Ethereum address, 0x + 40 hex digits (EIP-55 mixed-case checksum, or all lower/upper case)",
            re.compile(_NB + r"(?P<id>0x[0-9a-fA-F]{40})" + _NA),
            _gen_eth,
            _eth_plausible,
            _eth_casing,
        ),
        NIDType(
            "serial_version_uid",
            "a Java serialVersionUID: a signed 64-bit integer with the suffix L",
            re.compile(r"serialVersionUID\s*=\s*(?P<id>-?\d{1,19}L)" + _NA),
            _gen_svuid,
            _svuid_plausible,
            _base_casing,
        ),
        NIDType(
            "tco",
            "a t.co short-link code: 10 base62 characters after https://t.co/",
            re.compile(r"https?://t\.co/(?P<id>[0-9A-Za-z]{10})" + _NA),
            _gen_tco,
            _always,
            _base_casing,
        ),
        NIDType(
            "uuid",
            "a UUID, 8-4-4-4-12 hex digits (version and variant kept)",
            re.compile(
                _NB + r"(?P<id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                r"|[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12})" + _NA
            ),
            _gen_uuid,
            _always,
            _hex_casing,
        ),
        NIDType(
            "sri",
            "a subresource-integrity hash body: base64 after sha256-, sha384- or sha512-",
            re.compile(
                r"\bsha(?:256|384|512)-(?P<id>[A-Za-z0-9+/]{43}=|[A-Za-z0-9+/]{64}|[A-Za-z0-9+/]{86}==)"
                r"(?![A-Za-z0-9+/=])"
            ),
            _gen_sri,
            _always,
            _base_casing,
        ),
        _short_link_type("bitly", r"bit\.ly|bitly\.com|j\.mp", BASE62, (4, 10),
                         "a bit.ly short-link code (also j.mp, bitly.com): 4-10 base62 characters"),
        _short_link_type("goo_gl", r"goo\.gl", BASE62, (4, 22),
                         "a goo.gl short-link code, also goo.gl/maps/...: base62 characters", path=r"(?:maps/)?"),
        _short_link_type("tinyurl", r"tinyurl\.com", LOWER36, (5, 10),
                         "a TinyURL code: 5-10 lower-case letters and digits"),
        _short_link_type("owly", r"ow\.ly", BASE62, (4, 14), "an ow.ly short-link code: base62 characters"),
        _short_link_type("isgd", r"is\.gd", BASE62, (4, 10), "an is.gd short-link code: base62 characters"),
        _short_link_type("buffly", r"buff\.ly", BASE62, (4, 10), "a buff.ly short-link code: base62 characters"),
        NIDType(
            "aws_access_key",
            "an AWS access key id: AKIA (long-term) or ASIA (temporary) + 16 base32 characters (A-Z, 2-7)",
            re.compile(_NB + r"(?P<id>(?:AKIA|ASIA)[A-Z2-7]{16})" + _NA),
            _gen_aws_key,
            _aws_key_plausible,
            _base_casing,
        ),
        NIDType(
            "uuid_hex",
            "an undashed UUID: 32 hex digits with UUID version (1-8) and variant (8, 9, a, b) nibbles; "
            "the same characters as an MD5 digest, so such a value is ambiguous",
            re.compile(_NB + r"(?P<id>[0-9a-f]{12}[1-8][0-9a-f]{3}[89ab][0-9a-f]{15}"
                       r"|[0-9A-F]{12}[1-8][0-9A-F]{3}[89AB][0-9A-F]{15})" + _NA),
            _gen_hex,
            _hex_plausible,
            _hex_casing,
        ),
    ]
}


ID_PATTERNS: dict[str, re.Pattern[str]] = {
    "git_commit": re.compile(r"[0-9a-f]{40}"),
    "sha512": re.compile(r"[0-9a-f]{128}|[0-9A-F]{128}"),
    "sha256": re.compile(r"[0-9a-f]{64}|[0-9A-F]{64}"),
    "sha1": re.compile(r"[0-9a-f]{40}|[0-9A-F]{40}"),
    "md5": re.compile(r"[0-9a-f]{32}|[0-9A-F]{32}"),
    "eth_address": re.compile(r"0x[0-9a-fA-F]{40}"),
    "serial_version_uid": re.compile(r"-?\d{1,19}L"),
    "uuid": re.compile(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|[0-9A-F]{8}(?:-[0-9A-F]{4}){3}-[0-9A-F]{12}"),
    "tco": re.compile(r"[0-9A-Za-z]{10}"),
    "sri": re.compile(r"[A-Za-z0-9+/]{43}=|[A-Za-z0-9+/]{64}|[A-Za-z0-9+/]{86}=="),
    "bitly": re.compile(r"[0-9A-Za-z]{4,10}"),
    "goo_gl": re.compile(r"[0-9A-Za-z]{4,22}"),
    "tinyurl": re.compile(r"[0-9a-z]{5,10}"),
    "owly": re.compile(r"[0-9A-Za-z]{4,14}"),
    "isgd": re.compile(r"[0-9A-Za-z]{4,10}"),
    "buffly": re.compile(r"[0-9A-Za-z]{4,10}"),
    "aws_access_key": re.compile(r"(?:AKIA|ASIA)[A-Z2-7]{16}"),
    "uuid_hex": re.compile(r"[0-9a-f]{12}[1-8][0-9a-f]{3}[89ab][0-9a-f]{15}"
                           r"|[0-9A-F]{12}[1-8][0-9A-F]{3}[89AB][0-9A-F]{15}"),
}

def classify(value: str) -> list[str]:
    """The types whose identifier format `value` matches in full, most specific first.

    Short-link codes are left out (a bare code does not say its service): name the type for those.
    """
    order = ["eth_address", "aws_access_key", "uuid", "serial_version_uid", "sha512", "sha256", "sha1",
             "git_commit", "md5", "uuid_hex", "tco", "sri"]
    return [t for t in order if ID_PATTERNS[t].fullmatch(value)]


def ambiguous_types(value: str, type_name: str) -> list[str]:
    """The other types whose format `value` (found as `type_name`) matches exactly: md5 <-> uuid_hex."""
    if type_name == "md5" and is_uuid_hex(value):
        return ["uuid_hex"]
    if type_name == "uuid_hex":
        return ["md5"]
    return []


def get_type(name: str) -> NIDType:
    """The NID type called `name`; `NotFound` naming the known types otherwise."""
    try:
        return NID_TYPES[name]
    except KeyError:
        raise unknown_name("NID type", name, NID_TYPES) from None


def rng_for(nid: str, seed: int) -> np.random.Generator:
    """A generator seeded by `seed` and the NID itself (order-independent, reproducible)."""
    import numpy as np

    digest = hashlib.sha256(nid.encode("utf-8")).digest()
    return np.random.default_rng([seed & 0xFFFFFFFF, *np.frombuffer(digest[:16], dtype=np.uint32).tolist()])


def generate_gids(nid: str, type_name: str, n: int, *, seed: int = 0) -> list[str]:
    """`n` distinct GIDs for `nid`, none equal to it, of the same format, alphabet, length and casing."""
    t = get_type(type_name)
    rng = rng_for(nid, seed)
    out: list[str] = []
    seen = {nid}
    attempts = 0
    while len(out) < n:
        g = t.generate_one(nid, rng)
        attempts += 1
        if g not in seen:
            seen.add(g)
            out.append(g)
        elif attempts > 20 * n + 100:
            raise ValueError(f"could not draw {n} distinct identifiers of type {type_name}")
    return out


def generate_gid_lists(nids: list[str], type_name: str, n: int, *, seed: int = 0) -> list[list[str]]:
    """`generate_gids` for many NIDs; Ethereum checksums are computed in one vectorised Keccak pass."""
    t = get_type(type_name)
    if t.name != "eth_address":
        return [generate_gids(v, t.name, n, seed=seed) for v in nids]
    bodies: list[list[str]] = []
    for nid in nids:
        rng = rng_for(nid, seed)
        seen = {nid[2:].lower()}
        drawn: list[str] = []
        while len(drawn) < n:
            b = _draw(rng, HEX_LOWER, 40)
            if b not in seen:
                seen.add(b)
                drawn.append(b)
        bodies.append(drawn)
    need = [b for nid, bs in zip(nids, bodies, strict=True) if _eth_casing(nid) not in ("lower", "upper") for b in bs]
    summed = iter(to_checksum_addresses(need))
    out = []
    for nid, bs in zip(nids, bodies, strict=True):
        casing = _eth_casing(nid)
        if casing == "lower":
            out.append(["0x" + b for b in bs])
        elif casing == "upper":
            out.append(["0x" + b.upper() for b in bs])
        else:
            out.append([next(summed) for _ in bs])
    return out
