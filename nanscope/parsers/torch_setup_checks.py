"""PyTorch checks a fine-tuning set-up trips at its first move or forward: weights still on the meta device, indices
past an embedding table, kernels with no implementation for a dtype, and kernels for newer GPUs.

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

A kernel with no implementation for the tensors' dtype:
- aten/src/ATen/Dispatch.h (AT_DISPATCH_*): `RuntimeError: "{kernel name}" not implemented for '{dtype}'`. For 'Half' /
  'BFloat16' the precision has no kernel on this device (fp16 on the CPU: `"LayerNormKernelImpl" not implemented for
  'Half'`, `"addmm_impl_cpu_" not implemented for 'Half'`): dtype-unsupported. For any other dtype the op got tensors of
  the wrong type (integer inputs to a float op, float class labels: `"nll_loss_forward_reduce_cuda_kernel_2d_index" not
  implemented for 'Float'`): dtype-mismatch.

A kernel built only for newer GPUs: flash-attn's and PyTorch's fused attention check the compute capability with
TORCH_CHECK (`RuntimeError: Expected is_sm80 to be true, but got false.`, `Expected is_sm80 || is_sm90 ...`, `Expected
is_sm90 || is_sm8x || is_sm75 to be true ...`, c10's `Expected {cond} to be true, but got false.` wording): this GPU is
older than the kernel needs (a V100 / T4 for the sm80-only backward): cuda-arch-unsupported.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
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


_LOW_PRECISION = ("Half", "BFloat16", "ComplexHalf")


@rule("kernel-dtype", ("\" not implemented for '",),
      r"(?<![\w'])\"(?P<kernel>\w{1,160})\" not implemented for '(?P<dtype>\w{1,40})'?")
def _kernel_dtype(m, rec, state):
    kernel, dtype = m.group("kernel"), m.group("dtype")
    msg = rec.text[m.start():].strip()[:400]
    if dtype in _LOW_PRECISION:
        message = (f"the {kernel} kernel has no {dtype} implementation on this device ({dtype} on the CPU, or a "
                   "kernel this torch build lacks): run that part in float32, or on a GPU that supports it")
        kind = "dtype_unsupported"
    else:
        message = f"the {kernel} kernel got {dtype} tensors, a dtype it does not take (integer inputs to a float op, float class labels)"
        kind = "dtype_mismatch"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="pytorch", error=kind, message=message,
                      exc_type="RuntimeError", fields={"detail": msg, "kernel": kernel, "dtype": dtype})


@rule("kernel-sm-check", ("to be true, but got false",),
      r"(?<![\"'])Expected (?P<cond>is_sm\w{1,8}(?: \|\| is_sm\w{1,8}){0,4}) to be true, but got false")
def _kernel_sm_check(m, rec, state):
    if not first_time(state, ("sm", "check"), rec.loc.line):
        return []
    cond = m.group("cond")
    err = (f"a fused attention kernel (flash-attn / SDPA) needs a GPU with {cond.replace(' || ', ' or ')} and this GPU is "
           "older (a V100 / T4 for an sm80-only kernel)")
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="pytorch", error="cuda_arch_unsupported",
                      message=rec.text[m.start():].strip()[:400], exc_type="RuntimeError",
                      fields={"cuda_error": err, "warning": False})


PARSER = Parser(
    name="torch_setup_checks",
    framework="pytorch",
    priority=40,  # before the generic exception parser (python, 80)
    description="Weights still on the meta device when moved, indices past an embedding table, kernels with no implementation for "
                "a dtype, fused kernels for newer GPUs",
    rules=[_meta_tensor, _index_out_of_range, _kernel_dtype, _kernel_sm_check],
)
