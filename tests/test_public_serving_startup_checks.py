"""Serving failures first seen in the session-12 blind rounds (public cases 2550-2587): vLLM's batch-token budget
below max_model_len without chunked prefill, a speculative draft with another vocabulary, vLLM's registry that
cannot import its own model implementation, TensorRT engines from another GPU, Triton's repository poll, SGLang's
detokenizer process, HF generate() refusing its arguments, Ollama model names that resolve to nothing, vLLM's weight
loader refusing a checkpoint tensor; and the start-up lines and warnings that must stay quiet.

Every input is lines copied from the public thread named in the comment (the same excerpts are in
sample_logs/public with their provenance).
"""

from __future__ import annotations

from conftest import diagnose_lines, ids


def diagnose(tmp_path, lines: list[str]):
    return diagnose_lines(tmp_path, lines, "serve.log")


def test_vllm_0_1x_refusing_a_batch_budget_below_max_model_len_names_both_numbers(tmp_path):
    # verl-project/verl#7632: pydantic's validation error of SchedulerConfig, chunked prefill off
    r = diagnose(tmp_path, [
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig",
        "  Value error, max_num_batched_tokens (8192) is smaller than max_model_len (128000).",
        "  This effectively limits the maximum sequence length to max_num_batched_tokens and",
        "  makes vLLM reject longer sequences. Please increase max_num_batched_tokens or",
        "  decrease max_model_len.",
    ])
    assert ids(r) == ["vllm-batched-tokens-below-max-len"]
    assert "8192" in r.findings[0].summary and "128000" in r.findings[0].summary
    assert r.findings[0].initiating_rank is None


def test_the_ascend_scheduler_s_wording_is_the_same_failure(tmp_path):
    # vllm-project/vllm-ascend#4365
    r = diagnose(tmp_path, [
        "Value error, Ascend scheduler is enabled without chunked prefill feature. Argument max_num_batched_tokens (4096)"
        " is smaller than max_model_len (32768). This effectively limits the maximum sequence length to"
        " max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or"
        " decrease max_model_len. [type=value_error, input_value=ArgsKwargs((), {'model_co...g': {'enabled': True}}}),"
        " input_type=ArgsKwargs]",
    ])
    assert ids(r) == ["vllm-batched-tokens-below-max-len"]


def test_v1_s_chunked_prefill_notice_and_start_up_lines_are_no_finding(tmp_path):
    # vllm-project/vllm#20914 and vllm-project/vllm#12569: a normal V1 start
    r = diagnose(tmp_path, [
        "INFO 07-14 08:31:58 [config.py:2244] Chunked prefill is enabled with max_num_batched_tokens=4096.",
        "INFO 01-30 03:19:14 kv_cache_utils.py:395] # GPU blocks: 1381",
        "INFO 01-30 03:19:14 kv_cache_utils.py:398] Maximum concurrency for 2048 tokens per request: 10.79x",
    ])
    assert ids(r) == []


def test_a_draft_model_with_another_vocab_size_is_named_not_a_bare_assertion(tmp_path):
    # ruipeterpan/specreason#10: vLLM 0.8.2 V0 spec decode, QwQ-32B target with a 1.5B draft
    p = "(VllmWorkerProcess pid=770441) ERROR 10-16 16:01:23 [multiproc_worker_utils.py:238] "
    r = diagnose(tmp_path, [
        p + '  File "/home/USER/llms/specreason-copy/specreason/.venv/lib/python3.12/site-packages/vllm/spec_decode/'
            'spec_decode_worker.py", line 1258, in _vocab_size',
        p + "    assert all(vocab_sizes[0] == vocab_size for vocab_size in vocab_sizes)",
        p + "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        p + "AssertionError",
    ])
    assert ids(r) == ["speculative-draft-mismatch"]
    assert "vocab" in r.findings[0].summary


def test_vllm_s_registry_failing_to_inspect_an_architecture_says_it_could_not_import_it(tmp_path):
    # vllm-project/vllm#9713 (native Windows): the model is known, its implementation could not be inspected
    r = diagnose(tmp_path, [
        "ERROR 10-26 11:35:32 registry.py:267] Error in inspecting model architecture 'LlamaForCausalLM'",
        "ERROR 10-26 11:35:32 registry.py:267] Traceback (most recent call last):",
        "ERROR 10-26 11:35:32 registry.py:267]     raise CalledProcessError(self.returncode, self.args, self.stdout,",
        "ERROR 10-26 11:35:32 registry.py:267] subprocess.CalledProcessError: Command '['D:\\\\soft_install\\\\anaconda3"
        "\\\\envs\\\\fuseAI\\\\python.exe', '-m', 'vllm.model_executor.models.registry']' returned non-zero exit status 1.",
    ])
    assert ids(r)[0] == "model-architecture-unsupported"
    assert "could not inspect" in r.findings[0].summary and "LlamaForCausalLM" in r.findings[0].summary


