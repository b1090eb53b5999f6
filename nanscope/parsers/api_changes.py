"""A trainer or its config refused a keyword argument: the script and the installed release disagree.

CPython's own template (Python/getargs.c, Objects/call.c; every release):
  `TypeError: {name}() got an unexpected keyword argument '{arg}'`
where {name} is the function's qualified name since 3.10 (`SFTTrainer.__init__`, `TrainingArguments.__init__`
of the dataclass, `CustomTrainer.compute_loss`) and its bare name before (`__init__`). Raised by a trainer
class, a training-arguments dataclass or a config dataclass (`SFTConfig`, `GRPOConfig`, `LoraConfig`), it
means the code was written for another release than the one installed: an argument was removed or renamed
(transformers 4.46 dropped `evaluation_strategy` for `eval_strategy`; trl 0.12 moved `dataset_text_field`,
`max_seq_length`, `packing`, `dataset_kwargs`, `neftune_noise_alpha`, `dataset_num_proc` from SFTTrainer
into SFTConfig, and trl 0.20 renamed SFTConfig's `max_seq_length` to `max_length`; `tokenizer` became
`processing_class`), or the library now passes one the user's override does not take (transformers 4.46
calls `compute_loss(model, inputs, return_outputs, num_items_in_batch=...)`).

The class decides, not the argument: any argument of a `*Trainer`, `*TrainingArguments` / `*Arguments` or
`*Config` class. Before Python 3.10 the message names no class; then only the arguments those releases are
known to have removed are read (the list below), since `__init__() got an unexpected keyword argument 'x'`
is otherwise any class at all. A source line quoting the template is not the error (a quote before it).

The positional form (CPython Python/getargs.c, Objects/call.c): `TypeError: {name}() takes {n} positional arguments
but {m} were given`: the training loop calls a method of the trainer with more (or fewer) arguments than the
override or the patch a wrapper installed takes, e.g. Unsloth's `_unsloth_get_batch_samples() takes 3 positional
arguments but 4 were given` when transformers' loop passes get_batch_samples a device (a transformers newer than the
Unsloth release). Read only for a `*Trainer` class's method, a Trainer hook the library calls on overrides
(compute_loss, get_batch_samples, training_step, prediction_step, ...) or an `_unsloth_` patch.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers.base import LazyPattern, Parser, rule

# the classes whose signature is the library's API for a training run (by the end of their name)
_TRAINER_API = ("Trainer", "TrainingArguments", "Arguments", "Config")

# argument -> what replaced it, from the libraries' release notes (transformers v4.46.0, trl v0.12.0 / v0.20.0)
_RENAMED = {
    "evaluation_strategy": "transformers 4.46 removed it: use eval_strategy",
    "dataset_text_field": "trl 0.12 moved it from SFTTrainer into SFTConfig (args=SFTConfig(dataset_text_field=...))",
    "max_seq_length": "trl 0.12 moved it into SFTConfig, and trl 0.20 renamed it max_length",
    "packing": "trl 0.12 moved it from SFTTrainer into SFTConfig",
    "dataset_kwargs": "trl 0.12 moved it from SFTTrainer into SFTConfig",
    "neftune_noise_alpha": "trl 0.12 moved it from SFTTrainer into SFTConfig",
    "dataset_num_proc": "trl 0.12 moved it from SFTTrainer into SFTConfig",
    "tokenizer": "the trainers now take processing_class= (trl 0.12, transformers 4.46 deprecated tokenizer=)",
    "num_items_in_batch": "transformers 4.46 passes it to compute_loss: add **kwargs (or num_items_in_batch=None) to the override",
}


# the callee's (qualified) name, read from a bounded stretch before `()`: in the rule's own regex an optional
# dotted-name group would be retried at every position of a long word (quadratic on a hostile line)
_CALLEE = LazyPattern(r"(?:^|[^\w.\"'])((?:([A-Za-z_]\w*)\.)?([A-Za-z_]\w*))$")


@rule("trainer-unexpected-argument", ("got an unexpected keyword argument '",),
      r"\(\) got an unexpected keyword argument '(?P<arg>\w+)'")
def _unexpected_argument(m, rec, state):
    callee = _CALLEE.search(rec.text[max(0, m.start() - 200):m.start()])
    if callee is None:
        return None
    cls, fn, arg = callee.group(2), callee.group(3), m.group("arg")
    start = m.start() - len(callee.group(1))
    if cls is not None:
        if not cls.endswith(_TRAINER_API):
            return None  # some other function: the generic exception reader's
    elif fn != "__init__" or arg not in _RENAMED:
        return None
    before = rec.text[:start].rstrip()
    if before and not before.endswith(("TypeError:", "Error:")):
        return None  # not the exception line (a sentence, a log message quoting it)
    where = f"{cls}.{fn}()" if cls else f"{fn}()"
    hint = _RENAMED.get(arg)
    detail = (f"{where} does not take {arg!r}: the script was written for another release of the library than the one "
              f"installed" + (f" ({hint})" if hint else " (the argument was removed, renamed or not yet added)"))
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="hf", error="trainer_argument_unsupported",
                      message=rec.text[start:].strip()[:400], exc_type="TypeError",
                      fields={"detail": detail, "argument": arg, "callee": where})


# Trainer hooks transformers' loop calls on a subclass's override (their signatures changed between releases)
_TRAINER_HOOKS = {"compute_loss", "get_batch_samples", "training_step", "prediction_step", "_get_train_sampler",
                  "_prepare_inputs", "create_optimizer", "log", "_save", "_maybe_log_save_evaluate"}


@rule("trainer-positional-count", ("positional argument",),
      r"\(\) takes (?P<n>\d+|from \d+ to \d+) positional arguments? but (?P<m>\d+) (?:were|was) given")
def _positional_count(m, rec, state):
    callee = _CALLEE.search(rec.text[max(0, m.start() - 200):m.start()])
    if callee is None:
        return None
    cls, fn = callee.group(2), callee.group(3)
    if not ((cls is not None and cls.endswith("Trainer")) or fn in _TRAINER_HOOKS or fn.startswith("_unsloth_")):
        return None
    start = m.start() - len(callee.group(1))
    before = rec.text[:start].rstrip()
    if before and not before.endswith(("TypeError:", "Error:")):
        return None
    where = f"{cls}.{fn}()" if cls else f"{fn}()"
    patched = " (an Unsloth patch of the Trainer)" if fn.startswith("_unsloth_") else ""
    detail = (f"the training loop called {where}{patched} with {m.group('m')} positional arguments but it takes "
              f"{m.group('n')}: the installed transformers calls it with another signature than the override or patch "
              "was written for (install the releases that go together)")
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="hf", error="trainer_argument_unsupported",
                      message=rec.text[start:].strip()[:400], exc_type="TypeError",
                      fields={"detail": detail, "argument": "positional", "callee": where})


PARSER = Parser(
    name="api_changes",
    framework="hf",
    priority=40,  # before the generic exception parser (python, 80), which would call this an uncaught TypeError
    description="Trainers and their configs refusing a keyword argument another release removed or renamed, Trainer hooks called with another number of arguments",
    rules=[_unexpected_argument, _positional_count],
)
