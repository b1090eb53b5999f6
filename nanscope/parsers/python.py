"""Python exceptions: `Traceback (most recent call last):` ... `SomeError: message`.

Tracebacks are folded per stream: the traceback's first line is remembered, and the exception
line that ends it becomes one ErrorEvent pointing back at it. Frames in between are never read
(they are not candidates for the prefilter), which keeps the hot path cheap. Other parsers with
a lower priority number classify specific exceptions first (CUDA OOM, NCCL, ...).
"""

from __future__ import annotations

import pickletools
import re
from typing import Optional

from nanscope.model import ErrorEvent, LifecycleEvent, WarningEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, launcher_alone, rule
from nanscope.parsers._framework_oom import MXNET_OOM, PADDLE_OOM, mxnet_oom_event, paddle_oom_event

# A logger's own prefix before the exception text: vLLM's `ERROR 01-11 03:46:48 [core.py:936] `
# (older: `core.py:936] ` without brackets) and Python logging's default `ERROR:name:`.
LOGGER_PREFIX = (r"(?:(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)[ ]+\d\d-\d\d[ ]\d\d:\d\d:\d\d(?:\.\d+)?[ ]+"
                 r"\[?[\w./-]+:\d+\]?[ ]+|(?:ERROR|WARNING|CRITICAL):[\w.]+:)?")

# Ray re-raises a task's exception in the caller as `RayTaskError(InnerType)` (ray/exceptions.py
# RayTaskError.as_instanceof_cause: the class is named f"RayTaskError({cause_cls.__name__})").
EXC_LINE = LazyPattern(
    LOGGER_PREFIX + r"(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure|Exited)"
    r"(?:\((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*\))?)"
    r"(?::[ \t]*(?P<msg>.*))?$"
)

# The texts of a compiled extension that does not fit the installed torch (see _CLASSIFY).
_NOT_TORCH_OP = r"(?!(?:aten|prim|prims|quantized|_quantized|c10d|_c10d_functional|c10d_functional|_dtensor|inductor|mkldnn|onednn)::)"
_EXTENSION_MISMATCH = (
    r"\.so(?:\.[\d.]+)?: undefined symbol: \S|\bSymbol not found: _\S"
    r"|DLL load failed(?: while importing \w+)?: The specified procedure could not be found"
    r"|Could not run '" + _NOT_TORCH_OP + r"\w+::[\w.]+' with arguments from the '\w+' backend"
    r"|Detected that PyTorch and \S+ were compiled with different CUDA (?:major )?versions"
    r"|Couldn't load custom C\+\+ ops\. This can happen if your PyTorch and \w+ versions are incompatible"
    r"|The detected CUDA version \([\d.]+\) mismatches the version that was used to compile"
)

