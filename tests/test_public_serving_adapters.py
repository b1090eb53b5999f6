"""Serving families first seen in the blind public cases 2150-2168 (session 10): a LoRA adapter the engine
refused, a failed GGML_ASSERT, a GGUF the llama.cpp loader refused, a TensorRT engine build that did not
finish. What a user who pastes such a log reads first.

Every input is lines copied from the public thread named in the comment (the same excerpts are in
sample_logs/public with their provenance, or are the signatures' examples), cut to what the family needs.
"""

from __future__ import annotations

from conftest import diagnose_lines, ids


def diagnose(tmp_path, lines: list[str]):
    return diagnose_lines(tmp_path, lines, "serve.log")


def test_a_v1_lora_path_with_no_adapter_is_named_before_the_generic_exception(tmp_path):
    # vllm-project/vllm#30690
    r = diagnose(tmp_path, [
        '(EngineCore_DP0 pid=1511501) ERROR 12-15 18:57:10 [core.py:918]   File "/data/home/USER/dev/app/minconda/envs/vllm/lib/python3.12/site-packages/vllm/lora/worker_manager.py", line 138, in _load_adapter',
        "(EngineCore_DP0 pid=1511501) ERROR 12-15 18:57:10 [core.py:918]     raise ValueError(",
        '(EngineCore_DP0 pid=1511501) ERROR 12-15 18:57:10 [core.py:918] ValueError: Loading lora ["table_qc failed: No adapter found for /data/home/USER/dev/train/table_ocr/Reward_model_train/output/qwen_lora_output/checkpoint-57"]',
        "(APIServer pid=1510937) Traceback (most recent call last):",
    ])
    assert ids(r) == ["lora-adapter-load-failed"]
    f = r.findings[0]
    assert "No adapter found for" in f.summary and "table_qc" in f.summary
    assert f.initiating_rank is None


def test_a_rank_above_max_lora_rank_says_both_ranks(tmp_path):
    # hiyouga/LlamaFactory#9512: V1's executor re-raises the worker's error
    r = diagnose(tmp_path, [
        "(EngineCore_DP0 pid=1789245) ERROR 11-19 12:54:26 [core.py:710]     raise RuntimeError(",
        "(EngineCore_DP0 pid=1789245) ERROR 11-19 12:54:26 [core.py:710] RuntimeError: Worker failed with error 'LoRA rank 32 is greater than max_lora_rank 16.', please check the stack trace above for the root cause",
    ])
    assert ids(r) == ["lora-adapter-load-failed"]
    assert "rank 32 is above the engine's max_lora_rank 16" in r.findings[0].summary


def test_an_adapter_with_modules_to_save_on_the_v0_engine(tmp_path):
    # vllm-project/vllm#9280: the source line of the raise carries the template, the exception line the value
    r = diagnose(tmp_path, [
        'ERROR 10-11 16:03:09 engine.py:157]     raise ValueError(f"{name} is unsupported LoRA weight")',
        "ERROR 10-11 16:03:09 engine.py:157] ValueError: base_model.model.lm_head.weight is unsupported LoRA weight",
    ])
    assert ids(r) == ["lora-adapter-load-failed"]
    assert "base_model.model.lm_head.weight" in r.findings[0].summary


def test_tensorrt_llm_s_low_rank_assertion_is_the_same_family(tmp_path):
    # NVIDIA/TensorRT-LLM#1903
    r = diagnose(tmp_path, [
        "[TensorRT-LLM][ERROR] Assertion failed: Invalid low_rank (1024). low_rank must be smaller than mMaxLowRank (64)",
    ])
    assert ids(r) == ["lora-adapter-load-failed"]


def test_loading_and_removing_an_adapter_at_run_time_stays_clean(tmp_path):
    # vllm-project/vllm#17936
    r = diagnose(tmp_path, [
        "INFO 05-10 10:46:14 [serving_models.py:185] Loaded new LoRA adapter: name 'sql_adapter', path '/home/xx/sql-lora'",
        'INFO:     127.0.0.1:55020 - "POST /v1/load_lora_adapter HTTP/1.1" 200 OK',
        "INFO 05-10 10:56:49 [serving_models.py:202] Removed LoRA adapter: name 'sql_adapter'",
    ])
    assert ids(r) == []


