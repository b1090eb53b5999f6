"""cuda parser: real CUDA / allocator / driver lines -> events; look-alikes -> nothing from this parser.

Lines are verbatim from the public issue cited next to each (see research §3), or the framework's
template rendered where marked [SRC].
"""

from __future__ import annotations

import pytest

from nanscope.ingest.reader import Source
from nanscope.model import InputInfo
from nanscope.parsers.registry import all_parsers
from nanscope.pipeline import ScanResult, scan_source


def _mine(text: str, name: str = "train.log") -> list:
    src = Source(name, None, text.encode("utf-8"))
    return [e for e in scan_source(src, all_parsers(), InputInfo(name, None), ScanResult()) if e.framework == "cuda"]


REAL = [
    # github.com/murong-xu/CADS/issues/4 (torch 2.5+)
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.78 GiB. GPU 0 has a total capacity of 31.47 GiB of which 12.73 GiB is free. Including non-PyTorch memory, this process has 18.73 GiB memory in use. Of the allocated memory 9.08 GiB is allocated by PyTorch, and 9.35 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
     "cuda_oom", None, "torch.OutOfMemoryError",
     {"tried_gib": 22.78, "gpu": 0, "total_gib": 31.47, "free_gib": 12.73, "allocated_gib": 9.08, "reserved_unallocated_gib": 9.35}),
    # github.com/modelscope/ms-swift/issues/6301 (rank prefix, several `Process N has` clauses)
    ("[rank11]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB. GPU 3 has a total capacity of 63.42 GiB of which 1.70 GiB is free. Process 2521735 has 474.00 MiB memory in use. Including non-PyTorch memory, this process has 60.30 GiB memory in use. Process 2521734 has 474.00 MiB memory in use. Process 2521733 has 474.00 MiB memory in use. Of the allocated memory 50.94 GiB is allocated by PyTorch, and 8.56 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
     "cuda_oom", 11, "torch.OutOfMemoryError",
     {"tried_gib": 4.35, "gpu": 3, "total_gib": 63.42, "free_gib": 1.7, "allocated_gib": 50.94, "reserved_unallocated_gib": 8.56}),
    # github.com/Synthintel0/MyGirlGPT/issues/11 (torch 2.1 "capacty" typo, MiB units)
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has a total capacty of 4.00 GiB of which 41.56 MiB is free. Including non-PyTorch memory, this process has 3.44 GiB memory in use. Of the allocated memory 2.58 GiB is allocated by PyTorch, and 1.90 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF.",
     "cuda_oom", None, "torch.cuda.OutOfMemoryError",
     {"tried_gib": 0.03125, "total_gib": 4.0, "free_gib": round(41.56 / 1024, 6), "reserved_unallocated_gib": round(1.90 / 1024, 6)}),
    # github.com/carolchenyx/MGFN./issues/35 (`0 bytes` free, no proc_info)
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacty of 6.00 GiB of which 0 bytes is free. Of the allocated memory 2.93 GiB is allocated by PyTorch, and 1.90 MiB is reserved by PyTorch but unallocated.",
     "cuda_oom", None, "torch.cuda.OutOfMemoryError", {"free_gib": 0.0, "allocated_gib": 2.93}),
    # github.com/chnsh/DCRNN_PyTorch/issues/6 (<= 2.0 wording, RuntimeError, no space after the colon)
    ("RuntimeError:CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 5.80 GiB total capacity; 4.36 GiB already allocated; 6.69 MiB free; 4.63 GiB reserved in total by PyTorch)",
     "cuda_oom", None, "RuntimeError",
     {"tried_gib": round(20 / 1024, 6), "gpu": 0, "total_gib": 5.8, "allocated_gib": 4.36, "reserved_unallocated_gib": 0.27}),
    # github.com/pytorch/pytorch/issues/59778 (<= 2.0 wording, no exception type on the line)
    ("CUDA out of memory. Tried to allocate 2.26 GiB (GPU 0; 6.00 GiB total capacity; 781.59 MiB already allocated; 3.03 GiB free; 1.24 GiB reserved in total by PyTorch) ",
     "cuda_oom", None, None, {"tried_gib": 2.26, "free_gib": 3.03, "allocated_gib": round(781.59 / 1024, 6)}),
    # github.com/DeepMotionAIResearch/DenseMatchingBenchmark/issues/20
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
     "cuda_oom", None, "RuntimeError", {"cublas": True, "call": "cublasCreate(handle)"}),
    # github.com/evo-design/evo/issues/136
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_illegal_address", None, "RuntimeError", {}),
    # github.com/ThetaCursed/clean-ui/issues/4
    ("../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [109,0,0], thread: [124,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.",
     "cuda_device_assert", None, None,
     {"kernel_file": "IndexKernel.cu", "kernel_line": 92, "assertion": "-sizes[i] <= index && index < sizes[i] && \"index out of bounds\""}),
    # github.com/kousw/stable-diffusion-webui-daam/issues/4 (Windows path, no `operator():`)
    ("C:\\actions-runner\\_work\\pytorch\\pytorch\\builder\\windows\\pytorch\\aten\\src\\ATen\\native\\cuda\\IndexKernel.cu:91: block: [26,0,0], thread: [32,0,0] Assertion `index >= -sizes[i] && index < sizes[i] && \"index out of bounds\"` failed.",
     "cuda_device_assert", None, None, {"kernel_file": "IndexKernel.cu", "kernel_line": 91, "function": None}),
    # follow-up of every device assert (research §3.4), under a rank prefix
    ("[rank2]: RuntimeError: CUDA error: device-side assert triggered", "cuda_device_assert", 2, "RuntimeError", {}),
    # github.com/vllm-project/vllm/issues/5222 (title)
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered", "ecc_error", None, "RuntimeError", {}),
    # github.com/NVIDIA/semantic-segmentation/issues/33 (1.x THC form)
    ("RuntimeError: cuda runtime error (39) : uncorrectable ECC error encountered at /pytorch/aten/src/THC/THCCachingHostAllocator.cpp:265",
     "ecc_error", None, "RuntimeError", {}),
    # NVIDIA/NVSentinel#155 / leptonai gpud comment: Xid 79 with pid/name and a dmesg timestamp
    ("[6085126.134786] NVRM: Xid (PCI:0002:00:00): 79, pid=1582259, name=nvc:[driver], GPU has fallen off the bus.",
     "gpu_xid", None, None, {"xid": 79, "pci": "0002:00:00", "pid": 1582259}),
    ("NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
     "gpu_xid", None, None, {"xid": 79, "pci": "0000:05:00", "pid": None}),
    # github.com/NVIDIA/NVSentinel/issues/155 (older driver, no pid/name)
    ("NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus", "gpu_xid", None, None, {"xid": 79, "detail": "GPU has fallen off the bus"}),
    # research §3.5: oldest Xid format, no `PCI:`
    ("NVRM: Xid (0000:03:00): 14, Channel 00000001", "gpu_xid", None, None, {"xid": 14, "pci": "0000:03:00"}),
    # cudaGetErrorString text (research §3.2)
    # (cudaErrorLaunchFailure: a kernel faulted on the device, the same sticky class as an illegal address)
    ("RuntimeError: CUDA error: unspecified launch failure", "cuda_illegal_address", None, "RuntimeError",
     {"cuda_error": "unspecified launch failure"}),
    # github.com/pytorch/pytorch/issues/21276 (1.x THC form, error 4)
    ("THCudaCheck FAIL file=/pytorch/aten/src/THC/THCCachingHostAllocator.cpp line=271 error=4 : unspecified launch failure       x",
     "cuda_illegal_address", None, None, {"cuda_error": "unspecified launch failure"}),
    # github.com/opendatalab/MinerU/issues/1508: a bf16 GEMM cuBLAS has no kernel for on a Tesla M40
    ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedEx(handle, opa, opb, "
     "(int)m, (int)n, (int)k, (void*)&falpha, a, CUDA_R_16BF, (int)lda, stridea, b, CUDA_R_16BF, (int)ldb, strideb, "
     "(void*)&fbeta, c, CUDA_R_16BF, (int)ldc, stridec, (int)num_batches, compute_type, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`",
     "dtype_unsupported", None, "RuntimeError", {"cublas": True}),
    # github.com/JiaquanYe/TableMASTER-mmocr/issues/73: NOT_SUPPORTED on an fp16 call is no missing precision
    ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedExFix( handle, opa, opb, "
     "m, n, k, (void*)(&falpha), a, CUDA_R_16F, lda, stridea, b, CUDA_R_16F, ldb, strideb, (void*)(&fbeta), c, CUDA_R_16F, "
     "ldc, stridec, num_batches, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`", "cuda_error", None, "RuntimeError", {}),
    # github.com/ostris/ai-toolkit/issues/470 (2.6+ message flattened on one line)
    ("CUDA error: uncorrectable ECC error encountered Search for `cudaErrorECCUncorrectable' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.",
     "ecc_error", None, None, {}),
]


