"""Serving set-up failures first seen in the session-11 blind public cases 2350-2365: a tensor-parallel size
the model cannot be split by, a model without a chat template, SGLang's start-up memory check, and vLLM's
OpenAI server rejecting one request (no failure). What a user who pastes such a log reads first.

Every input is lines copied from the public thread named in the comment (the same excerpts are in
sample_logs/public with their provenance), cut to what the family needs.
"""

from __future__ import annotations

from conftest import diagnose_lines, ids


def diagnose(tmp_path, lines: list[str]):
    return diagnose_lines(tmp_path, lines, "serve.log")


# containers/ai-lab-recipes#514: vLLM's config check on a three-GPU host
VLLM_TP = [
    '  File "/workspace/vllm/config.py", line 260, in verify_with_parallel_config',
    "    raise ValueError(",
    "ValueError: Total number of attention heads (32) must be divisible by tensor parallel size (3).",
]


def test_vllm_heads_that_tensor_parallelism_cannot_split_are_named_with_both_numbers(tmp_path):
    r = diagnose(tmp_path, VLLM_TP)
    assert ids(r) == ["tensor-parallel-indivisible"]  # not a bare uncaught ValueError
    f = r.findings[0]
    assert "32 attention heads cannot be split over tensor parallel size 3" in f.summary
    assert f.initiating_rank is None


def test_tgi_shards_that_do_not_divide_a_weight(tmp_path):
    # huggingface/text-generation-inference#564 (--num-shard 3 on bloom-560m)
    r = diagnose(tmp_path, [
        '  File "/opt/conda/lib/python3.9/site-packages/text_generation_server/utils/weights.py", line 84, in get_sharded',
        "    assert (",
        "AssertionError: The choosen size 50432 is not compatible with sharding on 3 shards",
    ])
    assert ids(r) == ["tensor-parallel-indivisible"]
    assert "50432 rows of a weight cannot be split over tensor parallel size 3" in r.findings[0].summary


def test_tgi_heads_and_the_shard_that_failed_keep_the_shard_rank(tmp_path):
    # huggingface/text-generation-inference#1354: shard 0 raises, the launcher says it failed to start
    r = diagnose(tmp_path, [
        "ValueError: `num_heads` must be divisible by `num_shards` (got `num_heads`: 71 and `num_shards`: 2",
        " rank=0",
        "2023-12-16T09:36:24.632149Z ERROR text_generation_launcher: Shard 0 failed to start",
        "2023-12-16T09:36:24.632181Z  INFO text_generation_launcher: Shutting down shards",
    ])
    assert ids(r) == ["tensor-parallel-indivisible"]  # the shard's failure is its consequence
    assert r.findings[0].initiating_rank == 0


def test_a_placement_that_does_not_fit_the_nodes_is_not_the_model_split(tmp_path):
    # vllm-project/vllm#596 (the title line)
    r = diagnose(tmp_path, ["ValueError: The number of GPUs per node is not divisible by the number of tensor parallelism."])
    assert "tensor-parallel-indivisible" not in ids(r)


# zai-org/GLM-4#551: transformers 4.42's wording
GLM4_TEMPLATE = [
    '  File "/home/USER/anaconda3/envs/glm4/lib/python3.10/site-packages/transformers/tokenization_utils_base.py", line 2025, in get_chat_template',
    "    raise ValueError(",
    "ValueError: Cannot use apply_chat_template() because tokenizer.chat_template is not set and no template argument was"
    " passed! For information about writing templates and setting the tokenizer.chat_template attribute, please see the"
    " documentation at https://huggingface.co/docs/transformers/main/en/chat_templating",
]


def test_a_tokenizer_without_a_chat_template_is_named_not_left_as_a_value_error(tmp_path):
    r = diagnose(tmp_path, GLM4_TEMPLATE)
    assert ids(r) == ["chat-template-missing"]
    assert "tokenizer defines no chat template" in r.findings[0].summary


def test_vllm_answering_every_chat_request_400_for_want_of_a_template(tmp_path):
    # Center-for-AI-Innovation/LLMFlux#85: the server's traceback under its serving-layer logger
    r = diagnose(tmp_path, [
        '(APIServer pid=2221526) ERROR 03-05 16:30:27 [serving.py:323]   File "/app/venv/lib/python3.12/site-packages/vllm/renderers/hf.py", line 451, in safe_apply_chat_template',
        "(APIServer pid=2221526) ERROR 03-05 16:30:27 [serving.py:323]     raise ChatTemplateResolutionError(",
        "(APIServer pid=2221526) ERROR 03-05 16:30:27 [serving.py:323] vllm.entrypoints.chat_utils.ChatTemplateResolutionError:"
        " As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template if the"
        " tokenizer does not define one.",
        '(APIServer pid=2221526) INFO:     127.0.0.1:52662 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request',
    ])
    assert ids(r) == ["chat-template-missing"]


