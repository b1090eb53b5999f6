"""PyTorch's own runtime errors (autograd, load_state_dict, devices, CUDA architectures, torch.load's
weights_only) as users pasted them: the first finding a user gets, across the releases' wordings.

Every input below is lines copied from the public thread named in the comment (the excerpts of the blind
round are in sample_logs/public/18NN.log with their provenance), cut to what the family needs.
"""

from __future__ import annotations

import pytest

from nanscope import api


def diagnose(tmp_path, text: str):
    p = tmp_path / "job.log"
    p.write_text(text + "\n", encoding="utf-8")
    return api.diagnose([str(p)])


def first(tmp_path, text: str):
    report = diagnose(tmp_path, text)
    return report.findings[0] if report.findings else None


@pytest.mark.parametrize("line", [
    # pkmr06/pytorch-smoothgrad#2 (torch 0.x)
    "RuntimeError: Trying to backward through the graph a second time, but the buffers have already been freed. "
    "Specify retain_graph=True when calling backward the first time.",
    # 3d-hand-shape/hand-graph-cnn#55 (torch 1.4-1.8)
    "RuntimeError: Trying to backward through the graph a second time, but the saved intermediate results have "
    "already been freed. Specify retain_graph=True when calling backward the first time.",
    # Liuhong99/Sophia#1 (torch >= 1.9)
    "RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you "
    "need to access saved tensors after calling backward.",
])
def test_backward_twice_in_every_wording(tmp_path, line):
    assert first(tmp_path, line).id == "autograd-graph-freed"


def test_inplace_modification_is_named_not_a_generic_exception(tmp_path):
    # JDAI-CV/LIO#9
    f = first(tmp_path, "RuntimeError: one of the variables needed for gradient computation has been modified by an "
                        "inplace operation: [torch.cuda.FloatTensor [10, 49]], which is output 0 of SubBackward0, is at "
                        "version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation "
                        "that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).")
    assert f.id == "autograd-inplace-modified"
    assert "SubBackward0" in f.summary


def test_state_dict_mismatch_counts_what_it_lists(tmp_path):
    # malllabiisc/InteractE#5: the summary says how many problems and shows the first one
    f = first(tmp_path, "\n".join([
        "RuntimeError: Error(s) in loading state_dict for InteractE:",
        "        size mismatch for conv_filt: copying a param with shape torch.Size([96, 1, 11, 11]) from checkpoint, "
        "the shape in current model is torch.Size([96, 1, 9, 9]).",
        "        size mismatch for bn0.weight: copying a param with shape torch.Size([4]) from checkpoint, the shape in "
        "current model is torch.Size([1]).",
    ]))
    assert f.id == "state-dict-mismatch"
    assert "2 size mismatch" in f.summary and "conv_filt" in f.summary


@pytest.mark.parametrize("lines", [
    # Anjok07/ultimatevocalremovergui#1175: the message as the app re-raised it, in quotes
    ['RuntimeError: "Error(s) in loading state_dict for CascadedNet:',
     "\tsize mismatch for stg1_low_band_net.0.lstm_dec2.lstm.weight_ih_l0: copying a param with shape "
     "torch.Size([256, 168]) from checkpoint, the shape in current model is torch.Size([256, 320])."],
    # pytorch/pytorch#15720 (torch 1.0 wording of the size mismatch)
    ["RuntimeError: Error(s) in loading state_dict for hierarchical_transformer:",
     "\tsize mismatch for block_level.position_enc.weight: copying a param of torch.Size([51, 30]) from checkpoint, "
     "where the shape is torch.Size([18290, 30]) in current model."],
])
def test_state_dict_mismatch_other_releases(tmp_path, lines):
    f = first(tmp_path, "\n".join(lines))
    assert f.id == "state-dict-mismatch" and "1 size mismatch" in f.summary


@pytest.mark.parametrize("line", [
    # wmyw96/FAST-NN#1 (torch 2.x)
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0! "
    "(when checking argument for argument mat2 in method wrapper_mm)",
    # SamLynnEvans/Transformer#17 (torch 1.2-1.6 legacy TH check)
    "RuntimeError: Expected object of device type cuda but got device type cpu for argument #1 'self' in call to _th_and",
    # inyeoplee77/SAGPool#3 (torch 1.0-1.1)
    "RuntimeError: Expected object of backend CUDA but got backend CPU for argument #2 'mat2'",
    # kyegomez/LiqudNet#7: a convolution's input on the GPU, its weights on the CPU
    "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same",
    # alvinliu0/HumanGaussian#25: the same dtype, two devices
    "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.HalfTensor) should be the same",
])
def test_device_mismatch_in_every_wording(tmp_path, line):
    assert first(tmp_path, line).id == "device-mismatch"


