"""PyTorch core, session 10: the families behind the blind round 2100-2117, as users pasted them.

A compiled extension that does not fit the installed torch, CUDA kernel faults reported as a launch failure, a
bf16 GEMM cuBLAS refuses on an older GPU. Every input is lines copied from the public thread named in the comment
(the excerpts are in sample_logs/public/21NN.log with their provenance), cut to what the family needs.
"""

from __future__ import annotations

import pytest

from conftest import diagnose_lines as diagnose, ids
from nanscope import api


# Dao-AILab/flash-attention#1691: a flash-attn wheel built for another torch / C++ ABI
FLASH_ATTN_IMPORT = [
    "    import flash_attn_2_cuda as flash_attn_gpu",
    "ImportError: /data/user/USER/xqf/miniconda3/envs/quanllm/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-"
    "x86_64-linux-gnu.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_"
    "traitsIcESaIcEEE",
]


def test_an_extension_that_cannot_be_loaded_is_named_with_the_library_and_the_symbol(tmp_path):
    r = diagnose(tmp_path, FLASH_ATTN_IMPORT)
    assert ids(r) == ["extension-build-mismatch"]
    summary = r.findings[0].summary
    assert "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so cannot be loaded" in summary
    assert "_ZN3c105ErrorC2ENS_14SourceLocation" in summary
    assert "/data/user" not in summary  # the library's name, not the whole path


def test_the_rank_that_raised_it_is_the_one_its_excepthook_prefix_names(tmp_path):
    # sgl-project/sglang#851: Transformer Engine's extension under torchrun's [rank0]: excepthook prefix
    r = diagnose(tmp_path, [
        '[rank0]:   File "/usr/local/lib/python3.10/dist-packages/transformer_engine/pytorch/cpp_extensions/__init__.py", '
        "line 6, in <module>",
        "[rank0]:     from transformer_engine_extensions import *",
        "[rank0]: ImportError: /usr/local/lib/python3.10/dist-packages/transformer_engine_extensions.cpython-310-x86_64-"
        "linux-gnu.so: undefined symbol: _ZN2at4_ops5zeros4callEN3c108ArrayRefINS2_6SymIntEEENS2_8optionalINS2_10Scalar"
        "TypeEEENS6_INS2_6LayoutEEENS6_INS2_6DeviceEEENS6_IbEE",
    ])
    assert ids(r) == ["extension-build-mismatch"]
    assert r.findings[0].initiating_rank == 0


def test_transformers_lazy_import_wrapper_is_the_extension_not_a_second_exception(tmp_path):
    # Dao-AILab/flash-attention#1612: the loader's message is the second line of transformers' RuntimeError
    r = diagnose(tmp_path, [
        "RuntimeError: Failed to import transformers.models.bloom.modeling_bloom because of the following error (look up "
        "to see its traceback):",
        "/home/USER/anaconda3/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined "
        "symbol: _ZN2at4_ops5zeros4callEN3c108ArrayRefINS2_6SymIntEEENS2_8optionalINS2_10ScalarTypeEEENS6_INS2_6Layout"
        "EEENS6_INS2_6DeviceEEENS6_IbEE",
    ])
    assert ids(r) == ["extension-build-mismatch"]
    assert "transformers.models.bloom.modeling_bloom" in r.findings[0].summary


def test_transformers_lazy_import_of_anything_else_stays_an_uncaught_exception(tmp_path):
    # the wrapper's first line alone (Dao-AILab/flash-attention#1612 without the loader's line): nothing says why
    r = diagnose(tmp_path, [
        "RuntimeError: Failed to import transformers.models.bloom.modeling_bloom because of the following error (look up "
        "to see its traceback):",
    ])
    assert ids(r) == ["uncaught-exception"]


