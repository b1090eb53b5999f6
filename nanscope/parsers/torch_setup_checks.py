"""PyTorch checks a fine-tuning set-up trips at its first move or forward: weights still on the meta device, and
indices past an embedding table.

Meta tensors (a model built under accelerate's init_empty_weights / from_pretrained with a device_map or
low_cpu_mem_usage, whose weights were never loaded or were offloaded):
- aten (`_to_copy` of a meta tensor): `NotImplementedError: Cannot copy out of meta tensor; no data!` (torch 2.1+ adds
  ` Please use torch.nn.Module.to_empty() instead of torch.nn.Module.to() when moving module from meta to a different
  device.`), raised by model.to(device) (the HF Trainer's _move_model_to_device, accelerate's prepare_model).
- accelerate src/accelerate/utils/modeling.py `set_module_tensor_to_device`: `ValueError(f"{tensor_name} is on the
  meta device, we need a `value` to put in on {device}.")` (a hook moving an offloaded module with no weights).

Index out of range (the CPU path; on CUDA the same lookup is a device-side assert):
- aten/src/ATen/native/TensorAdvancedIndexing.cpp `index_select_out_cpu_` (torch.embedding on CPU):
  `TORCH_CHECK_INDEX(..., "index out of range in self")`, printed as `IndexError: index out of range in self`: a token
  id at or past the vocabulary (tokens added without resize_token_embeddings, a tokenizer of another model) or a
  position past max_position_embeddings (an input longer than the model).
"""

from __future__ import annotations

from nanscope.parsers.base import Parser, rule
from nanscope.parsers._repeats import first_time
from nanscope.parsers.setup_checks import error_event


@rule("meta-tensor-copy", ("Cannot copy out of meta tensor; no data", "is on the meta device, we need a `value` to put in on"),
      r"(?<![\"'])(?P<msg>Cannot copy out of meta tensor; no data!?"
      r"|(?<![\w.])(?P<tensor>[\w.]{1,200}) is on the meta device, we need a `value` to put in on (?P<dev>[\w:]{1,40}))")
def _meta_tensor(m, rec, state):
    if not first_time(state, ("meta", "copy"), rec.loc.line):
        return []
    if m.group("tensor"):
        detail = (f"{m.group('tensor')} is still on the meta device (never loaded, or offloaded) and accelerate was asked to "
                  f"put it on {m.group('dev')} without its weights")
    else:
        detail = ("model.to() found parameters without data (a device_map / low_cpu_mem_usage load left them empty, "
                  "or offloaded them)")
    return error_event(m, rec, "meta_tensor_copy", "pytorch", detail)


@rule("embedding-index-out-of-range", ("index out of range in self",),
      r"IndexError: (?P<msg>index out of range in self)")
def _index_out_of_range(m, rec, state):
    if not first_time(state, ("index", "self"), rec.loc.line):
        return []
    return error_event(m, rec, "embedding_index_out_of_range", "pytorch",
                       "a token id >= the vocabulary size (tokens added without resize_token_embeddings), or a position past "
                       "the model's maximum length (an input longer than max_position_embeddings)")


PARSER = Parser(
    name="torch_setup_checks",
    framework="pytorch",
    priority=40,  # before the generic exception parser (python, 80)
    description="Weights still on the meta device when moved, indices past an embedding table (IndexError: index out of range in self)",
    rules=[_meta_tensor, _index_out_of_range],
)
