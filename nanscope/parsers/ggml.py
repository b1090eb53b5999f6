"""ggml (llama.cpp, llama-server, Ollama's runner): a buffer the backend could not allocate.

ggml prints its allocation failures through GGML_LOG_ERROR (older releases: fprintf(stderr, ...)), the
same text in llama.cpp, llama-server and Ollama's llama runner (which vendors ggml), behind whatever a
wrapper puts in front (`ollama  | `, journald's `Mar 15 11:39:07 host ollama[87551]: `):

  ggml/src/ggml-cuda/ggml-cuda.cu ggml_backend_cuda_buffer_type_alloc_buffer (the ROCm and MUSA builds
  compile the same file, so they print `cudaMalloc` too):
      "%s: allocating %.2f MiB on device %d: cudaMalloc failed: %s\n"   (__func__, MiB, device, cudaGetErrorString)
      -> ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4507.00 MiB on device 0: cudaMalloc failed: out of memory
  ggml/src/ggml-alloc.c (alloc_tensor_range, ggml_gallocr_reserve_n):
      "%s: failed to allocate %s buffer of size %zu\n"   (__func__, ggml_backend_buft_name(buft), bytes)
      -> alloc_tensor_range: failed to allocate CUDA0 buffer of size 151851674624
  ggml/src/ggml-backend.cpp ggml_backend_cpu_buffer_type_alloc_buffer:
      "%s: failed to allocate buffer of size %zu\n"   -> host memory
      (read also when a paste cut the function name's first letters: `gml_backend_cpu_buffer_type_alloc_buffer: ...`)
  src/llama-model.cpp (llama_model_load reports the exception):
      throw std::runtime_error(format("unable to allocate %s buffer", ggml_backend_buft_name(buft)))
      -> llama_model_load: error loading model: unable to allocate CUDA0 buffer
      (Ollama relays the runner's last error without the function name, llm/status.go keeps the text from its
      prefix on: `llama runner process has terminated: error loading model: unable to allocate CUDA0 buffer`.
      Before the buffer type was named (llama.cpp early 2024, llm_load_tensors) the throw was
      `unable to allocate backend buffer` for any buffer, host or device: that names no memory, so it is not
      read here; Ollama's runner rule reports the relayed form.)

The buffer type names the memory: `CPU` (and `CPU_Mapped`, `CPU_REPACK`, ...) and `CUDA_Host` (pinned
host memory) are host memory, so host-oom; a device buffer (`CUDA0`, `ROCm1`, `Metal`, `Vulkan0`, `SYCL0`)
is GPU memory, so cuda-oom. One failure prints two or three of these lines (the backend's, the allocator's,
the loader's): the first makes the event, the rest are the same failure.

  ggml/src/ggml-vulkan/ggml-vulkan.cpp ggml_vk_create_buffer (the Vulkan backend; then vk's exception text):
      std::cerr << "ggml_vulkan: Device memory allocation of size " << size << " failed." << std::endl;
      -> ggml_vulkan: Device memory allocation of size 118497280 failed.
         ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory
  ggml-cuda.cu's CUDA_CHECK before the ggml_cuda_error rewrite (2023):
      fprintf(stderr, "CUDA error %d at %s:%d: %s\n", err_, __FILE__, __LINE__, cudaGetErrorString(err_))
      -> CUDA error 2 at /data/llama.cpp/ggml-cuda.cu:5509: out of memory    (later: `CUDA error: out of memory`,
         the cuda parser's)

`ggml_cuda_host_malloc: failed to allocate ... MiB of pinned memory` (and Vulkan's `Failed to allocate pinned
memory.` before its ErrorOutOfDeviceMemory line) is a warning: ggml falls back to
pageable memory and goes on, so it is no failure.

Two more ggml / llama.cpp failures that end the process or the model load:

  ggml/include/ggml.h (mid-2024 on; ggml_abort prints `%s:%d: ` file and line, then the message):
      #define GGML_ASSERT(x) if (!(x)) GGML_ABORT("GGML_ASSERT(%s) failed", #x)
      -> ggml/src/ggml.c:1554: GGML_ASSERT(view_src == NULL || data_size == 0 || ...) failed
      earlier ggml.h: fprintf(stderr, "GGML_ASSERT: %s:%d: %s\n", __FILE__, __LINE__, #x); abort();
      -> GGML_ASSERT: /opt/projects/llama.cpp/ggml.c:4796: view_src == NULL || data_size + view_offs <= ...
      Ollama relays the runner's last words: `error="llama runner process has terminated: GGML_ASSERT(...) failed"`.
      (A compiler's note quoting the macro's own definition, `GGML_ASSERT(%s) failed`, is not one.)
  src/llama.cpp / llama-model.cpp llama_model_load, the loader's exception (tensor missing, wrong shape or
  count, data outside the file, an unknown pre-tokenizer):
      LLAMA_LOG_ERROR("%s: error loading model: %s\n", __func__, err.what())
      -> llama_model_load: error loading model: create_tensor: tensor 'blk.0.ffn_gate.0.weight' not found
      (Ollama: `... process has terminated: exit status 1: error loading model: ...`; the exception text alone
      after `what():` / `Error: exception ...` / LM Studio's `"cause": "llama.cpp error: '...'"`, so the loader's own
      texts count by themselves: src/llama-model-loader.cpp `done_getting_tensors: wrong number of tensors;
      expected %d, got %d`, `tensor '%s' data is not within the file bounds, model is corrupted or incomplete`,
      create_tensor / check_tensor_dims `tensor '%s' not found` / `has wrong shape`, src/llama-vocab.cpp
      `unknown pre-tokenizer type: '%s'`). The loader's allocation
      failure (`unable to allocate CUDA0 buffer`) is the out-of-memory rule's above, an unknown architecture
      the architecture parser's.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule

FW = "ggml"
_MIB = 1024 * 1024


def _host_buffer(name: str) -> bool:
    return name.startswith("CPU") or name.endswith("_Host")


def _oom(rec, state, host: bool, fields: dict) -> list[ErrorEvent]:
    if not first_time(state, ("ggml_oom", host), rec.loc.line):
        return []  # the allocator's and the loader's lines after the backend's: one failure
    kind = "host_oom" if host else "cuda_oom"
    return [ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error=kind, message=rec.text.strip(),
                       fields={"source": "ggml", **fields})]


@rule(
    "device-malloc",
    ("cudaMalloc failed",),
    r"(?P<func>ggml_backend_\w+?_buffer_type_alloc_buffer): allocating (?P<mib>\d+(?:\.\d+)?) MiB on device "
    r"(?P<dev>\d+): cudaMalloc failed: (?P<err>out of memory)",
)
def _device_malloc(m, rec, state):
    mib, dev = float(m.group("mib")), int(m.group("dev"))
    return _oom(rec, state, False, {
        "device": dev, "requested_mib": mib,
        "detail": f"ggml could not allocate {mib:.2f} MiB on device {dev} (cudaMalloc: out of memory)",
    })


@rule(
    "buffer-alloc",
    ("failed to allocate", "unable to allocate"),
    r"(?<!\w)(?:(?P<func>\w+): failed to allocate (?P<buf>[A-Za-z][\w-]*) buffer of size (?P<size>\d+)"
    r"|(?P<cpu>\w*backend_cpu_buffer_type_alloc_buffer): failed to allocate buffer of size (?P<csize>\d+)"
    r"|(?:llama_model_load: )?error loading model: unable to allocate (?!backend )(?P<lbuf>[A-Za-z][\w-]*) buffer)",
)
def _buffer_alloc(m, rec, state):
    if m.group("cpu"):
        buf, size = "CPU", int(m.group("csize"))
    elif m.group("lbuf"):
        buf, size = m.group("lbuf"), None
    else:
        buf, size = m.group("buf"), int(m.group("size"))
    host = _host_buffer(buf)
    what = "the model's weights" if m.group("lbuf") or m.group("func") == "alloc_tensor_range" else (
        "the compute buffers" if m.group("func") and m.group("func").startswith("ggml_gallocr") else "a buffer")
    amount = f" of {size / _MIB:.2f} MiB" if size is not None else ""
    return _oom(rec, state, host, {
        "buffer": buf, "bytes": size,
        "detail": f"ggml could not allocate a {buf} buffer{amount} for {what}"
                  + (" (host memory)" if host else " (device memory)"),
    })


@rule(
    "vulkan-device-alloc",
    ("ggml_vulkan: Device memory allocation of size",),
    r"ggml_vulkan: Device memory allocation of size (?P<size>\d+) failed",
)
def _vulkan_alloc(m, rec, state):
    size = int(m.group("size"))
    return _oom(rec, state, False, {
        "buffer": "Vulkan", "bytes": size,
        "detail": f"ggml's Vulkan backend could not allocate {size / _MIB:.2f} MiB of device memory (ErrorOutOfDeviceMemory)",
    })


@rule(
    "old-cuda-check",
    ("ggml-cuda.cu:",),
    r"CUDA error (?P<code>\d+) at (?P<at>\S*ggml-cuda\.cu:\d+): (?P<err>out of memory)",
)
def _old_cuda_check(m, rec, state):
    return _oom(rec, state, False, {
        "cuda_error_code": int(m.group("code")), "at": m.group("at"),
        "detail": f"a CUDA call in ggml failed with out of memory ({m.group('at')})",
    })


@rule(
    "ggml-assert",
    ("GGML_ASSERT",),
    r"(?:(?<!\S)(?P<at>\S{1,400}:\d+): )?GGML_ASSERT\((?P<cond>.+)\) failed|GGML_ASSERT: (?P<oat>\S{1,400}:\d+): (?P<ocond>.+)",
)
def _ggml_assert(m, rec, state):
    cond = (m.group("cond") or m.group("ocond") or "").strip()
    if cond == "%s":
        return None  # the macro's definition quoted by a compiler, not a failed assertion
    at = m.group("at") or m.group("oat")
    if not first_time(state, ("ggml_assert",), rec.loc.line):
        return []  # the runner's abort and the server's relay of it
    return [ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="ggml_assert", message=rec.text.strip(),
                       fields={"source": "ggml", "condition": cond, "at": at,
                               "detail": f"GGML_ASSERT({cond}) failed" + (f" at {at}" if at else "")})]


@rule(
    "model-load",
    ("error loading model: ", "done_getting_tensors: wrong number of tensors", "data is not within the file bounds",
     "unknown pre-tokenizer type: '", "create_tensor: tensor '", "check_tensor_dims: tensor '"),
    r"error loading model: (?!.*(?:unable to allocate|unknown model architecture))(?P<what>[^\"\r\n]+)"
    r"|(?P<bare>done_getting_tensors: wrong number of tensors; expected \d+, got \d+"
    r"|(?:create_tensor|check_tensor_dims): tensor '[^']+' (?:not found|has wrong shape[^'\"\r\n]*)"
    r"|tensor '[^']+' data is not within the file bounds[^'\"\r\n]*"
    r"|unknown pre-tokenizer type: '[^']*')",
)
def _model_load(m, rec, state):
    what = (m.group("what") or m.group("bare")).strip()
    if not first_time(state, ("gguf_load",), rec.loc.line):
        return []
    return [ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="gguf_load_failed", message=rec.text.strip(),
                       fields={"source": "llama.cpp", "reason": what,
                               "detail": f"llama.cpp could not load the GGUF model: {what}"})]


# llama-server with a draft model (-md) checks it against the target with common_speculative_are_compatible
# (vocab type, BOS/EOS, vocab size within SPEC_VOCAB_MAX_SIZE_DIFFERENCE, the tokens' text) and, in the releases
# that refuse a mismatch, tools/server/server.cpp load_model ends the load:
#   SRV_ERR("the draft model '%s' is not compatible with the target model '%s'\n", ...)
# Newer releases log the same words at INFO and go on: `... '%s'. tokens will be translated between the draft and
# target models.` (and the examples' `LOG_INF`), which is no failure.
@rule(
    "draft-incompatible",
    ("is not compatible with the target model '",),
    r"the draft model '(?P<draft>[^']*)' is not compatible with the target model '(?P<target>[^']*)'(?P<tail>.*)",
)
def _draft_incompatible(m, rec, state):
    if "translated" in m.group("tail"):
        return []  # the draft's tokens are translated: speculation goes on
    if not first_time(state, ("spec_draft",), rec.loc.line):
        return []
    return [ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="spec_draft_mismatch", message=rec.text.strip(),
                       fields={"engine": "llama.cpp", "draft": m.group("draft"), "target": m.group("target"),
                               "detail": f"llama-server refused the draft model {m.group('draft')!r}: its vocabulary "
                                         f"does not match the target model's"})]


PARSER = Parser(
    name="ggml",
    framework=FW,
    priority=40,
    description="ggml / llama.cpp / Ollama: a buffer the backend could not allocate, a failed GGML_ASSERT, a GGUF the loader refused,"
                " a draft model llama-server refused",
    rules=[_device_malloc, _buffer_alloc, _vulkan_alloc, _old_cuda_check, _ggml_assert, _model_load,
           _draft_incompatible],
)