@pytest.mark.parametrize("line", [
    # Yu-Fangxu/COLD-Attack#20: half input, float weights, both on the GPU
    "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be the same",
    # ayooshkathuria/pytorch-yolo-v3#7 (torch 0.4 type names)
    "RuntimeError: Input type (CUDAFloatTensor) and weight type (CUDAHalfTensor) should be the same",
    # AUTOMATIC1111/stable-diffusion-webui-feature-showcase#24: both on the CPU
    "RuntimeError: Input type (torch.FloatTensor) and weight type (torch.HalfTensor) should be the same or input "
    "should be a MKLDNN tensor and weight is a dense tensor",
])
def test_a_dtype_mismatch_on_one_device_is_not_a_device_mismatch(tmp_path, line):
    f = first(tmp_path, line)
    assert f.id == "dtype-mismatch"


def test_weights_only_refusal_is_not_a_corrupt_file(tmp_path):
    # JoshEngels/MultiDimensionalFeatures#14: torch 2.6's new default refuses a file that is fine
    f = first(tmp_path, "\n".join([
        '  File "/home/user/miniconda/lib/python3.12/site-packages/torch/serialization.py", line 1548, in load',
        "    raise pickle.UnpicklingError(_get_wo_message(str(e))) from None",
        "_pickle.UnpicklingError: Weights only load failed. This file can still be loaded, to do so you have two "
        "options, do those steps only if you trust the source of the checkpoint.",
    ]))
    assert f.id == "checkpoint-weights-only"


def test_weights_only_refusal_of_a_global_names_it(tmp_path):
    # tencent-ailab/SongGeneration#63 pasted the whole message on one line; the unpickler's reason is on it
    f = first(tmp_path, '_pickle.UnpicklingError: Weights only load failed. In PyTorch 2.6, we changed the default '
                        'value of the weights_only argument in torch.load from False to True. Re-running torch.load with '
                        'weights_only set to False will likely succeed, but it can result in arbitrary code execution. '
                        'Do it only if you got the file from a trusted source. Please file an issue with the following '
                        'so that we can make weights_only=True compatible with your use case: WeightsUnpickler error: '
                        'Unsupported operand 118')
    assert f.id == "checkpoint-corrupt"  # 118 ('v') is no pickle opcode: a Git LFS pointer, not a checkpoint


def test_weights_only_operand_on_its_own_line_is_read(tmp_path):
    # pytorch/pytorch#150998: the maintainer finds no opcode 118 and suspects a corrupt file
    f = first(tmp_path, "\n".join([
        "_pickle.UnpicklingError: Weights only load failed. In PyTorch 2.6, we changed the default value of the "
        "`weights_only` argument in `torch.load` from `False` to `True`. Re-running `torch.load` with `weights_only` set "
        "to `False` will likely succeed, but it can result in arbitrary code execution. Do it only if you got the file "
        "from a trusted source.",
        "Please file an issue with the following so that we can make `weights_only=True` compatible with your use case: "
        "WeightsUnpickler error: Unsupported operand 118",
        "",
        "Check the documentation of torch.load to learn more about types accepted by default with weights_only "
        "https://pytorch.org/docs/stable/generated/torch.load.html.",
    ]))
    assert f.id == "checkpoint-corrupt" and "no pickle opcode" in f.summary


@pytest.mark.parametrize("lines", [
    # Janrupf/stable-diffusion-webui-nix#9: torch's warning at CUDA init, behind journald's prefix
    ["Oct 04 13:19:39 llm sd-webui-forge-start[394]: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not "
     "compatible with the current PyTorch installation."],
    # the same thread: the first kernel launch afterwards
    ["Oct 04 15:02:41 llm sd-webui-forge-start[394]: RuntimeError: CUDA error: no kernel image is available for "
     "execution on the device"],
    # pytorch/pytorch#10002: torch 0.4's THC check, glued to a tqdm bar
    ["  0%|                                                         | 0/100000 [00:00<?, ?it/s]THCudaCheck FAIL "
     "file=/home/USER/Workspace/pytorch/aten/src/THC/generic/THCTensorMath.cu line=244 error=48 : no kernel image is "
     "available for execution on the device"],
])
def test_no_kernel_for_the_gpu_is_named(tmp_path, lines):
    assert first(tmp_path, "\n".join(lines)).id == "cuda-arch-unsupported"


