"""Serving families first seen in the blind public cases 1900-1920: llama.cpp / Ollama (ggml), Triton,
Ray Serve, vLLM's config checks, CUDA graph capture. What a user who pastes such a log gets first.

Every input is lines copied from the public thread named in the comment (the same excerpts are in
sample_logs/public with their provenance), cut to what the family needs.
"""

from __future__ import annotations

from conftest import diagnose_lines, ids
from nanscope import api


def diagnose(tmp_path, lines: list[str]):
    return diagnose_lines(tmp_path, lines, "serve.log")


# ggml-org/llama.cpp#20431: the backend's line, the allocator's and the loader's are one failure
GGML_DEVICE = [
    "load_tensors: loading model tensors, this can take a while... (mmap = true, direct_io = false)",
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 144817.04 MiB on device 0: cudaMalloc failed: out of memory",
    "alloc_tensor_range: failed to allocate CUDA0 buffer of size 151851674624",
    "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
]


def test_a_ggml_device_buffer_that_does_not_fit_is_one_cuda_oom_with_its_size(tmp_path):
    r = diagnose(tmp_path, GGML_DEVICE)
    assert ids(r) == ["cuda-oom"]
    f = r.findings[0]
    assert "144817.04 MiB on device 0" in f.summary
    assert f.occurrences == 1 and f.initiating_rank is None


def test_the_same_failure_behind_docker_compose_and_ollama_s_panic(tmp_path):
    # ollama/ollama#8447
    r = diagnose(tmp_path, [
        "ollama  | ggml_backend_cuda_buffer_type_alloc_buffer: allocating 35533.34 MiB on device 0: cudaMalloc failed: out of memory",
        "ollama  | llama_model_load: error loading model: unable to allocate CUDA0 buffer",
        "ollama  | llama_load_model_from_file: failed to load model",
        "ollama  | panic: unable to load model: /root/.ollama/models/blobs/sha256-d83c18fb2a2ccca56d641920f01e6fe533dfb3fcf4b77c007c931497cd24a517",
    ])
    assert ids(r)[0] == "cuda-oom"


def test_a_ggml_compute_buffer_names_what_did_not_fit(tmp_path):
    # ollama/ollama#4225: the KV cache fitted in host memory, the compute buffer did not fit the GPU
    r = diagnose(tmp_path, [
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4507.00 MiB on device 0: cudaMalloc failed: out of memory",
        "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 4725934080",
        "llama_new_context_with_model: failed to allocate compute buffers",
    ])
    assert ids(r) == ["cuda-oom"]


def test_a_ggml_cpu_buffer_is_host_memory_not_the_gpu(tmp_path):
    # ollama/ollama#12634
    r = diagnose(tmp_path, [
        "load_tensors: loading model tensors, this can take a while... (mmap = false)",
        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 437944320",
        "alloc_tensor_range: failed to allocate CPU buffer of size 437944320",
        "llama_model_load: error loading model: unable to allocate CPU buffer",
    ])
    assert ids(r) == ["host-oom"]


def test_ggml_s_pinned_memory_fallback_is_not_an_oom(tmp_path):
    # ggml-org/llama.cpp#9629 (the issue title): ggml falls back to pageable memory and goes on
    r = diagnose(tmp_path, ["ggml_cuda_host_malloc: failed to allocate 1900,00 MiB of pinned memory: invalid argument"])
    assert r.verdict == "clean", ids(r)


# triton-inference-server/server#3786
TRITON_TABLE = [
    "I0110 21:30:54.920681 60 server.cc:592]",
    "+---------------+---------+---------------------------------------------------------+",
    "| Model         | Version | Status                                                  |",
    "+---------------+---------+---------------------------------------------------------+",
    "| <redacted> | 1       | READY                                                   |",
    "| <redacted> | 1       | UNAVAILABLE: Internal: unable to create TensorRT engine |",
    "+---------------+---------+---------------------------------------------------------+",
]


