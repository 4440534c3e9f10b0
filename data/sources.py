"""
Where train.py's sequences come from: text windows of a token corpus, or images cut into patches. Each source checks
its data where it enters and returns (sequences(split, generator) -> a (B, S) or (B, S, D) batch, the ModelConfig
settings the data fixes, BOS: the first id that is not a text token, or None for images).
"""
import torch

from configurator import UsageError
from data import dataset_dir


def text_source(dataset, block_size, batch_size, train_tokens=0):
    """BOS + block_size - 1 tokens at random offsets; train_tokens > 0 keeps only the first train_tokens tokens of
    train (data-constrained: seen again every epoch)."""
    from data.text import TOKENIZERS, corpus_tokenizer, get_batch, load_tokens, model_vocab_size
    data_dir = dataset_dir(dataset)
    tokenizer = corpus_tokenizer(data_dir)  # meta.json says it; the checkpoint keeps it (ModelConfig.tokenizer)
    bos = TOKENIZERS[tokenizer][1]  # the ids below BOS are the text tokens (bert_replace draws from them)
    splits = {split: load_tokens(data_dir, split) for split in ('train', 'val')}
    if train_tokens:
        splits['train'] = splits['train'][:train_tokens]
    for split, tokens in splits.items():
        if len(tokens) < block_size:
            raise UsageError(f"{data_dir}/{split}.bin has {len(tokens)} tokens, fewer than block_size={block_size}: "
                             "use a smaller block_size or a larger corpus")

    def sequences(split, generator):
        return get_batch(splits[split], batch_size, block_size, generator, bos)
    return sequences, dict(input_kind='tokens', tokenizer=tokenizer, vocab_size=model_vocab_size(tokenizer)), bos


def image_source(dataset, image_size, patch_size, channels, batch_size, augment=True, flip=False):
    """A zero CLS slot, then the patches of a random image (MAE's random-resized-crop on train if augment)."""
    from data.images import load_images, patchify
    image_sets = {split: load_images(dataset, split) for split in ('train', 'val')}
    if image_sets['train'].channels != channels:
        raise UsageError(f"{dataset} has {image_sets['train'].channels} channels, config says channels={channels}")

    def sequences(split, generator):
        images = image_sets[split]
        index = torch.randint(len(images), (batch_size,), generator=generator)
        pixels, _ = images.batch(index, image_size, generator, augment=augment and split == 'train', flip=flip)
        patches = patchify(pixels, patch_size)
        return torch.cat([patches.new_zeros(batch_size, 1, patches.shape[-1]), patches], dim=1)
    return sequences, dict(input_kind='patches', image_size=image_size, patch_size=patch_size, channels=channels), None
