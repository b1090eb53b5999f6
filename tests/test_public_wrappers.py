"""Message families of trainers and wrappers first seen in the blind public round 1400-1426: the first
finding a user who pastes such a log gets, and the rank it names.

Every input is lines copied from the public thread named in the comment (the excerpts are in
sample_logs/public with their provenance), cut to what the family needs.
"""

from __future__ import annotations

from nanscope import api


def diagnose(tmp_path, *lines: str):
    p = tmp_path / "job.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return api.diagnose([str(p)])


def first_id(tmp_path, *lines: str):
    report = diagnose(tmp_path, *lines)
    return report.findings[0].id if report.findings else None


def test_fairseq_oom_recovery_line_alone_is_a_cuda_oom_not_the_scaler(tmp_path):
    # facebookresearch/fairseq#2857: only the recovery line is in view; the fp16 overflow next to it is
    # the scaler reacting to the lost step, not the failure
    assert first_id(
        tmp_path,
        "2020-11-05 19:30:05 | WARNING | fairseq.trainer | attempting to recover from OOM in forward/backward pass",
        "2020-11-05 19:30:05 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: 64.0",
    ) == "cuda-oom"


def test_safetensors_serializing_io_error_is_a_failed_save_in_both_wordings(tmp_path):
    # bghira/SimpleTuner#2353 (Display form) and hiyouga/LlamaFactory#5155's title (Debug form)
    assert first_id(tmp_path, "safetensors_rust.SafetensorError: Error while serializing: I/O error: "
                              "No space left on device (os error 28)") == "checkpoint-save-failed"
    assert first_id(tmp_path, 'safetensors_rust.SafetensorError: Error while serializing: IoError(Os { code: 28, '
                              'kind: StorageFull, message: "No space left on device" })') == "checkpoint-save-failed"


def test_a_safetensors_error_under_save_file_frames_is_a_failed_save(tmp_path):
    # bghira/SimpleTuner#2353: the traceback ends in save_file; its exception type is SafetensorError
    report = diagnose(
        tmp_path,
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.12/site-packages/safetensors/torch.py", line 307, in save_file',
        "    serialize_file(_flatten(tensors), filename, metadata=metadata)",
        "safetensors_rust.SafetensorError: Error while serializing: I/O error: No space left on device (os error 28)",
    )
    assert [f.id for f in report.findings] == ["checkpoint-save-failed"]


def test_lightning_unused_parameters_message_is_the_ddp_finding(tmp_path):
    # chemprop/chemprop#853: Lightning rewrites the reducer's message; the rank's traceback follows
    assert first_id(
        tmp_path,
        "RuntimeError: It looks like your LightningModule has parameters that were not used in producing the loss "
        "returned by training_step. If this is intentional, you must enable the detection of unused parameters in "
        "DDP, either by setting the string value `strategy='ddp_find_unused_parameters_true'` or by setting the flag "
        "in the strategy with `strategy=DDPStrategy(find_unused_parameters=True)`.",
        "[rank3]: Traceback (most recent call last):",
    ) == "ddp-unused-parameters"


def test_ray_memory_monitor_is_host_oom_not_an_uncaught_exception(tmp_path):
    # verl-project/verl#2950: Ray's own OutOfMemoryError, raised by its memory monitor
    assert first_id(tmp_path, "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on "
                              "memory.") == "host-oom"


def test_raylet_oom_kill_summary_is_host_oom(tmp_path):
    # hiyouga/EasyR1#185: the driver's traceback that follows is Ray telling the caller
    report = diagnose(
        tmp_path,
        "(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 Workers (tasks / "
        "actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: "
        "351e406b196f66bb45eaad02a3b8b4725babfa8cc12949432f7ad7d8, IP: 10.95.143.76) over the last time period. "
        "To see more information about the Workers killed on this node, use `ray logs raylet.out -ip 10.95.143.76`",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
    )
    assert report.findings[0].id == "host-oom"
    assert "10.95.143.76" in report.findings[0].summary


def test_kohya_average_loss_nan_in_the_bar_is_a_persistent_nan(tmp_path):
    # kohya-ss/musubi-tuner#26: the bar shows only avr_loss, nan at every epoch end
    assert first_id(
        tmp_path,
        "steps:  13%|█████████▏                                                           | 440/3300 "
        "[21:33<2:20:06,  2.94s/it, avr_loss=nan]",
        "steps:  20%|█████████████▊                                                       | 660/3300 "
        "[32:17<2:09:08,  2.94s/it, avr_loss=nan]",
    ) == "nan-persistent"


def test_torchtune_bar_loss_nan_is_not_clean(tmp_path):
    # meta-pytorch/torchtune#2776: the recipe's loss is only in the bar's description
    report = diagnose(tmp_path, "|Loss: nan:   0%|                         | 3/3073 [00:15<4:04:50,  4.79s/it]")
    assert [f.id for f in report.findings] == ["nan-persistent"]
    assert report.findings[0].first_step == 3