def test_a_tensorrt_engine_built_on_another_gpu_architecture_is_one_incompatible_engine(tmp_path):
    # run-llama/llama_index#12318: built on compute 8.0, loaded on 8.9; the assertion and the Python crash follow
    r = diagnose(tmp_path, [
        "[03/27/2024-11:09:02] [TRT] [E] 6: The engine plan file is generated on an incompatible device, expecting"
        " compute 8.0 got compute 8.9, please rebuild.",
        "[03/27/2024-11:09:02] [TRT] [E] 2: [engine.cpp::deserializeEngine::1148] Error Code 2: Internal Error"
        " (Assertion engine->deserialize(start, size, allocator, runtime) failed. )",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.10/dist-packages/tensorrt_llm/runtime/generation.py", line 176, in __prepare',
        "    assert self.engine is not None",
        "AssertionError",
    ])
    assert ids(r) == ["tensorrt-engine-incompatible"]
    assert "compute 8.0" in r.findings[0].summary and r.findings[0].occurrences == 1


def test_triton_s_failed_repository_poll_names_the_model_directory(tmp_path):
    # triton-inference-server/client#803 (native Windows, a load request's files)
    r = diagnose(tmp_path, [
        "C:\\tmp\\tritonbuild\\tritonserver\\build\\_deps\\repo-core-src\\src\\model_repository_manager\\"
        "model_repository_manager.cc:1460] \"Poll failed for model directory 'debug': failed to open binary file for"
        " write C:\\\\Users\\\\USER\\\\AppData\\\\Local\\\\Temp\\\\fol8BC4.tmp\\\\1\\\\model.onnx: No such file or directory\"",
    ])
    assert ids(r) == ["triton-model-load-failed"]
    s = r.findings[0].summary
    assert "'debug'" in s and "No such file or directory" in s and not s.rstrip().endswith('"')


def test_sglang_s_detokenizer_process_crash_is_the_server_crash_not_a_bare_keyerror(tmp_path):
    # sgl-project/sglang#2812
    r = diagnose(tmp_path, [
        "[2025-01-25 21:59:49] DetokenizerManager hit an exception: Traceback (most recent call last):",
        '  File "XXX/python/sglang/srt/managers/detokenizer_manager.py", line 224, in run_detokenizer_process',
        "    manager.event_loop()",
        '  File "XXX/python/sglang/srt/managers/detokenizer_manager.py", line 158, in event_loop',
        "    s = self.decode_status[recv_obj.rids[i]]",
        "KeyError: 'dc49ad867dc144249f59f4e85c7229cd'",
    ])
    assert ids(r) == ["sglang-scheduler-crash"]
    assert "DetokenizerManager" in r.findings[0].summary


def test_hf_generate_refusing_an_openai_style_argument_names_it_once(tmp_path):
    # XMUDeepLIT/Faithful-RAG#5: the ValueError and asyncio's re-print of it are one failure
    r = diagnose(tmp_path, [
        '  File "/root/anaconda3/envs/faith/lib/python3.10/site-packages/transformers/generation/utils.py", line 1393,'
        " in _validate_model_kwargs",
        "    raise ValueError(",
        "ValueError: The following `model_kwargs` are not used by the model: ['max_tokens'] (note: typos in the generate"
        " arguments will also show up in this list)",
        "Task exception was never retrieved",
        "future: <Task finished name='Task-470' coro=<tqdm_asyncio.gather.<locals>.wrap_awaitable() done, defined at"
        " /root/anaconda3/envs/faith/lib/python3.10/site-packages/tqdm/asyncio.py:75> exception=ValueError(\"The following"
        " `model_kwargs` are not used by the model: ['max_tokens'] (note: typos in the generate arguments will also show"
        " up in this list)\")>",
    ])
    assert ids(r) == ["generate-arguments-invalid"]
    assert "['max_tokens']" in r.findings[0].summary and r.findings[0].occurrences == 1


