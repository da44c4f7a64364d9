"""G.711 telephone audio: the codes of the standard, and a bounded round trip."""

import numpy as np

from voiceapp.engine.g711 import alaw_decode, alaw_encode, mulaw_decode, mulaw_encode

EVERY_SAMPLE = np.arange(-32768, 32768, dtype=np.int16)


def test_mulaw_codes_decode_to_the_standard_values() -> None:
    # 0xFF and 0x7F are the two zeros; 0x80 and 0x00 the loudest positive and negative
    assert mulaw_decode(b"\xff\x7f\x80\x00\xfe").tolist() == [0, 0, 32124, -32124, 8]
    assert mulaw_encode(np.array([0, 32767, -32768, 8], dtype=np.int16)) == b"\xff\x80\x00\xfe"


def test_alaw_codes_decode_to_the_standard_values() -> None:
    # even bits inverted: 0xD5 / 0x55 are the smallest steps, 0xAA / 0x2A the largest
    assert alaw_decode(b"\xd5\x55\xaa\x2a").tolist() == [8, -8, 32256, -32256]
    assert alaw_encode(np.array([0, -1, 32767, -32768], dtype=np.int16)) == b"\xd5\x55\xaa\x2a"


def test_every_code_survives_decode_then_encode() -> None:
    codes = bytes(range(256))
    assert alaw_encode(alaw_decode(codes)) == codes
    # mu-law has two codes for zero; encoding picks the positive one
    expected = bytes(0xFF if c == 0x7F else c for c in codes)
    assert mulaw_encode(mulaw_decode(codes)) == expected


def test_round_trip_error_stays_within_half_a_step() -> None:
    # the step of a segment is 1/16 of its range: the error is at most ~1/32 of the
    # sample's size, plus the smallest step near zero
    for encode, decode, floor in ((mulaw_encode, mulaw_decode, 4), (alaw_encode, alaw_decode, 8)):
        back = decode(encode(EVERY_SAMPLE)).astype(np.int32)
        error = np.abs(back - EVERY_SAMPLE.astype(np.int32))
        bound = floor + np.abs(EVERY_SAMPLE.astype(np.int32)) / 30
        worst = int(np.argmax(error - bound))
        assert (error <= bound).all(), (encode.__name__, int(EVERY_SAMPLE[worst]), error[worst])
        # and no sample changes sign
        assert (np.sign(back) * np.sign(EVERY_SAMPLE) >= 0).all()