def test_a_triton_model_unavailable_in_the_status_table_names_its_reason(tmp_path):
    r = diagnose(tmp_path, TRITON_TABLE)
    assert ids(r) == ["triton-model-load-failed"]
    assert "unable to create TensorRT engine" in r.findings[0].summary


def test_a_triton_table_of_ready_models_is_clean(tmp_path):
    r = diagnose(tmp_path, TRITON_TABLE[:5] + TRITON_TABLE[-1:])
    assert r.verdict == "clean", ids(r)


def test_triton_s_exit_alone_still_says_a_model_failed_to_load(tmp_path):
    # NVIDIA-AI-IOT/tao-toolkit-triton-apps#11
    r = diagnose(tmp_path, [
        "I0312 10:55:15.003795 57 server.cc:267] Timeout 29: Found 0 live models and 0 in-flight non-inference requests",
        "error: creating server: Internal - failed to load all models",
    ])
    assert ids(r) == ["triton-model-load-failed"]


def test_the_exit_after_a_named_model_is_the_same_failure(tmp_path):
    r = diagnose(tmp_path, TRITON_TABLE + ["error: creating server: Internal - failed to load all models"])
    assert ids(r) == ["triton-model-load-failed"]
    assert r.findings[0].occurrences == 1


def test_a_triton_load_that_ran_out_of_memory_is_the_oom_first(tmp_path):
    # triton-inference-server/tensorrtllm_backend#281
    r = diagnose(tmp_path, [
        "Model 'tensorrt_llm' loading failed with error: version 1 is at UNAVAILABLE state: Internal: unexpected error "
        "when creating modelInstanceState: [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, "
        "mCudaStream->get()): out of memory (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:112)",
    ])
    assert ids(r)[0] == "cuda-oom"


def test_a_ray_serve_replica_that_raised_at_start_up(tmp_path):
    # vllm-project/vllm#19510
    r = diagnose(tmp_path, [
        "(ServeController pid=45327) ERROR 2025-06-11 13:15:51,444 controller 45327 -- Exception in Replica(id='03l9rrsq', "
        "deployment='LLMDeploymentdeepseek', app='default'), the replica will be stopped.",
        "(ServeController pid=45327) Traceback (most recent call last):",
    ])
    assert ids(r)[0] == "ray-serve-replica-failed"
    assert "LLMDeploymentdeepseek" in r.findings[0].summary


def test_a_crashed_replica_and_its_failed_health_check_are_one_failure(tmp_path):
    # ray-project/ray#33203 (a log viewer's line numbers in front)
    r = diagnose(tmp_path, [
        " 155 2023-03-10T11:14:57-06:00 INFO 2023-03-10 09:14:57,180 controller 979 deployment_state.py:625 - Actor for replica D#DYFbUC crashed, marking it unhealthy immediately.",
        " 154 2023-03-10T11:14:57-06:00 WARNING 2023-03-10 09:14:57,187 controller 979 deployment_state.py:1506 - Replica D#DYFbUC of deployment D failed health check, stopping it.",
        " 153 2023-03-10T11:14:57-06:00 INFO 2023-03-10 09:14:57,327 controller 979 deployment_state.py:1310 - Adding 1 replica to deployment 'D'.",
    ])
    assert ids(r) == ["ray-serve-replica-failed"]
    assert r.findings[0].occurrences == 1 and "crashed" in r.findings[0].summary


def test_serve_adding_a_replica_is_not_a_failure(tmp_path):
    r = diagnose(tmp_path, [
        " 153 2023-03-10T11:14:57-06:00 INFO 2023-03-10 09:14:57,327 controller 979 deployment_state.py:1310 - Adding 1 replica to deployment 'D'.",
    ])
    assert r.verdict == "clean", ids(r)


