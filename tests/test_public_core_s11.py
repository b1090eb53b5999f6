"""PyTorch core and numerics, session 11: the families behind the blind round 2300-2322, as users pasted them.

Inductor's ERROR record when Triton cannot compile a generated kernel, dynamo's recompile limit raised inside a
fullgraph frame (and shown only by a notebook's traceback header), and a loss logged as the whole message of a
logging record. Every input is lines copied from the public thread named in the comment (the excerpts are in
sample_logs/public/23NN.log with their provenance), cut to what the family needs.
"""

from __future__ import annotations

from conftest import diagnose_lines as diagnose, ids
from nanscope import api


# woct0rdho/triton-windows#114
TRITON_FAILED = [
    "E0429 11:10:24.821000 558924 site-packages\\torch\\_inductor\\runtime\\triton_heuristics.py:539] [0/0] Triton "
    "compilation failed: triton_red_fused__to_copy_add_index_linalg_vector_norm_mean_mse_loss_mul_pow_sub_43",
    "E0429 11:10:24.821000 558924 site-packages\\torch\\_inductor\\runtime\\triton_heuristics.py:539] [0/0]     xnumel = 1",
    "E0429 11:10:24.821000 558924 site-packages\\torch\\_inductor\\runtime\\triton_heuristics.py:539] [0/0]     "
    "r0_numel = 5690",
]


def test_inductor_logging_a_triton_kernel_it_cannot_compile_is_a_compile_failure_naming_the_kernel(tmp_path):
    r = diagnose(tmp_path, TRITON_FAILED)
    assert ids(r) == ["torch-compile-failed"]
    assert "triton_red_fused__to_copy_add_index_linalg_vector_norm_mean_mse_loss_mul_pow_sub_43" in r.findings[0].summary


def test_the_kernel_source_lines_alone_are_not_a_compile_failure(tmp_path):
    assert ids(diagnose(tmp_path, TRITON_FAILED[1:])) == []


# HomebrewML/HeavyBall#16: the recompile-limit warning, then the notebook's traceback header of the exception
HEAVYBALL = [
    "W1126 16:03:16.529497 1228885 torch/_dynamo/convert_frame.py:844] [1/8] torch._dynamo hit config.cache_size_limit (8)",
    "W1126 16:03:16.529497 1228885 torch/_dynamo/convert_frame.py:844] [1/8]    last reason: 1/0: tensor 'L['p'][0]' "
    "size mismatch at index 0. expected 16, actual 64",
    "1batch [00:14, 14.43s/batch]",
    "",
    "---------------------------------------------------------------------------",
    "CacheLimitExceeded                        Traceback (most recent call last)",
    "Cell In[21], line 5",
    "      3 results = []",
    "      4 for i in range(runs):",
    "----> 5     result, stats = train_run(1e-3)",
]


def test_the_recompile_limit_raised_in_a_notebook_is_a_compile_failure_even_cut_before_the_exception_line(tmp_path):
    r = diagnose(tmp_path, HEAVYBALL)
    assert ids(r) == ["torch-compile-failed"]
    assert "recompile limit" in r.findings[0].summary


def test_the_warning_alone_is_not_a_failure_dynamo_runs_the_frame_eagerly(tmp_path):
    assert ids(diagnose(tmp_path, HEAVYBALL[:3])) == []


def test_header_and_exception_line_of_one_notebook_exception_are_one_failure(tmp_path):
    r = diagnose(tmp_path, HEAVYBALL + [
        "",
        "CacheLimitExceeded: cache_size_limit reached",
    ])
    assert ids(r) == ["torch-compile-failed"]
    assert len(r.findings[0].evidence) == 1


def test_a_notebook_header_of_another_exception_is_no_compile_failure(tmp_path):
    # gseg-ethz/CoFF#2
    r = diagnose(tmp_path, [
        "UnpicklingError                           Traceback (most recent call last)",
        "Cell In[6], line 1",
    ])
    assert "torch-compile-failed" not in ids(r)


# guillaumegenthial/sequence_tagging#47: logger.info("train loss:{}") under a logging stamp, lr too high
SEQ_TAGGING = [
    "2018-03-23 15:29:33,355:INFO: train loss:1.10886",
    "2018-03-23 15:31:41,870:INFO: train loss:1.53702",
    "2018-03-23 15:33:53,753:INFO: train loss:0.866067",
    "2018-03-23 15:36:03,349:INFO: train loss:1.32708",
    "2018-03-23 15:38:15,538:INFO: train loss:1.20029",
    "2018-03-23 15:40:22,720:INFO: train loss:nan",
    "2018-03-23 15:42:27,061:INFO: train loss:nan",
    "2018-03-23 15:44:38,513:INFO: train loss:nan",
    "2018-03-23 15:46:45,673:INFO: train loss:nan",
    "2018-03-23 15:48:54,684:INFO: train loss:nan",
]