# Exceptions whose message says what kind of failure it is (message regex -> error kind).
_CLASSIFY = [
    # The model-parallel layout does not fit the number of processes launched: the parallel-state setup checks the
    # world size before any group is built. Megatron-LM megatron/core/parallel_state.py initialize_model_parallel:
    # 2022-2023 "world_size ({world_size}) is not divisible by tensor_model_parallel_size ({tp}) x
    # pipeline_model_parallel_size ({pp})" (+ " x context_parallel_size ({cp})" from 2023), 2024+ "world_size
    # ({world_size}) is not divisible by {total_model_size}" (later {model_size}), the MoE fold's "data_parallel_size
    # ({dp}) is not divisible by expert_model_parallel_size " (2024) and "(decoder )world_size ({n}) is not divisible
    # by expert_tensor_model_pipeline_parallel size ({m})" (2024-2025 with "decoder ", then without); vLLM / SGLang
    # distributed/parallel_state.py initialize_model_parallel: "world_size ({w}) is not equal to
    # tensor_model_parallel_size ({tp}) x pipeline_model_parallel_size ({pp})" (more processes than TP x PP, e.g.
    # the engine started under torchrun); torchtitan parallel_dims.py ParallelDims._validate: "Invalid parallel dims:
    # dp_replicate(a) * dp_shard(b) * cp(c) * tp(d) * pp(e) != WORLD_SIZE(w)" (the factors vary by release).
    # DeepSpeed's deepspeed/utils/groups.py _ensure_divisibility ("{} is not divisible by {}") names nothing: _frame.
    (re.compile(r"\b(?:decoder |encoder )?world_size \(\d+\) is not (?:divisible by (?:tensor_model_parallel_size \(\d+\)"
                r"|expert_tensor_model_pipeline_parallel size \(\d+\)|\d+\s*$)"
                r"|equal to tensor_model_parallel_size \(\d+\) x pipeline_model_parallel_size \(\d+\))"
                r"|\bdata_parallel_size \(\d+\) is not divisible by expert_model_parallel_size\b"
                r"|\bInvalid parallel dims: [\w()* ]{1,200}!= WORLD_SIZE\(\d+\)"), "parallel_world_size_mismatch"),
    # Megatron-LM megatron/checkpointing.py (later megatron/training/checkpointing.py) check_checkpoint_args._compare,
    # the same text since 2020: "{arg_name} value from checkpoint ({ckpt}) is not equal to the input argument value
    # ({arg})." For the parallel sizes (tensor_model_parallel_size; pipeline_model_parallel_size; the 2020
    # model_parallel_size) the checkpoint's shards were cut for another layout; the model-shape arguments it also
    # compares (num_layers, hidden_size, ...) are another model and stay generic.
    (re.compile(r"\b(?:tensor_|pipeline_)?model_parallel_size value from checkpoint \(\d+\) is not equal to the input "
                r"argument value \(\d+\)"), "checkpoint_parallel_mismatch"),
    # torch/distributed/tensor/_dispatch.py (2.4+; torch/distributed/_tensor/dispatch.py 2.0-2.3) OpDispatcher
    # unwrap_to_op_info / _try_replicate_spec_for_scalar_tensor: f"{op_call}: got mixed torch.Tensor and DTensor, need
    # to convert all torch.Tensor to DTensor before calling distributed operators!" (later releases without the
    # colon): an op got a DTensor (FSDP2 / tensor-parallel parameter) and a plain tensor.
    (re.compile(r"\bgot mixed torch\.Tensor and DTensor\b"), "dtensor_mixed_tensor"),
    # ColossalAI colossalai/zero/gemini/gemini_ddp.py (colossalai/nn/parallel/data_parallel.py before 0.2.x)
    # _post_backward: RuntimeError("ZERO DDP error: the synchronization of gradients doesn't exit properly.", "The most
    # possible reason is that the model is not compatible with ZeroDDP." (later GeminiDDP, + ".\n", f"Reduction failed
    # at followed parameters:\n\t{names}")): after backward some parameters' gradient chunks were never reduced.
    (re.compile(r"ZERO DDP error: the synchronization of gradients doesn't exit properly"), "zero_ddp_unreduced_grads"),
    # A Ray task that raised torch's OutOfMemoryError (a device allocation failed inside the task); Ray's own
    # memory monitor raises ray.exceptions.OutOfMemoryError directly, not wrapped in RayTaskError.
    (re.compile(r"^(?:\w+\.)*RayTaskError\((?:\w+\.)*OutOfMemoryError\)$"), "cuda_oom"),
    # Ray's memory monitor (src/ray/raylet/worker_killing_policy*.cc, node_manager.cc) kills a worker when the
    # node's host memory crosses RAY_memory_usage_threshold (0.95) and raises ray.exceptions.OutOfMemoryError
    # in the caller: "Task was killed due to the node running low on memory.\nMemory on the node (IP: ...)
    # where the task (...) was running was 246.41GB / 251.54GB (0.979583), which exceeds the memory usage
    # threshold of 0.95. Ray killed this worker ..." (Ray 2.2+; the class is ray.exceptions.OutOfMemoryError).
    (re.compile(r"Task was killed due to the node running low on memory|^ray\.exceptions\.OutOfMemoryError$"), "host_oom"),
    # torch's own class for a device allocation that failed (c10::OutOfMemoryError, bound in torch/csrc/Exceptions.cpp):
    # torch.cuda.OutOfMemoryError (1.13-2.4), torch.OutOfMemoryError (2.5+, the CUDA / HIP / XPU / MPS allocators).
    # The allocator's own message ("CUDA out of memory. Tried to allocate ...", c10/cuda/CUDACachingAllocator.cpp) is
    # the cuda parser's; this reads the exception by its type when the message is not that text: a library that
    # re-raises it shorter (`raise torch.cuda.OutOfMemoryError("CUDA out of memory.")`), a paste cut after the first
    # sentence, Jupyter's short type name `OutOfMemoryError: CUDA out of memory.` (ray.exceptions.OutOfMemoryError,
    # the host's memory, is the entry above; the dotted names here are torch's only).
    (re.compile(r"^torch\.(?:cuda\.)?OutOfMemoryError$|^(?:CUDA|HIP|XPU|MPS) out of memory\.?$"), "cuda_oom"),
    # accelerate/utils/memory.py find_executable_batch_size (the Trainer's auto_find_batch_size): it halves the
    # batch size after every out-of-memory error (should_reduce_batch_size: "CUDA out of memory.", ...) and gives
    # up with RuntimeError("No executable batch size found, reached zero."): not even batch size 1 fits.
    (re.compile(r"No executable batch size found, reached zero"), "cuda_oom"),
    # aten/src/ATen/MapAllocator.cpp MapAllocator (TH's THAllocator.c before 1.0): mapping the shared-memory segment a
    # tensor crosses processes in failed, TORCH_CHECK(false, "unable to mmap ", size, " bytes from file <", filename,
    # ">: ", str_error(errno), " (", errno, ")"), the file a `/torch_<pid>_<n>` segment (file_system sharing) or
    # `<filename not specified>` (file_descriptor sharing). ENOMEM (12) there is DataLoader workers / share_memory_()
    # holding more shared mappings than the host allows (vm.max_map_count, /dev/shm): shared memory, not the heap.
    (re.compile(r"unable to mmap \d+ bytes from file <(?:/?torch_[^>]*|filename not specified)>"), "shm_exhausted"),
    # Python's builtin MemoryError, never the tail of another name: `module 'torch' has no attribute
    # 'OutOfMemoryError'` (an old torch missing the CUDA OOM class) is an AttributeError, not host memory.
    # c10/core/impl/alloc_cpu.cpp alloc_cpu: posix_memalign failed, "DefaultCPUAllocator: can't allocate memory: you
    # tried to allocate N bytes. Error code 12 (Cannot allocate memory)"; where _aligned_malloc / malloc returned
    # NULL (Windows, and releases before 1.2): "DefaultCPUAllocator: not enough memory: you tried to allocate N
    # bytes." (1.x: "... Buy new RAM!"). Windows refuses a commit beyond RAM + paging file with ERROR_COMMITMENT_LIMIT:
    # Python's "OSError: [WinError 1455] The paging file is too small for this operation to complete" (the text is
    # localised, the code is not), typically while DataLoader workers or other spawned processes load torch's CUDA
    # DLLs ("Error loading ...\\torch\\lib\\cudnn_cnn_infer64_8.dll or one of its dependencies").
    (re.compile(r"DefaultCPUAllocator: (?:can't allocate memory|not enough memory)|Cannot allocate memory"
                r"|(?<![\w])MemoryError\b|\[WinError 1455\]"), "host_oom"),
    # gloo's and NCCL's own wordings are the nccl parser's; these are Python's socket errors.
    (re.compile(r"ConnectionResetError|Connection reset by peer|Broken pipe|ECONNRESET"), "peer_connection_lost"),
    # The rendezvous store never saw every process: torch/csrc/distributed/c10d/TCPStore.cpp raises
    # DistStoreError "Timed out after 1801 seconds waiting for clients. 1/3 clients joined." (first wording,
    # pytorch/pytorch#111805: "... waiting for workers. 1/2 workers joined."); the elastic rendezvous
    # (dynamic_rendezvous.py, etcd_rendezvous.py) raises a bare RendezvousTimeoutError or "The node '...'
    # rendezvous has timed out after ...". The processes waited for ranks that never joined.
    (re.compile(r"Timed out after \d+ seconds waiting for (?:clients|workers)\. \d+/\d+ (?:clients|workers) joined"
                r"|(?:^|\.)RendezvousTimeoutError$"), "collective_timeout"),
    # TCPStore::doWait (TCPStore.cpp) on the keys of a collective: `DistStoreError: wait timeout after 1800000ms,
    # keys: /default_pg/0//cuda//0` (a rank waiting for another's NCCL id or barrier key), vLLM's
    # StatelessProcessGroup.broadcast_obj (vllm/distributed/utils.py, the trainer-to-vLLM weight sync of TRL /
    # ms-swift GRPO: `keys: /broadcast_from/0/75465`), torchelastic's rendezvous sharing its role info
    # (`keys: /none/torchelastic/role_info/0, ...`: a node that never joined). The keys say what was waited for;
    # torchrun's agent waiting in its exit barrier (`.../torchelastic/agent/terminal_state/last_member`) after
    # another node failed is its teardown, not this.
    (re.compile(r"wait timeout after \d+ms, keys: \S*(?:default_pg|//cuda//|/pg\d|/broadcast_from/|torchelastic/role_info)"),
     "collective_timeout"),
    # The store cannot be reached at all: c10d_rendezvous_backend.py RendezvousConnectionError "The connection
    # to the C10d store has failed. See inner exception for details.", TCPStore's DistNetworkError "The client
    # socket has timed out after 600000ms while trying to connect to (host, port).", torch/csrc/distributed/c10d/
    # socket.cpp SocketConnectOp::run's SocketError / DistNetworkError "The client socket has failed to connect to
    # any network address of (host, port). ..." (every address tried until the connect timeout)
    (re.compile(r"(?:^|\.)RendezvousConnectionError$|The connection to the C10d store has failed"
                r"|The client socket has timed out after \d+ms while trying to connect to"
                r"|The client socket has failed to connect to any network address of"), "peer_connection_lost"),
    (re.compile(r"Function '(?P<op>\w+)' returned nan values in its (?P<i>\d+)\w* output"), "nan_op"),
    # transformers training_args.py TrainingArguments.__post_init__, every release since 4.2x:
    #   "Your setup doesn't support bf16/gpu." [+ " You need torch>=1.10, using Ampere GPU with cuda>=11.0"
    #   | " You need Ampere+ GPU with cuda>=11.0" | " You need to assign use_cpu ..."], and the
    #   sibling "Your setup doesn't support bf16/(cpu, tpu, neuroncore). You need torch>=1.10".
    # accelerate accelerator.py Accelerator.__init__: err.format(mode="fp16", requirement="a GPU")
    #   -> "fp16 mixed precision requires a GPU"; newer: "... requires a GPU (not 'mps')."
    # aten/src/ATen/cuda/CUDABlas.cpp, torch 1.7-1.9 (pytorch/pytorch#50442 took it out): TORCH_CHECK(false,
    #   "BFloat16 gemm in CUDA requires Ampere or later GPU"); later releases let cuBLAS refuse (cuda.py).
    # (ATen's dispatch message, `"<kernel>" not implemented for '<dtype>'`, is read by torch_setup_checks.py.)
    (re.compile(r"Your setup doesn't support bf16/|\b(?:fp16|bf16) mixed precision requires a GPU"
                r"|BFloat16 gemm in CUDA requires Ampere or later GPU"), "dtype_unsupported"),
    # A compiled extension that does not match the torch (or CUDA) it is loaded into:
    #  - the dynamic loader cannot resolve a symbol the .so was linked against (glibc dlerror, as Python's
    #    ImportError / OSError message: "<file>.so: undefined symbol: _ZN3c10..."; macOS dyld "Symbol not found:
    #    __ZN..."; Windows LoadLibrary "DLL load failed while importing X: The specified procedure could not be
    #    found."): a flash-attn / Transformer Engine / apex / torchvision build for another torch release or C++ ABI;
    #  - c10/core/dispatch/OperatorEntry.cpp reportError: "Could not run '<ns>::<op>' with arguments from the
    #    '<key>' backend. ... '<op>' is only available for these backends: [...]" for an extension's own op
    #    (torchvision::nms, a CPU-only torchvision beside a CUDA torch); aten / prim / c10d ops are torch's own
    #    (a sparse or quantized tensor where the op has no kernel: a usage error, not this);
    #  - torchvision/extension.py _check_cuda_version: "Detected that PyTorch and torchvision were compiled with
    #    different CUDA major versions." (torchaudio/_extension/utils.py: "Detected that PyTorch and TorchAudio were
    #    compiled with different CUDA versions.") and _assert_has_ops: "Couldn't load custom C++ ops. This can
    #    happen if your PyTorch and torchvision versions are incompatible, ...";
    #  - torch/utils/cpp_extension.py CUDA_MISMATCH_MESSAGE, building one: "The detected CUDA version (X) mismatches
    #    the version that was used to compile\nPyTorch (Y). Please make sure to use the same CUDA versions."
    (re.compile(_EXTENSION_MISMATCH), "extension_build_mismatch"),
    # torch/csrc/distributed/c10d/reducer.cpp: _verify_params_across_processes (torch >= 1.12)
    #   "DDP expects same model across all ranks, but Rank R has N params, while rank i has inconsistent M params."
    (re.compile(r"DDP expects same model across all ranks"), "ddp_param_mismatch"),
    # reducer.cpp ensure_prior_reduction_finished (torch 1.x and 2.x wordings share the first sentence)
    # Lightning replaces that message with its own (lightning/pytorch/strategies/ddp.py DDPStrategy.on_exception,
    # _augment_message on ".*Expected to have finished reduction in the prior iteration.*", Lightning 2.x):
    #   "It looks like your LightningModule has parameters that were not used in producing the loss returned
    #   by training_step. If this is intentional, you must enable the detection of unused parameters in DDP, ..."
    (re.compile(r"Expected to have finished reduction in the prior iteration before starting a new one"
                r"|It looks like your LightningModule has parameters that were not used in producing the loss"),
     "ddp_unused_parameters"),
    # reducer.cpp mark_variable_ready (torch 1.6+; 1.10+ adds the _set_static_graph() advice and, under
    # TORCH_DISTRIBUTED_DEBUG, "Parameter at index N with name X has been marked as ready twice."):
    #   "Expected to mark a variable ready only once. This error is caused by one of the following reasons: ..."
    (re.compile(r"Expected to mark a variable ready only once"), "ddp_param_ready_twice"),
    # torch/_dynamo/exc.py BackendCompilerFailed (`backend='inductor' raised:`), torch/_inductor/exc.py
    # InductorError (torch >= 2.6 raises it in place of BackendCompilerFailed for inductor).
    # Dynamo's own hard stop at the recompile limit (torch/_dynamo/convert_frame.py, with fullgraph=True /
    # one_graph or config.fail_on_recompile_limit_hit): FailOnRecompileLimitHit (torch >= 2.5; 2.3-2.4
    # FailOnCacheLimitHit), "recompile_limit reached with fullgraph=True. Excessive recompilations ...",
    # "cache_size_limit reached, because fail_on_recompile_limit_hit = True this is a HARD failure",
    # "Hard failure due to fullgraph=True". The same limit reached inside a fullgraph frame raises dynamo's
    # Unsupported subclass CacheLimitExceeded ("cache_size_limit reached", torch 2.2-2.5), renamed
    # RecompileLimitExceeded with config.recompile_limit (torch >= 2.6; torch/_dynamo/exc.py).
    # torch_npu's triton_heuristics raises Exception("Triton compilation failed") when no config compiles.
    # Dynamo's own failures while tracing (torch/_dynamo/exc.py, torch 2.0+; torchdynamo.exc before): TorchRuntimeError
    # (an op failed on fake tensors: get_fake_value's `raise TorchRuntimeError(str(e))`, 2.5+ "RuntimeError when making
    # fake tensor call"), Unsupported (a graph break where fullgraph=True forbids one), UserError,
    # InternalTorchDynamoError, UncapturedHigherOrderOpError; torch/fx/experimental/symbolic_shapes.py
    # GuardOnDataDependentSymNode ("Could not guard on data-dependent expression ...", 2.4+ "It appears that you're
    # trying to get a value out of symbolic int/float whose value is data-dependent ...") from branching on a tensor's
    # value. Unsupported and GuardOnDataDependentSymNode do not end in Error: the dynamo-exception rule reads them.
    # The toolchain inductor needs, by torch's own messages (the inner exception of BackendCompilerFailed, or raised
    # alone): torch/_inductor/scheduler.py create_backend (2.0-2.5, RuntimeError; 2.6+ torch/_inductor/exc.py
    # TritonMissing / GPUTooOldForTriton) "Cannot find a working triton installation. [Either the package is not
    # installed or it is too old. ]More information on installing Triton can be found at ..." and "Found {name} which
    # is too old to be supported by the triton GPU compiler, which is used as the backend. Triton only supports devices
    # of CUDA Capability >= 7.0, but your device is of CUDA capability {major}.{minor}"; codecache.py / cpp_builder.py
    # cpp_compiler_search InvalidCxxCompiler "No working C++ compiler found in torch._inductor.config.cpp.cxx: (None,
    # 'g++')" and CppCompileError "C++ compile error"; the platform refused before anything is traced:
    # torch/_dynamo/eval_frame.py check_if_dynamo_supported "Windows not yet supported for torch.compile" (2.0-2.?),
    # "Python 3.11+ / 3.12+ / 3.13+ not yet supported for torch.compile", torch/__init__.py compile "Dynamo is not
    # supported on Python 3.12+" (2.1-2.3; 3.13+ in 2.5).
    # Fake tensors refusing an op while dynamo / aot_autograd / export trace on them (torch/_subclasses/fake_tensor.py,
    # raised with the op as the message: `DynamicOutputShapeException: aten.nonzero.default` (1.13+: an output shape that
    # depends on the data), `DataDependentOutputException: aten._local_scalar_dense.default` (2.0+: .item(), an assert or
    # torch.equal on a traced value), `UnsupportedOperatorException: aten.foo.default` (2.1+: no fake / meta kernel)):
    # raised only under fake-tensor tracing, so the trace failed (dynamo wraps it as TorchRuntimeError, or graph-breaks).
    # Inductor's own lowering and codegen errors (torch/_inductor/exc.py; torchinductor.exc in the 2022 package):
    # LoweringException (`AssertionError: ` + the target and its args: a lowering refused the op), MissingOperatorWith[out]
    # Decomp (`missing lowering` / `missing decomposition`), SubgraphLoweringException, CppWrapperCodegenError,
    # CUDACompileError; dynamo re-raises them as BackendCompilerFailed / InductorError. Named with their module: a
    # LoweringException of another compiler (Pallas, a DSL) is not inductor's.
    (re.compile(r"\bBackendCompilerFailed$|\bInductorError$|\bFailOn(?:Recompile|Cache)LimitHit$"
                r"|\b(?:DynamicOutputShape|DataDependentOutput|UnsupportedOperator)Exception$"
                r"|\b(?:torch\._inductor|torchinductor)\.exc\.(?:LoweringException|SubgraphLoweringException"
                r"|MissingOperatorWith(?:out)?Decomp|CppWrapperCodegenError|CUDACompileError)$"
                r"|\b(?:Cache|Recompile)LimitExceeded$|^Triton compilation failed\b|\bTorchRuntimeError$"
                r"|\b(?:torch\._dynamo|torchdynamo)\.exc\.(?:Unsupported|UserError|InternalTorchDynamoError"
                r"|UncapturedHigherOrderOpError)$|\bGuardOnDataDependentSymNode$"
                r"|\b(?:InvalidCxxCompiler|TritonMissing|GPUTooOldForTriton|CppCompileError)$"
                r"|\bCannot find a working triton installation\b|\bwhich is too old to be supported by the triton GPU compiler\b"
                r"|\bNo working C\+\+ compiler found in torch\._inductor\.config\b"
                r"|\b(?:Windows|Python 3\.\d+\+) not yet supported for torch\.compile\b"
                r"|\bDynamo is not supported on Python 3\.\d+\+"), "compile_failed"),
    # torch/csrc/autograd/saved_variable.cpp SavedVariable::unpack, every release since 0.4 (1.x+ appends
    # ": [torch.cuda.FloatTensor [4, 512]], which is output 0 of XBackward0, is at version 2; expected version 1
    # instead. Hint: ..."): a tensor saved for the backward pass was modified in place after it was saved.
    (re.compile(r"one of the variables needed for gradient computation has been modified by an inplace operation"),
     "autograd_inplace"),
    # The same file's ERR_BACKWARD_TWICE (torch >= 1.9: "Trying to backward through the graph a second time (or
    # directly access saved tensors after they have already been freed). Saved intermediate values of the graph
    # are freed when you call .backward() ..."; 1.4-1.8: "..., but the saved intermediate results have already been
    # freed. Specify retain_graph=True when calling backward the first time."; 0.x: "..., but the buffers have
    # already been freed."): a second backward over a graph the first one freed.
    (re.compile(r"Trying to backward through the graph a second time"), "autograd_graph_freed"),
    # torch/autograd/__init__.py _make_grads, every release: backward() without a gradient argument on a tensor
    # of more than one element: 'raise RuntimeError("grad can be implicitly created only for scalar outputs")'
    # (torch >= 2.1 also "grad can be implicitly created only for real scalar outputs but got torch.complex64").
    # The loss was left per sample / per GPU (nn.DataParallel gathers one loss per replica).
    (re.compile(r"grad can be implicitly created only for (?:real )?scalar outputs"), "autograd_nonscalar_backward"),
    # torch/csrc/autograd/VariableTypeUtils.h check_inplace, every release since 0.4: an in-place op (x += ...,
    # x[...] = ..., p.add_(...), a ReLU(inplace=True) on an input) on a leaf tensor that requires grad (a
    # Parameter, an input made with requires_grad=True), outside torch.no_grad(): "a leaf Variable that requires
    # grad is being used in an in-place operation." and, on a slice of one, "a view of a leaf Variable that
    # requires grad is being used in an in-place operation."
    (re.compile(r"\ba (?:view of a )?leaf Variable that requires grad is being used in an in-place operation"),
     "autograd_leaf_inplace"),
    # torch/csrc/autograd/autograd.cpp run_backward / _make_grads: "element {i} of tensors does not require grad and
    # does not have a grad_fn" (backward() of a tensor outside any graph), for autograd.grad "One of the
    # differentiated Tensors does not require grad"; torch 0.3: "there are no graph nodes that require computing
    # gradients". The loss is not connected to anything trainable.
    (re.compile(r"element \d+ of tensors does not require grad and does not have a grad_fn"
                r"|One of the differentiated Tensors does not require grad"
                r"|there are no graph nodes that require computing gradients"), "autograd_no_grad"),
    # torch/cuda/__init__.py _lazy_init, every release: "Cannot re-initialize CUDA in forked subprocess. To use CUDA
    # with multiprocessing, you must use the 'spawn' start method": a forked child (a DataLoader worker, a
    # multiprocessing pool, an engine's worker) touched CUDA after the parent had initialised it.
    (re.compile(r"Cannot re-initialize CUDA in forked subprocess"), "cuda_forked_subprocess"),
    # The process ran out of file descriptors (EMFILE), nearly always DataLoader workers passing tensors with the
    # default file_descriptor sharing strategy: Python's "OSError: [Errno 24] Too many open files" (resource_sharer,
    # os.pipe, socket.dup), Lib/multiprocessing/reduction.py recvfds "received 0 items of ancdata" (the fd was
    # stripped from the worker's message), torch/utils/data/dataloader.py _try_get_data (torch >= 1.5) "Too many
    # open files. Communication with the workers is no longer possible. Please increase the limit using `ulimit -n`
    # ...", aten/src/ATen/MapAllocator.cpp "unable to open shared memory object <...> in read-write mode: Too many
    # open files (24)".
    (re.compile(r"\[Errno 24\] Too many open files|received 0 items of ancdata"
                r"|Too many open files\. Communication with the workers is no longer possible"
                r"|unable to open shared memory object <[^>]*> in read-write mode: Too many open files"), "too_many_open_files"),
    # torch/nn/modules/module.py Module.load_state_dict (strict): 'Error(s) in loading state_dict for {}:\n\t{}'
    # with "Missing key(s) in state_dict: ...", "Unexpected key(s) in state_dict: ...", "size mismatch for {}:
    # copying a param with shape {} from checkpoint, the shape in current model is {}." (1.0: "... copying a
    # param of torch.Size(...) from checkpoint, where the shape is ... in current model."); torch 0.3/0.4 raised
    # per key: "While copying the parameter named {}, whose dimensions in the model are {} and whose dimensions
    # in the checkpoint are {}.", 'unexpected key "{}" in state_dict', 'missing keys in state_dict: "{}"'.
    # Megatron-LM's distributed checkpoints (megatron/core/dist_checkpointing/strategies/torch.py
    # _validate_global_shapes, tensorstore.py / zarr.py _load_regular_chunk, 2023+): CheckpointingException(f"Global
    # shape mismatch for loaded ({loaded}) and expected ({expected}) tensor for key {key}") (zarr also "Local shape
    # mismatch for loaded ..."): the saved tensor is not the shape the model being loaded has.
    (re.compile(r"Error\(s\) in loading state_dict for |While copying the parameter named \S+, whose dimensions in the model"
                r"|unexpected key \"[^\"]*\" in state_dict|missing keys in state_dict: "
                r"|\b(?:Global|Local) shape mismatch for loaded \(.{1,120}?\) and expected \(.{1,120}?\) tensor for key "),
     "state_dict_mismatch"),
    # Tensors of one op on two devices. aten/src/ATen/core/op_registration/adaption.cpp common_device_check_failure
    # and TensorIterator (torch >= 1.7; the first 1.8 releases: "... on the same common device, ... (when checking
    # arugment for argument X in method Y)"):
    #   "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    #   (torch >= 2.3: "..., but got mat2 is on cpu, different from other tensors on cuda:0 (when checking
    #   argument in method wrapper_CUDA_mm)"); the legacy TH checks (1.2-1.6) "Expected object of device type
    #   cuda but got device type cpu for argument #1 'self' in call to _th_and" (1.0-1.1: "Expected object of
    #   backend CUDA but got backend CPU for argument #2 'mat2'"); TensorIterator 1.x "expected device cpu but
    #   got device cuda:0"; aten/src/ATen/TensorUtils.cpp checkSameGPU "Expected tensor for argument #1 'input'
    #   to have the same device as tensor for argument #2 'weight'; but device 0 does not equal 1". The
    #   convolution's "Input type (A) and weight type (B) should be the same" is a device mismatch only when
    #   A and B are on different devices: _device_pair below.
    (re.compile(r"Expected all tensors to be on the same (?:common )?device"
                r"|Expected object of (?:device type|backend) (?P<want>\w+) but got (?:device type|backend) (?!(?P=want)\b)\w+"
                r" for argument|\bexpected device (?P<dev>\S+) but got device (?!(?P=dev)(?:\s|$))\S+"
                r"|to have the same device as tensor for argument #\d+ '\w+'; but device \d+ does not equal \d+"
                # aten/src/ATen/core/Generator.h check_generator: a random op's generator on another device than
                # the tensors (a DataLoader sampler's / random_split's CPU generator under a CUDA default device):
                # "Expected a 'cuda' device type for generator but found 'cpu'" (1.x: "Expected a 'cuda:0'
                # generator device but found 'cpu'")
                r"|Expected a '(?P<gdev>[\w:]+)' (?:device type for generator|generator device) but found '(?!(?P=gdev)')"),
     "device_mismatch"),
    # torch/serialization.py load(), torch >= 2.4 (_get_wo_message): "Weights only load failed. ..." then
    # "WeightsUnpickler error: <why>" (a global not on the allowlist, an opcode the restricted unpickler does not
    # take). torch 2.6 made weights_only=True the default, so files that loaded before are refused: the file is
    # fine, the unpickler refused it. Not a corrupt checkpoint; _weights_only_kind tells the two apart.
    (re.compile(r"Weights only load failed"), "checkpoint_weights_only"),
    # torch/serialization.py validate_cuda_device (2.x: _validate_device for any backend): the checkpoint's tensors
    # were saved on a device this process cannot restore them to. No CUDA at all: "Attempting to deserialize object
    # on a CUDA device but torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use
    # torch.load with map_location=torch.device('cpu') ..." (a CPU build of torch, or no GPU); a device index that
    # does not exist here: "Attempting to deserialize object on CUDA device 3 but torch.cuda.device_count() is 1.
    # Please use torch.load with map_location to map your storages to an existing device." Raised inside
    # torch.load, but nothing is wrong with the file (ahead of the checkpoint-frame rule in classify()).
    (re.compile(r"Attempting to deserialize object on an? \w+ device but torch\.\w+\.is_available\(\) is False"
                # torch/cuda/__init__.py _lazy_init, every release: 'raise AssertionError("Torch not compiled with CUDA
                # enabled")': the installed torch is a CPU-only build (pip's default wheel on Windows before the CUDA
                # index, conda's cpu package, macOS), and the code asked for a CUDA device.
                r"|Torch not compiled with CUDA enabled"
                # transformers training_args.py TrainingArguments.__post_init__ (every release's wording: setup_checks.py):
                # "... Mixed precision training with AMP or APEX (`--fp16`...) ... can only be used on CUDA ... devices."
                r"|Mixed precision training with AMP or APEX \(`--fp16`[^.]{0,200}? can only be used on CUDA\b"),
     "cuda_no_device"),
    (re.compile(r"Attempting to deserialize object on \w+ device \d+ but torch\.\w+\.device_count\(\) is \d+"
                # aten/src/ATen/native/mps: a tensor of an MPS op left on the CPU ("Placeholder storage has not been
                # allocated on MPS device!"; torch >= 2.4: "Tensor for argument weight is on cpu but expected on mps")
                r"|Placeholder storage has not been allocated on MPS device"
                r"|Tensor for argument \w+ is on \w+ but expected on mps"
                # torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp check_gpu_single_tensor / check_gpu_tensors (every
                # release: runtime_error, TORCH_CHECK, C10_THROW_ERROR(ValueError, ...) in 2.x): "Tensors must be CUDA
                # and dense": a CPU (or sparse) tensor handed to an NCCL collective (all_gather of a CPU metric under
                # DDP); the message may run into the next write (`... densetorch.distributed...`)
                r"|Tensors must be CUDA and dense"), "device_mismatch"),
    # Dao-AILab/flash-attention csrc/flash_attn/flash_api.cpp mha_fwd / mha_varlen_fwd: TORCH_CHECK(is_sm90 || is_sm8x,
    # "FlashAttention only supports Ampere GPUs or newer.") (v1: "... Turing GPUs or newer."): the kernel has no
    # implementation for this GPU's architecture (pre-Ampere, or a GPU newer than the build knows: sm_120 in builds
    # that predate Blackwell). A library that only warns and falls back prints it as a warning, not an exception.
    (re.compile(r"FlashAttention only supports (?:Ampere|Turing) GPUs or newer"), "cuda_arch_unsupported"),
    # The operands of an op do not have shapes that fit: the model's code or its input is wrong, the same way on
    # every run. ATen's shape checks, by op:
    #  - aten/src/ATen/native/LinearAlgebra.cpp addmm / mm (torch >= 1.9): "mat1 and mat2 shapes cannot be
    #    multiplied (AxB and CxD)"; 1.x THC/TH: "size mismatch, m1: [A x B], m2: [C x D] at ...";
    #    torch/_meta_registrations.py (fake tensors under torch.compile): "a and b must have same reduction dim,
    #    but got [A, B] X [C, D].";
    #  - aten/src/ATen/ExpandUtils.cpp infer_size: "The size of tensor a (A) must match the size of tensor b (B)
    #    at non-singleton dimension D" (elementwise ops); expand: "The expanded size of the tensor (A) must match
    #    the existing size (B) at non-singleton dimension D.";
    #  - aten/src/ATen/native/Convolution.cpp check_input_shape_forward: "Given groups=G, weight of size [..],
    #    expected input[..] to have C channels, but got K channels instead" (also "Given transposed=1, weight of
    #    size ..."); the input's rank: "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of
    #    size: [..]" (torch >= 1.11), "Expected 4-dimensional input for 4-dimensional weight [..], but got
    #    3-dimensional input of size [..] instead" (1.x);
    #  (a loss's predictions against its targets, nll_loss's "Expected input batch_size (A) to match target
    #  batch_size (B)" and binary cross-entropy's target sizes, are loss-shape-mismatch: parsers/label_checks.py);
    #  - aten/src/ATen/InferSize.h infer_size_impl (view / reshape): "shape '[..]' is invalid for input of size N";
    #  - aten/src/ATen/native/TensorShape.cpp cat: "Sizes of tensors must match except in dimension D. Expected
    #    size A but got size B for tensor number I in the list." (1.x: "... Got A and B in dimension D").
    # Not load_state_dict's "size mismatch for <param>: copying a param with shape" (state_dict_mismatch above).
    (re.compile(r"mat1 and mat2 shapes cannot be multiplied \(|\bsize mismatch, m1: \["
                r"|a and b must have same reduction dim, but got \["
                r"|The size of tensor a \(\d+\) must match the size of tensor b \(\d+\) at non-singleton dimension"
                r"|The expanded size of the tensor \(-?\d+\) must match the existing size \(\d+\) at non-singleton dimension"
                r"|weight of size \[[\d, ]*\], expected input\[[\d, ]*\] to have \d+ channels, but got \d+ channels instead"
                r"|Expected \dD \(unbatched\) or \dD \(batched\) input to \w+, but got input of size"
                r"|Expected \d-dimensional input for \d-dimensional weight \["
                r"|shape '\[[-\d, ]*\]' is invalid for input of size \d+"
                r"|Sizes of tensors must match except in dimension \d+"), "tensor_shape_mismatch"),
    # The operands of an op have different dtypes (an fp32 input into a bf16/fp16 model, float class labels, an
    # extension kernel that dispatches float only under autocast). ATen: "expected scalar type Half but found
    # Float" (c10 / TensorIterator checks, every release; the inverse order on some ops); torch 2.0 addmm:
    # "expected m1 and m2 to have the same dtype, but got: float != c10::Half" (2.1+: "expected mat1 and mat2 to
    # have the same dtype, but got: ..."); aten/src/ATen/native/LinearAlgebra.cpp (2.0+): "mat1 and mat2 must have
    # the same dtype" (2.2+: ", but got Float and Half"), bmm: "self and mat2 must have the same dtype"; the 1.x
    # TH argument check: "Expected object of scalar type Long but got scalar type Float for argument #2 'target'
    # in call to _thnn_nll_loss_forward"; aten/src/ATen/TensorUtils.cpp checkScalarType(s): "Expected tensor for
    # argument #1 'indices' to have (one of the following )scalar type(s): Long, Int; but got
    # torch.cuda.FloatTensor instead (while checking arguments for embedding)"; torch/csrc/autograd/engine.cpp
    # validate_outputs: "Found dtype Double but expected Float" (a backward that returns another dtype);
    # TensorIterator: "result type Float can't be cast to the desired output type Long" (an in-place op or out=).
    # Convolution's "Input type (A) and weight type (B) should be the same" with both on one device: classify().
    (re.compile(r"\bexpected scalar type \w+ but found \w+"
                r"|\bexpected (?:m1 and m2|mat1 and mat2) to have the same dtype"
                r"|\b(?:mat1 and mat2|self and mat2) must have the same dtype"
                r"|Expected object of scalar type \w+ but got scalar type \w+ for argument"
                r"|Expected tensor for argument #\d+ '\w+' to have (?:scalar type \w+|one of the following scalar types: [\w, ]+); but got \S+ instead"
                r"|\bFound dtype \w+ but expected \w+"
                r"|\bresult type \w+ can't be cast to the desired output type \w+"
                # torch/csrc/autograd/python_variable.cpp THPVariable_set_grad (`.grad = g`, FSDP's and optimizers'
                # gradient hand-off): "attempting to assign a gradient with dtype '{g}' to a tensor with dtype '{v}'.
                # Please ensure that the gradient and the tensor have the same dtype" (every release); torch 2.9+
                # with the tensor's grad_dtype: "... to a tensor with grad_dtype '{v}'. The gradient must match ..."
                r"|\battempting to assign a gradient with dtype '[^']{1,40}' to a tensor with (?:grad_)?dtype '[^']{1,40}'", re.I),
     "dtype_mismatch"),
    # torch/utils/data/dataloader.py _MultiProcessingDataLoaderIter._try_get_data with timeout > 0 (every
    # release; f-string since 1.x, .format before): "DataLoader timed out after {self._timeout} seconds": no
    # worker delivered the next batch within the DataLoader's timeout.
    (re.compile(r"DataLoader timed out after \d+(?:\.\d+)? seconds"), "dataloader_timeout"),
]