def test_arch_warning_names_the_gpu(tmp_path):
    # pytorch/pytorch#51850 (torch 1.7 on an RTX 3090)
    f = first(tmp_path, "\n".join([
        "/home/USER/miniconda3/envs/fastai/lib/python3.8/site-packages/torch/cuda/__init__.py:104: UserWarning: ",
        "GeForce RTX 3090 with CUDA capability sm_86 is not compatible with the current PyTorch installation.",
        "The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_61 sm_70 sm_75 compute_37.",
    ]))
    assert f.id == "cuda-arch-unsupported" and "GeForce RTX 3090 (sm_86)" in f.summary


def test_misaligned_address_is_a_kernel_memory_fault(tmp_path):
    # zhoubolei/TRN-pytorch#88 (torch 1.4)
    f = first(tmp_path, "\n".join([
        "    ret = torch.addmm(bias, input, weight.t())",
        "RuntimeError: CUDA error: misaligned address",
        "",
        "terminate called after throwing an instance of 'c10::Error'",
    ]))
    assert f.id == "cuda-illegal-memory-access" and "misaligned address" in f.summary


@pytest.mark.parametrize("lines", [
    # NVlabs/GCVit#63: DDP's stride note says itself that it is not an error
    [".14/site-packages/torch/autograd/graph.py:841: UserWarning: Grad strides do not match bucket view strides. This "
     "may indicate grad was not created according to the gradient layout contract, or that the param's strides changed "
     "since DDP was constructed.  This is not an error, but may impair performance."],
    # pytorch/pytorch#149829
    ["/opt/conda/envs/py_3.9/lib/python3.9/site-packages/torch/backends/mkldnn/__init__.py:78: UserWarning: TF32 "
     "acceleration on top of oneDNN is available for Intel GPUs. The current Torch version does not have Intel GPU "
     "Support. (Triggered internally at /var/lib/jenkins/workspace/aten/src/ATen/Context.cpp:148.)"],
    # huggingface/transformers#5404: fine-tuning's usual note
    ["Some weights of BertForMaskedLM were not initialized from the model checkpoint at bert-base-cased and are newly "
     "initialized: ['cls.predictions.decoder.bias']",
     "You should probably TRAIN this model on a down-stream task to be able to use it for predictions and inference."],
])
def test_healthy_pytorch_notes_stay_clean(tmp_path, lines):
    report = diagnose(tmp_path, "\n".join(lines))
    assert report.verdict in ("clean", "benign"), [f.id for f in report.findings]


@pytest.mark.parametrize("lines", [
    # wasidennis/AdaptSegNet#13 (torch 0.2; the '**' is the reporter's markdown, as pasted)
    ['  File "/home/USER/anaconda2/envs/pytorch/lib/python2.7/site-packages/torch/autograd/__init__.py", line 98, in backward',
     "    variables, grad_variables, retain_graph)",
     "RuntimeError: there are no graph nodes that require computing gradients**"],
    # mrwu-mac/ControlMLLM#30 (torch 2.x, autograd.grad)
    ["    return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass",
     "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn"],
])
def test_loss_without_a_graph_in_every_wording(tmp_path, lines):
    assert first(tmp_path, "\n".join(lines)).id == "autograd-no-grad"


def test_cuda_in_a_forked_worker(tmp_path):
    # facebookresearch/pycls#183
    f = first(tmp_path, "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
                        "you must use the 'spawn' start method")
    assert f.id == "cuda-forked-subprocess"


@pytest.mark.parametrize("lines", [
    # zju3dv/NeuralRecon#91: torch's own report (torch >= 1.5)
    ['  File "/usr/local/lib/python3.8/site-packages/torch/utils/data/dataloader.py", line 1017, in _try_get_data',
     "    raise RuntimeError(",
     "RuntimeError: Too many open files. Communication with the workers is no longer possible. Please increase the limit "
     "using `ulimit -n` in the shell or change the sharing strategy by calling "
     "`torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of your code"],
    # Project-MONAI/MONAI#701 (the fd stripped from a worker's message)
    ["RuntimeError: received 0 items of ancdata"],
    # kuleshov-group/caduceus#58: starting the workers
    ["    parent_r, child_w = os.pipe()", "OSError: [Errno 24] Too many open files"],
])
def test_out_of_file_descriptors_in_every_wording(tmp_path, lines):
    assert first(tmp_path, "\n".join(lines)).id == "too-many-open-files"


