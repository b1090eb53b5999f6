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


PARSER = Parser(
    name="config_checks",
    framework="hf",
    priority=40,  # before the generic exception parser (python, 80)
    description="Fine-tuning configs failing validation: HfArgumentParser's unused arguments, axolotl's pydantic models",
    rules=[_config_invalid],
)