# The rank a store wait for the ncclUniqueId waited for, when the key shows the default process group
# (`default_pg`), whose ranks are the job's: another group's [0] is its own first member, not rank 0.


# An exception raised inside torch's checkpoint loader is a corrupt (empty, truncated) file, whatever
# its type: torch.load of an empty file ends in a bare `EOFError` from pickle. One raised under
# torch.save (torch/serialization.py `save` / `_save`, safetensors' `save_file`) is a failed write:
# the file on disk is incomplete, but nothing was wrong with what was being read.
# (either separator: Windows tracebacks print `torch\serialization.py`)
_CHECKPOINT_FRAMES = LazyPattern(r"torch[/\\]serialization\.py|torch[/\\]_weights_only_unpickler\.py|safetensors[/\\]torch\.py")
_SAVE_FUNCS = frozenset(("save", "_save", "save_file", "_flatten", "_remove_duplicate_names", "_open_zipfile_writer"))
_LOAD_FUNCS = frozenset(("load", "_load", "_legacy_load", "load_file", "_open_zipfile_reader", "safe_load_file"))


# aten/src/ATen/native/Convolution.cpp check_input_same_type_as_parameters: "Input type (", input.toString(),
# ") and weight type (", weight.toString(), ") should be the same" (+ " or input should be a MKLDNN tensor and
# weight is a dense tensor", and the same for "bias type"). The types name the device: torch.cuda.FloatTensor /
# CUDAFloatType are on the GPU, torch.FloatTensor / CPUFloatType on the CPU; HalfTensor against FloatTensor on
# one device is a dtype mismatch, not this. Windows builds (MSVC's type names) print `struct c10::Half`.
_TYPE_PAIR = LazyPattern(r"Input type \((?:struct |class )?(?P<a>[\w.:]+)\) and (?:weight|bias) type \((?:struct |class )?(?P<b>[\w.:]+)\) "
                        r"should be the same")