def test_the_client_side_of_the_same_refusal(tmp_path):
    # David-Li0406/Preference-Leakage#6
    r = diagnose(tmp_path, [
        "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': 'As of transformers v4.44, default chat"
        " template is no longer allowed, so you must provide a chat template if the tokenizer does not define one.',"
        " 'type': 'BadRequestError', 'param': None, 'code': 400}",
    ])
    assert ids(r) == ["chat-template-missing"]


def test_a_prompt_over_the_context_length_is_one_rejected_request_not_a_failure(tmp_path):
    # ruipeterpan/specreason#4: vLLM's OpenAI layer answered 400 and kept serving
    r = diagnose(tmp_path, [
        "ERROR 05-08 21:27:27 [serving_chat.py:198] ValueError: This model's maximum context length is 8192 tokens."
        " However, you requested 8203 tokens (7691 in the messages, 512 in the completion). Please reduce the length of"
        " the messages or completion.",
    ])
    assert r.verdict == "clean", ids(r)


def test_an_engine_that_died_behind_the_serving_layer_is_still_the_engine(tmp_path):
    # the V0 MQ engine's death logged by serving_chat.py (sample_logs/public/2184.log)
    r = diagnose(tmp_path, [
        "ERROR 03-17 08:02:04 serving_chat.py:596] vllm.engine.multiprocessing.MQEngineDeadError: Engine loop is not"
        " running. Inspect the stacktrace to find the original error: AssertionError('Error in model execution (input"
        " dumped to /tmp/err_execute_model_input_20250317-080027.pkl): ').",
    ])
    assert ids(r) == ["vllm-engine-dead"]


def test_sglang_with_no_memory_left_for_its_kv_pool_is_a_start_up_oom(tmp_path):
    # gpustack/gpustack#3831: SGLang started with mem_fraction_static=0.2
    r = diagnose(tmp_path, [
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value:"
        " self.server_args.mem_fraction_static=0.2",
    ])
    assert ids(r) == ["cuda-oom"]
    assert "(--mem-fraction-static 0.2)" in r.findings[0].summary


# Round 2 (2366-2375): a parallel layout above the GPUs the engine is given, a tokenizer class transformers lacks,
# a Ray Serve replica the cluster cannot place.

def test_vllm_asking_ray_for_more_gpus_than_its_placement_group_holds(tmp_path):
    # VITA-MLLM/VITA#42
    r = diagnose(tmp_path, [
        '  File "D:\\ai\\anaconda3\\envs\\vita\\Lib\\site-packages\\vllm\\executor\\ray_utils.py", line 265, in initialize_ray_cluster',
        "    raise ValueError(",
        "ValueError: The number of required GPUs exceeds the total number of available GPUs in the placement group.",
    ])
    assert ids(r) == ["parallel-size-exceeds-gpus"]
    assert "more GPUs than Ray's placement group holds" in r.findings[0].summary


def test_a_driver_node_without_gpus_behind_the_v0_engine_s_log_prefix(tmp_path):
    # vllm-project/vllm#7815: the traceback never reaches its exception line in the excerpt
    r = diagnose(tmp_path, [
        "ERROR 02-09 02:31:11 engine.py:389] Ray does not allocate any GPUs on the driver node. Consider adjusting the"
        " Ray placement group or running the driver on a GPU node.",
        "ERROR 02-09 02:31:11 engine.py:389] Traceback (most recent call last):",
    ])
    assert ids(r) == ["parallel-size-exceeds-gpus"]


def test_v1_ranks_per_node_above_its_visible_gpus_give_both_counts(tmp_path):
    # vllm-project/vllm#28873
    r = diagnose(tmp_path, [
        "(EngineCore_DP0 pid=570282) AssertionError: local_world_size (16) must be less than or equal to the number of"
        " visible devices (8).",
    ])
    assert ids(r) == ["parallel-size-exceeds-gpus"]
    assert "16 ranks on this node but 8 visible GPUs" in r.findings[0].summary


def test_ray_spreading_tensor_parallel_workers_over_nodes_is_only_a_warning(tmp_path):
    # foundation-model-stack/fastsafetensors#36
    r = diagnose(tmp_path, [
        "(EngineCore_DP0 pid=1088) INFO 12-17 23:27:50 [ray_utils.py:396] No current placement group found. Creating a new placement group.",
        "(EngineCore_DP0 pid=1088) WARNING 12-17 23:27:50 [ray_utils.py:207] tensor_parallel_size=2 is bigger than a"
        " reserved number of GPUs (1 GPUs) in a node 9b520231c0732c57debefe20b1e67dd01e4d5fcf474c048cf68c4789. Tensor"
        " parallel workers can be spread out to 2+ nodes which can degrade the performance unless you have fast"
        " interconnect across nodes, like Infiniband. To resolve this issue, make sure you have more than 2 GPUs"
        " available at each node.",
    ])
    assert r.verdict == "clean", ids(r)


