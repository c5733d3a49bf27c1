"""Tiny models built on the spot for tests: model hubs are unreachable here, the loading code is the real one.

A 2-layer BERT with a WordPiece vocabulary trained on the given texts, saved
as a sentence-transformers bi-encoder and as a cross-encoder directory, then
loaded back by name (path) through sentence-transformers like any hub model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def _tokenizer(texts: Sequence[str], directory: Path):  # noqa: ANN202 (a transformers tokenizer)
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import BertTokenizerFast

    wordpiece = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wordpiece.normalizer = normalizers.BertNormalizer(lowercase=True, handle_chinese_chars=True)
    wordpiece.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=2000, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    wordpiece.train_from_iterator(texts, trainer)
    tokenizer = BertTokenizerFast(tokenizer_object=wordpiece, unk_token="[UNK]", pad_token="[PAD]",
                                  cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    tokenizer.save_pretrained(directory)
    return tokenizer


def _config(vocab_size: int, **extra: object):  # noqa: ANN202
    from transformers import BertConfig

    return BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=256, **extra)


def build_bi_encoder(texts: Sequence[str], directory: Path) -> Path:
    """A sentence-transformers model directory (BERT + mean pooling) loadable with SentenceTransformer(path)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertModel

    torch.manual_seed(0)
    bert_dir = directory / "bert"
    tokenizer = _tokenizer(texts, bert_dir)
    BertModel(_config(len(tokenizer))).save_pretrained(bert_dir)
    encoder = Transformer(str(bert_dir), max_seq_length=128)
    model = SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension(), "mean")], device="cpu")
    model.save(str(directory / "bi-encoder"))
    return directory / "bi-encoder"


def build_cross_encoder(texts: Sequence[str], directory: Path) -> Path:
    """A one-logit BERT sequence classifier directory loadable with CrossEncoder(path)."""
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(0)
    target = directory / "cross-encoder"
    tokenizer = _tokenizer(texts, target)
    BertForSequenceClassification(_config(len(tokenizer), num_labels=1)).save_pretrained(target)
    return target


def build_nli_classifier(texts: Sequence[str], directory: Path,
                         labels: Sequence[str] = ("entailment", "neutral", "contradiction")) -> Path:
    """A three-label BERT classifier directory (``id2label`` from ``labels``) loadable with CrossEncoder(path)."""
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(0)
    target = directory / "nli"
    tokenizer = _tokenizer(texts, target)
    id2label = dict(enumerate(labels))
    config = _config(len(tokenizer), num_labels=len(labels), id2label=id2label,
                     label2id={label: index for index, label in id2label.items()})
    BertForSequenceClassification(config).save_pretrained(target)
    return target