def _device_of(t: str) -> str:
    if ".cuda." in t or t.startswith("CUDA"):
        return "cuda"
    if ".mps." in t or t.startswith("MPS"):
        return "mps"
    if t.startswith("torch.") or t.startswith("CPU"):
        return "cpu"
    return t  # `float`, `c10::Half`: a dtype, no device


def _device_pair(message: str) -> bool:
    m = _TYPE_PAIR.search(message)
    if m is None:
        return False
    a, b = _device_of(m.group("a")), _device_of(m.group("b"))
    return a != b and {a, b} <= {"cuda", "cpu", "mps"}


# The byte values that are pickle opcodes at all (Lib/pickletools.py). The weights-only unpickler
# (torch/_weights_only_unpickler.py) raises "Unsupported operand {byte}" on any opcode it does not take; a byte
# that is no opcode of any protocol means the file is not a pickle stream: a Git LFS pointer ('version ...' ->
# 118), an HTML error page ('<' -> 60), text: what was downloaded is not the checkpoint.
_PICKLE_OPCODES = frozenset(ord(op.code) for op in pickletools.opcodes)
_UNSUPPORTED_OPERAND = LazyPattern(r"Unsupported operand (\d+)\b")


def _weights_only_kind(text: str) -> tuple[str, Optional[str]]:
    """(kind, detail) of a weights-only refusal from the text of its `WeightsUnpickler error:` part."""
    m = _UNSUPPORTED_OPERAND.search(text)
    if m is not None and int(m.group(1)) not in _PICKLE_OPCODES:
        return "checkpoint_corrupt", (f"the file is not a pickle stream: its byte {m.group(1)} is no pickle opcode "
                                      "(a Git LFS pointer, an HTML page or a partial download, not the checkpoint)")
    g = re.search(r"GLOBAL (\S+?) (?:was not an allowed global|whose module)", text) or re.search(
        r"Unsupported global: GLOBAL (\S+)", text)
    if g is not None:
        return "checkpoint_weights_only", f"the restricted unpickler refused the global {g.group(1)}"
    if m is not None:
        return "checkpoint_weights_only", f"the restricted unpickler does not take pickle opcode {m.group(1)}"
    return "checkpoint_weights_only", None


_GLOO_FIRST_EXIT = LazyPattern(r"(?:Horovod|Gloo job) detected that one or more processes exited with non-zero status")


def no_device_fields(message: str) -> dict:
    """The cuda_error / detail of a cuda_no_device exception, by which check raised it (torch.load's map location,
    a CPU-only torch build, TrainingArguments' fp16 check)."""
    if "Mixed precision training with AMP or APEX" in message:
        return {"cuda_error": "fp16 needs a CUDA device", "code": None,
                "detail": "TrainingArguments refuses --fp16 (AMP mixed precision / half-precision evaluation) because torch sees "
                          "no CUDA device: a CPU-only torch build, no GPU given to the job, or a driver this torch cannot use"}
    if "Torch not compiled with CUDA enabled" in message:
        return {"cuda_error": "Torch not compiled with CUDA enabled", "code": None,
                "detail": "the installed torch is a CPU-only build, and the code asked for a CUDA device"}
    return {"cuda_error": "torch.load found CUDA tensors but torch.cuda.is_available() is False", "code": None,
            "detail": "a CPU-only torch build or no visible GPU; map_location='cpu' loads it on the CPU"}


def classify(exc_type: str, message: str, frame: str = "", saving: bool = False) -> str:
    for rx, kind in _CLASSIFY:
        if rx.search(message) or rx.search(exc_type):
            if kind == "checkpoint_weights_only":
                return _weights_only_kind(message)[0]
            return kind
    if _device_pair(message):
        return "device_mismatch"
    if _TYPE_PAIR.search(message):
        return "dtype_mismatch"  # both on one device (or named by dtype only): the dtypes differ
    if frame and _CHECKPOINT_FRAMES.search(frame) and exc_type.rsplit(".", 1)[-1] in (
            "EOFError", "UnpicklingError", "RuntimeError", "OSError", "ValueError", "SafetensorError"):
        return "checkpoint_save_failed" if saving else "checkpoint_corrupt"
    if exc_type.endswith("KeyboardInterrupt"):
        return "interrupted"
    if exc_type.endswith("ChildFailedError"):
        return "launcher_failed"  # torchrun's summary exception: the block after it says more
    if exc_type.endswith("RuntimeError") and _GLOO_FIRST_EXIT.match(message):
        # Horovod's Gloo launcher (horovod/runner/gloo_run.py launch_gloo / launch_gloo_elastic, the Ray and
        # Spark runners the same): its summary of the first worker to exit, as torchrun's ChildFailedError;
        # the `Process name:` / `Exit code:` lines after it say who (parsers/openmpi.py)
        return "launcher_failed"
    return "exception"


def _release(state: dict) -> list:
    """The event an earlier line parked, released before whatever this line reports."""
    held = state.pop("pending", None)
    return [held] if held is not None else []


@rule("traceback", ("Traceback",), LOGGER_PREFIX + r"Traceback \(most recent call last\):", match_start=True)
def _traceback(m, rec, state):
    state["traceback_line"] = rec.loc.line
    head = state.pop("thread_head", None)
    state["thread"] = head[0] if head is not None and rec.loc.line - head[1] == 1 else None
    origin = rec.origin
    if origin is not None and origin.rank is not None and origin.local_rank is None:
        # init_process_group (torch/distributed/distributed_c10d.py) installs `_distributed_excepthook`:
        # every line of an uncaught exception's traceback gets `[rank{N}]: ` in front, and nothing else
        # the process prints does (a kernel's device-side assert, C++ logs, warnings). This header says
        # which rank is raising even where the excerpt ends before the exception line; attribution.py
        # reads it for the bare lines just before it.
        before = rec.raw[: len(rec.raw) - len(rec.text)]
        if before.endswith(f"[rank{origin.rank}]: ") or before.endswith(f"[rank{origin.rank}]:"):
            return [LifecycleEvent(loc=rec.loc, text=rec.text, framework="python", action="traceback",
                                   fields={"excepthook": True})]
    return []


# torch/multiprocessing/spawn.py ProcessContext.join (mp.spawn / start_processes), when a spawned process's
# function raised (the child sent its formatted traceback through the error queue):
#   msg = "\n\n-- Process %d terminated with the following error:\n" % error_index; msg += original_trace
#   >= 1.8: raise ProcessRaisedException(msg, error_index, failed_process.pid);  1.0 - 1.7: raise Exception(msg)
# printed as `torch.multiprocessing.spawn.ProcessRaisedException: ` (or `Exception: `), a blank line, this header,
# then the child's traceback: error_index is the first process the join found failed (the others are then
# terminated), and the exception that ends the traceback below is that process's. The index is the spawned
# process's, the rank where one node's launcher spawned them all (launcher_alone).
@rule("spawn-raised", ("terminated with the following error",),
      r"^\s*-- Process (?P<idx>\d+) terminated with the following error:\s*$", match_start=True)
def _spawn_raised(m, rec, state):
    idx = int(m.group("idx"))
    held = state.get("pending")
    alone = launcher_alone(rec.origin)
    if held is not None and (held.fields or {}).get("spawn_parent") and rec.loc.line - held.loc.line <= 3:
        if alone and held.rank is None:
            held.rank = idx
        held.fields = {**(held.fields or {}), "spawn_process": idx}
    state["spawn_child"] = (idx, rec.loc.line)
    state.pop("traceback_line", None)
    return _release(state)


# Lib/threading.py excepthook (3.8+; before: Thread._bootstrap_inner), printed right before the
# traceback of an exception that ended a thread other than the main one:
#   print(f"Exception in thread {name}:", file=stderr, flush=True)
# The process goes on: that exception is not the process's crash.
@rule("thread-head", ("Exception in thread ",), r"^Exception in thread (?P<name>.+?):\s*$", match_start=True)
def _thread_head(m, rec, state):
    state["thread_head"] = (m.group("name"), rec.loc.line)
    return []


# A traceback whose exception line another parser claimed (a CUDA OOM, an NCCL error) must not be
# attached to a later, unrelated exception: beyond this many lines it is stale.
_TRACEBACK_SPAN = 400


# A paste often starts inside the traceback (its head cut off): a checkpoint loader's or writer's frame still says
# what the exception that follows was about, when that exception comes within this many lines of it.
_LOOSE_FRAME_SPAN = 40


# The divisibility helpers that check the world size against the parallel sizes raise a bare "{} is not divisible by
# {}" (AssertionError): DeepSpeed deepspeed/utils/groups.py _ensure_divisibility (every group it builds: model /
# tensor, pipeline x tensor, expert-parallel within data-parallel), Megatron's old megatron/mpu/utils.py
# ensure_divisibility as called from mpu/initialize.py initialize_model_parallel (world size by TP x PP, 2019-2022).
# Elsewhere (attention heads per partition) the same helper checks the model, not the launch: only these frames count.
_DIVISIBILITY_FNS = frozenset(("_ensure_divisibility", "ensure_divisibility"))
_GROUPS_PATH = LazyPattern(r"deepspeed[/\\]utils[/\\]groups\.py$")
_BARE_INDIVISIBLE = LazyPattern(r"^\d+ is not divisible by \d+$")
_LAYOUT_FRAME_SPAN = 3  # the helper's frame, its assert line, the exception


@rule("frame", ('File "',), r'^\s*File "(?P<path>[^"]+)", line \d+(?:, in (?P<fn>\w+))?', match_start=True)
def _frame(m, rec, state):
    # Inside a traceback (or, for a checkpoint frame, a paste cut inside one): remember whether the exception
    # passed through a checkpoint loader or writer (the innermost such frame decides).
    fn = m.group("fn")
    if fn in _DIVISIBILITY_FNS and (_GROUPS_PATH.search(m.group("path")) or state.get("prev_fn") == "initialize_model_parallel"):
        state["layout_frame"] = rec.loc.line  # the helper that checks the world size against the parallel sizes
    state["prev_fn"] = fn
    if "traceback_line" not in state and not _CHECKPOINT_FRAMES.search(m.group("path")):
        return None
    return _note_frame(m.group("path"), m.group("fn"), rec, state)


