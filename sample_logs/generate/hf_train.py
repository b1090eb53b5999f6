#!/usr/bin/env python3
"""Tiny real training runs with an optional, deterministic fault injection.

Used by make_hf_logs.sh to produce the real logs under sample_logs/hf/ and
sample_logs/deepspeed/. Everything is local and CPU only: random weights,
random token data, no hub downloads.

  --framework hf         Hugging Face Trainer on a 2-layer GPT-2 built from a
                         config (needs torch, transformers, accelerate)
  --framework deepspeed  deepspeed.initialize() + fp16 with dynamic loss
                         scaling on a tiny embedding/MLP language model
                         (needs torch, deepspeed; transformers not imported)

Step numbering: "step N" means the optimizer step that the Trainer counts as
global_step == N once it has finished (1-based, the N-th logged entry when
logging_steps=1). Injections at --inject-step N affect the forward pass of
exactly that step.

Injection modes:
  none         healthy run
  poison       on_step_begin of step N, fill one weight (wte) with NaN on the
               chosen rank(s); the NaN then propagates by itself
               (loss -> grads -> optimizer update -> all weights).
  loss-once    multiply the loss of step N (only) by NaN in compute_loss;
               no other intervention.
DeepSpeed-only injection:
  poison-inf   before step N, set one fp16 model weight to +inf; every later
               step then overflows and is skipped, so the loss scaler keeps
               lowering the scale until it is at its minimum.
  loss-once    multiply the loss of step N (only) by inf before backward.
"""

import argparse
import os

import torch
from torch.utils.data import Dataset


class RandomTokens(Dataset):
    """Random but learnable token sequences: each sequence starts at a random
    token and then follows x[t+1] = (7 * x[t] + 3) % vocab, so a healthy run
    shows the loss going down."""

    def __init__(self, n, seq_len, vocab, seed):
        g = torch.Generator().manual_seed(seed)
        x = torch.empty((n, seq_len), dtype=torch.long)
        x[:, 0] = torch.randint(0, vocab, (n,), generator=g)
        for t in range(1, seq_len):
            x[:, t] = (7 * x[:, t - 1] + 3) % vocab
        self.data = x

    def __len__(self):
        return self.data.shape[0]

    def __getitem__(self, i):
        x = self.data[i]
        return {"input_ids": x, "labels": x.clone()}


def rank():
    return int(os.environ.get("RANK", "0"))


def hf_classes():
    from transformers import Trainer, TrainerCallback

    class PoisonWeight(TrainerCallback):
        """Fill the token embedding with NaN right before step `step` runs."""

        def __init__(self, model, step, ranks):
            self.model = model
            self.step = step
            self.ranks = ranks

        def on_step_begin(self, args, state, control, **kwargs):
            # global_step counts finished steps, so step N begins when it is N-1.
            if state.global_step == self.step - 1 and rank() in self.ranks:
                with torch.no_grad():
                    self.model.transformer.wte.weight.fill_(float("nan"))


    class LossOnceTrainer(Trainer):
        """Trainer whose loss is multiplied by NaN for one step only."""

        nan_step = None
        nan_ranks = (0,)

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            out = super().compute_loss(
                model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch
            )
            if self.nan_step is not None and self.state.global_step == self.nan_step - 1 and rank() in self.nan_ranks:
                if return_outputs:
                    loss, outputs = out
                    return loss * float("nan"), outputs
                return out * float("nan")
            return out

    return PoisonWeight, LossOnceTrainer