def test_c10d_store_wait_timeout_is_a_collective_timeout_on_that_rank(tmp_path):
    # axolotl-ai-cloud/axolotl#2684: rank 1 waits 30 minutes in the store while the main process tokenizes
    report = diagnose(
        tmp_path,
        "[rank1]:[W516 14:34:56.853490829 socket.cpp:464] [c10d] waitForInput: poll for socket SocketImpl(fd=79, "
        "addr=[localhost]:41170, remote=[localhost]:29500) returned 0, likely a timeout",
        "[rank1]:[W516 14:34:56.854597329 socket.cpp:489] [c10d] waitForInput: socket SocketImpl(fd=79, "
        "addr=[localhost]:41170, remote=[localhost]:29500) timed out after 1800000ms",
    )
    f = report.findings[0]
    assert (f.id, f.ranks) == ("collective-timeout", [1])


def test_nccl_unique_id_wait_names_rank_0_even_when_the_terminal_wrapped_the_line(tmp_path):
    # axolotl-ai-cloud/axolotl#3443: rank 3 never gets rank 0's ncclUniqueId (rank 0 still loading weights)
    report = diagnose(
        tmp_path,
        "torch.distributed.DistBackendError: [3] is setting up NCCL communicator and retrieving ncclUniqueId from "
        "[0] via c1",
        "0d key-value store by key '0', but store->get('0') got error: wait timeout after 1800000ms, keys: "
        "/default_pg/0//cuda//0    ",
    )
    f = report.findings[0]
    assert (f.id, f.initiating_rank) == ("collective-timeout", 0)
    assert "wait timeout after 1800000ms" in f.summary


def test_nccl_unique_id_store_connection_reset_is_a_lost_peer(tmp_path):
    # the store's host (rank 0) went away: no timeout, and no rank waited for in vain
    report = diagnose(
        tmp_path,
        "[rank3]: torch.distributed.DistBackendError: [3] is setting up NCCL communicator and retrieving ncclUniqueId "
        "from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer",
    )
    assert [f.id for f in report.findings] == ["peer-connection-lost"]


MMENGINE_AMP_FIRST_WINDOW = (
    "05/18 06:39:12 - mmengine - INFO - Epoch(train)  [1][   50/29572]  lr: 1.0000e-04  eta: 2 days, 18:26:28  "
    "time: 0.6741  data_time: 0.0183  memory: 11829  grad_norm: nan  loss: 52.2571  loss_cls: 1.0562  "
    "loss_bbox: 1.7207  loss_iou: 1.8257")


def test_mmengine_amp_first_window_nan_grad_norm_is_benign(tmp_path):
    # open-mmlab/mmdetection#10335: mmengine's loss is the window's plain mean, so a finite loss next
    # to grad_norm nan says the scaler skipped the update; the excerpt ends there
    report = diagnose(tmp_path, MMENGINE_AMP_FIRST_WINDOW)
    assert report.verdict == "benign"
    assert [f.id for f in report.findings] == ["loss-scale-warmup"]


def test_hf_first_dict_nan_grad_norm_is_still_a_warning(tmp_path):
    # LaVi-Lab/VG-LLM#21: the Trainer's logged loss filters NaN out, so the same shape is no evidence of a skip
    report = diagnose(tmp_path, "{'loss': 1.7018, 'grad_norm': nan, 'learning_rate': 1.3513513513513515e-06, "
                                "'epoch': 0.01}")
    assert [f.id for f in report.findings] == ["grad-norm-nonfinite"]


def test_a_42_fold_loss_jump_with_exploding_grad_norm_is_a_spike_on_two_points(tmp_path):
    # open-mmlab/mmdetection#11708: two logged windows, the second 42x the first with grad_norm 3.5 -> 3.1e7
    report = diagnose(
        tmp_path,
        "2024/05/10 15:46:31 - mmengine - INFO - Epoch(train)  [2][ 50/788]  lr: 2.0000e-03  eta: 4:14:00  "
        "time: 0.8167  data_time: 0.0169  memory: 15943  grad_norm: 3.4572  loss: 1.5043  loss_cls: 0.8781  "
        "loss_bbox: 0.6262",
        "2024/05/10 15:47:12 - mmengine - INFO - Epoch(train)  [2][100/788]  lr: 2.0000e-03  eta: 4:12:59  "
        "time: 0.8248  data_time: 0.0158  memory: 15871  grad_norm: 31101415.5974  loss: 63.1261  loss_cls: 61.5992  "
        "loss_bbox: 1.5268",
    )
    assert [f.id for f in report.findings] == ["loss-spike"]


def test_a_loss_stepping_up_from_zero_is_no_short_spike(tmp_path):
    # huggingface/trl#1236 (DPO): 0.0165 after a saturated 0.0 (no median to jump from, and no grad norm logged)
    report = diagnose(
        tmp_path,
        "{'loss': 0.0, 'learning_rate': 6.528662420382166e-05, 'rewards/chosen': 4.553328037261963, 'epoch': 0.41}",
        "{'loss': 0.0165, 'learning_rate': 6.496815286624204e-05, 'rewards/chosen': 1.7990188598632812, 'epoch': 0.42}",
    )
    assert report.verdict == "clean"