# IPython's frames: `/opt/conda/.../torch/serialization.py in _legacy_load(f, map_location, ...)` (ultratb, IPython
# <= 7) and `File ~/.../torch/serialization.py:1033, in _legacy_load(...)` (IPython 8); only a checkpoint frame
# matters here.
@rule("notebook-checkpoint-frame", ("serialization.py", "_weights_only_unpickler.py", "safetensors/torch.py",
                                    "safetensors\\torch.py"),
      r"^\s*(?:File )?(?P<path>\S*?(?:" + _CHECKPOINT_FRAMES.pattern + r"))(?::\d+,)? in (?P<fn>\w+)\(", match_start=True)
def _notebook_frame(m, rec, state):
    return _note_frame(m.group("path"), m.group("fn"), rec, state)


def _note_frame(path: str, fn: Optional[str], rec, state) -> list:
    if "traceback_line" not in state:
        state["frame_at"] = rec.loc.line
    if _CHECKPOINT_FRAMES.search(path):
        state["frame"] = path
        # a writer's frame makes it a save, a reader's a load; the helpers inside either (`__exit__`,
        # `_open_zipfile_writer_file.__init__`, `_open_file`) keep what the frame above them said
        if fn in _SAVE_FUNCS:
            state["saving"] = True
        elif fn in _LOAD_FUNCS:
            state["saving"] = False
    return []


# torch/csrc/autograd/anomaly_mode.cpp (older: python_anomaly_mode.cpp) AnomalyMetadata::print_stack:
#   TORCH_WARN("Error detected in ", name, ". ", "Traceback of forward call that caused the error:\n", ...)
# printed as `.../torch/autograd/__init__.py:200: UserWarning: Error detected in SoftmaxBackward0. Traceback of
# forward call that caused the error:` (torch 1.x: `[W python_anomaly_mode.cpp:60] Warning: Error detected in
# SoftmaxBackward. ...`; newer torch attributes it to torch/autograd/graph.py). The warning names the backward
# op that raised under anomaly mode. The exception that follows says what went wrong: NaN (`returned nan
# values`) or another error (an in-place modification ...); only with no exception in view is the warning
# itself the evidence, and anomaly mode is what people turn on to hunt NaN gradients.
@rule("anomaly-warning", ("Error detected in",),
      r"(?:UserWarning|Warning): Error detected in (?P<op>\w+)\. (?:Traceback of forward call|No forward pass)")
def _anomaly(m, rec, state):
    out = _release(state)
    state["pending"] = ErrorEvent(
        loc=rec.loc, text=rec.text, framework="pytorch", error="nan_op",
        message=f"anomaly mode: error detected in {m.group('op')} (no exception in view)",
        fields={"op": m.group("op"), "from_warning": True},
    )
    return out


# reducer.cpp, with TORCH_DISTRIBUTED_DEBUG=INFO/DETAIL, appends to the unused-parameters error:
#   `Parameters which did not receive grad for rank 3: a.bias, a.weight`
#   `Parameter indices which did not receive grad for rank 3: 282 283`
# The rank is the one whose reducer raised: the exception's own rank.
@rule("ddp-unused-rank", ("did not receive grad for rank",),
      r"^Parameter(?:s| indices) which did not receive grad for rank (?P<rank>\d+):", match_start=True)
def _ddp_rank(m, rec, state):
    held = state.get("pending")
    if held is None or held.error != "ddp_unused_parameters":
        return None
    held.rank = int(m.group("rank"))
    return _release(state)


# torch/_dynamo/convert_frame.py: without suppress_errors the compile error is raised (the exception
# rule takes it); with it (or for a soft failure) dynamo logs it at WARNING level with exc_info and runs
# the frame in eager mode: `W1024 01:17:10.936000 1404 torch/_dynamo/convert_frame.py:1009] torch._dynamo.exc.
# BackendCompilerFailed: backend='inductor' raised:`, then `...convert_frame.py:1009] NameError: ...`.
# torch 2.1-2.2 print the same records in their own logging format (torch/_logging/_internal.py TorchLogsFormatter:
# f"{rankprefix}[{asctime}]{traceid} {name}: [{levelname}]" before every line of the message):
# `[2023-11-29 22:29:33,093] torch._dynamo.convert_frame: [WARNING] torch._dynamo.exc.BackendCompilerFailed: ...`.
# The inner exception's class need not end in Error: inductor's InvalidCxxCompiler, TritonMissing, GPUTooOldForTriton.
@rule("dynamo-fallback", ("convert_frame.py:", "torch._dynamo.convert_frame: [WARNING]"),
      r"(?:\bW\d{4} [\d:.]+ +\d+ \S*convert_frame\.py:\d+\]"
      r"|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\](?: \[[\d/_]+\])? torch\._dynamo\.convert_frame: \[WARNING\])"
      r" (?:\[[\d/_]+\] )?(?:(?P<type>torch\._dynamo\.exc\.BackendCompilerFailed"
      r"|torch\._inductor\.exc\.InductorError): ?(?P<msg>.*)"
      r"|(?P<inner>(?:[A-Za-z_][\w.]*\.)?(?:InvalidCxxCompiler|TritonMissing|GPUTooOldForTriton)"
      r"|[A-Za-z_][\w.]*(?:Error|Exception)): (?P<imsg>.*))")
def _dynamo_fallback(m, rec, state):
    held = state.get("pending")
    if m.group("inner"):
        if held is None or held.error != "compile_failed" or (held.fields or {}).get("inner"):
            return None
        held.message = f"{held.message} {m.group('inner')}: {m.group('imsg').strip()}"
        held.fields = {**held.fields, "inner": m.group("inner")}
        return _release(state)
    out = _release(state)
    state["pending"] = ErrorEvent(
        loc=rec.loc, text=rec.text, framework="pytorch", error="compile_failed",
        message=f"(logged as a warning: dynamo ran this frame in eager mode) {m.group('msg').strip()}",
        exc_type=m.group("type"), fields={"fallback": True},
    )
    return out


# torch/_subclasses/fake_tensor.py's refusals (see _CLASSIFY's compile_failed entry): what the traced op needed
_FAKE_TENSOR_REFUSAL = LazyPattern(r"\b(DynamicOutputShape|DataDependentOutput|UnsupportedOperator)Exception$")
_FAKE_TENSOR_WHY = {
    "DynamicOutputShape": "its output shape depends on the data, which fake tensors do not have",
    "DataDependentOutput": "its result depends on a tensor's values (.item(), an assert or a comparison on a traced tensor)",
    "UnsupportedOperator": "the op has no fake / meta kernel",
}


# Dynamo's exception classes whose names end in no Error (see _CLASSIFY's compile_failed entry): torch._dynamo.exc.
# Unsupported and torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode. A chained or pytest-captured
# report indents the line; the dotted names are dynamo's own, so an indented one counts too.
@rule("dynamo-exception", ("exc.Unsupported: ", "GuardOnDataDependentSymNode: "),
      r"^\s*(?P<type>(?:torch\._dynamo|torchdynamo)\.exc\.Unsupported"
      r"|torch\.fx\.experimental\.symbolic_shapes\.GuardOnDataDependentSymNode): (?P<msg>\S.*)$", match_start=True)
def _dynamo_exception(m, rec, state):
    return _exception.build(m, rec, state)


@rule("exception", ("Error", "Exception", "Interrupt", "Exit", "Failure"), EXC_LINE.pattern, match_start=True)
def _exception(m, rec, state):
    exc_type = m.group("type")
    msg = (m.group("msg") or "").strip()
    tb = state.pop("traceback_line", None)
    thread = state.pop("thread", None)
    frame = state.pop("frame", "")
    saving = state.pop("saving", False)
    loose = state.pop("frame_at", None)
    if tb is not None and rec.loc.line - tb > _TRACEBACK_SPAN:
        tb, frame, saving = None, "", False
    elif tb is None and (loose is None or rec.loc.line - loose > _LOOSE_FRAME_SPAN):
        frame, saving = "", False  # a checkpoint frame seen outside a traceback is another exception's
    held = state.get("pending")
    if held is not None and held.error == "compile_failed" and rec.loc.line - held.loc.line <= 2 \
            and not (held.fields or {}).get("inner"):
        # BackendCompilerFailed's message is `backend='inductor' raised:` + the inner exception on the next line.
        held.message = f"{held.message} {exc_type}: {msg}".strip()
        held.fields = {**(held.fields or {}), "inner": exc_type}
        return _release(state)
    if tb is None and not msg:
        return None  # a bare word like "ValueError" on its own line is not an exception report
    kind = classify(exc_type, msg, frame, saving)
    layout = state.pop("layout_frame", None)
    if kind == "exception" and layout is not None and rec.loc.line - layout <= _LAYOUT_FRAME_SPAN \
            and _BARE_INDIVISIBLE.match(msg):
        kind = "parallel_world_size_mismatch"
    shown = state.pop("notebook_exc", None)
    if kind == "compile_failed" and shown is not None and shown[0] == exc_type.rsplit(".", 1)[-1]:
        return _release(state)  # the notebook header already reported this exception
    fields = {"traceback_line": tb, "raised_in": frame or None} if tb else None
    if tb and thread is not None:
        fields["thread"] = thread
    if held is not None and _RAY_ACTOR_DIED.search(held.exc_type or "") and _RAY_ACTOR_DIED.search(exc_type):
        state.pop("pending")  # `RayTaskError(RayActorError): ray::main_task()` then the RayActorError itself: one death
    folded = None
    if held is not None and kind == "too_many_open_files" and (held.fields or {}).get("shm_open") \
            and rec.loc.line - held.loc.line <= _SHM_OPEN_SPAN:
        folded = state.pop("pending")  # the shared-memory failure was this limit too: one failure, not two
    out = _release(state)
    if held is not None and held.error == "nan_op" and (held.fields or {}).get("from_warning"):
        # The anomaly warning named the op; the exception says what went wrong with it.
        out = [e for e in out if e is not held]
        if kind in ("nan_op", "exception", "autograd_inplace", "autograd_graph_freed"):
            fields = {**(fields or {}), "op": held.fields["op"], "anomaly_warning_line": held.loc.line}
    ev = ErrorEvent(
        loc=rec.loc, text=rec.text, framework="python", error=kind, message=msg,
        exc_type=exc_type, fields=fields,
    )
    if folded is not None:
        ev.fields = {**(ev.fields or {}), "also": f"{folded.exc_type}: {folded.message} (line {folded.loc.line})"}
    if kind == "exception" and _SHM_OPEN.search(msg):
        ev.fields = {**(ev.fields or {}), "shm_open": True}
        state["pending"] = ev  # the fd limit's own error may follow (see _SHM_OPEN)
        return out
    if kind == "cuda_oom" and "No executable batch size found" in msg:
        ev.fields = {**(ev.fields or {}), "detail": "accelerate's find_executable_batch_size halved the batch size after "
                                                    "every out-of-memory error down to zero: not even batch size 1 fits"}
    elif kind == "cuda_oom" and "RayTaskError" in exc_type:  # the Ray wrapper (the CUDA message itself is the cuda parser's)
        ev.fields = {**(ev.fields or {}), "detail": f"{exc_type} re-raised by Ray from the task ({_short_detail(msg)[:120]})"}
    elif kind == "cuda_oom":  # torch's OutOfMemoryError without the allocator's sizes
        ev.fields = {**(ev.fields or {}), "detail": f"{exc_type}: {msg[:120] or 'no message'} (the allocator's sizes "
                                                    "were not printed with it)"}
    if kind == "nan_op":
        op = re.search(r"Function '(\w+)'", msg)
        ev.fields = {**(ev.fields or {}), "op": op.group(1) if op else (ev.fields or {}).get("op")}
    if kind == "cuda_arch_unsupported":
        ev.fields = {**(ev.fields or {}), "cuda_error": _arch_detail(msg), "warning": False}
    if kind == "extension_build_mismatch":
        ev.message = _extension_detail(msg) or msg
    if kind == "compile_failed" and _FAKE_TENSOR_REFUSAL.search(exc_type):
        # the message is the op alone (`aten.nonzero.default`): say what fake tensors could not do with it
        ev.message = f"{exc_type.rsplit('.', 1)[-1]}: {msg} ({_FAKE_TENSOR_WHY[_FAKE_TENSOR_REFUSAL.search(exc_type).group(1)]})"
    if kind == "cuda_no_device":  # the CUDA runtime's wordings are the cuda parser's; these are torch's and transformers'
        ev.fields = {**(ev.fields or {}), **no_device_fields(msg)}
    if kind == "checkpoint_weights_only" or (kind == "checkpoint_corrupt" and "Weights only load failed" in msg):
        detail = _weights_only_kind(msg)[1]
        if detail is not None:
            _weights_only_detail(ev, kind, detail)
        else:
            state["pending"] = ev  # its `WeightsUnpickler error:` line follows (torch prints the message over lines)
            return out
    if kind == "state_dict_mismatch":
        ev.fields = {**(ev.fields or {}), "size_mismatch": 0, "missing": 0, "unexpected": 0}
        _count_state_dict(ev, msg)
        state["pending"] = ev  # the keys it lists follow, one line each
        return out
    if kind == "exception" and _RAY_ACTOR_DIED.search(exc_type) and msg.startswith(_RAY_DIED_UNEXPECTEDLY):
        # ActorDiedError.BASE_ERROR_MSG (RayActorError before Ray 2.x): the actor's process died with no Python error
        # of its own (an actor that raised gives RayTaskError with its traceback; a constructor that raised says "The
        # actor died because of an error raised in its creation task"). Killed or crashed even when the excerpt
        # ends before Ray's `Worker exit type:` line says how.
        ev.error = "killed"
        ev.fields = {**(ev.fields or {}), "source": "ray", "died_unexpectedly": True,
                     "detail": f"a Ray actor's process died with no Python error of its own ({exc_type}: the actor died "
                               "unexpectedly): killed (often the OOM killer), crashed, or its node was lost"}
    if kind in ("ddp_unused_parameters", "compile_failed") or _RAY_ACTOR_DIED.search(exc_type):
        state["pending"] = ev  # the rank (DDP), the inner exception (dynamo), how the actor died (Ray): next lines
        return out
    if kind == "exception" and _HIST_NONFINITE.search(msg):
        return out + [_hist_nan(rec, exc_type, msg)]
    if kind == "exception" and _DIST_PARAM.search(msg):
        if _DIST_REAL.search(msg):
            return out + [_dist_nan(rec, msg)]
        ev.fields = {**(ev.fields or {}), "distribution": True}
        state["pending"] = ev  # repr(self) of the distribution can run over lines: the constraint follows
        return out
    if kind == "exception" and msg == "Traceback (most recent call last):" and exc_type.endswith("MXNetError"):
        # MXNet 1.6+'s FFI error: the message is the C++ traceback, its last line `MXNetError: <message>` the error
        ev.fields = {**(ev.fields or {}), "ffi_head": True}
        state["pending"] = ev
        return out
    if kind == "exception" and _PADDLE_HEADER.search(msg):
        # PaddlePaddle's enforce error: the message is the error type's name, its text on the lines after
        ev.fields = {**(ev.fields or {}), "paddle_header": True}
        state["pending"] = ev
        return out
    if kind == "exception" and not msg and (exc_type.endswith("ProcessRaisedException") or exc_type == "Exception"):
        # mp.spawn's parent: the message is the `-- Process N terminated with the following error:` block below
        # (see _spawn_raised), which names the process that raised
        ev.fields = {**(ev.fields or {}), "spawn_parent": True}
        state["pending"] = ev
        return out
    child = state.get("spawn_child")
    if child is not None:
        state.pop("spawn_child")
        if 0 < rec.loc.line - child[1] <= _TRACEBACK_SPAN and launcher_alone(rec.origin):
            ev.rank = child[0]  # the exception that ended the spawned process's function
            ev.fields = {**(ev.fields or {}), "spawn_process": child[0]}
    if kind == "exception" and _ANNOUNCES_NEXT_LINE.search(msg):
        # transformers' lazy-import error: the message goes on in the next line; a build-mismatch line there makes
        # this exception that (_extension_bare), else it stays as it is
        ev.fields = {**(ev.fields or {}), "continues": True}
        state["pending"] = ev
        return out
    return out + [ev]