def test_a_tokenizer_class_transformers_does_not_have_is_the_unsupported_model_not_a_bare_value_error(tmp_path):
    # QwenLM/Qwen3#34 (Qwen2Tokenizer on transformers < 4.37)
    r = diagnose(tmp_path, [
        '  File "/usr/local/lib/python3.8/dist-packages/transformers/models/auto/tokenization_auto.py", line 724, in from_pretrained',
        "    raise ValueError(",
        "ValueError: Tokenizer class Qwen2Tokenizer does not exist or is not currently imported.",
    ])
    assert ids(r) == ["model-architecture-unsupported"]
    f = r.findings[0]
    assert "no tokenizer class Qwen2Tokenizer" in f.summary and "trust_remote_code" in f.summary


_PENDING_TAIL = (
    " -- Deployment 'demoRetrievalVoyagerIndexServiceHandler' in application"
    " 'demo_recsys_retrieval_voyager_index_service' has 1 replicas that have taken more than 30s to be scheduled. This"
    " may be due to waiting for the cluster to auto-scale or for a runtime environment to be installed. Resources"
    " required for each replica: {\"CPU\": 2.0}, total resources available: {\"CPU\": 10.0}. Use `ray status` for"
    " more details."
)
RAY_SERVE_PENDING = [  # ray-project/kuberay#3151, the controller's first two warnings
    "WARNING 2025-03-04 01:04:33,560 controller 306" + _PENDING_TAIL,
    "WARNING 2025-03-04 01:05:03,580 controller 306" + _PENDING_TAIL,
]


def test_a_serve_replica_still_unscheduled_a_minute_later_is_reported_once(tmp_path):
    # ray-project/kuberay#3151: the controller's warning, 30 s apart (the two lines of the thread)
    r = diagnose(tmp_path, RAY_SERVE_PENDING)
    assert ids(r) == ["ray-serve-replica-unschedulable"]
    f = r.findings[0]
    # since session 13 the first warning already names it: the 10 CPUs are there, so no node has to be added
    assert f.occurrences == 1 and "although the cluster has the resources" in f.summary


def test_the_first_30_s_of_an_autoscaler_at_work_are_no_finding(tmp_path):
    # the thread's first warning, but for a replica the cluster lacks the GPU of (not a line of the thread: the
    # cluster must grow, which is what the autoscaler is doing in its first 30 s)
    r = diagnose(tmp_path, [RAY_SERVE_PENDING[0].replace('{"CPU": 2.0}, total', '{"CPU": 2.0, "GPU": 1.0}, total')])
    assert r.verdict == "clean", ids(r)


def test_a_first_warning_while_the_cluster_has_the_resources_is_a_placement_failure(tmp_path):
    # the same thread's first warning alone: 2 CPUs asked, 10 free in the cluster, yet no node takes it (session 13:
    # kuberay#1090 and ray#48471 are single warnings of the same kind, and every such case was a replica never placed)
    r = diagnose(tmp_path, RAY_SERVE_PENDING[:1])
    assert ids(r) == ["ray-serve-replica-unschedulable"]
    assert "although the cluster has the resources" in r.findings[0].summary


# Round 4 (2379-2383): a command line the argument parser rejects, a model directory without weights.

def test_an_option_vllm_does_not_have_stops_it_at_argument_parsing(tmp_path):
    # containers/ramalama#758: llama.cpp's --temperature given to `vllm serve`
    r = diagnose(tmp_path, [
        "usage: vllm [-h] [-v]",
        "            {chat,complete,serve,launch,bench,collect-env,run-batch} ...",
        "vllm: error: unrecognized arguments: --temperature 0.8",
    ])
    assert ids(r) == ["cli-argument-invalid"]
    assert "unrecognized arguments: --temperature 0.8" in r.findings[0].summary


def test_the_usage_text_alone_is_no_failure(tmp_path):
    # the first line of vllm-project/vllm-omni#1364, without its error
    r = diagnose(tmp_path, ["usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ..."])
    assert r.verdict == "clean", ids(r)