def test_a_ggml_assert_names_the_condition_and_where(tmp_path):
    # ggml-org/llama.cpp#13581: a context size the KV-cache views overflow
    r = diagnose(tmp_path, [
        "llama_kv_cache_unified:        CPU KV buffer size = 208896.00 MiB",
        "/home/user/llama.cpp/ggml/src/ggml.c:1554: GGML_ASSERT(view_src == NULL || data_size == 0 || data_size + view_offs <= ggml_nbytes(view_src)) failed",
    ])
    assert ids(r) == ["ggml-assert-failed"]
    s = r.findings[0].summary
    assert "ggml.c:1554" in s and "view_src == NULL" in s


def test_ollama_s_relay_of_the_runner_s_assert_through_msty_json(tmp_path):
    # ollama/ollama#11418: the runner's exit status alone would say less than the assert it relays
    r = diagnose(tmp_path, [
        '{"level":50,"time":1752516972565,"pid":10104,"hostname":"Ryzen7","msg":"time=2025-07-14T19:16:12.565+01:00 level=ERROR source=server.go:449 msg=\\"llama runner terminated\\" error=\\"exit status 0xc0000409\\"\\n"}',
        '{"level":50,"time":1752516972751,"pid":10104,"hostname":"Ryzen7","msg":"time=2025-07-14T19:16:12.750+01:00 level=ERROR source=sched.go:457 msg=\\"error loading llama server\\" error=\\"llama runner process has terminated: GGML_ASSERT(tensor->op == GGML_OP_UNARY) failed\\"\\n"}',
    ])
    assert ids(r)[0] == "ggml-assert-failed"
    assert "tensor->op == GGML_OP_UNARY" in r.findings[0].summary


def test_a_gguf_the_loader_cannot_lay_out(tmp_path):
    # ggml-org/llama.cpp#6665
    r = diagnose(tmp_path, [
        "llama_model_load: error loading model: create_tensor: tensor 'blk.0.ffn_gate.0.weight' not found",
        "llama_load_model_from_file: failed to load model",
        "llama_init_from_gpt_params: error: failed to load model 'Mixtral-8x22B-v0.1.Q6_K-00001-of-00005.gguf'",
        "main: error: unable to load model",
    ])
    assert ids(r) == ["gguf-model-load-failed"]
    assert "blk.0.ffn_gate.0.weight" in r.findings[0].summary


def test_an_unknown_architecture_stays_model_architecture_unsupported(tmp_path):
    # ollama/ollama#12984: the loader's line is the architecture's, not a generic load failure
    r = diagnose(tmp_path, [
        "ollama  | llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'pangu-embedded'",
        "ollama  | llama_model_load_from_file_impl: failed to load model",
    ])
    assert ids(r) == ["model-architecture-unsupported"]


def test_a_tensorrt_llm_build_without_its_plugin_library(tmp_path):
    # NVIDIA/TensorRT-LLM#107
    r = diagnose(tmp_path, [
        "[10/25/2023-03:51:35] [TRT-LLM] [I] Weights loaded. Total time: 00:00:00",
        "[10/25/2023-03:51:35] [TRT] [E] 3: getPluginCreator could not find plugin: Gemmtensorrt_llm version: 1",
        "Traceback (most recent call last):",
        '  File "/tensorrt-llm/TensorRT-LLM/examples/bloom/build.py", line 515, in <module>',
        "    build(0, args)",
    ])
    assert ids(r) == ["tensorrt-engine-build-failed"]
    assert "Gemmtensorrt_llm" in r.findings[0].summary


def test_the_build_s_plugin_settings_stay_clean(tmp_path):
    # NVIDIA/TensorRT-LLM#1861: a build the reporter says finished
    r = diagnose(tmp_path, [
        "[TensorRT-LLM] TensorRT-LLM version: 0.12.0.dev2024070200",
        "[07/04/2024-13:50:35] [TRT-LLM] [I] Set gemm_plugin to bfloat16.",
        "[07/04/2024-13:50:35] [TRT-LLM] [I] Set lora_plugin to None.",
    ])
    assert ids(r) == []


# --- rounds 2 and 3 (2169-2186): engines' own words for a runner, a loop or an engine file that is gone ---


def test_an_sglang_scheduler_found_dead_with_exit_code_minus_9_is_a_sigkill(tmp_path):
    # gpustack/gpustack#3848: the exit code says how it died; nothing of the scheduler's own is in the log
    r = diagnose(tmp_path, [
        "[12-11 17:47:40] Loading FluxTransformer2DModel, default_dtype: torch.bfloat16",
        "[12-11 17:52:52] Rank 0 scheduler is dead. Please check if there are relevant logs.",
        "[12-11 17:52:54] Exit code: -9",
        "Traceback (most recent call last):",
    ])
    assert ids(r)[0] == "process-killed"
    assert "sglang-scheduler-crash" not in ids(r)