# A histogram of non-finite values, which TensorBoard's writers cannot bin: the logged weights, gradients or outputs
# went NaN / inf and the logging call raises. torch/utils/tensorboard/summary.py and tensorboardX/summary.py
# make_histogram (every release since tensorboardX 1.x / torch 1.1; add_histogram of a tensor): the bins of all-NaN
# values count nothing, `raise ValueError("The histogram is empty, please file a bug report.")`; numpy's own
# np.histogram before it (numpy/lib/histograms.py _get_outer_edges, 1.15+, `_histograms_impl.py` in 2.x): "autodetected
# range of [nan, nan] is not finite" (either edge non-finite; "supplied range of [..] is not finite" when the caller
# gave one). The run stops on a non-finite value in what it was logging: the model went NaN (the threads:
# SuLvXiangXin/zipnerf-pytorch#45 'nan appears in training', pankajmishra000/VT-ADL#1 'we get NaN, hence the
# tensorboard throws', NVIDIA/tacotron2#549 nan/inf in the grad norm or the losses). (make_histogram's other
# ValueError, "The input has no element.", is an empty tensor, not a NaN.)
_HIST_NONFINITE = LazyPattern(r"^The histogram is empty, please file a bug report"
                             r"|^(?:autodetected|supplied) range of \[(?P<lo>[^,\]]+), (?P<hi>[^\]]+)\] is not finite")


def _hist_nan(rec, exc_type: str, msg: str) -> WarningEvent:
    return WarningEvent(loc=rec.loc, text=rec.text, framework="pytorch", warning="nonfinite_stop",
                        message=(f"{exc_type}: {msg[:120]} - a histogram for TensorBoard of values that are all NaN / inf "
                                 "(weights, gradients or outputs went non-finite)"),
                        fields={"check": "histogram", "exc_type": exc_type})


# torch/distributions/distribution.py Distribution.__init__ (validate_args, on by default since torch 1.8): raise
# ValueError(f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) of distribution
# {repr(self)} to satisfy the constraint {repr(constraint)}, but found invalid values:\n{value}"). constraints.real's
# check is `value == value`: only NaN fails it, so a Real() refusal is a NaN the model produced (its parameters or
# outputs went NaN), the run stopping on a non-finite value. repr(self) may print whole tensors, so the constraint
# can be on a later line of the same message.
_DIST_PARAM = LazyPattern(r"^Expected parameter \w+ \(\w+ of shape \([\d, ]*\)\) of distribution \w+\(")
_DIST_REAL = LazyPattern(r"to satisfy the constraint Real\(\), but found invalid values")
_DIST_SPAN = 6


def _dist_nan(rec, msg: str) -> WarningEvent:
    param = re.match(r"Expected parameter (\w+)", msg)
    return WarningEvent(loc=rec.loc, text=rec.text, framework="pytorch", warning="nonfinite_stop",
                        message=("torch.distributions refused a NaN " + (f"'{param.group(1)}' " if param else "")
                                 + "parameter (the Real() constraint fails only on NaN): the model's values went NaN"),
                        fields={"check": "torch.distributions"})


@rule("distribution-real", ("to satisfy the constraint Real(), but found invalid values",), _DIST_REAL.pattern)
def _distribution_real(m, rec, state):
    held = state.get("pending")
    if held is None or not (held.fields or {}).get("distribution") or rec.loc.line - held.loc.line > _DIST_SPAN:
        return None
    state.pop("pending")
    ev = _dist_nan(rec, held.message)
    ev.loc, ev.text = held.loc, held.text  # the evidence is the exception line
    return [ev]


# aten/src/ATen/MapAllocator.cpp (TH's THAllocator.c before 1.0): shm_open failed for a tensor a DataLoader worker
# shares, "unable to open shared memory object </torch_30997_2076642173> in read-write mode" (newer releases add
# ": <strerror> (<errno>)"). Without the errno it can be the fd limit or /dev/shm; when an `[Errno 24] Too many
# open files` follows in the same stream, it was the fd limit, and the two are one failure.
_SHM_OPEN = LazyPattern(r"unable to open shared memory object <[^>]*> in read-write mode")
_SHM_OPEN_SPAN = 60


# The lines load_state_dict's message lists under its first line ('\t' + one problem each, see _CLASSIFY):
_STATE_DICT_LINE = LazyPattern(r"(?P<size>size mismatch for \S+: copying a param (?:with shape|of) )"
                              r"|(?P<missing>Missing key\(s\) in state_dict: )|(?P<unexpected>Unexpected key\(s\) in state_dict: )")


def _count_state_dict(ev: ErrorEvent, text: str) -> bool:
    """Count the problems `text` lists into the held load_state_dict error; the first one is its detail."""
    found = False
    for m in _STATE_DICT_LINE.finditer(text):
        key = "size_mismatch" if m.group("size") else "missing" if m.group("missing") else "unexpected"
        ev.fields[key] += 1
        if "detail" not in ev.fields:
            rest = text[m.start():]
            ev.fields["detail"] = rest if len(rest) <= 200 else rest[:199] + "…"
        found = True
    if found:
        counts = ", ".join(f"{n} {what}" for what, n in (("size mismatch(es)", ev.fields["size_mismatch"]),
                                                         ("missing-key line(s)", ev.fields["missing"]),
                                                         ("unexpected-key line(s)", ev.fields["unexpected"])) if n)
        head = ev.fields.setdefault("head", ev.message)
        ev.message = f"{head} {counts}; first: {ev.fields['detail']}"
    return found


@rule("state-dict-problem", ("size mismatch for ", "Missing key(s) in state_dict", "Unexpected key(s) in state_dict"),
      _STATE_DICT_LINE.pattern)
def _state_dict_problem(m, rec, state):
    held = state.get("pending")
    if held is None or held.error != "state_dict_mismatch" or rec.loc.line - held.loc.line > 2000:
        if (m.group("size") and _lone_size_mismatch(rec.text)) or (not m.group("size") and _lone_key_list(rec.text)):
            # the list pasted without its `Error(s) in loading state_dict for X:` head (or with the head behind a
            # prefix of the user's own, `actual error: RuntimeError: ...`): torch's own line is the failure
            out = _release(state)
            ev = ErrorEvent(loc=rec.loc, text=rec.text, framework="python", error="state_dict_mismatch",
                            message="load_state_dict (its head line not in the log):", exc_type=None,
                            fields={"size_mismatch": 0, "missing": 0, "unexpected": 0})
            _count_state_dict(ev, rec.text)
            state["pending"] = ev  # the other keys it lists follow, one line each
            return out
        return None
    _count_state_dict(held, rec.text)
    return []


# torch/nn/modules/module.py's key lists (tab-indented under the head): 'Missing key(s) in state_dict: {}. ' and
# 'Unexpected key(s) in state_dict: {}. ', the keys each in double quotes (', '.join(f'"{k}"' ...)); only torch's
# load_state_dict prints a quoted key right after that label.
_KEY_LIST = LazyPattern(r'(?:Missing|Unexpected) key\(s\) in state_dict: "[^"\s]{1,300}"(?:, "|\. ?$|\.$)')


def _lone_key_list(text: str) -> bool:
    return _KEY_LIST.match(text.lstrip()) is not None


# torch/nn/modules/module.py's whole size-mismatch line (tab-indented under the head), read alone when the head was
# not pasted: nothing else prints `copying a param with shape ... from checkpoint, the shape in current model is`.
def _lone_size_mismatch(text: str) -> bool:
    line = text.lstrip()
    return (line.startswith("size mismatch for ") and ": copying a param with shape " in line
            and " from checkpoint, the shape in current model is " in line)


# torch/serialization.py _get_wo_message puts the unpickler's own error on a line of its own: "Please file an
# issue with the following so that we can make `weights_only=True` compatible with your use case: WeightsUnpickler
# error: Unsupported operand 118", or "\tWeightsUnpickler error: Unsupported global: GLOBAL x was not an allowed
# global by default. Please use `torch.serialization.add_safe_globals([x])` ...".
# torch >= 2.10 prints the unpickler's error after a blank line of its own when it has no global to name:
#   "... compatible with your use case: WeightsUnpickler error: " / "" / "Unsupported operand 118"
@rule("weights-unpickler-error", ("WeightsUnpickler error:", "Unsupported operand ", "Unsupported global: "),
      r"WeightsUnpickler error:(?P<why>.*)$|^\s*(?P<alone>Unsupported (?:operand \d+|global: \S.*))$")
def _weights_unpickler(m, rec, state):
    held = state.get("pending")
    if held is None or held.error != "checkpoint_weights_only" or not 0 < rec.loc.line - held.loc.line <= 8:
        return None
    why = (m.group("why") if m.group("alone") is None else m.group("alone")).strip()
    if not why:
        return []  # the reason follows on a later line
    kind, detail = _weights_only_kind(why)
    held.error = kind
    _weights_only_detail(held, kind, detail or why[:200])
    return _release(state)


def _weights_only_detail(ev: ErrorEvent, kind: str, detail: str) -> None:
    """The unpickler's reason in place of torch's long advice text (the evidence line keeps that)."""
    ev.fields = {**(ev.fields or {}), "detail": detail}
    if kind == "checkpoint_corrupt":  # what matters is the file, not the refusal the message goes on about
        ev.message = f"torch.load (weights_only=True): {detail}"
    else:
        ev.message = f"Weights only load failed: {detail}"


def _arch_detail(msg: str) -> str:
    m = re.search(r"FlashAttention only supports (?:Ampere|Turing) GPUs or newer", msg)
    return f"flash-attn has no kernel for this GPU ({m.group(0)})" if m else msg[:160]


