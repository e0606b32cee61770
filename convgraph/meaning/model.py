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
#: Texts tokenized at once: a batch's tokens are held as one array.
BATCH = 256
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
    # Pooled below without padding: a batch is its tokens, not batch x longest.
    tokenizer.no_padding()
    return inference


def wordllama_vectors(texts: list[str]) -> np.ndarray:
    """The texts' WordLlama vectors (the mean of their tokens' rows), unnormalised."""
    import numpy as np

    inference = _inference()
    table = inference.embedding
    found = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    for start in range(0, len(texts), BATCH):
        encoded = inference.tokenizer.encode_batch(
            texts[start : start + BATCH], add_special_tokens=False
        )
        counts = np.array([len(one.ids) for one in encoded])
        if not counts.any():
            continue
        ids = np.concatenate([one.ids for one in encoded]).astype(np.intp)
        np.clip(ids, 0, len(table) - 1, out=ids)
        ends = np.cumsum(counts)
        full = counts > 0
        sums = np.add.reduceat(table[ids], (ends - counts)[full], axis=0)
        found[start : start + BATCH][full] = sums / counts[full, None]
    return found


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