def test_a_quantization_the_gpu_cannot_run_is_the_precision_check_not_a_generic_exception(tmp_path):
    # vllm-project/vllm#4327, under the V0 Ray executor
    r = diagnose(tmp_path, [
        "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 90. Current capability: 86.",
        "(RayWorkerWrapper pid=2202490) ERROR 04-24 16:06:40 worker_base.py:157] Error executing method load_model. This might cause deadlock in distributed execution.",
    ])
    assert ids(r)[0] == "dtype-unsupported"
    assert "uncaught-exception" not in ids(r)


def test_the_compressed_tensors_tuple_wording(tmp_path):
    # vllm-project/vllm#14040 (the issue title: the RuntimeError built from three strings)
    r = diagnose(tmp_path, [
        "RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min capability: 80. ', 'Current capability: 75.')",
    ])
    assert ids(r)[0] == "dtype-unsupported"


def test_a_max_model_len_above_the_model_s_is_named_with_both_lengths(tmp_path):
    # xorbitsai/inference#1715: vLLM behind Xinference
    r = diagnose(tmp_path, [
        "ValueError: [address=127.0.0.1:37657, pid=3125985] User-specified max_model_len (4096) is greater than the derived "
        "max_model_len (seq_length=2048 or model_max_length=None in model's config.json). This may lead to incorrect model "
        "outputs or CUDA errors. Make sure the value is correct and within the model context size.",
        "2024-06-25 16:32:00,563 xinference.api.restful_api 3118895 ERROR    [address=127.0.0.1:37657, pid=3125985] "
        "User-specified max_model_len (4096) is greater than the derived max_model_len (seq_length=2048 or "
        "model_max_length=None in model's config.json). This may lead to incorrect model outputs or CUDA errors. Make "
        "sure the value is correct and within the model context size.",
    ])
    assert ids(r) == ["vllm-max-model-len-exceeds-model"]
    assert "4096" in r.findings[0].summary and "seq_length=2048" in r.findings[0].summary


def test_the_pydantic_wording_of_vllm_0_10(tmp_path):
    # a 0.10+ start-up (pydantic ModelConfig) behind the API server's tag, as quoted in a public repository's notes
    r = diagnose(tmp_path, [
        "(APIServer pid=53)   Value error, User-specified max_model_len (65536) is greater than the derived max_model_len "
        "(max_position_embeddings=32768.0 or model_max_length=None in model's config.json). To allow overriding this "
        "maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme "
        "caution. If the model uses relative position encoding (RoPE), positions exceeding derived_max_model_len lead to "
        "nan. If the model uses absolute position encoding, positions exceeding derived_max_model_len will cause a CUDA "
        "array out-of-bounds error. [type=value_error, input_value=ArgsKwargs((), {'model': ...nderer_num_workers': 1}), "
        "input_type=ArgsKwargs]",
    ])
    assert ids(r) == ["vllm-max-model-len-exceeds-model"]


def test_an_nccl_collective_inside_a_cuda_graph_capture_is_the_capture_that_failed(tmp_path):
    # vllm-project/vllm#4432
    r = diagnose(tmp_path, [
        "(RayWorkerVllm pid=62111) INFO 04-28 20:50:23 model_runner.py:791] Capturing the model for CUDA graphs. This may "
        "lead to unexpected consequences if the model is not static. To run the model in eager mode, set "
        "'enforce_eager=True' or use '--enforce-eager' in the CLI.",
        "ts-1580615599d3449d98cf56a265c10977-worker-6:56890:56890 [0] enqueue.cc:267 NCCL WARN Cuda failure 'dependency "
        "created on uncaptured work in another stream'",
        "ts-1580615599d3449d98cf56a265c10977-worker-6:56890:56890 [0] NCCL INFO enqueue.cc:1045 -> 1",
    ])
    assert ids(r)[0] == "cuda-graph-capture-failed"
    assert "cudaErrorStreamCaptureIsolation" in r.findings[0].summary