# ComfyUI's execution.py reports a node's exception as `!!! Exception during processing !!! {ex}` (newer releases;
# older ones print the marker alone), then the traceback, which may not be pasted. The message alone is evidence
# when it names a failure of its own kind; a generic one is left to the traceback's exception line.
@rule("comfyui-exception", ("!!! Exception during processing !!!",), r"!!! Exception during processing !!! (?P<msg>\S.*)$")
def _comfyui_exception(m, rec, state):
    msg = m.group("msg").strip()
    kind = classify("", msg)
    if kind in ("exception", "interrupted", "launcher_failed"):
        return []
    ev = ErrorEvent(loc=rec.loc, text=rec.text, framework="python", error=kind, message=msg,
                    exc_type="Exception (ComfyUI node)", fields={"printed": True})
    if kind == "cuda_arch_unsupported":
        ev.fields.update(cuda_error=_arch_detail(msg), warning=False)
    return _release(state) + [ev]


# ATen's operand checks (the dtype, shape and device templates of _CLASSIFY) printed without their exception line: an
# application's or a GUI node's own report of str(e) (a ComfyUI custom node's `!!! ERROR during execution: expected
# mat1 and mat2 to have the same dtype, but got: struct c10::Half != struct c10::BFloat16`, a logger's
# `ERROR:root:mat1 and mat2 shapes cannot be multiplied (1x512 and 768x10)`), the traceback not pasted. Only ATen
# raises these texts, so the line names the failure wherever it stands in it; an exception line with them is
# _exception's (it comes first), and a repeat of the kind on the stream right after is the same failure.
_OPERAND_KINDS = ("dtype_mismatch", "tensor_shape_mismatch", "device_mismatch")
_OPERAND_KEYS = ("expected scalar type ", "to have the same dtype", "must have the same dtype", "Expected object of scalar type ",
                 "shapes cannot be multiplied (", "size mismatch, m1: [", "must match the size of tensor b (",
                 "must match the existing size (", "is invalid for input of size ", "Sizes of tensors must match except",
                 "Expected all tensors to be on the same", "attempting to assign a gradient with dtype ")


@rule("aten-operand-bare", _OPERAND_KEYS, "|".join(re.escape(k) for k in _OPERAND_KEYS), flags=re.I)
def _operand_bare(m, rec, state):
    msg = rec.text.strip()
    kind = classify("", msg)
    if kind not in _OPERAND_KINDS or EXC_LINE.match(msg) or msg.startswith(("raise ", "File ", "assert ", "#")):
        return None
    if not first_time(state, ("operand", kind), rec.loc.line):
        return []
    return _release(state) + [ErrorEvent(loc=rec.loc, text=rec.text, framework="python", error=kind, message=msg[:400],
                                         exc_type=None, fields={"printed": True})]


# ColossalAI's Gemini / ZeRO DDP error (see _CLASSIFY) pasted without its `RuntimeError: (` head, or with the tuple's
# first string on a line of its own after `RuntimeError: (` (the message is a tuple of strings): the words are
# only ColossalAI's. The `raise RuntimeError("ZERO DDP error: ...` source line of the traceback is not the error.
@rule("zero-ddp-bare", ("ZERO DDP error: ",), r"""^\s*(?:\(?["'])?ZERO DDP error: the synchronization of gradients doesn't exit properly""",
      match_start=True)
def _zero_ddp_bare(m, rec, state):
    if not first_time(state, ("zero-ddp",), rec.loc.line):
        return []
    msg = rec.text.strip()
    return _release(state) + [ErrorEvent(loc=rec.loc, text=rec.text, framework="colossalai", error="zero_ddp_unreduced_grads",
                                         message=msg[:400], exc_type=None, fields={"printed": True})]


# A build-mismatch message on a line of its own (see _EXTENSION_MISMATCH), without the exception type: the
# dynamic loader's "<file>.so: undefined symbol: <sym>" printed as str(e) or as the second line of transformers'
# lazy-import error (src/transformers/utils/import_utils.py _LazyModule._get_module: RuntimeError(f"Failed to import
# {module} because of the following error (look up to see its traceback):\n{e}")), an application printing the
# dispatcher's "Could not run 'torchvision::nms' with arguments from the 'CUDA' backend. ...", cpp_extension's
# message under its bare `RuntimeError:` line. The lazy-import exception that announced this line becomes it.
_EXTENSION_BARE = LazyPattern(
    r"^\s*(?:(?P<lib>\S+\.so(?:\.[\d.]+)?): undefined symbol: (?P<sym>\S+)"
    r"|Could not run '" + _NOT_TORCH_OP + r"(?P<op>\w+::[\w.]+)' with arguments from the '(?P<key>\w+)' backend"
    r"|The detected CUDA version \((?P<have>[\d.]+)\) mismatches the version that was used to compile)")
# Triton's PTX-to-cubin step (triton/backends/nvidia/compiler.py make_cubin) puts ptxas' stderr after its own words:
# `raise RuntimeError(f'Internal Triton PTX codegen error: \\n{log}')` (Triton 2.x-3.0), `raise PTXASError(f"{error}\\n`ptxas`
# stderr:\\n{log}\\nRepro command: ...")` with error = "Internal Triton PTX codegen error" (3.1+): what ptxas said follows.
_ANNOUNCES_NEXT_LINE = LazyPattern(r"because of the following error \(look up to see its traceback\):$"
                                  r"|\bInternal Triton PTX codegen error:?$")


# PaddlePaddle raises its enforce errors (paddle/phi/core/enforce.h, paddle/fluid/platform/enforce.h) with the
# error type's name as the first line of the message and the text after a blank line: `RuntimeError:
# ResourceExhaustedError:` (1.8-2.0, `MemoryError: ` with a C++ traceback before it later), then `Out of memory error
# on GPU 0. Cannot allocate ...` (framework_oom reads it). That OOM line is the failure: the exception is its carrier.
_PADDLE_HEADER = LazyPattern(r"^ResourceExhaustedError:?\s*$")
_PADDLE_SPAN = 6


@rule("paddle-oom", ("Out of memory error on GPU",), PADDLE_OOM.pattern)
def _paddle_oom(m, rec, state):
    held = state.get("pending")
    out = []
    if held is not None and (held.fields or {}).get("paddle_header") and rec.loc.line - held.loc.line <= _PADDLE_SPAN:
        state.pop("pending")  # the exception only carries this out-of-memory error: one failure, not two
    else:
        out = _release(state)
    if not first_time(state, ("paddle_oom", m.group("gpu")), rec.loc.line):
        return out
    return out + [paddle_oom_event(m, rec)]


_FFI_SPAN = 60


@rule("mxnet-oom", ("cudaMalloc failed: out of memory", "cudaMalloc retry failed: out of memory"), MXNET_OOM.pattern)
def _mxnet_oom(m, rec, state):
    held = state.get("pending")
    out = []
    if held is not None and (held.fields or {}).get("ffi_head") and rec.loc.line - held.loc.line <= _FFI_SPAN:
        state.pop("pending")  # the FFI exception's head: this line is its message
    else:
        out = _release(state)
    if not first_time(state, ("mxnet_oom",), rec.loc.line):
        return out
    return out + [mxnet_oom_event(m, rec)]


_SO_SYMBOL = LazyPattern(r"(?<![^\s'\"/\\])(?P<lib>[^\s'\"/\\]+\.so(?:\.[\d.]+)?): undefined symbol: (?P<sym>[^\s'\"]+)")
_NO_KERNEL = LazyPattern(r"Could not run '(?P<op>[\w:.]+)' with arguments from the '(?P<key>\w+)' backend")
_TOOLKIT = LazyPattern(r"The detected CUDA version \((?P<have>[\d.]+)\) mismatches")


def _extension_detail(text: str) -> Optional[str]:
    """What does not fit, in a line: the library and the symbol, or the op and the backend (the evidence
    keeps the loader's or the dispatcher's whole message)."""
    m = _SO_SYMBOL.search(text)
    if m is not None:
        sym = m.group("sym")
        return f"{m.group('lib')} cannot be loaded: undefined symbol {sym if len(sym) <= 90 else sym[:89] + '…'}"
    m = _NO_KERNEL.search(text)
    if m is not None:
        return f"'{m.group('op')}' has no kernel for the {m.group('key')} backend (the extension's ops were not built for it)"
    m = _TOOLKIT.search(text)
    if m is not None:
        return f"the CUDA toolkit building the extension ({m.group('have')}) is not the CUDA torch was built with"
    return None


@rule("extension-mismatch-bare", (": undefined symbol: ", "Could not run '", "mismatches the version that was used to compile"),
      _EXTENSION_BARE.pattern, match_start=True)
def _extension_bare(m, rec, state):
    held = state.get("pending")
    text = rec.text.strip()
    if held is not None and held.error == "exception" and (held.fields or {}).get("continues") \
            and 0 < rec.loc.line - held.loc.line <= 2:
        state.pop("pending")
        held.error = "extension_build_mismatch"
        detail = _extension_detail(text) or text
        held.message = f"{held.message} {detail}".strip()
        return [held]
    ev = ErrorEvent(loc=rec.loc, text=rec.text, framework="python", error="extension_build_mismatch",
                    message=_extension_detail(text) or text, fields={"printed": True})
    return _release(state) + [ev]


# torch.load's weights-only refusal as an application prints it, without the exception type (ComfyUI nodes print
# str(e): "Weights only load failed. This file can still be loaded, ..."; "An error occurred while loading models:
# Weights only load failed. In PyTorch 2.6, ..."). Its `WeightsUnpickler error:` line may follow.
@rule("weights-only-bare", ("Weights only load failed. ",), r"(?<![A-Za-z0-9])Weights only load failed\. (?P<rest>.*)$")
def _weights_only_bare(m, rec, state):
    kind, detail = _weights_only_kind(rec.text)
    ev = ErrorEvent(loc=rec.loc, text=rec.text, framework="pytorch", error=kind, message=rec.text.strip(),
                    fields={"printed": True})
    out = _release(state)
    if detail is not None:
        _weights_only_detail(ev, kind, detail)
        return out + [ev]
    state["pending"] = ev
    return out


# Ray (python/ray/exceptions.py ActorDiedError / RayActorError; the text comes from the GCS death cause):
#   ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
#   \tclass_name: create_colocated_worker_cls.<locals>.WorkerDict
#   \tname: 07GxnAWorkerDict_0:3
#   The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail:
#   Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes.
#   (1) The process is killed by SIGKILL by OOM killer due to high memory usage. ...
# Other details of the same exit: `Worker exits unexpectedly. Worker exits with an exit code None. The worker may
# have exceeded K8s pod memory limits.`; Ray's docs print the exit type as UNEXPECTED_SYSTEM_EXIT. A system exit
# is the process vanishing without a Python error (OOM killer, SIGSEGV, `ray stop --force`); USER_ERROR (the
# actor raised) and INTENDED_* exits are not. The exception names the dead actor; verl names its workers
# `{prefix}WorkerDict_{pg_idx}:{local_rank}` (verl/single_controller/ray/base.py) and numbers RANK over the
# placement groups in order, so on placement group 0 the local rank is the rank.
_RAY_ACTOR_DIED = LazyPattern(r"(?:^|\.|\()(?:ActorDiedError|RayActorError)\)?$")
_RAY_DIED_UNEXPECTEDLY = "The actor died unexpectedly before finishing this task"


@rule("ray-actor-name", ("WorkerDict_",), r"^\s*name: \S*WorkerDict_(?P<pg>\d+):(?P<lr>\d+)\s*$", match_start=True)
def _ray_actor_name(m, rec, state):
    held = state.get("pending")
    if held is None or not _RAY_ACTOR_DIED.search(held.exc_type or ""):
        return None
    if m.group("pg") == "0" and held.rank is None:
        held.rank = int(m.group("lr"))
    held.fields = {**(held.fields or {}), "actor": m.group(0).strip()[len("name: "):]}
    return []


# The raylet's own report of the same exit (src/ray/raylet/node_manager.cc):
#   (raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot
#   the problem, check the logs for the dead worker. RayTask ID: ... Worker PID: 3566775 Worker exit type:
#   SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. ...
@rule("ray-worker-died", ("Worker exit type:",),
      r"(?:The actor is dead because its worker process has died\.|A worker died or was killed while executing a task "
      r"by an unexpected system error\..*?) Worker exit type: (?P<type>\w+)(?: Worker exit detail: (?P<detail>.*))?")
def _ray_worker_died(m, rec, state):
    held = state.get("pending")
    if m.group("type") not in ("SYSTEM_ERROR", "UNEXPECTED_SYSTEM_EXIT"):
        if held is not None and (held.fields or {}).get("died_unexpectedly"):
            # Ray says the worker exited by the actor's own error (USER_ERROR) or on purpose: not a kill after all
            held.error = "exception"
            held.fields = {k: v for k, v in held.fields.items() if k not in ("source", "died_unexpectedly", "detail")} or None
        return None
    detail = (m.group("detail") or "").strip()
    fields = {"source": "ray", "exit_type": m.group("type"), "exit_detail": _short_detail(detail)}
    if held is not None and _RAY_ACTOR_DIED.search(held.exc_type or ""):
        # The actor's process died with no Python error of its own: the exception above was only Ray
        # reporting it to the caller. What matters is how the worker exited.
        state.pop("pending")
        held.error = "killed"
        held.signal = None
        held.fields = {**(held.fields or {}), **fields}
        return [held]
    return _release(state) + [ErrorEvent(loc=rec.loc, text=rec.text, framework="ray", error="killed",
                                         message=m.group(0), fields=fields)]


