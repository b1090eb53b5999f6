"""A fine-tuning tool's configuration (YAML / CLI) failed validation before training started.

- transformers hf_argparser.py `HfArgumentParser.parse_args_into_dataclasses`: `Some specified arguments are not
  used by the HfArgumentParser: {remaining_args}` and `parse_dict` / `parse_yaml_file`: `Some keys are not used by
  the HfArgumentParser: {sorted(unused_keys)}` (LLaMA-Factory, open-r1, TRL's scripts, the HF examples; LLaMA-Factory
  prints `Got unknown args, potentially deprecated arguments: [...]` first): an option the installed release does
  not have (renamed, removed, a typo, or a CLI flag given after a YAML config).
- axolotl src/axolotl/utils/config validate_config over pydantic models: pydantic's `{n} validation error(s) for
  AxolotlConfigWCapabilities` (AxolotlInputConfig), the field and the reason on the lines after it
  (`Input should be a valid list`, `Extra inputs are not permitted`, `Value error, ...`).

The pydantic line is read only for the tools' own config models (a server's request model is not a training
config).

The HF Trainer checks its options against each other before training (transformers training_args.py
`TrainingArguments.__post_init__`, trainer.py `Trainer.__init__` / `evaluate`):
- `--load_best_model_at_end requires the save and eval strategy to match, but found` (+ the two strategies on the next
  lines; 4.4x: `..., except when --save_strategy="best", but found`),
- `--load_best_model_at_end requires the saving steps to be a round multiple of the evaluation steps, but found {save},
  which is not a round multiple of {eval}.`,
- `You have set `args.eval_strategy` to {strategy} but you didn't pass an `eval_dataset` to `Trainer`. ...` (4.4x;
  `evaluation_strategy` before), and `Trainer: evaluation requires an eval_dataset.` (evaluate() with none).

yacs (rbgirshick/yacs yacs/config.py; the CfgNode of detectron2's get_cfg() through fvcore, of maskrcnn-benchmark,
AdelaiDet, FsDet, pytracking-style projects) merges a YAML file or command-line opts only into keys its defaults
declare: `_merge_a_into_b` raises `KeyError("Non-existent config key: {full_key}")`, `merge_from_list` asserts
`Non-existent key: {full_key}` (an `opts` override), a renamed key raises `Key {old} was renamed to {new}; please update
your config.`, and `_check_and_coerce_cfg_value_type` raises `ValueError: Type mismatch ({type_b} vs. {type_a}) with values
({b} vs. {a}) for config key: {full_key}`: a typo, a key of another release, or a project whose keys were never added
(its add_*_config not called before merge_from_file, another detectron2 than the project's fork imported).

TRL's preference trainers refuse a reference model beside a PEFT config (trl/trainer/dpo_trainer.py, kto_trainer.py
`__init__`, trl 0.7.11+): `You passed both a ref_model and a peft_config. For training PEFT adapters with DPO there is
no need to pass a reference model. Please pass `ref_model=None` in case you want to train PEFT adapters.` (later
`..., or pass a ref_model with `force_use_ref_model=True` in DPOTrainer's init. if you want to use a different
ref_model.`): with LoRA the reference is the base model with the adapters disabled.

A QLoRA set-up that gives the quantization twice (transformers modeling_utils.py `PreTrainedModel.from_pretrained`,
4.30-4.3x): `You can't pass `load_in_4bit`or `load_in_8bit` as a kwarg when passing `quantization_config` argument at
the same time.` (the missing space after the backtick is transformers' own).
"""

from __future__ import annotations

from nanscope.parsers.base import Parser, rule
from nanscope.parsers._repeats import first_time
from nanscope.parsers.setup_checks import error_event

# the training tools' config models; a serving engine's ModelConfig / a request model is not one
_TRL_CONFIGS = {"SFTConfig", "DPOConfig", "GRPOConfig", "PPOConfig", "KTOConfig", "ORPOConfig", "CPOConfig", "RewardConfig"}


def _is_training_config(model: str) -> bool:
    return (model.startswith("Axolotl") or model in _TRL_CONFIGS
            or model.endswith(("Arguments", "Args", "TrainingConfig", "TrainConfig")))


@rule("config-invalid", ("are not used by the HfArgumentParser", " for AxolotlConfig", " for AxolotlInputConfig",
                         "validation error for ", "validation errors for "),
      r"(?<![\"'])(?P<msg>Some (?P<what>specified arguments|keys) are not used by the HfArgumentParser: (?P<args>\[.{0,300}?\])"
      r"|(?<!\d)(?P<n>\d{1,6}) validation errors? for (?P<model>\w{1,120})\b)")
def _config_invalid(m, rec, state):
    if m.group("model"):
        if not _is_training_config(m.group("model")):
            return None
        detail = (f"{m.group('n')} field(s) of the config failed {m.group('model')}'s validation (the field and the "
                  "reason follow the message)")
        tool = "axolotl" if m.group("model").startswith("Axolotl") else "hf"
    else:
        detail = (f"the {'config file' if m.group('what') == 'keys' else 'command line'} names options this release's "
                  f"argument dataclasses do not have: {m.group('args')[:200]} (renamed or removed, or misspelt)")
        tool = "hf"
    if not first_time(state, ("config_invalid",), rec.loc.line):
        return []
    return error_event(m, rec, "trainer_config_invalid", tool, detail)