@pytest.mark.parametrize("line,error,rank,exc_type,fields", REAL, ids=[f"{i}-{r[1]}" for i, r in enumerate(REAL)])
def test_real_lines(line, error, rank, exc_type, fields):
    evs = _mine(line + "\n")
    assert len(evs) == 1, evs
    ev = evs[0]
    assert ev.kind == "error" and ev.error == error
    assert ev.rank == rank
    assert ev.exc_type == exc_type
    for k, v in fields.items():
        assert ev.fields[k] == v, k


def test_device_assert_repeated_per_thread_is_one_event():
    # github.com/kvcache-ai/ktransformers/issues/467 shape: one line per failing thread, then the error
    log = "".join(
        f"/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:94: operator(): block: [0,0,0], thread: [{t},0,0] Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.\n"
        for t in range(64)
    ) + "RuntimeError: CUDA error: device-side assert triggered\n"
    evs = _mine(log)
    assert [(e.error, e.loc.line) for e in evs] == [("cuda_device_assert", 1), ("cuda_device_assert", 65)]


def test_boilerplate_after_a_cuda_error_is_not_another_event():
    # github.com/evo-design/evo/issues/136 (four lines as printed by torch 2.2+)
    log = (
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
    )
    assert [e.error for e in _mine(log)] == ["cuda_illegal_address"]