def _short_detail(detail: str) -> str:
    """The exit detail without Ray's list of possible causes."""
    return re.split(r" (?:There are some potential root causes|Some common causes include)", detail)[0]


# BackendCompilerFailed, FailOn{Recompile,Cache}LimitHit and {Cache,Recompile}LimitExceeded do not end in
# Error: their lines are read by the exception builder all the same; so are inductor's InvalidCxxCompiler,
# TritonMissing and GPUTooOldForTriton (torch/_inductor/exc.py), BackendCompilerFailed's inner exception or raised alone.
_COMPILE_TYPES = (r"BackendCompilerFailed|FailOn(?:Recompile|Cache)LimitHit|(?:Cache|Recompile)LimitExceeded"
                  r"|InvalidCxxCompiler|TritonMissing|GPUTooOldForTriton")
_compile_raised = rule("compile-raised", ("BackendCompilerFailed", "LimitHit", "LimitExceeded", "InvalidCxxCompiler",
                                          "TritonMissing", "GPUTooOldForTriton"),
                       LOGGER_PREFIX + r"(?P<type>(?:\w+\.)*(?:" + _COMPILE_TYPES + r"))"
                       r"(?::[ \t]*(?P<msg>.*))?$",
                       match_start=True)(_exception.build)



# BackendCompilerFailed's message without its class (torch/_dynamo/exc.py, torch 2.0 - 2.x, every release the same:
# `msg = f"backend={self.backend_name!r} raised:\n{type(inner_exception).__name__}: {inner_exception}"`): a front end
# that prints str(e) alone (ComfyUI's node error, a notebook's message cell) shows `backend='inductor' raised:` on a
# line of its own and the inner exception (`CompilationError: at 8:11:`, `RuntimeError: Cannot find a working triton
# installation. ...`) on the next. The line is held as a compile failure; the exception rule adds the inner one to it.
@rule("compile-raised-bare", ("backend='", 'backend="'),
      r"^backend=(?P<q>['\"])(?P<backend>[\w.<>\-]{1,80})(?P=q) raised:[ \t]*$", match_start=True)
def _compile_raised_bare(m, rec, state):
    out = _release(state)
    state["pending"] = ErrorEvent(
        loc=rec.loc, text=rec.text, framework="pytorch", error="compile_failed",
        message=f"backend={m.group('q')}{m.group('backend')}{m.group('q')} raised:", exc_type="BackendCompilerFailed",
        fields={"backend": m.group("backend")},
    )
    return out


# Dynamo's UserError of a branch on a tensor's value, its message alone (a trainer or front end that prints str(e),
# with dynamo's `from user code:` frames after it). torch/_dynamo/variables (builtin.py / tensor.py, torch 2.1 - 2.5):
# `raise UserError(UserErrorType.DYNAMIC_CONTROL_FLOW, "Dynamic control flow is not supported at the moment. Please
# use functorch.experimental.control_flow.cond to explicitly capture the control flow.", case_name="cond_operands")`;
# torch 2.6+ says `Please use torch.cond to explicitly capture the control flow.` The line with the class before it
# is the exception rule's (dynamo's exception types are read there).
@rule("dynamo-control-flow-bare", ("Dynamic control flow is not supported at the moment",),
      r"^(?P<msg>Dynamic control flow is not supported at the moment\. Please use "
      r"(?:functorch\.experimental\.control_flow\.cond|torch\.cond) to explicitly capture the control flow\b.*)$",
      match_start=True)
def _dynamo_control_flow_bare(m, rec, state):
    out = _release(state)
    out.append(ErrorEvent(loc=rec.loc, text=rec.text, framework="pytorch", error="compile_failed",
                          message=m.group("msg").strip()[:400], exc_type="torch._dynamo.exc.UserError",
                          fields={"detail": "dynamo cannot trace a Python branch on a tensor's value"}))
    return out

# IPython / Jupyter print an uncaught exception as a rule of dashes, then the exception's class padded to a
# column and `Traceback (most recent call last)` (IPython/core/ultratb.py VerboseTB.prepare_header), the frames
# (`Cell In[5], line 3`, `File ~/...py:120, in f(x)`), and only then `Type: message`. A paste cut before that
# last line still names the class in the header. For torch.compile's own exceptions the class is the whole
# diagnosis (their message adds nothing the class does not say), so the header is reported; the final line
# of the same exception, when it follows, is then not reported a second time.
@rule("notebook-compile-header", ("BackendCompilerFailed", "InductorError", "LimitHit", "LimitExceeded"),
      r"^(?P<type>(?:\w+\.)*(?:" + _COMPILE_TYPES + r"|InductorError))[ ]{2,}Traceback \(most recent call last\)",
      match_start=True)
def _notebook_compile_header(m, rec, state):
    exc_type = m.group("type")
    out = _release(state)
    state["notebook_exc"] = (exc_type.rsplit(".", 1)[-1], rec.loc.line)
    what = " (dynamo reached its recompile limit)" if "Limit" in exc_type else ""
    out.append(ErrorEvent(loc=rec.loc, text=rec.text, framework="pytorch", error="compile_failed",
                          message=f"{exc_type}{what}, raised in a notebook cell", exc_type=exc_type))
    return out


# pytorch-ignite ignite/engine/engine.py Engine._internal_run (and _run_once_on_dataset in 0.4):
# `self.logger.error(f"Engine run is terminating due to exception: {e}")` (0.4.x also "Current run is terminating
# due to exception: {e}"), then the exception is re-raised. The record carries str(e) without the type, so the
# message alone classifies it; the two records of one exception report one failure.
@rule("ignite-terminating", ("run is terminating due to exception: ",),
      r"\b(?:Engine|Current) run is terminating due to exception: (?P<msg>\S.*)$")
def _ignite_terminating(m, rec, state):
    msg = m.group("msg").strip()
    if state.get("ignite_msg") == msg:
        return []  # the second record of the same exception (no other rule should read it as a new one)
    state["ignite_msg"] = msg
    out = _release(state)
    out.append(ErrorEvent(loc=rec.loc, text=rec.text, framework="ignite", error=classify("", msg), message=msg,
                          fields={"source": "ignite"}))
    return out


# torch/_inductor/runtime/triton_heuristics.py CachingAutotuner._precompile_config (torch 2.1+): when
# triton.compile raises, inductor logs `log.exception("Triton compilation failed: %s\n%s\nmetadata: %s",
# kernel_name, fn.src, compile_meta)` and re-raises. The kernel name ends the first line, e.g.
# `E0429 11:10:24.821000 558924 ...triton_heuristics.py:539] [0/0] Triton compilation failed: triton_red_fused_...`;
# the kernel source follows on the next lines.
@rule("triton-compile-failed", ("Triton compilation failed: ",),
      r"(?<![\w\\])Triton compilation failed: (?P<kernel>[A-Za-z_]\w*)[ \t]*$")
def _triton_compile_failed(m, rec, state):
    state["inductor_logged"] = rec.loc.line
    out = _release(state)
    out.append(ErrorEvent(loc=rec.loc, text=rec.text, framework="pytorch", error="compile_failed",
                          message=f"inductor could not compile the Triton kernel {m.group('kernel')}",
                          fields={"kernel": m.group("kernel")}))
    return out


# Triton's Intel XPU driver (intel/intel-xpu-backend-for-triton third_party/intel/backend/driver.c, the load_binary that
# hands a compiled kernel to Level Zero): when the driver's graphics compiler (IGC) cannot build the module it prints
# the build log, `L0 build module failed. Log: IGC: Internal Compiler Error: Floating point exception`, then
# `std::cerr << "Error during Intel loadBinary: " << e.what()` (`ZE_RESULT_ERROR_MODULE_BUILD_FAILURE`, later
# `Triton Error [ZE]: 0x70000004`) and raises RuntimeError with the same words (under inductor: InductorError). The
# large-register retry that fails is ignored by the driver (`[Ignoring] Intel - Error during Intel loadBinary with large
# registers: ...` / `[Ignoring] Error during ...`): no failure, and neither is the build log before it alone.
_L0_BUILD_LOG_SPAN = 20


@rule("xpu-load-binary", ("L0 build module failed. Log: ", "Error during Intel loadBinary: "),
      r"(?P<log>L0 build module failed\. Log: (?P<igc>\S.*)$)"
      r"|(?<!\[Ignoring\] )(?<!\[Ignoring\] Intel - )Error during Intel loadBinary: (?P<err>\S.*)$")
def _xpu_load_binary(m, rec, state):
    if m.group("log"):
        state["l0_build_log"] = (rec.loc.line, m.group("igc").rstrip()[:160])
        return []  # only the loadBinary error that follows says the build was not retried
    if re.search(r"with large registers|std::c(?:err|out)\s*<<|\"Error during", rec.text):
        return None
    log = state.pop("l0_build_log", None)
    igc = f"; the build log: {log[1]}" if log and rec.loc.line - log[0] <= _L0_BUILD_LOG_SPAN else ""
    out = _release(state)
    out.append(ErrorEvent(loc=rec.loc, text=rec.text, framework="pytorch", error="compile_failed",
                          message=f"the Intel GPU driver's compiler could not build a Triton kernel ({m.group('err').rstrip()}"
                                  f"{igc})", fields={"source": "triton-xpu", "device": "xpu"}))
    return out


# The rest of the same record: log.exception writes the traceback and the exception under the record's glog prefix,
# `E0303 11:40:42.533000 713 site-packages/torch/_inductor/runtime/triton_heuristics.py:533] subprocess.CalledProcessError:
# Command '[.../ptxas', ..., '--gpu-name=sm_120', ...]' returned non-zero exit status 255.` An excerpt may start after
# the head line: the first exception line of the record says the same.
_INDUCTOR_RECORD_SPAN = 40


@rule("inductor-logged-exception", ("triton_heuristics.py:",),
      r"\bE\d{4} [\d:.]+ +\d+ \S*triton_heuristics\.py:\d+\] (?:\[[\d/_]+\] )?"
      r"(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)): (?P<msg>\S.*)$")
def _inductor_logged_exception(m, rec, state):
    seen = state.get("inductor_logged")
    state["inductor_logged"] = rec.loc.line
    if seen is not None and rec.loc.line - seen <= _INDUCTOR_RECORD_SPAN:
        return []  # the same record's head (or an earlier exception of it) was reported
    msg = m.group("msg").strip()
    ptxas = re.search(r"/ptxas', .*'--gpu-name=(sm_\w+)'.*returned non-zero exit status (-?\d+)", msg)
    what = (f"ptxas exited {ptxas.group(2)} compiling for {ptxas.group(1)}" if ptxas
            else f"{m.group('type').rsplit('.', 1)[-1]}: {msg[:160]}")
    out = _release(state)
    out.append(ErrorEvent(loc=rec.loc, text=rec.text, framework="pytorch", error="compile_failed",
                          message=f"inductor could not compile a Triton kernel ({what})", exc_type=m.group("type"),
                          fields={"logged": True}))
    return out


# ptxas' own refusal of the GPU's architecture, under Triton's message above or alone (a source of torch.compile or
# a Triton kernel): `ptxas fatal   : Value 'sm_120' is not defined for option 'gpu-name'`: the ptxas in use (Triton's
# bundled one, or TRITON_PTXAS_PATH's) is from a CUDA release older than the GPU (sm_86 before CUDA 11.1, sm_90a before
# 12.0, sm_100 / sm_120 before 12.8, sm_121a before 12.9). The exception that announced it becomes this finding.
@rule("ptxas-arch", ("is not defined for option 'gpu-name'",),
      r"\bptxas fatal\s*: Value '(?P<arch>sm_\w+)' is not defined for option 'gpu-name'")
def _ptxas_arch(m, rec, state):
    arch = m.group("arch")
    fields = {"cuda_error": f"ptxas does not know {arch} (`Value '{arch}' is not defined for option 'gpu-name'`): Triton "
                            f"cannot compile kernels for this GPU with a ptxas older than it", "warning": False, "arch": arch}
    held = state.get("pending")
    if held is not None and held.error == "exception" and (held.fields or {}).get("continues") \
            and "PTX codegen error" in (held.message or "") and 0 < rec.loc.line - held.loc.line <= 4:
        state.pop("pending")
        held.error = "cuda_arch_unsupported"
        held.fields = {**(held.fields or {}), **fields}
        return [held]
    out = _release(state)
    out.append(ErrorEvent(loc=rec.loc, text=rec.text, framework="triton", error="cuda_arch_unsupported",
                          message=m.group(0), fields=fields))
    return out


PARSER = Parser(
    name="python",
    framework="python",
    priority=80,
    description="Python tracebacks and exception lines",
    rules=[_traceback, _spawn_raised, _thread_head, _frame, _anomaly, _ddp_rank, _dynamo_fallback, _notebook_compile_header,
           _triton_compile_failed, _xpu_load_binary, _inductor_logged_exception, _ptxas_arch, _ignite_terminating, _compile_raised,
           _compile_raised_bare, _dynamo_control_flow_bare, _ray_actor_name, _notebook_frame,
           _distribution_real, _paddle_oom, _mxnet_oom,
           _ray_worker_died, _state_dict_problem, _weights_unpickler, _comfyui_exception, _dynamo_exception, _exception,
           _weights_only_bare, _extension_bare, _operand_bare, _zero_ddp_bare],
)
