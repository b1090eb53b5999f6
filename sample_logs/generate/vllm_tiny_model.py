"""Save a tiny random-weight Llama + a locally trained tokenizer for the vLLM sample logs.

No hub access: the tokenizer is a WordLevel tokenizer trained on a few sentences (vocabulary
padded with filler words to 1000) and saved as a PreTrainedTokenizerFast; the model is a
random-weight LlamaConfig(2 layers, hidden 64) saved with save_pretrained.
head_dim=128 with 8 KV heads gives 8 KiB of bf16 KV cache per token (2 layers x K,V x 8 x 128 x 2 B),
so 1 GiB of KV cache holds 131072 tokens and a 262144-token --max-model-len does not fit.
Usage: python vllm_tiny_model.py OUT_DIR
"""
import sys

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

VOCAB = 1000
SENTENCES = [
    "the quick brown fox jumps over the lazy dog",
    "a model serves completions to many clients at once",
    "the kv cache holds keys and values for every token",
    "hello world this is a tiny test of the inference server",
    "numbers one two three four five six seven eight nine ten",
]


def main(out_dir: str) -> None:
    torch.manual_seed(0)
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    specials = ["<unk>", "<s>", "</s>", "<pad>"]
    tok.train_from_iterator(SENTENCES, trainers.WordLevelTrainer(special_tokens=specials))
    # Pad the vocabulary to the model's vocab_size so every id the random model samples decodes.
    tok.add_tokens([f"w{i}" for i in range(VOCAB - tok.get_vocab_size())])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    fast.save_pretrained(out_dir)
    cfg = LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=8, num_key_value_heads=8, head_dim=128, max_position_embeddings=262144,
        bos_token_id=1, eos_token_id=2, pad_token_id=3, torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out_dir)


if __name__ == "__main__":
    main(sys.argv[1])