@pytest.mark.parametrize("line", [
    # ltdrdata/ComfyUI-Impact-Pack#915 (torch 2.x, printed without the exception type)
    "Could not run 'torchvision::nms' with arguments from the 'CUDA' backend. This could be because the operator "
    "doesn't exist for this backend, or was omitted during the selective/custom build process (if using custom build). "
    "If you are a Facebook employee using PyTorch on mobile, please visit https://fburl.com/ptmfixes for possible "
    "resolutions. 'torchvision::nms' is only available for these backends: [CPU, Meta, QuantizedCPU, BackendSelect, "
    "Python, FuncTorchDynamicLayerBackMode, Functionalize, Named, Conjugate, Negative, ZeroTensor, ADInplaceOrView, "
    "AutogradOther, AutogradCPU, AutogradCUDA, AutogradXLA, AutogradMPS, AutogradXPU, AutogradHPU, AutogradLazy, "
    "AutogradMTIA, AutogradMeta, Tracer, AutocastCPU, AutocastXPU, AutocastMPS, AutocastCUDA, FuncTorchBatched, "
    "BatchedNestedTensor, FuncTorchVmapMode, Batched, VmapMode, FuncTorchGradWrapper, PythonTLSSnapshot, "
    "FuncTorchDynamicLayerFrontMode, PreDispatch, PythonDispatcher].",
    # mikel-brostrom/boxmot#42 (torch 1.7 wording)
    "RuntimeError: Could not run 'torchvision::nms' with arguments from the 'CUDA' backend. 'torchvision::nms' is only "
    "available for these backends: [CPU, BackendSelect, Named, AutogradOther, AutogradCPU, AutogradCUDA, AutogradXLA, "
    "Tracer, Autocast, Batched, VmapMode].",
])
def test_an_extension_op_without_a_cuda_kernel_in_every_wording(tmp_path, line):
    r = diagnose(tmp_path, [line])
    assert ids(r) == ["extension-build-mismatch"]
    assert "'torchvision::nms' has no kernel for the CUDA backend" in r.findings[0].summary


def test_torchs_own_op_without_a_kernel_is_not_a_build_mismatch(tmp_path):
    # bindog/pytorch-model-parallel#3: aten::nonzero on a sparse tensor, a usage error
    r = diagnose(tmp_path, [
        "    output[index] = phi[index]",
        "RuntimeError: Could not run 'aten::nonzero' with arguments from the 'SparseCUDA' backend. 'aten::nonzero' is only "
        "available for these backends: [CPU, CUDA, Autograd, Profiler, Tracer].",
    ])
    assert ids(r) == ["uncaught-exception"]


@pytest.mark.parametrize("lines", [
    # icip-cas/AutoAlign#25: cpp_extension's message under a bare `RuntimeError:`, indented by pip
    ["RuntimeError:",
     "      The detected CUDA version (11.8) mismatches the version that was used to compile",
     "      PyTorch (12.4). Please make sure to use the same CUDA versions."],
    # boschresearch/DroidCalib#5: the same on one line
    ["RuntimeError:",
     "The detected CUDA version (12.1) mismatches the version that was used to compile PyTorch (11.3).",
     "Please make sure to use the same CUDA versions."],
])
def test_building_an_extension_with_another_cuda_toolkit(tmp_path, lines):
    r = diagnose(tmp_path, lines)
    assert ids(r) == ["extension-build-mismatch"]
    assert "CUDA toolkit building the extension" in r.findings[0].summary


def test_torchvisions_optional_image_extension_warning_is_healthy(tmp_path):
    # casperg92/MaSIF_colab#7: torchvision says itself that the warning can be ignored
    r = diagnose(tmp_path, [
        "/usr/local/lib/python3.9/dist-packages/torchvision/io/image.py:13: UserWarning: Failed to load image Python "
        "extension: '/usr/local/lib/python3.9/dist-packages/torchvision/image.so: undefined symbol: _ZN3c104impl8GPUTrace"
        "13gpuTraceStateE'If you don't plan on using image functionality from `torchvision.io`, you can ignore this "
        "warning. Otherwise, there might be something wrong with your environment. Did you have `libjpeg` or `libpng` "
        "installed before building `torchvision` from source?",
        "  warn(",
    ])
    assert ids(r) == []
    assert api.exit_code(r) == 0