def test_sampling_with_temperature_zero_is_the_argument_failure_not_its_earlier_warning(tmp_path):
    # huggingface/transformers#36896
    r = diagnose(tmp_path, [
        "/path/to/.venv/lib/python3.12/site-packages/transformers/generation/configuration_utils.py:628: UserWarning:"
        " `do_sample` is set to `False`. However, `temperature` is set to `0.0` -- this flag is only used in"
        " sample-based generation modes. You should set `do_sample=True` or unset `temperature`. This was detected"
        " when initializing the generation config instance, which means the corresponding file may hold incorrect"
        " parameterization and should be fixed.",
        "ValueError: `temperature` (=0.0) has to be a strictly positive float, otherwise your next token scores will be"
        " invalid. If you're looking for greedy decoding strategies, set `do_sample=False`.",
    ])
    assert ids(r) == ["generate-arguments-invalid"]
    assert "temperature=0.0" in r.findings[0].summary


def test_generation_config_warnings_before_a_normal_generation_are_no_finding(tmp_path):
    # oobabooga/textgen#3701: 'It can generate an output fine with no issues'
    r = diagnose(tmp_path, [
        "D:\\OOBABOOGA\\installer_files\\env\\lib\\site-packages\\transformers\\generation\\configuration_utils.py:367:"
        " UserWarning: `do_sample` is set to `False`. However, `top_p` is set to `0.9` -- this flag is only used in"
        " sample-based generation modes. You should set `do_sample=True` or unset `top_p`.",
        "  warnings.warn(",
        "Output generated in 2.20 seconds (10.44 tokens/s, 23 tokens, context 592, seed 1174144596)",
    ])
    assert ids(r) == []


def test_ollama_run_of_a_name_the_registry_lacks_names_the_model_from_the_command(tmp_path):
    # ollama/ollama#2292 ('orca isn't a model name')
    r = diagnose(tmp_path, [
        "USER@USER-Swift-SF314-54:~$ ollama run orca",
        "pulling manifest ",
        "Error: pull model manifest: file does not exist",
    ])
    assert ids(r) == ["ollama-model-not-found"]
    assert "'orca'" in r.findings[0].summary


def test_the_python_client_s_response_error_is_the_same_failure_not_a_bare_exception(tmp_path):
    # aidatatools/ollama-benchmark#40
    r = diagnose(tmp_path, ["ResponseError: pull model manifest: file does not exist (status code: 500)"])
    assert ids(r) == ["ollama-model-not-found"]


def test_a_pull_that_starts_is_no_finding(tmp_path):
    # tschechlovdev/rag_chatbot#1, the corrected command
    r = diagnose(tmp_path, ["> ollama pull granite3.3", "pulling manifest "])
    assert ids(r) == []


def test_vllm_s_weight_loader_refusing_a_checkpoint_tensor_is_the_checkpoint_mismatch(tmp_path):
    # vllm-project/vllm#28517: a custom module the Transformers backend's model does not have
    p = "(EngineCore_DP0 pid=560891) ERROR 11-12 13:42:18 [core.py:708] "
    r = diagnose(tmp_path, [
        p + "    raise ValueError(msg)",
        p + "ValueError: There is no module or parameter named 'mlp_AR' in TransformersForCausalLM",
        "(EngineCore_DP0 pid=560891) Process EngineCore_DP0:",
    ])
    assert ids(r) == ["state-dict-mismatch"]
    assert "'mlp_AR'" in r.findings[0].summary and "TransformersForCausalLM" in r.findings[0].summary


def test_a_bare_keyerror_from_a_model_s_params_dict_lookup_is_named_first(tmp_path):
    # vllm-project/llm-compressor#959: a quantization scale the unquantized Qwen2 model has no parameter for
    p = "ERROR 12-05 20:24:46 engine.py:366] "
    r = diagnose(tmp_path, [
        p + '  File "/data/projects/hcece/miniconda3/envs/vllm_wjy_python3.10/lib/python3.10/site-packages/vllm/'
            'model_executor/models/qwen2.py", line 371, in load_weights',
        p + "    param = params_dict[name]",
        p + "KeyError: 'layers.0.mlp.down_proj.weight_scale'",
        "INFO 12-05 20:24:46 multiproc_worker_utils.py:120] Killing local vLLM worker processes",
    ])
    assert ids(r)[0] == "state-dict-mismatch"
