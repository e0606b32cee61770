"""WordLlama as an llm embedding model, loaded offline from the files its wheel
ships, and `embedding_model`, any llm embedding model by name."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import llm
from llm.models import EmbeddingModel

from convgraph.errors import ConvgraphError

if TYPE_CHECKING:
    import numpy as np

WORDLLAMA = "wordllama"
#: Texts embedded at once, and the tokens of a text that count.
BATCH, MAX_TOKENS = 64, 2048
INSTALL = "embedding with WordLlama needs wordllama: pip install 'convgraph[meaning]'"


@functools.cache
def _inference() -> Any:
    """WordLlama's 256-dimension model from its wheel: `WordLlama.load()` looks for
    the tokenizer in a folder the wheel lacks and then asks huggingface.co."""
    try:
        import safetensors
        import wordllama
        from wordllama.inference import WordLlamaInference
    except ImportError:
        raise ConvgraphError(INSTALL) from None
    root = Path(wordllama.__file__).parent
    config = root / "tokenizers" / "l2_supercat_tokenizer_config.json"
    tokenizer = wordllama.WordLlama.load_tokenizer(config)
    weights = root / "weights" / "l2_supercat_256.safetensors"
    with safetensors.safe_open(str(weights), framework="np") as opened:
        embedding = opened.get_tensor("embedding.weight")
    inference = WordLlamaInference(embedding, tokenizer, binary=False)
    # A padded batch holds batch x longest tokens: bounded.
    tokenizer.enable_truncation(MAX_TOKENS)
    return inference


def wordllama_vectors(texts: list[str]) -> np.ndarray:
    """The texts' WordLlama vectors (the mean of their first `MAX_TOKENS` tokens'
    rows), unnormalised; batched by length, so little is padding."""
    import numpy as np

    order = sorted(range(len(texts)), key=lambda row: len(texts[row]))
    found: np.ndarray = _inference().embed(
        [texts[row] for row in order], batch_size=BATCH
    )
    vectors = np.empty_like(found)
    vectors[order] = found
    return vectors


class WordLlama(EmbeddingModel):
    """WordLlama's 256-dimension model, offline (`llm embed -m wordllama`)."""

    model_id = WORDLLAMA
    batch_size = BATCH

    def embed_batch(
        self, items: Iterable[str | bytes], *, key: str | None = None
    ) -> Iterator[list[float]]:
        texts = [item if isinstance(item, str) else item.decode() for item in items]
        yield from wordllama_vectors(texts).tolist()


def embedding_model(name: str | None) -> Any:
    """The llm embedding model `name` (WordLlama when None). Raises ConvgraphError
    for a name llm does not know."""
    if name in (None, WORDLLAMA):
        return WordLlama()
    try:
        return llm.get_embedding_model(name)  # type: ignore[no-untyped-call]
    except llm.UnknownModelError:
        raise ConvgraphError(
            f"unknown embedding model {name!r}: `llm embed-models` lists them"
        ) from None