def test_a_snapshot_without_the_weights_its_load_format_asks_for(tmp_path):
    # vllm-project/vllm#3329 (--load-format safetensors on a .bin-only snapshot)
    r = diagnose(tmp_path, [
        "RuntimeError: Cannot find any model weights with"
        " `/home/huggingface_models/models--lmsys--vicuna-13b-v1.5/snapshots/3deb0106f72a3a433f0c6ea0cb978bdf14bcd3a6`",
    ])
    assert ids(r) == ["model-weights-not-found"]  # not a bare uncaught RuntimeError
    assert "snapshots/3deb0106f72a3a433f0c6ea0cb978bdf14bcd3a6" in r.findings[0].summary


def test_a_wrapper_s_repr_of_the_same_error(tmp_path):
    # modal-labs/modal-examples#837
    r = diagnose(tmp_path, [
        "Runner failed with exception: RuntimeError('Cannot find any model weights with /llamas/USER/irish_eng_transl_2k_test_uuix')",
    ])
    assert ids(r) == ["model-weights-not-found"]


def test_tgi_falling_back_to_pytorch_weights_is_no_failure(tmp_path):
    # a TGI launcher log line quoted in a public repository's notes (found through the code search)
    r = diagnose(tmp_path, [
        "2024-08-11T08:30:04.836935Z  WARN text_generation_launcher: No safetensors weights found for model"
        " MBZUAI/LaMini-T5-738M at revision None. Downloading PyTorch weights.",
    ])
    assert r.verdict == "clean", ids(r)


# Round 5 (2384-2389): the same class in other parsers' words.

def test_llama_cpp_s_own_parser_and_its_value_check(tmp_path):
    # ggml-org/llama.vim#36 and mostlygeek/llama-swap#283 (behind docker compose's prefix)
    assert ids(diagnose(tmp_path, ["error: invalid argument: -hf"])) == ["cli-argument-invalid"]
    r = diagnose(tmp_path, [
        "llama-swap-1  | error while handling argument \"--flash-attn\": error: unkown value for --flash-attn: '--ctx-size'",
        "llama-swap-1  | to show complete usage, run with -h",
    ])
    assert ids(r) == ["cli-argument-invalid"]


def test_go_s_flag_package_in_ollama_s_runner(tmp_path):
    # intel/ipex-llm#13115
    r = diagnose(tmp_path, ["flag provided but not defined: -ngl", "Runner usage"])
    assert ids(r) == ["cli-argument-invalid"]
    assert "flag provided but not defined: -ngl" in r.findings[0].summary


def test_a_cuda_error_that_says_invalid_argument_is_not_a_command_line(tmp_path):
    r = diagnose(tmp_path, [
        "    torch._C._cuda_emptyCache()",
        "RuntimeError: CUDA error: invalid argument",
    ])
    assert "cli-argument-invalid" not in ids(r)


# Round 6 (2390-2393): a prompt longer than the maximum length, raised into a job.

def test_a_prompt_over_max_model_len_in_a_wrapper_s_worker(tmp_path):
    # xorbitsai/inference#3785 (the traceback's last lines)
    r = diagnose(tmp_path, [
        '  File "/home/test/.local/lib/python3.10/site-packages/vllm/engine/llm_engine.py", line 2010, in _validate_model_input',
        "    raise ValueError(",
        "ValueError: [address=0.0.0.0:37591, pid=324770] The decoder prompt (length 17772) is longer than the maximum"
        " model length of 16384.",
    ])
    assert ids(r) == ["prompt-exceeds-max-length"]
    assert "a prompt of 17772 tokens is longer than vLLM's max_model_len (16384)" in r.findings[0].summary


def test_generate_s_max_length_error_but_not_its_warning(tmp_path):
    # huggingface/smol-course#208 (the ValueError) and lllyasviel/Fooocus#2278 (the warning, 2365)
    r = diagnose(tmp_path, [
        "ValueError: Input length of input_ids is 31, but `max_length` is set to 20. This can lead to unexpected"
        " behavior. You should consider increasing `max_length` or, better yet, setting `max_new_tokens`.",
    ])
    assert ids(r) == ["prompt-exceeds-max-length"]
    w = diagnose(tmp_path, [
        "Input length of input_ids is 75, but `max_length` is set to 75. This can lead to unexpected behavior. You"
        " should consider increasing `max_new_tokens`.",
    ])
    assert w.verdict == "clean", ids(w)


def test_a_dead_ray_worker_of_vllm_is_named_with_the_actor_s_error(tmp_path):
    # sample_logs/public/1317.log (vllm-project/vllm multi-node V1 on Ray): the excerpt ends at the actor's class
    r = diagnose(tmp_path, [
        "ERROR 05-06 14:20:15 [core.py:387] ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
        "ERROR 05-06 14:20:15 [core.py:387]      class_name: RayWorkerWrapper",
    ])
    named = {f.id for f in r.findings} | {c.id for f in r.findings for c in f.collateral}
    assert "vllm-engine-dead" in named