def test_vllm_s_notice_before_capturing_is_not_a_failure(tmp_path):
    # LMCache/LMCache#503
    r = diagnose(tmp_path, [
        "(VllmWorkerProcess pid=21013) INFO 04-24 08:27:56 [model_runner.py:1456] Capturing cudagraphs for decoding. This "
        "may lead to unexpected consequences if the model is not static. To run the model in eager mode, set "
        "'enforce_eager=True' or use '--enforce-eager' in the CLI. If out-of-memory error occurs during cudagraph capture, "
        "consider decreasing `gpu_memory_utilization` or switching to eager mode. You can also reduce the `max_num_seqs` "
        "as needed to decrease memory usage.",
    ])
    assert r.verdict == "clean", ids(r)


# --- families of the second round (1921-1933), after the first fixes ---

def test_sglang_s_request_slot_pool_running_out_is_the_scheduler_crash(tmp_path):
    # sgl-project/sglang#10408: only the RuntimeError in view
    r = diagnose(tmp_path, [
        "RuntimeError: alloc_req_slots runs out of memory. Please set a smaller number for `--max-running-requests`. "
        "self.req_to_token_pool.available_size()=1, num_reqs=2,",
    ])
    assert ids(r) == ["sglang-scheduler-crash"]
    assert "--max-running-requests" in r.findings[0].summary


def test_sglang_s_kv_pool_running_out_then_the_scheduler_exception_is_one_crash(tmp_path):
    # sgl-project/sglang-jax#622
    r = diagnose(tmp_path, [
        "[2026-01-05 06:12:41] Decode out of memory. Try to lower your batch size.",
        "Try to allocate 168 tokens.",
        "Available tokens: 3200 (available_size=3200 + evictable_size=0)",
        "",
        "[2026-01-05 06:12:41] Scheduler hit an exception: Traceback (most recent call last):",
    ])
    assert ids(r) == ["sglang-scheduler-crash"]


def test_pytorch_refusing_a_call_during_capture_is_a_failed_capture(tmp_path):
    # sgl-project/sglang#6342 (fa3 reading the RNG seed while SGLang captures)
    r = diagnose(tmp_path, [
        "torch._dynamo.exc.InternalTorchDynamoError: RuntimeError: Cannot call CUDAGeneratorImpl::current_seed during "
        "CUDA graph capture. If you need this call to be captured, please file an issue. Current cudaStreamCaptureStatus: "
        "cudaStreamCaptureStatusActive",
    ])
    assert ids(r)[0] == "cuda-graph-capture-failed"
    assert "CUDAGeneratorImpl::current_seed" in r.findings[0].summary


def test_a_ray_serve_replica_s_start_up_call_that_raised(tmp_path):
    # ray-project/kuberay#4366
    r = diagnose(tmp_path, [
        "    raise value.as_instanceof_cause()",
        "ray.exceptions.RayTaskError(RuntimeError): ray::ServeReplica:llms:LLMServer:qwen2_5-0_5b-instruct."
        "initialize_and_get_metadata() (pid=316, ip=10.233.69.249, actor_id=aa3366c129ab60063f7f77cd01000000, "
        "repr=<ray.serve._private.replica.ServeReplica:llms:LLMServer:qwen2_5-0_5b-instruct object at 0x71bfb2382010>)",
    ])
    assert ids(r)[0] == "ray-serve-replica-failed"


# ray-project/ray#53742: ReplicaActor.initialize re-raises the user's error as a RuntimeError of its traceback
REPLICA_INIT = [
    "(ServeController pid=89848)   File \"/home/ubuntu/rayturbo/python/ray/serve/_private/replica.py\", line 730, in initialize",
    "(ServeController pid=89848)     raise RuntimeError(traceback.format_exc()) from None",
    "(ServeController pid=89848) RuntimeError: Traceback (most recent call last):",
]


def test_a_replica_s_initialize_re_raise_is_its_start_up_failure(tmp_path):
    r = diagnose(tmp_path, REPLICA_INIT)
    assert ids(r)[0] == "ray-serve-replica-failed"


def test_the_same_re_raise_without_serve_s_frame_is_not_called_a_replica_failure(tmp_path):
    r = diagnose(tmp_path, REPLICA_INIT[-1:])
    assert "ray-serve-replica-failed" not in ids(r)