@rule("hf-trainer-options", ("--load_best_model_at_end requires the ", "but you didn't pass an `eval_dataset` to `Trainer`",
                              "Trainer: evaluation requires an eval_dataset"),
      r"(?<![\"'])(?P<msg>--load_best_model_at_end requires the (?P<best>save and eval strategy to match|saving steps to be a round "
      r"multiple of the evaluation steps)"
      r"|You have set `args\.(?:eval_strategy|evaluation_strategy)` to (?P<strategy>\S+) but you didn't pass an `eval_dataset` to `Trainer`"
      r"|Trainer: evaluation requires an eval_dataset)")
def _trainer_options(m, rec, state):
    if not first_time(state, ("config", "trainer-options"), rec.loc.line):
        return []
    best = m.group("best")
    if best is not None and best.startswith("save and eval"):
        detail = "load_best_model_at_end needs save_strategy and eval_strategy to be the same (steps / epoch)"
    elif best is not None:
        detail = "load_best_model_at_end needs save_steps to be a multiple of eval_steps"
    else:
        strategy = m.group("strategy")
        detail = (f"evaluation is on{f' ({strategy.rstrip(chr(46))})' if strategy else ''} but the Trainer got no eval_dataset: "
                  "pass one or set eval_strategy='no'")
    return error_event(m, rec, "trainer_config_invalid", "hf", detail)


# yacs' merge of a YAML / opts into the declared defaults; the raise / assert source lines carry '{}' instead of a key
@rule("yacs-config-key", ("Non-existent config key: ", "Non-existent key: ", "; please update your config",
                          ") for config key: "),
      r"(?P<msg>Non-existent (?P<cfg>config )?key: (?P<key>[A-Za-z_][\w.]{0,200})"
      r"|Key (?P<old>[A-Za-z_][\w.]{0,200}) was renamed to (?P<new>[A-Za-z_][\w.]{0,200}); please update your config\.?"
      r"|Type mismatch \((?P<tb><class '\w+'>) vs\. (?P<ta><class '\w+'>)\) with values \(.{0,300}?\) for config key: "
      r"(?P<tkey>[A-Za-z_][\w.]{0,200}))")
def _yacs_config_key(m, rec, state):
    if not first_time(state, ("config_invalid",), rec.loc.line):
        return []
    if m.group("key"):
        where = "the config file" if m.group("cfg") else "the command-line opts"
        detail = (f"{where} sets {m.group('key')}, a key the config's defaults (yacs CfgNode, e.g. detectron2's get_cfg()) do "
                  "not declare: a typo, a key of another release, or a project's keys never added (its add_*_config not "
                  "called before merge_from_file, or another detectron2 than the project's imported)")
    elif m.group("old"):
        detail = f"the config uses {m.group('old')}, which this release renamed to {m.group('new')}"
    else:
        detail = (f"the config gives {m.group('tkey')} a value of another type than its default ({m.group('ta')} for "
                  f"{m.group('tb')})")
    return error_event(m, rec, "trainer_config_invalid", "detectron2", detail)


@rule("trl-ref-model-peft", ("You passed both a ref_model and a peft_config",),
      r"(?<![\"'])(?P<msg>You passed both a ref_model and a peft_config\. For training PEFT adapters with (?P<algo>\w+))")
def _ref_model_with_peft(m, rec, state):
    if not first_time(state, ("config", "ref-model-peft"), rec.loc.line):
        return []
    algo = m.group("algo")
    detail = (f"{algo}Trainer got both a ref_model and a peft_config: with PEFT adapters the reference is the base model "
              "with the adapters disabled, so pass ref_model=None (or force_use_ref_model=True for a different reference)")
    return error_event(m, rec, "trainer_config_invalid", "trl", detail)


@rule("quantization-given-twice", ("as a kwarg when passing `quantization_config` argument",),
      r"(?<![\"'])(?P<msg>You can't pass `load_in_4bit` ?or `load_in_8bit` as a kwarg when passing `quantization_config` argument)")
def _quantization_twice(m, rec, state):
    if not first_time(state, ("config", "quantization-twice"), rec.loc.line):
        return []
    detail = ("from_pretrained got load_in_4bit / load_in_8bit and a quantization_config at once: give the quantization "
              "only in BitsAndBytesConfig(...) and drop the load_in_* keyword")
    return error_event(m, rec, "trainer_config_invalid", "hf", detail)


PARSER = Parser(
    name="config_checks",
    framework="hf",
    priority=40,  # before the generic exception parser (python, 80)
    description="Fine-tuning configs failing validation: HfArgumentParser's unused arguments, axolotl's pydantic models, "
                "the HF Trainer's options that contradict each other, yacs configs (detectron2) naming keys their defaults lack, "
                "TRL's ref_model beside a peft_config, from_pretrained's quantization given twice",
    rules=[_config_invalid, _trainer_options, _yacs_config_key, _ref_model_with_peft, _quantization_twice],
)