def test_ms_swift_dicts_carry_their_own_step(tmp_path):
    # modelscope/ms-swift#2280: the step is the dict's 'global_step/max_steps', not its order
    report = diagnose(
        tmp_path,
        "{'loss': 1.80130756, 'acc': 0.56179339, 'grad_norm': 37.75608444, 'learning_rate': 0.0, 'epoch': 0.0, "
        "'global_step/max_steps': '1/2169', 'percentage': '0.05%'}",
        "{'loss': 663.56591797, 'acc': 0.14326748, 'grad_norm': nan, 'learning_rate': 3.84e-06, 'epoch': 0.0, "
        "'global_step/max_steps': '5/2169', 'percentage': '0.23%'}",
    )
    assert {f.id: f.first_step for f in report.findings} == {"grad-norm-nonfinite": 5, "loss-spike": 5}


def test_sft_loss_dropping_to_exact_zero_at_the_end_is_loss_zero(tmp_path):
    # huggingface/trl#940: 2.0412, then exactly 0.0, and the excerpt ends: no label is left to learn from
    report = diagnose(tmp_path, "{'loss': 2.0412, 'learning_rate': 4e-05, 'epoch': 0.01}",
                      " 1%|▏         | 2/160 [04:33<7:00:02, 159.51s/it]",
                      "{'loss': 0.0, 'learning_rate': 8e-05, 'epoch': 0.03}")
    assert [f.id for f in report.findings] == ["loss-zero"]


def test_a_single_zero_in_the_middle_of_a_run_is_not_loss_zero(tmp_path):
    # huggingface/trl#1236 (DPO): 0.0 between 0.0165 values is the saturated sigmoid, and training goes on
    report = diagnose(
        tmp_path,
        "{'loss': 0.0, 'learning_rate': 6.528662420382166e-05, 'rewards/chosen': 4.553328037261963, 'epoch': 0.41}",
        "{'loss': 0.0165, 'learning_rate': 6.496815286624204e-05, 'rewards/chosen': 1.7990188598632812, 'epoch': 0.42}",
        "{'loss': 0.0, 'learning_rate': 6.464968152866241e-05, 'rewards/chosen': 4.0138421058654785, 'epoch': 0.42}",
    )
    assert report.verdict == "clean"


def test_accelerate_batch_size_finder_giving_up_is_an_oom(tmp_path):
    # huggingface/accelerate#1934 (the issue title is the error line): every batch size ran out of memory
    report = diagnose(tmp_path, "RuntimeError: No executable batch size found, reached zero.")
    assert report.findings[0].id == "cuda-oom"
    assert "find_executable_batch_size" in report.findings[0].summary


def test_store_wait_on_a_vllm_broadcast_key_is_a_collective_timeout(tmp_path):
    # modelscope/ms-swift#4906: GRPO's weight sync to vLLM waits in the store for rank 0's broadcast
    report = diagnose(tmp_path, "[rank0]: torch.distributed.DistStoreError: wait timeout after 300000ms, keys: "
                                "/broadcast_from/0/75465")
    assert report.findings[0].id == "collective-timeout"


def test_old_nccl_unique_id_wording_with_socket_timeout(tmp_path):
    # pytorch/pytorch#82091: torch 1.x/2.0 spell it "retreiving"; the store's error is a bare Socket Timeout.
    # The key '0' does not say which process group waited, and another group's [0] is that group's
    # first member, so no rank is claimed (the newer wording's `keys: /default_pg/...` does say it)
    report = diagnose(tmp_path, "RuntimeError: [2] is setting up NCCL communicator and retreiving ncclUniqueId from [0] "
                                "via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout")
    f = report.findings[0]
    assert (f.id, f.initiating_rank) == ("collective-timeout", None)


def test_a_writer_that_cannot_open_its_file_is_a_failed_save_not_a_corrupt_load(tmp_path):
    # Sachini/ronin#51: the innermost frame is the zip writer's __init__, under torch.save
    report = diagnose(
        tmp_path,
        "Traceback (most recent call last):",
        '  File "/opt/anaconda3/envs/py397/lib/python3.9/site-packages/torch/serialization.py", line 422, in save',
        "    with _open_zipfile_writer(f) as opened_zipfile:",
        '  File "/opt/anaconda3/envs/py397/lib/python3.9/site-packages/torch/serialization.py", line 309, in '
        "_open_zipfile_writer",
        "    return container(name_or_buffer)",
        '  File "/opt/anaconda3/envs/py397/lib/python3.9/site-packages/torch/serialization.py", line 287, in __init__',
        "    super(_open_zipfile_writer_file, self).__init__(torch._C.PyTorchFileWriter(str(name)))",
        "RuntimeError: File my_out/checkpoints/checkpoint_0.pt cannot be opened.",
    )
    assert [f.id for f in report.findings] == ["checkpoint-save-failed"]