def test_a_ray_serve_replica_whose_runtime_env_failed_on_its_node(tmp_path):
    # ray-project/ray#19704
    r = diagnose(tmp_path, [
        "(ServeController pid=653) 2021-11-08 14:04:01,023       INFO deployment_state.py:949 -- Adding 1 replicas to deployment 'Echo_29'. component=serve deployment=Echo_29",
        "(pid=gcs_server) [2021-11-08 14:04:01,117 E 145 145] gcs_actor_scheduler.cc:498: Cannot create an actor RayServeWrappedReplica.__init__ of an id 7edea2041a58a979072dd27301000000 because the runtime environment setup failed on a node of address 172.31.97.186.",
    ])
    assert ids(r) == ["ray-serve-replica-failed"]
    assert "runtime environment setup failed" in r.findings[0].summary


def test_an_ollama_runner_exit_status_is_named_with_what_it_means(tmp_path):
    # ollama/ollama#11447
    r = diagnose(tmp_path, [
        'time=2025-07-16T20:07:57.610+02:00 level=ERROR source=sched.go:489 msg="error loading llama server" error="llama runner process has terminated: exit status 2"',
        '[GIN] 2025/07/16 - 20:07:57 | 500 |    720.9988ms |       127.0.0.1 | POST     "/api/generate"',
    ])
    assert ids(r) == ["ollama-runner-failed"]
    assert "exit status 2" in r.findings[0].summary and "Go runtime" in r.findings[0].summary


def test_the_assert_before_the_runner_s_exit_is_the_finding(tmp_path):
    # ollama/ollama#6182: the runner's exit status 0xc0000409 is the assert's consequence
    r = diagnose(tmp_path, [
        r"C:\a\ollama\ollama\llm\llama.cpp\src\llama.cpp:5511: GGML_ASSERT(vocab.id_to_token.size() == vocab.token_to_id.size()) failed",
        'time=2024-08-05T10:44:08.717+02:00 level=INFO source=server.go:618 msg="waiting for server to become available" status="llm server error"',
        'time=2024-08-05T10:44:09.223+02:00 level=ERROR source=sched.go:451 msg="error loading llama server" error="llama runner process has terminated: exit status 0xc0000409"',
    ])
    assert ids(r) == ["ggml-assert-failed"]


def test_ollama_waiting_for_a_starting_runner_stays_clean(tmp_path):
    # ollama/ollama#9509: `status="llm server error"` is printed while the runner has not opened its port yet
    r = diagnose(tmp_path, [
        '2025-03-05 08:58:54 time=2025-03-05T06:58:54.117Z level=INFO source=server.go:557 msg="waiting for llama runner to start responding"',
        '2025-03-05 08:58:54 time=2025-03-05T06:58:54.117Z level=INFO source=server.go:591 msg="waiting for server to become available" status="llm server error"',
        '2025-03-05 08:58:54 time=2025-03-05T06:58:54.130Z level=INFO source=runner.go:931 msg="starting go runner"',
    ])
    assert ids(r) == []


def test_a_tensorrt_plan_of_another_release_names_both_versions(tmp_path):
    # NVIDIA/retinanet-examples#314: the sample then segfaults on the null engine
    r = diagnose(tmp_path, [
        "Loading engine...",
        "6: The engine plan file is not compatible with this version of TensorRT, expecting library version 8.0.0 got 8.0.1, please rebuild.",
        "4: [runtime.cpp::deserializeCudaEngine::74] Error Code 4: Internal Error (Engine deserialization failed.)",
        "Segmentation fault (core dumped)",
    ])
    assert ids(r)[0] == "tensorrt-engine-incompatible"
    s = r.findings[0].summary
    assert "8.0.0" in s and "8.0.1" in s


def test_lmdeploy_s_engine_main_loop_task_that_failed(tmp_path):
    # InternLM/lmdeploy#3459
    r = diagnose(tmp_path, [
        "2025-04-21 10:43:58,013 - lmdeploy - ERROR - engine.py:781 - Task <EngineMainLoop> failed",
        "Traceback (most recent call last):",
        '  File "/home/ai-admin/.conda/envs/lmdeploy/lib/python3.10/site-packages/lmdeploy/pytorch/engine/engine.py", line 827, in async_loop',
        "    await self._async_loop_main(resp_que=resp_que, has_runable_event=has_runable_event)",
    ])
    assert ids(r) == ["lmdeploy-engine-dead"]
    assert "EngineMainLoop" in r.findings[0].summary


