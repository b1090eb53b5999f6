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
