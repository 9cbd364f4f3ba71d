"""NID detection, generation and contexts, against published vectors and the real bundled data."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.errors import NotFound
from tools.nid.contexts import candidate_contexts, make_context
from tools.nid.corpus import dataset_nids, load_documents
from tools.nid.detect import dedupe, find_nids
from tools.nid.formats import ID_PATTERNS, NID_TYPES, classify, generate_gid_lists, generate_gids, get_type
from tools.nid.keccak import is_checksum_address, keccak256, keccak256_many, to_checksum_address

# EIP-55's own test vectors (eips.ethereum.org/EIPS/eip-55): all caps, all lower, normal.
EIP55 = [
    "0x52908400098527886E0F7030069857D2E4169EE7",
    "0x8617E340B3D01FA5F11F306F4090FD50E238070D",
    "0xde709f2102306220921060314715629080e2fb77",
    "0x27b1fdb04752bbc536007a920d24acb045561c26",
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
]


def test_keccak_known_digests_and_not_sha3() -> None:
    # Keccak-256 of "" and "abc" (Keccak team / Ethereum yellow paper values)
    assert keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    assert keccak256(b"abc").hex() == "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"
    assert keccak256(b"").hex() != hashlib.sha3_256(b"").hexdigest()
    # a message longer than one 136-byte block
    long = bytes(range(256)) * 2
    assert keccak256(long) != keccak256(long[:-1])
    msgs = [bytes([i]) * 40 for i in range(7)]
    assert [r.tobytes() for r in keccak256_many(msgs)] == [keccak256(m) for m in msgs]


@pytest.mark.parametrize("address", EIP55)
def test_eip55_vectors(address: str) -> None:
    assert to_checksum_address(address.lower()) == address
    assert is_checksum_address(address)
    flipped = address[:-1] + (address[-1].swapcase() if address[-1].isalpha() else address[-1])
    if flipped != address:
        assert not is_checksum_address(flipped)


def test_real_eth_addresses_are_valid_checksums() -> None:
    """The README counts 2129 mixed-case addresses in the token files, all valid under Keccak-256."""
    docs = load_documents("eth_tokens")
    found = [d for doc in docs for d in find_nids(doc, ["eth_address"])]
    mixed = {d.value for d in found if d.casing in ("checksum", "mixed_invalid")}
    assert len({d.value for d in found if d.casing == "checksum"}) == len(mixed) >= 2000
    assert all(is_checksum_address(v) for v in mixed)


def test_detection_counts_on_real_data() -> None:
    md5_text = load_documents("jsonlite_md5")[0]
    md5 = find_nids(md5_text, ["md5"])
    first, counts = dedupe(md5)
    assert len(md5) == 185 and len(first) == 180  # README: 185 lines, 180 unique
    assert max(counts.values()) >= 2
    commits = [d for doc in load_documents("opacus_git_log") for d in find_nids(doc) if d.type == "git_commit"]
    recs = [json.loads(x) for x in (load_documents.__globals__["sample_path"]("nid/opacus_git_log.jsonl")
                                    .read_text().splitlines())]
    assert {r["commit"] for r in recs} <= {d.value for d in commits}
    _, tco = dataset_nids("tweets")
    assert 3500 < len(tco) <= 4370 and all(len(o.detection.value) == 10 for o in tco)
    docs, svuid = dataset_nids("serialversionuid")
    all_svuid = [d for doc in docs for d in find_nids(doc, ["serial_version_uid"])]
    assert len(all_svuid) == 112  # README: 112 hits
    assert {"1L", "2L"} <= {d.value for d in all_svuid if not d.plausible}
    assert all(abs(int(o.detection.value[:-1])) >= 10**15 for o in svuid)


def test_detect_each_type_and_priority() -> None:
    sha = hashlib.sha256(b"x").hexdigest()
    sha512 = hashlib.sha512(b"x").hexdigest().upper()
    text = (f"commit {hashlib.sha1(b'a').hexdigest()}\nfile {hashlib.sha1(b'b').hexdigest()} "
            f"{hashlib.md5(b'c').hexdigest()} {sha} {sha512} https://t.co/AbC123xyZ9 x "
            "serialVersionUID = -8270183163158333422L; 123e4567-e89b-42d3-a456-426614174000 "
            "integrity=\"sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC\" "
            f"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed")
    types = [d.type for d in find_nids(text)]
    assert types == ["git_commit", "sha1", "md5", "sha256", "sha512", "tco", "serial_version_uid", "uuid", "sri",
                     "eth_address"]
    # a 32-hex run inside a longer alphanumeric word is not an MD5, nor is a 32-digit number
    assert find_nids("x" + "a" * 32 + " " + "1" * 32, ["md5"], plausible_only=True) == []
    assert [d.plausible for d in find_nids("x" + "a" * 32 + " " + "1" * 32, ["md5"])] == [False]
    assert find_nids("deadbeef" * 4 + "g", ["md5"]) == []


def test_unknown_type() -> None:
    with pytest.raises(NotFound, match="Unknown NID type 'sha3'"):
        get_type("sha3")


SAMPLES = {
    "md5": hashlib.md5(b"q").hexdigest(),
    "sha1": hashlib.sha1(b"q").hexdigest().upper(),
    "sha256": hashlib.sha256(b"q").hexdigest(),
    "sha512": hashlib.sha512(b"q").hexdigest(),
    "git_commit": "4d0ebc84613d214fbfd37fbfd1390e3747a625ce",
    "eth_address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "serial_version_uid": "-8270183163158333422L",
    "tco": "AbC123xyZ9",
    "uuid": "123E4567-E89B-42D3-A456-426614174000",
    "sri": "oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC",
    "bitly": "2zMX0hm",
    "goo_gl": "uf6Tvh",
    "tinyurl": "2p8r3x5b",
    "owly": "4nFs50RCsVl",
    "isgd": "Xy12Ab",
    "buffly": "3aBcD9e",
    "aws_access_key": "AKIAQ3EGRUVJBXMZK7WL",
    "uuid_hex": "123e4567e89b42d3a456426614174000",
}


@pytest.mark.parametrize("type_name", sorted(NID_TYPES))
def test_gids_keep_format(type_name: str) -> None:
    nid = SAMPLES[type_name]
    gids = generate_gids(nid, type_name, 50, seed=3)
    assert len(set(gids)) == 50 and nid not in gids
    assert gids == generate_gids(nid, type_name, 50, seed=3)
    assert gids != generate_gids(nid, type_name, 50, seed=4)
    t = get_type(type_name)
    for g in gids:
        assert ID_PATTERNS[type_name].fullmatch(g), g
        assert t.casing(g) == t.casing(nid)
        if type_name not in ("serial_version_uid",):
            assert len(g) == len(nid)
    if type_name == "eth_address":
        assert all(is_checksum_address(g) for g in gids)
        assert generate_gid_lists([nid], type_name, 50, seed=3)[0] == gids
        low = generate_gids(nid.lower(), type_name, 5)
        assert all(g == g.lower() for g in low)
    if type_name == "uuid":
        assert all(g[14] == "4" and g[19] in "89AB" for g in gids)
    if type_name == "serial_version_uid":
        vals = np.array([int(g[:-1]) for g in generate_gids(nid, type_name, 400)], dtype=float)
        assert all(g.endswith("L") for g in gids)
        assert 0.4 < np.mean(vals < 0) < 0.6  # signed
        assert np.mean(np.abs(vals) > 2.0**62) > 0.4  # spans the int64 range
    if type_name == "tco":
        chars = set("".join(generate_gids(nid, type_name, 400)))
        assert len(chars) == 62


def test_classify() -> None:
    assert classify(SAMPLES["eth_address"]) == ["eth_address"]
    assert classify(SAMPLES["serial_version_uid"]) == ["serial_version_uid"]
    assert "md5" in classify(SAMPLES["md5"])
    assert classify("not an id") == []


@settings(max_examples=60, deadline=None)
@given(pre=st.text(max_size=200), post=st.text(max_size=200), p=st.integers(0, 300), s=st.integers(0, 300))
def test_context_never_cuts_identifier(pre: str, post: str, p: int, s: int) -> None:
    nid = "0d75e4c42f8c76d59b84cf3b3ac0420b"
    doc = pre + nid + post
    gid = generate_gids(nid, "md5", 1)[0]
    ctx = make_context(doc, len(pre), len(pre) + len(nid), gid, prefix_chars=p, suffix_chars=s)
    assert ctx.identifier == gid
    assert ctx.text[: ctx.start] == pre[max(0, len(pre) - p) :]
    assert ctx.text[ctx.end :] == post[:s]
    own, *others = candidate_contexts(doc, len(pre), len(pre) + len(nid), [gid, "f" * 32], prefix_chars=p,
                                      suffix_chars=s)
    assert own.identifier == nid and others[0].text == ctx.text
    assert re.sub(gid, nid, others[0].text, count=1) == own.text or gid in pre + post


def test_short_links_and_access_keys_detected() -> None:
    text = ("see https://bit.ly/2zMX0hm, http://goo.gl/maps/AbCd12EfGh3 and tinyurl.com/2p8r3x5b; ow.ly/4nFs50RCsVl, "
            "https://is.gd/Xy12Ab, buff.ly/3aBcD9e, j.mp/2AbC9xY, https://t.co/AbC123xyZ9 "
            "aws_access_key_id = AKIAQ3EGRUVJBXMZK7WL and ASIA2B3CDEFGH4IJKLMN")
    found = [(d.type, d.value) for d in find_nids(text, plausible_only=True)]
    assert found == [("bitly", "2zMX0hm"), ("goo_gl", "AbCd12EfGh3"), ("tinyurl", "2p8r3x5b"),
                     ("owly", "4nFs50RCsVl"), ("isgd", "Xy12Ab"), ("buffly", "3aBcD9e"), ("bitly", "2AbC9xY"),
                     ("tco", "AbC123xyZ9"), ("aws_access_key", "AKIAQ3EGRUVJBXMZK7WL"),
                     ("aws_access_key", "ASIA2B3CDEFGH4IJKLMN")]


def test_short_link_and_key_false_positives() -> None:
    # vanity names, custom aliases, look-alike hosts, codes running on, and non-base32 key characters
    text = ("http://bit.ly/JET8_videos bit.ly/python tinyurl.com/my-alias tinyurl.com/abcdefg abit.ly/2zMX0hm "
            "xbit.ly/2zMX0hm bit.ly/2zMX0hm/extra bit.ly/2zMX0hm-promo AKIAQ3EGRUVJBXMZK7W1 AKIAQ3EGRUVJBXMZK7WLX "
            "XAKIAQ3EGRUVJBXMZK7WL akiaq3egruvjbxmzk7wl AKIA1234567890ABCDEF")
    assert find_nids(text, plausible_only=True) == []
    example = find_nids("AWS docs: AKIAIOSFODNN7EXAMPLE", ["aws_access_key"])
    assert [(d.value, d.plausible) for d in example] == [("AKIAIOSFODNN7EXAMPLE", False)]
    # the real token list: 6 of its 7 short links are service codes, one (JET8_videos) a vanity name
    docs = load_documents("eth_tokens")
    codes = {d.value for doc in docs for d in find_nids(doc, ["bitly", "goo_gl"], plausible_only=True)}
    assert codes == {"2zMX0hm", "2J0NHxT", "2yiWRE4", "uf6Tvh", "VhHEoA", "EJZTX6"}


def test_aws_key_gids_keep_prefix_and_first_half() -> None:
    for nid in ("AKIAQ3EGRUVJBXMZK7WL", "ASIAJ3EGRUVJBXMZK7WL"):
        gids = generate_gids(nid, "aws_access_key", 300, seed=1)
        assert all(g[:4] == nid[:4] and len(g) == 20 for g in gids)
        half = "QRSTUVWXYZ234567" if nid[4] in "QRSTUVWXYZ234567" else "ABCDEFGHIJKLMNOP"
        assert {g[4] for g in gids} == set(half)
        assert set("".join(g[5:] for g in gids)) == set("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")


def test_undashed_uuid_is_ambiguous_with_md5() -> None:
    import uuid

    from scipy import stats

    from tools.nid.formats import ambiguous_types, is_uuid_hex

    values = [uuid.uuid4().hex for _ in range(50)]
    for v in values:
        (d,) = find_nids(f"id {v} end")
        assert d.type == "md5" and d.ambiguous_with == ("uuid_hex",)
        assert classify(v) == ["md5", "uuid_hex"]
        # GIDs do not depend on which reading is named, and keep the UUID nibbles
        gids = generate_gids(v, "md5", 20)
        assert gids == generate_gids(v, "uuid_hex", 20)
        assert all(is_uuid_hex(g) and g[12] == v[12] for g in gids)
    digest = hashlib.md5(b"q").hexdigest()
    assert not is_uuid_hex(digest) and find_nids(digest)[0].ambiguous_with == ()
    assert ambiguous_types(digest, "md5") == []
    # random digests read as a UUID with probability 8/16 * 4/16 = 1/8 (version 1-8, variant 8-b)
    digests = [hashlib.md5(str(i).encode()).hexdigest() for i in range(4000)]
    k = sum(is_uuid_hex(x) for x in digests)
    assert stats.binomtest(k, len(digests), 1 / 8).pvalue > 0.001
    # GIDs of a plain digest stay uniform hex: about 1/8 of them are UUID-shaped too
    plain = generate_gids(digest, "md5", 4000)
    assert stats.binomtest(sum(is_uuid_hex(g) for g in plain), 4000, 1 / 8).pvalue > 0.001


def test_detect_tool_says_when_a_type_is_ambiguous() -> None:
    from tools.nid.identifier_tools import nid_detect, nid_generate

    digest = hashlib.md5(b"q").hexdigest()  # version nibble 0: not a UUID
    r = nid_detect(text=f"request 123e4567e89b42d3a456426614174000 and {digest} done")
    amb = {i.value: i.ambiguous_with for i in r.identifiers}
    assert amb == {"123e4567e89b42d3a456426614174000": ["uuid_hex"], digest: []}
    assert r.ambiguous == 1 and r.note and "undashed UUID" in r.note
    assert nid_detect(text=f"just {digest}").note is None
    g = nid_generate("123e4567e89b42d3a456426614174000", n=3)
    assert g.type == "md5" and g.ambiguous_with == ["uuid_hex"]