@pytest.mark.parametrize("lines", [
    # XPixelGroup/BasicSR#211 (torch >= 1.0)
    ["    self.log_dict['l_pix'] = l_pix.item()",
     "RuntimeError: CUDA error: unspecified launch failure"],
    # facebookresearch/DeepSDF#40: the caching allocator aborts the process with it
    ["terminate called after throwing an instance of 'c10::Error'",
     "  what():  CUDA error: unspecified launch failure (insert_events at /opt/conda/conda-bld/pytorch_1544202130060/work/"
     "aten/src/THC/THCCachingAllocator.cpp:470)"],
    # pytorch/pytorch#21276 (torch 1.x THC, error 4)
    ["THCudaCheck FAIL file=/pytorch/aten/src/THC/THCCachingHostAllocator.cpp line=271 error=4 : unspecified launch "
     "failure       x"],
    # triton-inference-server/tensorrtllm_backend#594: TensorRT-LLM's own check of the same fault
    ["`[TensorRT-LLM][ERROR] tensorrt_llm::common::TllmException: [TensorRT-LLM][ERROR] CUDA runtime error in "
     "::cudaFreeHost(ptr): unspecified launch failure (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:169)"],
    # bubbliiiing/deeplabv3-plus-pytorch#107 (cudaErrorIllegalInstruction)
    ["RuntimeError: CUDA error: an illegal instruction was encountered"],
])
def test_a_kernel_fault_reported_as_a_launch_failure_is_a_kernel_fault(tmp_path, lines):
    r = diagnose(tmp_path, lines)
    assert ids(r)[0] == "cuda-illegal-memory-access"
    assert "uncaught-exception" not in ids(r)
    assert "A CUDA kernel faulted" in r.findings[0].summary


def test_a_launch_failure_in_the_nccl_watchdog_names_its_rank(tmp_path):
    # sample_logs/public/1225.log (a ZeRO-3 SFT thread): rank 19's watchdog hit the sticky fault
    r = diagnose(tmp_path, [
        "192.168.13.81: [rank19]:[E808 10:31:07.406255799 ProcessGroupNCCL.cpp:1895] [PG ID 1 PG GUID 1 Rank 19] Process "
        "group watchdog thread terminated with exception: CUDA error: unspecified launch failure",
    ])
    assert ids(r)[0] == "cuda-illegal-memory-access"
    assert r.findings[0].initiating_rank == 19