def test_a_loss_that_is_a_whole_logging_record_is_read_and_its_nan_run_found(tmp_path):
    r = diagnose(tmp_path, SEQ_TAGGING)
    assert ids(r) == ["nan-persistent"]
    assert r.findings[0].evidence[0].line == 6


def test_the_same_records_with_finite_losses_are_clean(tmp_path):
    assert ids(diagnose(tmp_path, SEQ_TAGGING[:5])) == []



# Round 2: three classes that had no signature. The shapes / dtypes in the message are the diagnosis.

def test_a_linear_layer_sized_for_another_width_is_a_shape_mismatch_not_a_generic_exception(tmp_path):
    # thu-ml/TurboDiffusion#62
    r = diagnose(tmp_path, [
        '  File "/root/miniconda3/envs/comfy/lib/python3.10/site-packages/torch/nn/modules/linear.py", line 125, in forward',
        "    return F.linear(input, self.weight, self.bias)",
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (77x768 and 4096x5120)",
    ])
    assert ids(r) == ["tensor-shape-mismatch"]
    assert "(77x768 and 4096x5120)" in r.findings[0].summary


def test_a_loss_whose_labels_have_another_batch_size_after_a_trained_epoch_is_a_loss_shape_mismatch(tmp_path):
    # xinge008/Cylinder3D#128: the epoch trains, its last (partial) batch fails in cross_entropy
    r = diagnose(tmp_path, [
        "  0%|          | 0/1136 [00:00<?, ?it/s]epoch 0 iter     0, loss: 4.095",
        "",
        " 88%|████████▊ | 1000/1136 [22:35<02:54,  1.29s/it]epoch 0 iter  1000, loss: 1.071",
        "",
        "100%|█████████▉| 1135/1136 [25:31<00:01,  1.11s/it]Traceback (most recent call last):",
        '  File "train_cylinder_asym.py", line 167, in <module>',
        "    main(args)",
        '  File "/home/USER/anaconda3/envs/pytorch/lib/python3.7/site-packages/torch/nn/functional.py", line 2998, in '
        "cross_entropy",
        "    return torch._C._nn.cross_entropy_loss(input, target, weight, _Reduction.get_enum(reduction), ignore_index, "
        "label_smoothing)",
        "ValueError: Expected input batch_size (4) to match target batch_size (1).",
    ])
    assert ids(r) == ["loss-shape-mismatch"]


def test_a_checkpoint_of_other_shapes_stays_state_dict_mismatch(tmp_path):
    # the state-dict line names "size mismatch for <param>": not an op's operands
    r = diagnose(tmp_path, [
        "RuntimeError: Error(s) in loading state_dict for InteractE:",
        "        size mismatch for conv_filt: copying a param with shape torch.Size([96, 1, 11, 11]) from checkpoint, "
        "the shape in current model is torch.Size([96, 1, 9, 9]).",
    ])
    assert ids(r) == ["state-dict-mismatch"]


def test_a_float_only_extension_kernel_under_bf16_is_a_dtype_mismatch(tmp_path):
    # OpenGVLab/DCNv4#24
    r = diagnose(tmp_path, [
        'DCNv4/functions/dcnv4_func.py", line 125, in backward',
        "ext.dcnv4_backward(*args)",
        "RuntimeError: expected scalar type Float but found BFloat16",
    ])
    assert ids(r) == ["dtype-mismatch"]


def test_ignite_logging_the_exception_without_its_type_still_names_the_class_once(tmp_path):
    # Chenrj233/LMEDR#8: ignite's two records of one exception
    r = diagnose(tmp_path, [
        "Current run is terminating due to exception: Expected object of scalar type Long but got scalar type Int for "
        "argument #2 'target' in call to _thnn_nll_loss_forward",
        "Engine run is terminating due to exception: Expected object of scalar type Long but got scalar type Int for "
        "argument #2 'target' in call to _thnn_nll_loss_forward",
    ])
    assert ids(r) == ["dtype-mismatch"]
    assert len(r.findings[0].evidence) == 1


def test_conv_input_and_weight_on_two_devices_stay_device_mismatch(tmp_path):
    # kyegomez/LiqudNet#7 (the device-mismatch signature's own example)
    r = diagnose(tmp_path, [
        "    return F.conv2d(input, weight, bias, self.stride,",
        "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same",
    ])
    assert ids(r) == ["device-mismatch"]