def test_lmdeploy_sessions_that_finished_with_an_error_are_not_a_dead_engine(tmp_path):
    # Yuliang-Liu/MonkeyOCR#174
    r = diagnose(tmp_path, [
        '2025-07-07 09:01:18,519 - lmdeploy - ERROR - async_engine.py:791 - session 1 finished, reason "error"',
        '2025-07-07 09:01:18,519 - lmdeploy - ERROR - async_engine.py:791 - session 2 finished, reason "error"',
    ])
    assert "lmdeploy-engine-dead" not in ids(r)


# --- round 4 (2187-2193): the Hugging Face Hub behind the servers ---


def test_a_gated_repo_is_named_instead_of_a_bare_oserror(tmp_path):
    # sgl-project/sglang#14644
    r = diagnose(tmp_path, [
        "    raise OSError(",
        "OSError: You are trying to access a gated repo.",
        "Make sure to have access to it at https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct.",
        "401 Client Error. (Request ID: Root=1-695139c1-20c276683bbfa05022511a7b;379c2def-ca77-4fc6-9489-6fc1f7a44e40)",
        "",
        "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct/resolve/main/config.json.",
    ])
    assert ids(r) == ["hf-hub-access-failed"]
    assert "gated" in r.findings[0].summary


def test_no_connection_to_the_hub_with_an_empty_cache(tmp_path):
    # KyanChen/RSPrompter#78
    r = diagnose(tmp_path, [
        "huggingface_hub.utils._errors.LocalEntryNotFoundError: An error happened while trying to locate the file on the Hub and we cannot find the requested files in the local cache. Please check your connection and try again or make sure your Internet connection is on.",
    ])
    assert ids(r) == ["hf-hub-access-failed"]
    assert "could not be reached" in r.findings[0].summary


def test_custom_code_without_trust_remote_code_behind_a_wrapper(tmp_path):
    # xorbitsai/inference#3000
    r = diagnose(tmp_path, [
        "ValueError: [address=0.0.0.0:51929, pid=36115] Loading /Users/USER/.xinference/cache/bge-reranker-v2-minicpm-layerwise requires you to execute the configuration file in that repo on your local machine. Make sure you have read the code there to avoid malicious use, then set the option `trust_remote_code=True` to remove this error.",
    ])
    assert ids(r) == ["trust-remote-code-required"]


def test_tgi_trusting_remote_code_and_skipping_the_download_stays_clean(tmp_path):
    # huggingface/text-generation-inference#2649
    r = diagnose(tmp_path, [
        "2024-10-15T07:47:47.879952Z  WARN text_generation_launcher: `trust_remote_code` is set. Trusting that model `/home/data/models/baichuan2-7b` do not contain malicious code.",
        "2024-10-15T07:47:52.691488Z  INFO text_generation_launcher: Files are already present on the host. Skipping download.",
        "2024-10-15T07:47:53.696712Z  INFO download: text_generation_launcher: Successfully downloaded weights for /home/data/models/baichuan2-7b",
    ])
    assert ids(r) == []


def test_a_tgi_shard_that_fails_warm_up_is_named_before_the_launcher_says_so(tmp_path):
    # huggingface/text-generation-inference#2025: a platform stamp before TGI's own
    r = diagnose(tmp_path, [
        "2024-06-05T18:08:23.230497824Z 2024-06-05T18:08:23.230282Z ERROR text_generation_launcher: Method Warmup encountered an error.",
        "2024-06-05T18:08:23.230523735Z Traceback (most recent call last):",
        '2024-06-05T18:08:23.230527505Z   File "/opt/conda/bin/text-generation-server", line 8, in <module>',
        "2024-06-05T18:08:23.230530245Z     sys.exit(app())",
    ])
    assert ids(r) == ["tgi-shard-failed"]
    assert "warm-up" in r.findings[0].summary


def test_triton_s_python_stub_restart_notice_is_named(tmp_path):
    # triton-inference-server/server#6480
    r = diagnose(tmp_path, [
        "E1025 09:40:38.075506 9121 python_be.cc:2066] Stub process is unhealthy and it will be restarted.",
    ])
    assert ids(r) == ["triton-python-stub-unhealthy"]


def test_a_client_s_failed_request_on_a_dead_stub_names_the_instance(tmp_path):
    # triton-inference-server/server#3678
    r = diagnose(tmp_path, [
        "    tritonclient.utils.InferenceServerException: [StatusCode.INTERNAL] Failed to process the request(s) for model instance 'damage_0', message: Stub process is not healthy.",
    ])
    assert ids(r) == ["triton-python-stub-unhealthy"]
    assert "damage_0" in r.findings[0].summary
