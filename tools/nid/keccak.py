"""Keccak-256 (the pre-standard padding Ethereum uses) in pure Python, and EIP-55 address checksums.

`hashlib.sha3_256` is FIPS-202 SHA3-256, which pads with 0x06 instead of Keccak's 0x01 and so gives
different digests; Ethereum addresses need the original Keccak.

>>> keccak256(b"").hex()[:16]
'c5d2460186f7233c'
>>> to_checksum_address("0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed")
'0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
"""

from __future__ import annotations

_MASK = (1 << 64) - 1

_ROUND_CONSTANTS = (
    0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000,
    0x000000000000808B, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
    0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
    0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003,
    0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
    0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
)  # fmt: skip

# Rotation offsets r[x][y] of the rho step, indexed as lane x + 5*y.
_ROTATIONS = (
    0, 1, 62, 28, 27,
    36, 44, 6, 55, 20,
    3, 10, 43, 25, 39,
    41, 45, 15, 21, 8,
    18, 2, 61, 56, 14,
)  # fmt: skip


def _rotl(v: int, n: int) -> int:
    return ((v << n) | (v >> (64 - n))) & _MASK if n else v


def _keccak_f1600(a: list[int]) -> None:
    """The Keccak-f[1600] permutation on 25 lanes (index x + 5*y), in place."""
    for rc in _ROUND_CONSTANTS:
        # theta
        c = [a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20] for x in range(5)]
        d = [c[(x - 1) % 5] ^ _rotl(c[(x + 1) % 5], 1) for x in range(5)]
        for i in range(25):
            a[i] ^= d[i % 5]
        # rho and pi: B[y, 2x+3y] = rot(A[x, y], r[x, y])
        b = [0] * 25
        for x in range(5):
            for y in range(5):
                i = x + 5 * y
                b[y + 5 * ((2 * x + 3 * y) % 5)] = _rotl(a[i], _ROTATIONS[i])
        # chi
        for y in range(0, 25, 5):
            row = b[y : y + 5]
            for x in range(5):
                a[y + x] = row[x] ^ ((~row[(x + 1) % 5]) & row[(x + 2) % 5])
        # iota
        a[0] ^= rc


def keccak256(data: bytes) -> bytes:
    """The 32-byte Keccak-256 digest of `data` (rate 1088 bits, padding 0x01 ... 0x80)."""
    rate = 136
    padded = bytearray(data)
    padded.append(0x01)
    padded.extend(b"\x00" * ((-len(padded)) % rate))
    padded[-1] |= 0x80
    state = [0] * 25
    for off in range(0, len(padded), rate):
        block = padded[off : off + rate]
        for i in range(rate // 8):
            state[i] ^= int.from_bytes(block[8 * i : 8 * i + 8], "little")
        _keccak_f1600(state)
    return b"".join(state[i].to_bytes(8, "little") for i in range(4))


def keccak256_many(messages: list[bytes]):
    """Keccak-256 of many equal-length messages (each under 136 bytes) at once, vectorised over numpy lanes.

    Returns a (len(messages), 32) uint8 array; equal to `keccak256` row by row.
    """
    import numpy as np

    rate = 136
    n = len(messages)
    if n == 0:
        return np.zeros((0, 32), dtype=np.uint8)
    length = len(messages[0])
    if length >= rate or any(len(m) != length for m in messages):
        raise ValueError("keccak256_many needs equal-length messages shorter than 136 bytes")
    block = np.zeros((n, rate), dtype=np.uint8)
    block[:, :length] = np.frombuffer(b"".join(messages), dtype=np.uint8).reshape(n, length)
    block[:, length] ^= 0x01
    block[:, rate - 1] ^= 0x80
    a = np.zeros((25, n), dtype=np.uint64)
    a[:17] = block.view("<u8").T
    sixty_four = np.uint64(64)
    for rc in _ROUND_CONSTANTS:
        c = a[0:5] ^ a[5:10] ^ a[10:15] ^ a[15:20] ^ a[20:25]
        c_rot = (c << np.uint64(1)) | (c >> np.uint64(63))
        d = np.roll(c, 1, axis=0) ^ np.roll(c_rot, -1, axis=0)
        a ^= np.tile(d, (5, 1))
        b = np.empty_like(a)
        for x in range(5):
            for y in range(5):
                i = x + 5 * y
                r = np.uint64(_ROTATIONS[i])
                v = a[i] if _ROTATIONS[i] == 0 else (a[i] << r) | (a[i] >> (sixty_four - r))
                b[y + 5 * ((2 * x + 3 * y) % 5)] = v
        for y in range(0, 25, 5):
            row = b[y : y + 5]
            a[y : y + 5] = row ^ (~np.roll(row, -1, axis=0) & np.roll(row, -2, axis=0))
        a[0] ^= np.uint64(rc)
    return np.ascontiguousarray(a[:4].T).astype("<u8").view(np.uint8).reshape(n, 32)


def to_checksum_addresses(bodies: list[str]) -> list[str]:
    """EIP-55 forms of many 40-hex-digit lowercase address bodies (no 0x), hashed in one vectorised pass."""
    digests = keccak256_many([b.encode("ascii") for b in bodies])
    out = []
    for body, dig in zip(bodies, digests, strict=True):
        hexd = dig.tobytes().hex()
        out.append("0x" + "".join(ch.upper() if ch.isalpha() and int(h, 16) >= 8 else ch
                                  for ch, h in zip(body, hexd[:40], strict=True)))
    return out


def to_checksum_address(address: str) -> str:
    """The EIP-55 mixed-case form of a 20-byte hex address (with or without `0x`)."""
    body = address[2:] if address[:2].lower() == "0x" else address
    body = body.lower()
    if len(body) != 40 or any(ch not in "0123456789abcdef" for ch in body):
        raise ValueError(f"{address!r} is not a 40-hex-digit Ethereum address")
    digest = keccak256(body.encode("ascii")).hex()
    return "0x" + "".join(
        ch.upper() if ch.isalpha() and int(h, 16) >= 8 else ch for ch, h in zip(body, digest[:40], strict=True)
    )


def is_checksum_address(address: str) -> bool:
    """True when `address` carries a valid EIP-55 checksum (mixed case exactly as the checksum says)."""
    try:
        return to_checksum_address(address) == "0x" + address[2:] and address[:2] == "0x"
    except ValueError:
        return False