def test_the_dataloader_timing_out_is_its_own_failure_not_a_dead_worker(tmp_path):
    # pytorch/pytorch#68643
    r = diagnose(tmp_path, [
        '  File "/usr/local/miniconda/envs/build/lib/python3.8/site-packages/torch/utils/data/dataloader.py", line 1139, '
        "in _get_data",
        "    raise RuntimeError('DataLoader timed out after {} seconds'.format(self._timeout))",
        "RuntimeError: DataLoader timed out after 5 seconds",
    ])
    assert ids(r) == ["dataloader-timeout"]
    assert int(api.exit_code(r)) == 1  # findings, not "all retryable infrastructure faults" (3): the workers are stuck


# Round 3: a CPU-only torch, host memory in Windows' and c10's wordings, two autograd misuses with no signature.

def test_a_cpu_only_torch_asked_for_cuda_is_no_usable_gpu(tmp_path):
    # EagleW/Describing_a_Knowledge_Base#8
    r = diagnose(tmp_path, [
        '  File "C:\\Users\\Anaconda3\\lib\\site-packages\\torch\\cuda\\__init__.py", line 210, in _lazy_init',
        '    raise AssertionError("Torch not compiled with CUDA enabled")',
        "AssertionError: Torch not compiled with CUDA enabled",
    ])
    assert ids(r) == ["cuda-no-device"]


def test_the_raise_line_alone_is_not_the_exception(tmp_path):
    # the source line of the raise quotes the message; only the exception line reports it (asafamr/bertwsi#1)
    assert ids(diagnose(tmp_path, ['raise AssertionError("Torch not compiled with CUDA enabled")'])) == []


def test_windows_commit_limit_is_host_memory_in_any_language(tmp_path):
    # thu-ml/tianshou#297 and yassouali/pytorch-segmentation#118 (a Chinese Windows)
    for line in ("OSError: [WinError 1455] The paging file is too small for this operation to complete",
                 'OSError: [WinError 1455] 页面文件太小，无法完成操作。 Error loading "F:\\anaconda3\\envs\\pytorch\\lib\\'
                 'site-packages\\torch\\lib\\caffe2_detectron_ops_gpu.dll" or one of its dependencies.'):
        assert ids(diagnose(tmp_path, [line])) == ["host-oom"], line


def test_c10s_cpu_allocator_in_its_windows_wording_is_host_memory(tmp_path):
    # Comfy-Org/Nvidia_RTX_Nodes_ComfyUI#13
    r = diagnose(tmp_path, ["RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough "
                            "memory: you tried to allocate 31850496000 bytes."])
    assert ids(r) == ["host-oom"]


def test_backward_of_a_per_gpu_loss_is_its_own_failure(tmp_path):
    # WisconsinAIVision/MaskPoint#7
    r = diagnose(tmp_path, [
        "2023-03-16 18:37:25,684 - pretrain_shapenet - INFO - Using Data parallel ...",
        "Traceback (most recent call last):",
        '  File "main.py", line 116, in <module>',
        "    main()",
        '  File "/export/home/USER/anaconda3/envs/maskpoint/lib/python3.7/site-packages/torch/autograd/__init__.py", '
        "line 50, in _make_grads",
        '    raise RuntimeError("grad can be implicitly created only for scalar outputs")',
        "RuntimeError: grad can be implicitly created only for scalar outputs",
    ])
    assert ids(r) == ["autograd-nonscalar-backward"]


def test_a_slice_assignment_into_a_parameter_is_a_leaf_in_place_write(tmp_path):
    # PingoLH/FCHarDNet#61
    r = diagnose(tmp_path, [
        "Traceback (most recent call last):",
        '  File ".\\test.py", line 107, in <module>',
        "    cconv.weight[:,:,:,:] = W[:,:,:,:]",
        "RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation.",
    ])
    assert ids(r) == ["autograd-leaf-inplace"]


def test_a_saved_tensor_modified_in_place_stays_its_own_class(tmp_path):
    # ziqi92/Modof#5
    r = diagnose(tmp_path, [
        "RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: "
        "[torch.cuda.FloatTensor [27, 32]], which is output 0 of ReluBackward0, is at version 1; expected version 0 "
        "instead. Hint: the backtrace further above shows the operation that failed to compute its gradient. The "
        "variable in question was changed in there or anywhere later. Good luck!",
    ])
    assert ids(r) == ["autograd-inplace-modified"]
