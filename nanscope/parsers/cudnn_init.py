"""cuDNN could not be initialised: the library loaded at run time is older than the build, or no handle could be made.

XLA (JAX) and TensorFlow load cuDNN when the first convolution, RNG or DNN op runs, and log why it failed
before the Python error:

- xla/stream_executor/cuda/cuda_dnn.cc (tensorflow/stream_executor/cuda/cuda_dnn.cc before the split),
  `CudnnSupport::Init`: `LOG(ERROR) << "Loaded runtime CuDNN library: " << runtime << " but source was compiled
  with: " << compiled << ".  CuDNN library needs to have matching major version and equal or higher minor
  version. ..."` (TF 1.x: `Loaded runtime CuDNN library: 7003 (compatibility version 7000) but source was
  compiled with 6021 (compatibility version 6000).  If using a binary install, upgrade your CuDNN library to
  match. ...`), and `LOG(ERROR) << "Could not create cudnn handle: " << status` (`CUDNN_STATUS_INTERNAL_ERROR`,
  `CUDNN_STATUS_NOT_INITIALIZED`: often the GPU memory the process already took, or a broken install).
- then the error Python sees: XLA `FAILED_PRECONDITION: DNN library initialization failed. Look at the errors
  above for more details.`; TF `Failed to get convolution algorithm. This is probably because cuDNN failed to
  initialize, so try looking to see if a warning log message was printed above.`; TF 2.x `DNN library is not
  found.` (no cuDNN at all).
- PyTorch (aten/src/ATen/cudnn/Exceptions.h, `AT_CUDNN_CHECK`): `cuDNN error: CUDNN_STATUS_NOT_INITIALIZED`.

One failure prints several of these (the log line, then the exception): the first one names it; the version
line says the most, so its numbers are kept.
"""

from __future__ import annotations

from nanscope.parsers.base import Parser, rule
from nanscope.parsers._repeats import first_time
from nanscope.parsers.setup_checks import error_event


@rule("cudnn-init-failed", ("Loaded runtime CuDNN library: ", "Could not create cudnn handle: ", "DNN library initialization failed",
                            "because cuDNN failed to initialize", "DNN library is not found",
                            "cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"),
      r"(?<![\"'])(?P<msg>Loaded runtime CuDNN library: (?P<run>[\w.]+)(?: \(compatibility version \w+\))? but source was compiled with:? (?P<built>[\w.]*\w)"
      r"|Could not create cudnn handle: (?P<status>CUDNN_STATUS_\w+)"
      r"|DNN library initialization failed"
      r"|Failed to get convolution algorithm\. This is probably because cuDNN failed to initialize"
      r"|DNN library is not found"
      r"|[Cc]uDNN error: CUDNN_STATUS_NOT_INITIALIZED)")
def _cudnn_init(m, rec, state):
    if not first_time(state, ("cudnn", "init"), rec.loc.line):
        return []
    if m.group("run"):
        detail = f"the cuDNN loaded at run time ({m.group('run')}) is older than the one the library was built with ({m.group('built')})"
    elif m.group("status"):
        detail = f"cuDNN could not create its handle ({m.group('status')}): the GPU memory was already taken, or the cuDNN install is broken"
    elif "not found" in m.group("msg"):
        detail = "no cuDNN library was found (not installed, or not on the library path)"
    else:
        detail = "the first convolution or DNN op found no usable cuDNN (the version or handle error is printed before it)"
    return error_event(m, rec, "cudnn_init_failed", "cuda", detail)


PARSER = Parser(
    name="cudnn_init",
    framework="cuda",
    priority=40,  # before the generic exception parser (python, 80)
    description="cuDNN that cannot be initialised under XLA / TensorFlow / PyTorch (version older than the build, no handle)",
    rules=[_cudnn_init],
)