def test_shared_memory_failure_before_the_fd_limit_is_one_failure(tmp_path):
    # facebookresearch/maskrcnn-benchmark#158: shm_open failed because the fd limit was hit, then dup() said so
    report = diagnose(tmp_path, "\n".join([
        "RuntimeError: unable to open shared memory object </torch_30997_2076642173> in read-write mode",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.6/socket.py", line 460, in fromfd',
        "    nfd = dup(fd)",
        "OSError: [Errno 24] Too many open files",
    ]))
    assert [f.id for f in report.findings] == ["too-many-open-files"]


def test_shared_memory_failure_alone_stays_an_exception(tmp_path):
    # pytorch/pytorch#14768's title: without the errno, nothing says which limit it was
    f = first(tmp_path, 'RuntimeError: unable to open shared memory object </torch_30997_2076642173> in read-write mode')
    assert f.id == "uncaught-exception"


def test_weights_only_refusal_printed_by_an_app(tmp_path):
    # ltdrdata/ComfyUI-Impact-Pack#1159: the node prints str(e), no exception type; the global is on a later line
    f = first(tmp_path, "\n".join([
        "_Weights only load failed. This file can still be loaded, to do so you have two options, do those steps only if "
        "you trust the source of the checkpoint.",
        "(1) In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` from `False` to "
        "`True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, but it can result in "
        "arbitrary code execution. Do it only if you got the file from a trusted source.",
        "(2) Alternatively, to load with `weights_only=True` please check the recommended steps in the following error "
        "message.",
        "WeightsUnpickler error: Unsupported global: GLOBAL ultralytics.nn.tasks.DetectionModel was not an allowed global "
        "by default. Please use `torch.serialization.add_safe_globals([ultralytics.nn.tasks.DetectionModel])` or the "
        "`torch.serialization.safe_globals([ultralytics.nn.tasks.DetectionModel])` context manager to allowlist this "
        "global if you trust this class/function.",
    ]))
    assert f.id == "checkpoint-weights-only" and "ultralytics.nn.tasks.DetectionModel" in f.summary


@pytest.mark.parametrize("lines", [
    # Dao-AILab/flash-attention#762 title (a Quadro RTX 5000, Turing)
    ["RuntimeError: FlashAttention only supports Ampere GPUs or newer."],
    # Dao-AILab/flash-attention#1540: ComfyUI's own print of the node's exception (an RTX 5090)
    ["!!! Exception during processing !!! FlashAttention only supports Ampere GPUs or newer.",
     "Exception raised from mha_fwd at C:\\a\\xformers\\xformers\\third_party\\flash-attention\\csrc\\flash_attn\\"
     "flash_api.cpp:370 (most recent call first):"],
])
def test_flash_attention_without_a_kernel_for_the_gpu(tmp_path, lines):
    f = first(tmp_path, "\n".join(lines))
    assert f.id == "cuda-arch-unsupported" and "flash-attn" in f.summary


def test_comfyui_generic_exception_print_is_left_to_its_traceback(tmp_path):
    # a ComfyUI log quoted in a public setup guide: the marker with a generic message and its exception below
    report = diagnose(tmp_path, "\n".join([
        "!!! Exception during processing !!!",
        "AttributeError: 'ModelSamplingAdvanced' object has no attribute 'audio_scale'",
    ]))
    assert [f.id for f in report.findings] == ["uncaught-exception"]


def test_checkpoint_saved_on_gpu_loaded_without_cuda_is_not_a_corrupt_file(tmp_path):
    # the frames of GlassyWu/KTDN#1 (inside torch/serialization.py; its paste is cut before the exception line),
    # then the exception as hfslyc/AdvSemiSeg#58 pasted it
    f = first(tmp_path, "\n".join([
        "Traceback (most recent call last):",
        '  File "D:\\anaconda\\envs\\dehaze\\lib\\site-packages\\torch\\serialization.py", line 175, in '
        "default_restore_location",
        "    result = fn(storage, location)",
        "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you "
        "are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your "
        "storages to the CPU.",
    ]))
    assert f.id == "cuda-no-device" and "map_location" in f.summary


@pytest.mark.parametrize("line", [
    # ZQPei/deep_sort_pytorch#51
    "RuntimeError: Attempting to deserialize object on CUDA device 2 but torch.cuda.device_count() is 1. Please use "
    "torch.load with map_location to map your storages to an existing device.",
    # EleutherAI/lm-evaluation-harness#1131
    "RuntimeError: Placeholder storage has not been allocated on MPS device!",
])
def test_load_to_a_missing_gpu_and_mps_placement_are_device_mismatches(tmp_path, line):
    assert first(tmp_path, line).id == "device-mismatch"
