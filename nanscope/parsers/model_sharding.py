"""A parallel layout that does not fit: a parallel size the model cannot be split by (the serving engines' checks
that attention heads, layers and weight rows divide evenly over the tensor- / pipeline-parallel ranks; signature
tensor-parallel-indivisible), or one that asks for more GPUs than the engine is given (Ray's placement group, the
node, the visible devices; signature parallel-size-exceeds-gpus). The server never starts; the fix is the layout,
not more memory or another release.

Templates (quoted from the engines' source via the search index):
  vllm-project/vllm vllm/config.py (later vllm/config/model.py) ModelConfig.verify_with_parallel_config:
      raise ValueError(f"Total number of attention heads ({total_num_attention_heads})"
                       " must be divisible by tensor parallel size "
                       f"({tensor_parallel_size}).")
      (0.10+ behind pydantic's `Value error, `); releases before uneven pipeline stages (<= 0.5) also
      raise ValueError(f"Total number of hidden layers ({total_num_hidden_layers}) "
                       "must be divisible by pipeline parallel size "
                       f"({pipeline_parallel_size}).")
  huggingface/text-generation-inference server/text_generation_server/utils/weights.py get_sharded (and the
      MoE / MLP loaders of the custom modelling files):
      assert size % world_size == 0, f"The choosen size {size} is not compatible with sharding on {world_size} shards"
      (the MoE loaders spell it `chosen`); the flash_*_modeling.py attention layers:
      raise ValueError(f"`num_heads` must be divisible by `num_shards` (got `num_heads`: {self.num_heads} "
                       f"and `num_shards`: {weights.process_group.size()}")
  hpcaitech/ColossalAI shardformer policies (ColossalAI inference too):
      assert ..., f"The number of attention heads must be divisible by tensor parallel size."
      (and `The number of key_value heads must be divisible by tensor parallel size.`)

  Quantized weights whose packing (groups, blocks, kernel tiles) a tensor-parallel split cuts through, vLLM (SGLang's
  copies of the same layers say it in the same words):
      vllm/model_executor/layers/quantization/awq.py, gptq.py create_weights:
      raise ValueError("The input size is not aligned with the quantized weight shape. This can be caused by too large
                       tensor parallel size.")   (and `The output size is not aligned ...`)
      gptq_marlin / marlin / utils/marlin_utils.py verify_marlin_supports_shape:
      f"Weight output_size_per_partition = {n} is not divisible by min_thread_n = {t}." (`input_size_per_partition`,
      `min_thread_k`; marlin_utils adds ` Consider reducing tensor_parallel_size or running with --quantization gptq.`)
      utils/fp8_utils.py validate_fp8_block_shape (block-quantized fp8, 128x128 as a rule):
      f"Weight input_size_per_partition = {n} is not divisible by weight quantization block_k = {k}."
      f"Weight output_partition_size = {n} is not divisible by weight quantization block_n = {k}."
      fp8.py (Fp8MoEMethod.create_weights): f"The output_size of gate's and up's weight = {n} is not divisible by weight
      quantization block_n = {k}." (and `The input_size of down's weight = {n} is not divisible by ... block_k = {k}.`)

More ranks than GPUs (vllm/executor/ray_utils.py initialize_ray_cluster, 0.2-0.1x; device_str is GPU, TPU, HPU, ...):
      f"The number of required {device_str}s exceeds the total number of available {device_str}s in the placement
      group. Required number of devices: {world_size}. Total number of devices: {device_bundles}."  (<= 0.4 without
      the counts; before a placement group exists: "... GPUs in the cluster.")
      f"Current node has no {device_str} available. {current_node_resource=}. vLLM engine cannot start without
      {device_str}. Make sure you have at least 1 {device_str} available in a node {current_node_id=} {current_ip=}."
  vllm/executor/ray_gpu_executor.py (later ray_distributed_executor.py) _init_workers_ray:
      "Ray does not allocate any GPUs on the driver node. Consider adjusting the Ray placement group or running the
      driver on a GPU node."
  vllm/v1/worker/gpu_worker.py init_device (V1): assert local_world_size <= visible_device_count, (
      f"local_world_size ({local_world_size}) must be less than or equal to the number of visible devices
      ({visible_device_count}).")
  vLLM 0.1x's parallel config (behind pydantic's `Value error, `; the wording as vllm-project/vllm#30061's title
      quotes it, the source file not read here): "Tensor parallel size (2) cannot be larger than the number of
      available GPUs (1)."
  volcengine/verl (vLLM / SGLang rollouts) trainer/ppo/ray_trainer.py ResourcePoolManager._check_resource_available:
      f"Total available GPUs {total_available_gpus} is less than total desired GPUs {total_required_gpus}"
  vllm/executor/ray_utils.py _wait_until_pg_ready (0.6+; vllm-project/vllm#11138 made the engine wait for an
      autoscaling cluster instead of failing at once), logged at INFO with exponential back-off:
      "Waiting for creating a placement group of specs for %d seconds. specs=%s. Check `ray status` to see if you have
      enough resources."   (0.7+: "..., and make sure the IP addresses used by ray cluster are the same as
      VLLM_HOST_IP environment variable specified in each node if you are running on a multi-node."; later "Check
      `ray status` and `ray list nodes` to see ..."), and after PG_WAIT_TIMEOUT (1800 s):
      raise ValueError("Cannot provide a placement group of " f"{placement_group_specs=} within {PG_WAIT_TIMEOUT}
      seconds. See `ray status` to make sure the cluster has enough resources.")
      A wait is normal while an autoscaler adds nodes, so the waiting line is held until the end of the log and
      dropped when the engine went on (its workers loaded weights, the server started).
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule

FW = "serving"
_EXC = LazyPattern(r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)): ")


@rule(
    "parallel-size-indivisible",
    ("must be divisible by tensor parallel size", "must be divisible by pipeline parallel size",
     "is not compatible with sharding on", "must be divisible by `num_shards`", "aligned with the quantized weight shape",
     "is not divisible by weight quantization block_", "is not divisible by min_thread_"),
    r"Total number of (?P<what>attention heads|hidden layers) \((?P<n>\d+)\) must be divisible by"
    r" (?P<kind>tensor|pipeline) parallel size \((?P<p>\d+)\)"
    r"|The number of (?P<cwhat>attention heads|key_value heads) must be divisible by tensor parallel size"
    r"|The cho+sen size (?P<size>\d+) is not compatible with sharding on (?P<shards>\d+) shards"
    r"|`num_heads` must be divisible by `num_shards` \(got `num_heads`: (?P<heads>\d+) and `num_shards`: (?P<hshards>\d+)"
    r"|The (?P<qside>input|output) size is not aligned with the quantized weight shape"
    r"|(?P<qwhat>Weight (?:input|output)_(?:size_per|partition_size|size)\w*|The (?:output|input)_size of [\w' ]+?weight)"
    r" = (?P<qn>\d+) is not divisible by (?P<qunit>weight quantization block_[nk]|min_thread_[nk]) = (?P<qk>\d+)",
)
def _indivisible(m, rec, state):
    if not first_time(state, ("parallel_indivisible",), rec.loc.line):
        return []  # every rank raises it, the engine re-raises it, pydantic prints it again
    if m.group("what"):
        what, n, p = m.group("what"), int(m.group("n")), int(m.group("p"))
        kind = m.group("kind")
    elif m.group("cwhat"):
        what, n, p, kind = m.group("cwhat"), None, None, "tensor"
    elif m.group("size"):
        what, n, p, kind = "rows of a weight", int(m.group("size")), int(m.group("shards")), "tensor"
    elif m.group("heads"):
        what, n, p, kind = "attention heads", int(m.group("heads")), int(m.group("hshards")), "tensor"
    else:
        return _quantized_split(m, rec)
    if n is not None:
        detail = f"{n} {what} cannot be split over {kind} parallel size {p}"
    else:
        detail = f"the model's {what} cannot be split over the tensor parallel size"
    exc = _EXC.search(rec.text)
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="tensor_parallel_indivisible", message=rec.text.strip(),
        exc_type=exc.group("type") if exc else ("AssertionError" if m.group("size") else None),
        fields={"what": what, "count": n, "parallel_size": p, "parallelism": kind, "detail": detail},
    )


def _quantized_split(m, rec) -> ErrorEvent:
    if m.group("qside"):
        what, n, unit, k = f"{m.group('qside')} dimension of a quantized weight", None, "the quantization groups", None
        detail = (f"the per-rank {m.group('qside')} size of a quantized layer is not a whole number of its quantization"
                  " groups: the tensor parallel size is too large for this checkpoint")
    else:
        n, k = int(m.group("qn")), int(m.group("qk"))
        unit = m.group("qunit")
        what = m.group("qwhat").replace("Weight ", "")
        tile = "fp8 quantization block" if unit.startswith("weight quantization") else "Marlin kernel tile"
        detail = (f"a per-rank weight dimension of {n} ({what}) is not a multiple of the {k}-wide {tile}: the tensor"
                  " parallel size cuts through the checkpoint's quantized blocks")
    exc = _EXC.search(rec.text)
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="tensor_parallel_indivisible", message=rec.text.strip(),
        exc_type=exc.group("type") if exc else None,
        fields={"what": what, "count": n, "parallel_size": None, "parallelism": "tensor", "quantized": True,
                "block": k, "detail": detail},
    )


@rule(
    "parallel-size-exceeds-gpus",
    ("exceeds the total number of available", "Current node has no ", "does not allocate any GPUs on the driver node",
     "must be less than or equal to the number of visible devices", "cannot be larger than the number of available GPUs",
     "is less than total desired GPUs"),
    r"The number of required (?P<dev>\w+?)s exceeds the total number of available \w+?s in the (?P<where>placement group|cluster)"
    r"(?:\.\s*Required number of devices: (?P<req>\d+)\. Total number of devices: (?P<tot>\d+))?"
    r"|Current node has no (?P<nodev>\w+) available\."
    r"|(?P<driver>Ray does not allocate any GPUs on the driver node)"
    r"|local_world_size \((?P<lws>\d+)\) must be less than or equal to the number of visible devices \((?P<vis>\d+)\)"
    r"|Tensor parallel size \((?P<tp>\d+)\) cannot be larger than the number of available GPUs \((?P<avail>\d+)\)"
    r"|Total available GPUs (?P<have>\d+(?:\.\d+)?) is less than total desired GPUs (?P<want>\d+)",
)
def _exceeds_gpus(m, rec, state):
    if not first_time(state, ("parallel_exceeds_gpus",), rec.loc.line):
        return []  # the exception, the engine's re-raise, the wrapper's copy
    if m.group("dev"):
        counts = f" ({m.group('req')} needed, {m.group('tot')} there)" if m.group("req") else ""
        detail = f"the parallel layout needs more {m.group('dev')}s than Ray's {m.group('where')} holds{counts}"
        need, have = m.group("req"), m.group("tot")
    elif m.group("nodev"):
        detail = f"the node the engine runs on has no {m.group('nodev')} in Ray's resources"
        need, have = None, "0"
    elif m.group("driver"):
        detail = "Ray placed none of the engine's GPU workers on the driver's node"
        need, have = None, "0"
    elif m.group("lws"):
        detail = f"{m.group('lws')} ranks on this node but {m.group('vis')} visible GPUs"
        need, have = m.group("lws"), m.group("vis")
    elif m.group("tp"):
        detail = f"tensor parallel size {m.group('tp')} but {m.group('avail')} GPU(s) available"
        need, have = m.group("tp"), m.group("avail")
    else:
        detail = f"{m.group('want')} GPUs wanted but Ray has {m.group('have')}"
        need, have = m.group("want"), m.group("have")
    exc = _EXC.search(rec.text)
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="parallel_exceeds_gpus", message=rec.text.strip(),
        exc_type=exc.group("type") if exc else None,
        fields={"needed": int(need) if need else None, "available": float(have) if have else None, "detail": detail},
    )


_SPECS = r"specs=(?P<specs>\[[^\]]*\])"


def _bundles(specs: str) -> tuple[int, int]:
    """(bundles, GPUs) of a printed placement-group spec list [{'GPU': 1.0, 'node:ip': 0.001}, {'GPU': 1.0}, ...]."""
    gpus = sum(float(x) for x in re.findall(r"'GPU': (\d+(?:\.\d+)?)", specs))
    return specs.count("{"), int(gpus) if gpus == int(gpus) else gpus


@rule(
    "placement-group-wait",
    ("Waiting for creating a placement group of specs for ", "Cannot provide a placement group of "),
    r"Waiting for creating a placement group of specs for (?P<secs>\d+) seconds\. " + _SPECS
    + r"|Cannot provide a placement group of (?:placement_group_)?" + _SPECS.replace("specs>", "tspecs>")
    + r" within (?P<timeout>\d+) seconds",
)
def _placement_group_wait(m, rec, state):
    specs = m.group("specs") or m.group("tspecs")
    n, gpus = _bundles(specs)
    pinned = "'node:" in specs
    where = " (the first pinned to the driver's node)" if pinned else ""
    if m.group("timeout"):
        state.pop("pending", None)
        if not first_time(state, ("parallel_exceeds_gpus",), rec.loc.line):
            return []
        detail = (f"Ray could not place the engine's placement group of {n} bundle(s), {gpus} GPU(s){where}, within "
                  f"{m.group('timeout')} s: the cluster has fewer free GPUs than the parallel layout needs")
        secs = int(m.group("timeout"))
    else:
        if ("parallel_exceeds_gpus",) in state.get("seen", {}):
            return []  # ray_utils already said the layout exceeds the GPUs there; this is its wait
        secs = int(m.group("secs"))
        detail = (f"vLLM waited {secs} s for a placement group of {n} bundle(s), {gpus} GPU(s){where}, that Ray "
                  "could not place, and the log ends waiting")
    ev = ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="parallel_exceeds_gpus", message=rec.text.strip(),
        exc_type="ValueError" if m.group("timeout") else None,
        fields={"needed": gpus if isinstance(gpus, int) and gpus else None, "available": None, "detail": detail,
                "waited_s": secs},
    )
    if m.group("timeout"):
        return ev
    state["pending"] = ev  # reported at the end of the log unless the engine goes on
    return []


# Lines vLLM prints only once its Ray workers exist (the placement group was placed): the held wait is dropped.
@rule(
    "placement-group-placed",
    # (start-up lines only: the stats lines, `Avg prompt throughput`, come after these, and a rule that touches
    # state on them took every stats line off the native lane: 0.6 s of CPU more on the 50 MB replay)
    ("RayWorkerWrapper pid=", "Loading weights took", "Model loading took", "model weights took",
     "Application startup complete", "# GPU blocks:", "Available KV cache memory", "Graph capturing finished"),
    r"RayWorkerWrapper pid=|Loading weights took|Model loading took|model weights took|Application startup complete"
    r"|# GPU blocks:|Available KV cache memory|Graph capturing finished",
)
def _placement_group_placed(m, rec, state):
    state.pop("pending", None)
    return None  # the line is the other parsers' to read


PARSER = Parser(
    name="model_sharding",
    framework=FW,
    priority=37,  # before the engines' own rules (40) and python's exception reader (80): the exception line is this
    description="vLLM / TGI / ColossalAI / verl: a parallel size that does not divide the model's heads, layers or weight rows,"
                " or that needs more GPUs than Ray, the node or the visible devices give (a placement group Ray never places)",
    rules=[_indivisible, _exceeds_gpus, _placement_group_wait, _placement_group_placed],
)
