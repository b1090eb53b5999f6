"""onnxruntime has no kernel for a node of the model (its op at that opset, with those input types, on this provider).

microsoft/onnxruntime, the session's kernel lookup when it partitions the graph (onnxruntime/core/framework,
every release): a Status NOT_IMPLEMENTED, printed by the Python binding as
`[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : <message>` (onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented;
RuntimeError before 1.0) and by the mobile / C API as `Error code - ORT_NOT_IMPLEMENTED - <message>`, <message> being
  <= 1.7:  `Could not find an implementation for the node Mul(6)` (`... the node bert / embeddings / one_hot:OneHot(9)`)
  1.8+:    `Could not find an implementation for Pad(13) node with name '/Pad'`
The op and its opset version are read from the message. The phrase alone is other software's too (a compiler's
"Could not find an implementation for the function ..."): it counts with the Op(version) that onnxruntime prints.

An execution provider's library that onnxruntime cannot load (onnxruntime/core/session/provider_bridge_ort.cc
ProviderLibrary::Get, through the platform Env's LoadDynamicLibrary): the provider (CUDA, TensorRT, ROCm, OpenVINO)
needs CUDA / cuDNN / TensorRT libraries of the version the onnxruntime-gpu build was made for, and they are not on the
library path. By platform and release:
  Linux:     `[ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so with error:
             libcublasLt.so.11: cannot open shared object file: No such file or directory` (posix env.cc:
             "Failed to load library " + name + " with error: " + dlerror())
  Windows:   `LoadLibrary failed with error 126 "The specified module could not be found." when trying to load
             "...onnxruntime_providers_cuda.dll"` (<= 1.13), then `Error loading "...onnxruntime_providers_cuda.dll"
             which depends on "cudnn64_8.dll" which is missing. (Error 126: ...)` (1.14+, windows env.cc names the
             missing dependency)
onnxruntime then logs `Failed to create CUDAExecutionProvider. Please reference ...#requirements to ensure all
dependencies are met.` (later `... Require cuDNN 9.* and CUDA 12.*, and the latest MSVC runtime. ...`) and runs the
session on the CPU: slow, not stopped, but the GPU the job was given is not used. The load line says which library is
missing; the fallback warning alone (other causes: no device) is not read.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.setup_checks import exc_type_before

FW = "onnxruntime"


@rule("ort-not-implemented", ("Could not find an implementation for ",),
      r"(?P<msg>Could not find an implementation for (?:the node (?P<node>[^\n()]{1,200}?)\((?P<v>\d{1,3})\)"
      r"|(?P<op>[A-Za-z_][\w.:]{0,80})\((?P<v2>\d{1,3})\)(?: node with name '(?P<name>[^'\n]{0,200})')?))")
def _ort_not_implemented(m, rec, state):
    op = m.group("op") or m.group("node").rsplit(":", 1)[-1].strip()
    version = int(m.group("v") or m.group("v2"))
    if not first_time(state, ("ort_not_implemented", op, version), rec.loc.line):
        return []
    fields = {"operator": op, "opset": version, "node": m.group("name") or (m.group("node") or "").strip() or None,
              "detail": f"onnxruntime has no kernel for {op} at opset {version} (with these input types, on this execution provider)"}
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="onnxruntime_op_not_implemented",
                      message=rec.text[m.start("msg"):].strip()[:400], exc_type=exc_type_before(rec.text, m.start("msg")),
                      fields=fields)


@rule("ort-provider-library", ("Failed to load library ", "which is missing. (Error", "LoadLibrary failed with error "),
      r"(?P<msg>Failed to load library (?P<lib>\S*?onnxruntime_providers_(?P<ep>\w+)\.so) with error: (?P<err>[^\n]{1,300})"
      r"|Error loading \"(?P<dll>[^\"\n]{0,300}?onnxruntime_providers_(?P<ep2>\w+)\.dll)\" which depends on \"(?P<dep>[^\"\n]{1,200})\""
      r" which is missing\.|LoadLibrary failed with error (?P<code>\d+) \"(?P<why>[^\"\n]{0,200})\" when trying to load"
      r" \"(?P<dll3>[^\"\n]{0,300}?onnxruntime_providers_(?P<ep3>\w+)\.dll)\")")
def _ort_provider_library(m, rec, state):
    ep = m.group("ep") or m.group("ep2") or m.group("ep3")
    if not first_time(state, ("ort_provider_library", ep), rec.loc.line):
        return []  # the FAIL line, the pybind re-raise, the same load for the next session
    name = {"cuda": "CUDA", "tensorrt": "TensorRT", "rocm": "ROCm", "openvino": "OpenVINO", "dnnl": "oneDNN",
            "migraphx": "MIGraphX", "cann": "CANN"}.get(ep, ep)
    if m.group("err"):
        err = m.group("err").strip()
        missing = err.split(":", 1)[0] if "cannot open shared object file" in err else None
        why = f"{missing} is not on the library path" if missing else err[:160]
    elif m.group("dep"):
        why = f"{m.group('dep')} is not on the PATH"
    else:
        why = f"LoadLibrary error {m.group('code')} ({m.group('why')}): a DLL it depends on is missing"
    detail = (f"onnxruntime cannot load its {name} execution provider ({why}): the session falls back to the CPU; "
              f"the onnxruntime-gpu build needs the CUDA / cuDNN{' / TensorRT' if ep == 'tensorrt' else ''} release it "
              f"was built for")
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="dependency_missing",
                      message=rec.text[m.start():].strip()[:400], exc_type=exc_type_before(rec.text, m.start()),
                      fields={"detail": detail, "provider": ep, "missing": missing if m.group("err") else m.group("dep")})


PARSER = Parser(
    name="onnxruntime",
    framework=FW,
    priority=40,  # before the generic exception parser (python, 80): the NotImplemented / RuntimeError line is this one's
    description="onnxruntime sessions: a node with no kernel (NOT_IMPLEMENTED: Could not find an implementation for Op(version));"
                " an execution provider's library that cannot be loaded (the session falls back to the CPU)",
    rules=[_ort_not_implemented, _ort_provider_library],
)