def test_repeats_of_one_error_on_one_rank_are_one_event_but_other_ranks_count():
    line = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    log = f"[rank0]: {line}[rank0]:   what():  CUDA error: an illegal memory access was encountered\n[rank1]: {line}"
    assert [(e.error, e.rank) for e in _mine(log)] == [("cuda_illegal_address", 0), ("cuda_illegal_address", 1)]


LOOKALIKES = [
    # research §3.7 and everyday config / docs / code lines
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
    "See https://pytorch.org/docs/stable/notes/cuda.html#environment-variables for PYTORCH_CUDA_ALLOC_CONF",
    "WARNING: catching torch.cuda.OutOfMemoryError and retrying with a smaller batch is enabled (auto_find_batch_size=True)",
    "    except torch.cuda.OutOfMemoryError:",
    "  max_split_size_mb: 512",
    "max mem: 12126",
    "Memory profiling takes 4.21 seconds; the current vLLM instance can use total_gpu_memory (79.14GiB) x gpu_memory_utilization (0.90) = 71.22GiB",
    "[2024-05-01 10:00:00,000] [INFO] [utils.py:800:see_memory_usage] MA 1.2 GB         Max_MA 1.5 GB         CA 2.0 GB         Max_CA 2 GB ",
    "|  0  NVIDIA A100-SXM4-80GB  On | 00000000:07:00.0 Off |   0 |  Volatile Uncorr. ECC",
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
    "UserWarning: Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled for debugging.",
]


@pytest.mark.parametrize("line", LOOKALIKES)
def test_lookalikes_give_no_event(line):
    assert _mine(line + "\n") == []


