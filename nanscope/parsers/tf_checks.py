"""TensorFlow's NaN / Inf checks: the tensor (or op) whose values went non-finite, and torchtune's dataset checks.

tensorflow/core/kernels/check_numerics_op.cc (tf.debugging.check_numerics, tf.check_numerics in 1.x, every release):
the op fails with `errors::InvalidArgument(message_, " : Tensor had ", status, " values")`, status `NaN`, `Inf` or
`NaN and Inf` (`Inf and NaN`), message_ being the caller's own text; the GPU kernel logs `abnormal_detected_host @0x...
= {nan, inf} <message>` first. Printed as
  InvalidArgumentError: LossTensor is inf or nan. : Tensor had NaN values            (the Object Detection trainer)
  tensorflow.python.framework.errors_impl.InvalidArgumentError: Found Inf or NaN global norm. : Tensor had NaN values
      (tf.clip_by_global_norm's VerifyFinite: the gradients' global norm)
  ... : Tensor had NaN values [Op:CheckNumerics]                                     (TF 2 eager)
and by tf.train's coordinator as `Error reported to Coordinator: <class '...InvalidArgumentError'>, <message> : ...`.
tensorflow/python/debug/lib/check_numerics_callback.py (tf.debugging.enable_check_numerics, TF 2.1+):
  !!! Detected Infinity or NaN in output 0 of eagerly-executing op "Log" (# of outputs: 1) !!!
  (`graph op "..."` inside tf.function): the op that produced the first non-finite value.

torchtune's datasets (torchtune/datasets/_alpaca.py, _chat.py, _instruct.py, _text_completion.py ...; _packed.py):
`packed=True` needs the maximum sequence length, `PackedDataset requires a max_seq_len to be set on the tokenizer.`
(`... on the model_transform.`, `... to be set.`), and a sample longer than it cannot be packed unsplit, `Dataset
sample is too long (N > M). Please set `split_across_pack=True` or increase `max_seq_len`.`: the recipe's config.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.setup_checks import error_event, exc_type_before


@rule("tf-check-numerics", (" : Tensor had ", "Detected Infinity or NaN in output "),
      r"(?<![\"'])(?P<msg>(?:(?<=, )|(?<=: )|^)(?P<what>(?:[^:<>\n\"]|:(?! )){1,200}?) : Tensor had (?P<ty>NaN and Inf|Inf and NaN|NaN|Inf) values"
      r"|Detected Infinity or NaN in output (?P<out>\d+) of (?P<mode>eagerly-executing|graph) op \"(?P<op>[^\"]+)\")")
def _check_numerics(m, rec, state):
    if not first_time(state, ("tf_check_numerics",), rec.loc.line):
        return []
    if m.group("op"):
        op = f"TensorFlow op {m.group('op')} (output {m.group('out')})"
        value = "nan/inf"
        checker = "tf.debugging.enable_check_numerics"
    else:
        what = m.group("what").strip()
        value = m.group("ty").lower().replace(" and ", "/")
        checker = "tf.debugging.check_numerics"
        if what.startswith("Found Inf or NaN global norm"):
            op = "the gradients' global norm (tf.clip_by_global_norm)"
        else:
            op = f"the tensor tf.check_numerics checked ({what!r})"
    msg = rec.text[m.start("msg"):].strip()
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="tensorflow", error="nan_op",
                      exc_type=exc_type_before(rec.text, m.start("msg")) or "InvalidArgumentError", message=msg[:400],
                      fields={"op": op, "value": value, "checker": checker})


@rule("torchtune-packed-config", ("PackedDataset requires a max_seq_len to be set", "Dataset sample is too long ("),
      r"(?<![\"'])(?P<msg>PackedDataset requires a max_seq_len to be set(?: on the (?P<on>tokenizer|model_transform))?\."
      r"|Dataset sample is too long \((?P<n>\d+) > (?P<max>\d+)\)\. Please set `split_across_pack=True` or increase `max_seq_len`)")
def _torchtune_packed(m, rec, state):
    if not first_time(state, ("torchtune", "packed"), rec.loc.line):
        return []
    if m.group("n"):
        detail = (f"a sample of {m.group('n')} tokens is longer than max_seq_len {m.group('max')}, and packing may not split it: "
                  "set split_across_pack=True or a larger max_seq_len")
    else:
        detail = (f"the dataset is packed (packed=True) but the {m.group('on') or 'dataset'} has no max_seq_len: set "
                  f"{m.group('on') or 'dataset'}.max_seq_len in the config, or packed=False")
    return error_event(m, rec, "trainer_config_invalid", "torchtune", detail)


# tensorflow/python/distribute/coordinator/cluster_coordinator.py (ParameterServerStrategy's coordinator, TF 2.4+),
# Worker's wait_on_failure: logging.error("Remote function on worker %s failed with %r:%s\nIt is treated as a
# transient connectivity failure for now.", worker_device_name, e, e) when the error is a worker <-> ps connectivity
# one (_record_and_ignore_transient_ps_failure), "...\nThis derived error is ignored and not reported to users." for
# a cancelled or timed-out RPC. An UnavailableError there is gRPC's UNAVAILABLE: a task (the ps, the worker) cannot
# be reached ("failed to connect to all addresses", "Socket closed", "Connection reset by peer"); the derived,
# cancelled ones are collateral and stay quiet.
@rule("tf-remote-unavailable", ("Remote function on worker",),
      r"Remote function on worker (?P<worker>\S+) failed with (?:\w+\.)*UnavailableError\(\):(?P<msg>.{0,300})")
def _remote_unavailable(m, rec, state):
    if not first_time(state, ("tf_unavailable", m.group("worker")), rec.loc.line):
        return []
    msg = m.group("msg").strip()
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="tensorflow", error="peer_connection_lost",
                      message=m.group(0).strip(), exc_type="UnavailableError",
                      fields={"backend": "grpc", "worker": m.group("worker"),
                              "detail": f"the coordinator's remote function on {m.group('worker')} could not reach a "
                                        f"task over gRPC (UNAVAILABLE: {msg})"})



# A TensorFlow build without NCCL asked for an NCCL collective: MirroredStrategy's default cross-device op is NCCL
# all-reduce (tf.distribute.NcclAllReduce), and the Windows (and macOS) builds register no kernel for the Nccl* ops.
# tensorflow/core/common_runtime placement (TF 1.13 - 2.x): `errors::InvalidArgument("No OpKernel was registered to
# support Op '", op, "' used by ", node, " with these attrs: [...]")` then `Registered devices: [CPU, GPU]` and
# `Registered kernels:\n  <no registered kernels>`; tensorflow/core/framework/op_kernel.cc FindKernelRegistration:
# `No registered 'NcclAllReduce' OpKernel for 'GPU' devices compatible with node {{node NcclAllReduce}}`. Only the
# Nccl ops count: another op without a kernel is another problem.
@rule("tf-nccl-not-built", ("No OpKernel was registered to support Op 'Nccl", "No registered 'Nccl"),
      r"(?P<msg>No OpKernel was registered to support Op '(?P<op>Nccl\w{1,40})'|No registered '(?P<op2>Nccl\w{1,40})' OpKernel for)")
def _tf_nccl_not_built(m, rec, state):
    op = m.group("op") or m.group("op2")
    if not first_time(state, ("tf_nccl_not_built",), rec.loc.line):
        return []
    return error_event(m, rec, "dist_backend_unavailable", "tensorflow",
                       f"this TensorFlow build registers no kernel for {op}: it has no NCCL (the Windows and macOS builds)",
                       backend="NCCL", build="TensorFlow", op=op)

PARSER = Parser(
    name="tf_checks",
    framework="tensorflow",
    priority=40,  # before the generic exception parser (python, 80)
    description="TensorFlow's check_numerics / enable_check_numerics (the tensor or op that went non-finite); torchtune's packed-dataset config checks",
    rules=[_check_numerics, _torchtune_packed, _remote_unavailable, _tf_nccl_not_built],
)