def run_hf(a):
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    PoisonWeight, LossOnceTrainer = hf_classes()
    transformers.set_seed(a.seed)
    vocab = 1000
    config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=vocab,
                        n_positions=max(64, a.seq_len))
    model = GPT2LMHeadModel(config)

    world = int(os.environ.get("WORLD_SIZE", "1"))
    n_samples = a.steps * a.batch_size * world
    ds = RandomTokens(n_samples, a.seq_len, vocab, seed=a.seed)

    args = TrainingArguments(
        output_dir=a.output_dir,
        max_steps=a.steps,
        per_device_train_batch_size=a.batch_size,
        learning_rate=a.lr,
        warmup_steps=5,
        logging_steps=a.logging_steps,
        logging_nan_inf_filter=(a.nan_filter == "on"),
        max_grad_norm=a.max_grad_norm,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        ddp_backend="gloo" if world > 1 else None,
        seed=a.seed,
        dataloader_num_workers=0,
        **({"eval_strategy": "steps", "eval_steps": a.eval_steps,
            "per_device_eval_batch_size": a.batch_size} if a.eval_steps else {}),
    )

    ranks = tuple(int(r) for r in a.inject_ranks.split(","))
    callbacks = []
    trainer_cls = Trainer
    if a.inject == "poison":
        callbacks.append(PoisonWeight(model, a.inject_step, ranks))
    elif a.inject == "loss-once":
        trainer_cls = LossOnceTrainer
        LossOnceTrainer.nan_step = a.inject_step
        LossOnceTrainer.nan_ranks = ranks

    eval_ds = RandomTokens(16 * a.batch_size, a.seq_len, vocab, seed=a.seed + 1) if a.eval_steps else None
    trainer = trainer_cls(model=model, args=args, train_dataset=ds, eval_dataset=eval_ds, callbacks=callbacks)
    trainer.train()


class TinyLM(torch.nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.fc1 = torch.nn.Linear(dim, 4 * dim)
        self.fc2 = torch.nn.Linear(4 * dim, vocab)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(self.emb(x))))


def run_deepspeed(a):
    for k, v in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"),
                 ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29533")):
        os.environ.setdefault(k, v)
    import deepspeed

    torch.manual_seed(a.seed)
    deepspeed.init_distributed(dist_backend="gloo")
    vocab = 1000
    model = TinyLM(vocab, 64)
    config = {
        "train_micro_batch_size_per_gpu": a.batch_size,
        "gradient_accumulation_steps": 1,
        "steps_per_print": a.logging_steps,
        "log_level": "info",
        "gradient_clipping": a.max_grad_norm,
        "fp16": {
            "enabled": True,
            "loss_scale": 0,
            "initial_scale_power": a.initial_scale_power,
            "loss_scale_window": 1000,
            "hysteresis": 2,
            "min_loss_scale": 1,
        },
        # ZeRO stage 1 with a torch optimizer: DeepSpeedZeroOptimizer uses the
        # DynamicLossScaler that prints "[deepspeed] OVERFLOW! ..." lines.
        # (Stage 0 with a torch optimizer goes through FP16_UnfusedOptimizer,
        # which never prints them.)
        "zero_optimization": {"stage": a.zero_stage},
        "zero_allow_untested_optimizer": True,
    }
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
    engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=opt, config=config)

    ds = RandomTokens(a.steps * a.batch_size, a.seq_len, vocab, seed=a.seed)
    for i in range(a.steps):
        step = i + 1
        batch = ds.data[i * a.batch_size:(i + 1) * a.batch_size]
        if a.inject == "poison-inf" and step == a.inject_step:
            # Only the fp16 model copy is poisoned. Every later step overflows
            # and is skipped, so the fp32 master weights are never copied back
            # over it and the fault persists by itself.
            with torch.no_grad():
                engine.module.fc1.weight[0, 0] = float("inf")
        logits = engine(batch[:, :-1])
        loss = torch.nn.functional.cross_entropy(
            logits.float().reshape(-1, vocab), batch[:, 1:].reshape(-1))
        if a.inject == "loss-once" and step == a.inject_step:
            loss = loss * float("inf")
        engine.backward(loss)
        engine.step()
        print(f"iter {step} loss {loss.item():.4f}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--framework", choices=["hf", "deepspeed"], default="hf")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--logging-steps", type=int, default=1,
                   help="hf: logging_steps; deepspeed: steps_per_print")
    p.add_argument("--nan-filter", choices=["on", "off"], default="on",
                   help="TrainingArguments.logging_nan_inf_filter")
    p.add_argument("--inject", choices=["none", "poison", "loss-once", "poison-inf"], default="none")
    p.add_argument("--inject-step", type=int, default=20)
    p.add_argument("--inject-ranks", default="0", help="comma separated ranks that get the fault")
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--initial-scale-power", type=int, default=16, help="deepspeed fp16 only")
    p.add_argument("--zero-stage", type=int, default=1, help="deepspeed only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-steps", type=int, default=0,
                   help="hf: evaluate every N steps on a held-out set of the same kind (0: never)")
    p.add_argument("--output-dir", default="/tmp/nanscope-hf-out")
    a = p.parse_args()
    if a.framework == "hf":
        run_hf(a)
    else:
        run_deepspeed(a)


if __name__ == "__main__":
    main()