# --- families of the third round (1934-1939) ---

def test_an_architecture_llama_cpp_does_not_know_under_ollama(tmp_path):
    # ollama/ollama#3904
    r = diagnose(tmp_path, [
        "llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'phi3'",
        "llama_load_model_from_file: exception loading model",
        'time=2024-04-25T18:30:30.049+02:00 level=ERROR source=routes.go:120 msg="error loading llama server" '
        'error="llama runner process no longer running: 3221226505 "',
    ])
    assert ids(r) == ["model-architecture-unsupported"]
    assert "'phi3'" in r.findings[0].summary


def test_tgi_s_unsupported_model_type_is_the_architecture_not_a_generic_exception(tmp_path):
    # huggingface/text-generation-inference#3020
    r = diagnose(tmp_path, [
        '  File "/usr/src/server/text_generation_server/models/__init__.py", line 1523, in get_model',
        '    raise ValueError(f"Unsupported model type {model_type}")',
        "ValueError: Unsupported model type xlm-roberta",
        "2025-02-13T15:38:53.307253Z ERROR shard-manager: text_generation_launcher: Shard complete standard error output:",
    ])
    assert ids(r)[0] == "model-architecture-unsupported"
    assert "uncaught-exception" not in ids(r)


def test_vllm_naming_the_architecture_it_resolved_is_not_a_refusal(tmp_path):
    # vllm-project/vllm#28572
    r = diagnose(tmp_path, ["(APIServer pid=4172) INFO 11-12 17:39:27 [model.py:547] Resolved architecture: GptOssForCausalLM"])
    assert r.verdict == "clean", ids(r)


def test_a_tensorrt_llm_executor_that_could_not_set_up_nccl(tmp_path):
    # NVIDIA/TensorRT-LLM#9263
    r = diagnose(tmp_path, [
        "[11/18/2025-09:33:30] [TRT-LLM] [RANK 0] [E] Failed to initialize executor on rank 0: [TensorRT-LLM][ERROR] "
        "Assertion failed: Failed, NCCL error ../tensorrt_llm/runtime/ncclCommunicator.cpp:90 'invalid usage (run with "
        "NCCL_DEBUG=WARN for details)'",
        " (../tensorrt_llm/runtime/ncclCommunicator.cpp:90)",
        "1       0x7a14a782a0f4 tensorrt_llm::common::throwRuntimeError(char const*, int, char const*) + 76",
    ])
    assert ids(r) == ["nccl-error"]


# --- families of the fourth round (1940-1943) ---

def test_ollama_s_memory_check_is_host_memory(tmp_path):
    # ollama/ollama#10920
    r = diagnose(tmp_path, ["Error: model requires more system memory (164.8 GiB) than is available (13.4 GiB)"])
    assert ids(r) == ["host-oom"]
    assert "164.8 GiB" in r.findings[0].summary


def test_ollama_s_memory_check_behind_a_client_s_exception(tmp_path):
    # yuntianhe2014/Easy-RAG#9
    r = diagnose(tmp_path, [
        'ValueError: Ollama call failed with status code 500. Details: {"error":"model requires more system memory '
        '(3.7 GiB) than is available (3.6 GiB)"}',
    ])
    assert ids(r) == ["host-oom"]


def test_ggml_s_vulkan_backend_out_of_device_memory(tmp_path):
    # ggml-org/llama.cpp#15256
    r = diagnose(tmp_path, [
        "ggml_vulkan: Device memory allocation of size 118497280 failed.",
        "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory",
        "double free or corruption (out)",
    ])
    assert ids(r)[0] == "cuda-oom"


def test_early_ggml_cuda_s_check_wording(tmp_path):
    # ggml-org/llama.cpp#3199
    r = diagnose(tmp_path, ["CUDA error 2 at /data/llama.cpp/ggml-cuda.cu:5509: out of memory", "current device: 0"])
    assert ids(r) == ["cuda-oom"]
