"""The `key value` / `key=value` / `key: value` step lines of plain PyTorch scripts, defined once.

The Python rule (pytorch.py) reads the pairs of a line with PAIR.finditer; the native lane
(nanscope/ingest/native.py) builds its RE2 readers from PAIR.finditer on a sample line of each
shape. Both map the keys onto event fields with `classify`, so they cannot disagree about which
key is the loss or the step (tests/test_native.py compares both lanes).
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

NUM = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf(?:inity)?)"
KEY = r"grad[ _]norm|loss[ _]scale|lm[ _]loss|train[ _]loss|[A-Za-z_][\w./]*"
SEP = r"[ \t]*[:=][ \t]*|[ \t]+"
PAIR = re.compile(rf"(?P<key>{KEY})(?:{SEP})(?P<val>{NUM})(?![\w.])", re.I)

STEP_KEYS = {"step", "steps", "iter", "iters", "iteration", "global_step", "it", "batch"}
LOSS_KEYS = {"loss", "train_loss", "train loss", "lm loss", "lm_loss", "total_loss", "loss/train", "train/loss"}
GRAD_KEYS = {"grad_norm", "grad norm", "gnorm", "grad_norm/total", "total_norm", "gradnorm", "norm"}
LR_KEYS = {"lr", "learning_rate", "learning-rate"}
SCALE_KEYS = {"scale", "loss_scale", "loss scale", "grad_scale", "lossscale"}
TPS_KEYS = {"tps", "tokens/s", "tok/s", "tokens_per_s", "tokens_per_sec", "throughput"}
EPOCH_KEYS = {"epoch"}
FLOAT_FIELDS = ("loss", "grad_norm", "lr", "loss_scale", "tokens_per_s", "epoch")
_CLASSES = (("loss", LOSS_KEYS), ("step", STEP_KEYS), ("grad_norm", GRAD_KEYS), ("lr", LR_KEYS),
            ("loss_scale", SCALE_KEYS), ("tokens_per_s", TPS_KEYS), ("epoch", EPOCH_KEYS))


def norm_key(key: str) -> str:
    return key.lower().replace("-", "_")


def classify(keys: Sequence[str]) -> Optional[dict[str, int]]:
    """field -> index into `keys` (normalized, first occurrence of each, in line order), or None
    when the line is not a step line: it needs a loss, and a step counter or a grad norm / lr /
    scale next to it, so prose that mentions a loss is not one."""
    out: dict[str, int] = {}
    for i, key in enumerate(keys):
        for fld, names in _CLASSES:
            if key in names:
                out.setdefault(fld, i)
                break
    if "loss" not in out:
        return None
    if not ({"step", "grad_norm", "lr", "loss_scale"} & out.keys()):
        return None
    return out


MAX_PAIRS = 12  # the native lane reads lines with at most this many pairs