def test_a_bf16_gemm_cublas_refuses_is_an_unsupported_precision(tmp_path):
    # opendatalab/MinerU#1508: a Tesla M40 (Maxwell); the reporter turned bf16 off
    r = diagnose(tmp_path, [
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedEx(handle, opa, opb, "
        "(int)m, (int)n, (int)k, (void*)&falpha, a, CUDA_R_16BF, (int)lda, stridea, b, CUDA_R_16BF, (int)ldb, strideb, "
        "(void*)&fbeta, c, CUDA_R_16BF, (int)ldc, stridec, (int)num_batches, compute_type, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`",
    ])
    assert ids(r) == ["dtype-unsupported"]
    assert "bf16" in r.findings[0].summary


def test_cublas_not_supported_on_an_fp16_call_is_a_cublas_error_not_a_missing_precision(tmp_path):
    # JiaquanYe/TableMASTER-mmocr#73: nothing in the call says the precision is missing (session 12: cublas-error)
    r = diagnose(tmp_path, [
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedExFix( handle, opa, "
        "opb, m, n, k, (void*)(&falpha), a, CUDA_R_16F, lda, stridea, b, CUDA_R_16F, ldb, strideb, (void*)(&fbeta), c, "
        "CUDA_R_16F, ldc, stridec, num_batches, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`",
    ])
    assert ids(r) == ["cublas-error"]
    assert "CUBLAS_STATUS_NOT_SUPPORTED when calling cublasGemmStridedBatchedExFix" in r.findings[0].summary


# --- the second round, 2121-2132 ---

@pytest.mark.parametrize("lines", [
    # pytorch/pytorch#10853 (torch 0.4 THC, error 6), after the MNIST example's last step line
    ["Train Epoch: 1 [59520/60000 (99%)]\tLoss: 0.583770",
     "THCudaCheck FAIL file=/opt/conda/conda-bld/pytorch_1532582123400/work/aten/src/THC/generic/THCStorage.cpp line=36 "
     "error=6 : the launch timed out and was terminated"],
    # hkchengrex/STCN#21 (torch 1.8): the exception, then the allocator aborting the process
    ["RuntimeError: CUDA error: the launch timed out and was terminated",
     "terminate called after throwing an instance of 'c10::Error'",
     "  what():  CUDA error: the launch timed out and was terminated"],
    # AUTOMATIC1111/stable-diffusion-webui#12499 (torch 2.0 on Windows)
    ["RuntimeError: CUDA error: the launch timed out and was terminated",
     "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
     "incorrect."],
])
def test_a_kernel_the_display_watchdog_killed_is_named_once(tmp_path, lines):
    r = diagnose(tmp_path, lines)
    assert ids(r) == ["cuda-launch-timeout"]
    assert "watchdog" in r.findings[0].summary


@pytest.mark.parametrize("line, detail", [
    # pytorch/pytorch#130112 (torch 2.3: GB / MB, powers of 1024 in MPSAllocator's format_size)
    ("RuntimeError: MPS backend out of memory (MPS allocated: 5.50 GB, other allocations: 14.76 GB, max allowed: 20.40 GB). "
     "Tried to allocate 147.24 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for "
     "memory allocations (may cause system failure).",
     "tried to allocate 0.14 GiB with 5.50 GiB allocated by MPS and 14.76 GiB by others, of 20.40 GiB allowed"),
    # Comfy-Org/ComfyUI#8984 (newer torch: GiB / MiB, printed without the exception type)
    ("MPS backend out of memory (MPS allocated: 15.72 GiB, other allocations: 2.41 MiB, max allowed: 18.13 GiB). Tried to "
     "allocate 5.81 GiB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory "
     "allocations (may cause system failure).",
     "tried to allocate 5.81 GiB with 15.72 GiB allocated by MPS and 0.00 GiB by others, of 18.13 GiB allowed"),
])
def test_an_apple_gpu_out_of_memory_is_a_device_oom_with_its_numbers(tmp_path, line, detail):
    r = diagnose(tmp_path, [line])
    assert ids(r) == ["cuda-oom"]
    assert detail in r.findings[0].summary


def test_a_rocm_gpu_out_of_memory_is_a_device_oom(tmp_path):
    # huggingface/autotrain-advanced#737: HIP's wording of the caching allocator's message
    r = diagnose(tmp_path, [
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 124.00 MiB. GPU 0 has a total capacity of 19.94 GiB "
        "of which 554.47 MiB is free. Of the allocated memory 15.87 GiB is allocated by PyTorch, and 165.29 MiB is reserved "
        "by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
    ])
    assert ids(r)[0] == "cuda-oom"
    assert "with 0.54 GiB free of 19.94 GiB on GPU 0" in r.findings[0].summary


# --- the third round, 2133-2140 ---

@pytest.mark.parametrize("line, limit", [
    # Yuliang-Liu/MonkeyOCR#86 (Triton 3.x: triton.runtime.errors)
    ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 126978, Hardware limit: 101376. "
     "Reducing block sizes or `num_stages` may help.", "101376"),
    # InternLM/lmdeploy#2451 (Triton 2.x: the autotuner's class)
    ("triton.runtime.autotuner.OutOfResources: out of resource: shared memory, Required: 108672, Hardware limit: 101376. "
     "Reducing block sizes or `num_stages` may help.", "101376"),
    # FlashML-org/FreeToken#246: behind an application's own stamp, on Turing
    ("[16:10:33] stdout/INFO  triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, "
     "Hardware limit: 65536. Reducing block sizes or `num_stages` may help.", "65536"),
])
def test_a_triton_kernel_too_big_for_the_gpu_is_named_with_both_numbers(tmp_path, line, limit):
    r = diagnose(tmp_path, [line])
    assert ids(r) == ["triton-out-of-resources"]
    assert f"hardware limit {limit}" in r.findings[0].summary


@pytest.mark.parametrize("lines", [
    # cfzd/Ultra-Fast-Lane-Detection#193: two processes on a one-GPU machine
    ["    torch._C._cuda_setDevice(device)", "RuntimeError: CUDA error: invalid device ordinal",
     "Killing subprocess 27636", "Killing subprocess 27637"],
    # hustvl/Vim#61: two processes' prints run into each other
    ["RuntimeErrorRuntimeError: CUDA error: invalid device ordinal",
     "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
     ": CUDA error: invalid device ordinal"],
    # wenwenyu/PICK-pytorch#14 (torch 1.x wording, cudaErrorInvalidDevice 101)
    ["RuntimeError: cuda runtime error (101) : invalid device ordinal at /pytorch/torch/csrc/cuda/Module.cpp:59"],
])
def test_a_gpu_index_that_is_not_there_is_no_usable_gpu_not_a_generic_exception(tmp_path, lines):
    r = diagnose(tmp_path, lines)
    assert ids(r)[0] == "cuda-no-device"
    assert "uncaught-exception" not in ids(r)
    assert "--nproc_per_node" in r.findings[0].summary
