"""TensorRT-LLM (trtllm-serve, the LLM API): an executor worker that failed to start.

TensorRT-LLM's logger prints `[11/18/2025-09:33:30] [TRT-LLM] [RANK 0] [E] MESSAGE` (newer: `[TRT-LLM] [E]
[executor] MESSAGE`). When an executor worker raises while it is created, tensorrt_llm/executor/worker.py
worker_main logs

    logger.error(f"Failed to initialize executor on rank {mpi_rank()}: {e}")

then the traceback, and the proxy raises `RuntimeError: Executor worker returned error`. The exception text
says what failed. Here it is read for the NCCL case: the NCCLCHECK macro's wording of NCCL's own examples,
`Failed, NCCL error %s:%d '%s'` (__FILE__, __LINE__, ncclGetErrorString), inside TensorRT-LLM's assertion
(`[TensorRT-LLM][ERROR] Assertion failed: Failed, NCCL error ../tensorrt_llm/runtime/ncclCommunicator.cpp:90
'invalid usage ...'`): an NCCL error of that rank's communicator set-up. (The same NCCLCHECK line outside this
executor wrapper is the nccl parser's to read.) A CUDA OOM there is the cuda parser's (it runs first), an
architecture transformers does not know is the architecture parser's.

An engine build (trtllm-build, the examples' build.py, the LLM API building on the fly) that TensorRT could not
finish. tensorrt_llm/builder.py Builder.build_engine, when build_serialized_network returns None:

    logger.error('Engine building failed, please check the error log.')      (0.5-0.9)
    assert engine is not None, 'Engine building failed, please check the error log.'   (0.10+)

TensorRT's own logger says why just before, `[TRT] [E] <code>: ...`:
    the plugin registry (the TensorRT-LLM plugin library not loaded, or built for another TensorRT):
        getPluginCreator could not find plugin: Gemmtensorrt_llm version: 1
    the builder (no kernel for a node under these types / this TensorRT):
        Error Code 10: Internal Error (Could not find any implementation for node {ForeignNode[...]}.)
    a plugin refusing the build's data types (pluginV2Builder.cpp reportPluginError):
        Error Code 9: Internal Error (<layer>/PLUGIN_V2_Gemm_0: could not find any supported formats consistent
        with input/output data types)
trtexec (TensorRT's samples/common/sampleEngines.cpp, every release 8-10) ends such a build with
    SMP_RETVAL_IF_FALSE(serializedEngine != nullptr, "Engine could not be created from network", false, err);
    -> [E] Engine could not be created from network / [E] Building engine failed / &&&& FAILED TensorRT.trtexec
    (a network it could not set up ends `[E] Network And Config setup failed` / `[E] Building engine failed` /
    `[E] Failed to create engine from model or file.`); TensorRT 7's Python builder logs
    `[TensorRT] ERROR: Network validation failed.` and returns None.
A network with no outputs (the ONNX parser failed or was never given a model, an op it could not import cut the
graph, no tensor marked as output) is refused by the builder's validation, in every release's words:
    [TensorRT] ERROR: Network must have at least one output        (5-7, the Python logger; then
    [TensorRT] ERROR: Network validation failed.)                   `Network validation failed.`)
    [E] [TRT] Network must have at least one output                 (an app's own logger around TensorRT's
    [E] [TRT] Network validation failed.                             message, 7; `ERROR : ...` in others)
    [TRT] [E] 4: [network.cpp::validate::2726] Error Code 4: Internal Error (Network must have at least one output)
                                                                     (8-10; 8.6 spells the location
                                                                      `network.cpp::nvinfer1::Network::validate::2770`)
    2: [builder.cpp::buildSerializedNetwork::751] Error Code 2: Internal Error (Assertion engine != nullptr failed. )
                                                                     (8+: the builder returning no engine)
Apps that wrap the builder add their own last word: tensorrt-cpp-api (and the YOLOv8-TensorRT-CPP family built on it)
throws `Error: Unable to build the TensorRT engine. Try increasing TensorRT log severity to kVERBOSE (in
/libs/tensorrt-cpp-api/engine.cpp).` (earlier: `Unable to build the TensorRT engine`, printed or thrown).
The first of these lines makes the event (it says what failed); the rest are the same build. A message quoted in
source (`throw std::runtime_error("...`, `std::cout << "...`) or in prose between quotes is not a build.

A serialized engine (a `.plan` / `.engine`, a TensorRT-LLM `rank0.engine`) that this TensorRT cannot
deserialize: it was built by another TensorRT (or TensorRT-LLM) release, or the file is no engine at all.
TensorRT's runtime (IRuntime::deserializeCudaEngine, every release 5-10) says, in its releases' words:
    The engine plan file is not compatible with this version of TensorRT, expecting library version 8.0.0 got
    8.0.1, please rebuild.                                   (5-8; 8+ with the error code in front: `6: The engine ...`)
    The engine plan file is generated on an incompatible device, expecting compute 8.0 got compute 8.9, please
    rebuild.                                                 (8+: `6: The engine ...`; an engine is tied to the GPU
                                                              architecture that built it, 8.6+ unless built hardware-compatible)
    [runtime.cpp::deserializeCudaEngine::74] Error Code 4: Internal Error (Engine deserialization failed.)
    [engine.cpp::deserializeEngine::1148] Error Code 2: Internal Error (Assertion engine->deserialize(start, size,
    allocator, runtime) failed. )                            (8.6+, after either of the two lines above)
    coreReadArchive.cpp (31) - Serialization Error in verifyHeader: 0 (Magic tag does not match)    (7; 8+:
    `Serialization assertion magicTagRead == kMAGIC_TAG failed.Magic tag does not match`, and `Version tag does
    not match` for another release's engine)
    INVALID_CONFIG: Deserialize the cuda engine failed.      (7's Python / C++ runtime)
TensorRT-LLM's runtime (cpp/tensorrt_llm/runtime/tllmRuntime.cpp) wraps it:
    [TensorRT-LLM][ERROR] Assertion failed: Failed to deserialize cuda engine (.../tllmRuntime.cpp:74)
and Triton's TensorRT backend then reports the model `UNAVAILABLE: Internal: unable to create TensorRT engine`.
TensorRT-LLM's plugins read their own fields back in their deserializing constructors and check that they used
up exactly the bytes the engine stored for them (cpp/tensorrt_llm/plugins/*/…Plugin.cpp, `Plugin(void const* data,
size_t length)`); fields added or reordered between releases break the count:
    TLLM_CHECK(d == a + length);   -> [TensorRT-LLM][ERROR] Assertion failed: d == a + length (.../gptAttentionCommon.cpp:320)
    TLLM_CHECK_WITH_INFO(d == a + length, "Expected length (%d) != real length (%d). This is often caused by using
        different TensorRT-LLM version to build engine and run engine.", ...)          (later releases)

Engines built for tp x pp (x cp) ranks that are run in an MPI world of another size (the usual case: a
multi-GPU engine started as one process, without `mpirun -n <tp*pp>`; Triton started without
launch_triton_server.py --world_size). The runtime checks it before it loads anything, in its releases' words:
    cpp/tensorrt_llm/runtime/worldConfig.cpp WorldConfig::mpi (0.5-0.12):
        TLLM_CHECK(mpiSize == tp * pp);   -> [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp
                                             (.../runtime/worldConfig.cpp:90)
    the same, 0.13+ (context parallelism added):
        TLLM_CHECK_WITH_INFO(mpiSize == tp * pp * cp, "MPI size %d != TP size %d * PP size %d * CP Size %d", ...)
        (0.12 printed it without CP: `Assertion failed: MPI size 1 != TP size 2 * PP size 1`)
    cpp/tensorrt_llm/executor/executorImpl.cpp (0.9+, the executor API / Triton's tensorrtllm backend in leader mode):
        "With communicationMode kLEADER, MPI worldSize is expected to be equal to tp*pp when participantIds are
        not specified"   (later `... equal to tp*pp*cp when ...`)
    the Python examples' runtime (examples/*/run.py, summarize.py before ModelRunner, 0.5-0.7; benchmarks):
        assert world_size == tensorrt_llm.mpi_world_size(), f'Engine world size ({world_size}) != Runtime world
        size ({tensorrt_llm.mpi_world_size()})'
    tensorrt_llm/runtime/model_runner.py read_config (0.6-0.7): the same with the factors,
        AssertionError: Engine world size (2 * 1) != Runtime world size (1)
        f"Engine tensor parallel size ({tp_size}) should be equal to world size ({self.world_size})"
Triton wraps the first as `UNAVAILABLE: Internal: unexpected error when creating modelInstanceState: ...` in its
model table (often wrapped over two table rows, the check on the second). Every rank makes the same check: the
line names no culprit rank.

Fewer GPUs than the engine's ranks, as TensorRT-LLM itself checks it (signature parallel-size-exceeds-gpus, the
error kind the serving engines' own checks give, parsers/model_sharding.py):
    cpp/tensorrt_llm/runtime/worldConfig.cpp WorldConfig::WorldConfig (0.7-0.9; removed later, NVIDIA/TensorRT-LLM#1035):
        TLLM_CHECK_WITH_INFO(numDevices >= tensorParallelism * pipelineParallelism,
            "Number of GPUs per node %d must be at least as large as TP (%d) * PP (%d)", ...)
        (Triton's model table wraps it: `... as large as TP (4) *  |` / `|  |  | PP (1) (...)`)
    tensorrt_llm/llmapi/llm.py (the LLM API, trtllm-serve, 0.13+):
        raise RuntimeError(f"Only {get_device_count()} GPUs are available, but {world_size} are required.")
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule

FW = "tensorrt-llm"

# a C++ / Python line that builds the message rather than logs it: throw std::runtime_error("...", std::cout << "...
_QUOTED_SOURCE = LazyPattern(r"\bthrow\b|std::(?:cout|cerr)\s*<<|\bconst std::string\b|\berrMsg\s*=|[\"']$|[\"'][ \t]*$")


@rule(
    "executor-init-nccl",
    ("Failed to initialize executor on rank",),
    r"Failed to initialize executor on rank (?P<rank>\d+): .*?Failed, NCCL error (?P<at>\S+:\d+) '(?P<why>[^']*)'",
)
def _executor_nccl(m, rec, state):
    if not first_time(state, ("trtllm_nccl",), rec.loc.line):
        return []
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="nccl_error", message=rec.text.strip(),
                      fields={"source": "tensorrt-llm", "reason": m.group("why"), "at": m.group("at"),
                              "phase": "startup",
                              "detail": f"the executor on rank {m.group('rank')} could not set up NCCL: {m.group('why')}"})


@rule(
    "engine-build",
    ("Engine building failed", "getPluginCreator could not find plugin", "Could not find any implementation for node",
     "could not find any supported formats consistent with input/output data types",
     "Engine could not be created from network", "Building engine failed", "Network validation failed",
     "Network must have at least one output", "Assertion engine != nullptr failed", "Unable to build the TensorRT engine"),
    r"(?P<failed>Engine building failed, please check the error log|Engine could not be created from network"
    r"|\[E\] Building engine failed|(?:ERROR:?|\[E\](?: \[TRT\])?) *Network validation failed"
    r"|buildSerializedNetwork::\d+\] Error Code 2: Internal Error \(Assertion engine != nullptr failed)"
    r"|(?:^|ERROR(?: *:)?|\[E\]|\[TRT\]|\d:|Internal Error \()[ \t]*(?P<nooutput>Network must have at least one output)"
    r"(?![\w\"'])"
    r"|(?P<cppapi>(?<![\"'])(?:Error: )?Unable to build the TensorRT engine)(?![\w\"'])"
    r"|getPluginCreator could not find plugin:? (?P<plugin>\S+?) version:? (?P<ver>\S+)"
    r"|Could not find any implementation for node (?P<node>\S+)"
    r"|(?<![\w/.\-])(?P<layer>[\w/.\-]{1,300}): could not find any supported formats consistent with input/output data types",
)
def _engine_build(m, rec, state):
    if _QUOTED_SOURCE.search(rec.text[:m.start()]):
        return None  # the message as a program's source builds or throws it, quoted in a traceback or a diff
    if not first_time(state, ("trt_engine_build",), rec.loc.line):
        return []
    if m.group("nooutput"):
        why = ("the network given to TensorRT's builder has no outputs: the ONNX parser produced an empty or partial "
               "network (the model file missing or not parsed, an op or opset this TensorRT cannot import, no output "
               "marked)")
    elif m.group("cppapi"):
        why = "the app's TensorRT wrapper could not build the engine (TensorRT's own errors, at kVERBOSE, say why)"
    elif m.group("plugin"):
        why = f"TensorRT cannot find the plugin {m.group('plugin')} (version {m.group('ver')}): the TensorRT-LLM plugin library is not loaded or was built for another TensorRT"
    elif m.group("node"):
        why = "TensorRT has no implementation for a node of the network (a plugin or layer under these data types / this TensorRT version)"
    elif m.group("layer"):
        why = f"the plugin layer {m.group('layer')} supports none of the build's input/output data types"
    else:
        why = "TensorRT could not build the engine (the [TRT] [E] lines above say why)"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="trt_engine_build_failed",
                      message=rec.text.strip(), fields={"source": "tensorrt", "phase": "build", "detail": why})


@rule(
    "engine-incompatible",
    ("The engine plan file is not compatible with this version of TensorRT", "Engine deserialization failed",
     "Deserialize the cuda engine failed", "Failed to deserialize cuda engine", "tag does not match",
     "The engine plan file is generated on an incompatible device", "Assertion engine->deserialize(",
     "Assertion failed: d == a + length", "!= real length ("),
    r"The engine plan file is not compatible with this version of TensorRT, expecting library version "
    r"(?P<want>[\d.]+) got (?P<got>[\d.]+)"
    r"|The engine plan file is generated on an incompatible device, expecting compute (?P<cwant>\d+\.\d+) got compute"
    r" (?P<cgot>\d+\.\d+)"
    r"|(?P<deser>Engine deserialization failed|Deserialize the cuda engine failed|Failed to deserialize cuda engine"
    r"|Assertion engine->deserialize\()"
    r"|(?P<tag>Magic|Version) tag does not match"
    r"|(?P<plugin>Assertion failed: d == a \+ length \((?P<where>[^)\s]{1,300}\.cpp):\d+\)"
    r"|Expected length \(\d+\) != real length \(\d+\))",
)
def _engine_incompatible(m, rec, state):
    if not first_time(state, ("trt_engine_incompatible",), rec.loc.line):
        return []  # the version line, the deserialization error, the wrapper's assertion: one refusal
    if m.group("want"):
        why = (f"the engine and this TensorRT are different releases (expecting library version {m.group('want')}, "
               f"got {m.group('got')})")
    elif m.group("cwant"):
        why = (f"the engine was built for another GPU architecture (expecting compute {m.group('cwant')}, this GPU is "
               f"compute {m.group('cgot')}): engines run only on the GPU model they were built on")
    elif m.group("plugin"):
        where = m.group("where")
        what = f"the {where.rsplit('/', 1)[-1][:-len('.cpp')]} plugin" if where else "a TensorRT-LLM plugin"
        why = (f"{what} could not read its fields back from the engine (their stored length does not match what this "
               "release reads): the engine was built with another TensorRT-LLM version than the one running it")
    elif m.group("tag"):
        why = ("the file's header is not this TensorRT's "
               + ("engine format (another release built it)" if m.group("tag") == "Version" else
                  "(another release built it, or it is no serialized engine)"))
    else:
        why = "TensorRT could not deserialize the engine (built by another TensorRT / TensorRT-LLM release, or not an engine)"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="trt_engine_incompatible",
                      message=rec.text.strip(), fields={"source": "tensorrt", "phase": "load",
                                                        "expecting": m.group("want") or m.group("cwant"),
                                                        "got": m.group("got") or m.group("cgot"),
                                                        "detail": why})


@rule(
    "world-size-mismatch",
    ("mpiSize == tp * pp", "MPI worldSize is expected to be equal to tp*pp", " * PP size ", "Engine world size (",
     "should be equal to world size ("),
    r"(?<![\w(])(?P<old>mpiSize == tp \* pp(?: \* cp)?)(?![\w*])"
    r"|(?P<leader>MPI worldSize is expected to be equal to tp\*pp(?:\*cp)? when participantIds are not specified)"
    r"|MPI size (?P<mpi>\d+) != TP size (?P<tp>\d+) \* PP size (?P<pp>\d+)(?: \* CP [Ss]ize (?P<cp>\d+))?"
    r"|Engine world size \((?P<ew>\d+)(?: \* (?P<ew2>\d+))?\) != Runtime world size \((?P<rw>\d+)\)"
    r"|Engine tensor parallel size \((?P<etp>\d+)\) should be equal to world size \((?P<ws>\d+)\)",
)
def _world_size(m, rec, state):
    if not first_time(state, ("trtllm_world_size",), rec.loc.line):
        return []  # every rank, the executor's re-raise, Triton's table
    engine = world = None
    if m.group("mpi"):
        world = int(m.group("mpi"))
        engine = int(m.group("tp")) * int(m.group("pp")) * int(m.group("cp") or 1)
    elif m.group("ew"):
        engine, world = int(m.group("ew")) * int(m.group("ew2") or 1), int(m.group("rw"))
    elif m.group("etp"):
        engine, world = int(m.group("etp")), int(m.group("ws"))
    if engine is not None:
        detail = (f"the engine is built for {engine} rank(s) (tp x pp) but the process runs in an MPI world of "
                  f"{world}")
    elif m.group("leader"):
        detail = ("the executor (leader mode) runs in an MPI world whose size is not the engine's tp x pp: start "
                  "one process per engine rank")
    else:
        detail = "the MPI world size is not the engine's tp x pp (WorldConfig::mpi: mpiSize == tp * pp)"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="trtllm_world_size_mismatch",
                      message=rec.text.strip(),
                      fields={"source": "tensorrt-llm", "phase": "load", "engine_ranks": engine, "mpi_world": world,
                              "detail": detail})


@rule(
    "too-few-gpus",
    ("must be at least as large as TP (", "GPUs are available, but "),
    r"Number of GPUs per node (?P<node>\d+) must be at least as large as TP \((?P<tp>\d+)\)(?: \* (?:PP \((?P<pp>\d+)\))?)?"
    r"|Only (?P<have>\d+) GPUs are available, but (?P<need>\d+) are required\.",
)
def _too_few_gpus(m, rec, state):
    if not first_time(state, ("trtllm_too_few_gpus",), rec.loc.line):
        return []  # the raise, the re-raise after the traceback, every rank
    if m.group("node") is not None:
        tp, pp = int(m.group("tp")), m.group("pp")
        need = tp * int(pp) if pp else tp
        have = int(m.group("node"))
        layout = f"TP {tp} x PP {pp}" if pp else f"TP {tp}"
        detail = (f"the engine's {layout} ranks must fit on one node, which has {have} GPU(s) "
                  "(TensorRT-LLM's WorldConfig per-node check)")
    else:
        need, have = int(m.group("need")), int(m.group("have"))
        detail = f"the parallel layout needs {need} GPUs but this process sees {have} (TensorRT-LLM's LLM API)"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="parallel_exceeds_gpus", message=rec.text.strip(),
                      fields={"needed": need, "available": float(have), "detail": detail, "source": "tensorrt-llm"})


# A request with more draft tokens than the engine was built for (speculative decoding), checked when it enters the
# inflight batch: cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp
#   TLLM_CHECK_WITH_INFO(draftLength <= maxDraftLength,
#       "Number of draft tokens (%d) is larger than maximum number of draft tokens (%d)", draftLength, maxDraftLength);
# (under Triton: inside `TritonModelException: Encountered error for requestId N: ...`). Maximum 0: the engine was
# built without speculative decoding.
@rule(
    "draft-tokens",
    ("is larger than maximum number of draft tokens (",),
    r"Number of draft tokens \((?P<n>\d+)\) is larger than maximum number of draft tokens \((?P<max>\d+)\)",
)
def _draft_tokens(m, rec, state):
    if not first_time(state, ("spec_config",), rec.loc.line):
        return []  # every request that carries drafts
    n, top = int(m.group("n")), int(m.group("max"))
    detail = (f"a request carried {n} draft tokens but the engine was built for "
              + ("none (no speculative decoding: --max_draft_len 0)" if top == 0 else f"at most {top} (--max_draft_len)"))
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="spec_config_invalid", message=rec.text.strip(),
                      fields={"engine": "TensorRT-LLM", "draft_tokens": n, "max_draft_len": top, "detail": detail})


PARSER = Parser(
    name="tensorrt_llm",
    framework=FW,
    priority=38,
    description="TensorRT-LLM: an executor worker whose start-up failed on NCCL; an engine build TensorRT could not finish; an engine this TensorRT cannot deserialize; engines run in an MPI world of another size or given fewer GPUs than their ranks; requests with more draft tokens than the engine was built for",
    rules=[_executor_nccl, _engine_build, _engine_incompatible, _world_size, _too_few_gpus, _draft_tokens],
)