def test_anomaly_mode_nan_stays_with_the_python_parser():
    # github.com/pytorch/pytorch/issues/51196
    src = Source("t.log", None, b"RuntimeError: Function 'MulBackward0' returned nan values in its 0th output.\n")
    evs = list(scan_source(src, all_parsers(), InputInfo("t.log", None), ScanResult()))
    assert [(e.framework, e.error) for e in evs] == [("python", "nan_op")]


@pytest.mark.parametrize("k,detail", [
    (0, "tried to allocate 22.78 GiB with 12.73 GiB free of 31.47 GiB on GPU 0; 9.35 GiB reserved by PyTorch but unallocated"),
    (4, "tried to allocate 0.02 GiB with 0.01 GiB free of 5.80 GiB on GPU 0; 0.27 GiB reserved by PyTorch but unallocated"),
])
def test_oom_detail_says_the_numbers_in_one_line(k, detail):
    """The finding's summary is this line, not the allocator's 400-character message."""
    (ev,) = _mine(REAL[k][0])
    assert ev.fields["detail"] == detail


def test_oom_from_a_cuda_call_says_so():
    (ev,) = _mine("RuntimeError: CUDA error: out of memory\n")
    assert ev.fields["detail"].startswith("CUDA error: out of memory (a CUDA call failed")


def test_watchdog_cuda_error_takes_the_rank_it_names_in_the_default_group(tmp_path):
    # vllm-project/vllm#4108 (<= 2.2 wording), sgl-project/sglang#271 (2.3/2.4), InternLM/lmdeploy#3258 (2.5+);
    # `[PG 1 Rank 1]` is rank 1 of process group 1, no global rank (kept as the group's rank)
    from nanscope import api
    p = tmp_path / "x.log"
    p.write_text(
        "[E ProcessGroupNCCL.cpp:916] [Rank 0] NCCL watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered\n"
        "  what():  [PG 1 Rank 1] Process group watchdog thread terminated with exception: CUDA error: device-side assert triggered\n"
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered\n",
        encoding="utf-8")
    evs = [e for e in api.events([str(p)]) if e.kind == "error"]
    assert [(e.error, e.rank) for e in evs] == [("cuda_illegal_address", 0), ("cuda_device_assert", None), ("cuda_illegal_address", 2)]
    assert [e.fields["pg_rank"] for e in evs] == [0, 1, 2]


def test_nvrm_fallen_off_the_bus_without_xid(tmp_path):
    # NVIDIA/NVSentinel#155
    from nanscope import api
    p = tmp_path / "dmesg.log"
    p.write_text("[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
                 "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
                 "               NVRM: fallen off the bus and is not responding to commands.\n", encoding="utf-8")
    rep = api.diagnose([str(p)])
    assert [f.id for f in rep.findings] == ["gpu-fallen-off-bus"]


def test_memory_fraction_oom_with_flattened_detail_lines():
    # huggingface/text-generation-inference#563: the allocator's set_per_process_memory_fraction wording,
    # its detail lines flattened into the router's panic with literal \n
    line = ("thread 'main' panicked at 'Unable to warmup model: Generation(\"Allocation on device 0 would exceed allowed "
            "memory. (out of memory)\\nCurrently allocated     : 16.08 GiB\\nRequested               : 4.83 GiB\\n"
            "Device limit            : 22.20 GiB\\nFree (according to CUDA): 11.12 MiB\\nPyTorch limit (set by "
            "user-supplied memory fraction)\\n                        : 22.20 GiB\")', router/src/main.rs:216:18")
    [e] = _mine(line)
    assert (e.error, e.fields["gpu"], e.fields["tried_gib"], e.fields["memory_fraction"]) == ("cuda_oom", 0, 4.83, True)


def test_memory_fraction_oom_detail_on_its_own_lines():
    # the same template as an exception, detail lines on their own lines (ComfyUI-style reports)
    [e] = _mine("torch.OutOfMemoryError: Allocation on device 1 would exceed allowed memory. (out of memory)\n"
                "Currently allocated     : 9.43 GiB\nRequested               : 640.00 MiB\n")
    assert (e.error, e.fields["gpu"], e.fields.get("driver")) == ("cuda_oom", 1, None)
