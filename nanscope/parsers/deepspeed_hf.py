"""The Hugging Face side of a DeepSpeed run refusing its DeepSpeed config: values the config fixes that contradict what
the Trainer (or accelerate) was told.

transformers integrations/deepspeed.py (deepspeed.py before 4.30) `HfTrainerDeepSpeedConfig.trainer_config_finalize`
(4.7+): every config value that is not "auto" and differs from the TrainingArguments' is collected by `fill_match` as
`- ds {ds_key}={ds_val} vs hf {hf_key}={hf_val}` and raised at once:

    ValueError: Please correct the following DeepSpeed config values that mismatch TrainingArguments values:
    - ds train_batch_size=8 vs hf train_batch_size (calculated)=128
    - ds scheduler.params.total_num_steps=0 vs hf num_training_steps (calculated)=260
    The easiest method is to set these DeepSpeed config values to 'auto'.

accelerate utils/dataclasses.py `DeepSpeedPlugin.deepspeed_config_process` says the same of its own arguments: `Please
correct the following DeepSpeed config values that mismatch kwargs  values:` (two spaces). A terminal may wrap the head
after `mismatch`. The mismatch lines follow the head: the first two are kept in the finding; the `The easiest method ...`
line ends it (an excerpt cut before it is released at the end of input). A value written as a string ("8") differs from
the integer the Trainer has, and is reported as `=8 vs ... =8`.

The raise's source lines (`"Please correct the following DeepSpeed config values that mismatch TrainingArguments"`) follow
a quote and are not read.
"""

from __future__ import annotations

from nanscope.parsers.base import Parser, rule
from nanscope.parsers.setup_checks import error_event

_SPAN = 12  # lines from the head within which its mismatch lines are read


@rule("ds-config-mismatch-head", ("Please correct the following DeepSpeed config values that mismatch",),
      r"(?<![\"'])(?P<msg>Please correct the following DeepSpeed config values that mismatch(?: (?P<who>TrainingArguments|kwargs)\s+values:)?)")
def _head(m, rec, state):
    held = state.pop("pending", None)
    who = "the accelerate arguments" if m.group("who") == "kwargs" else "the TrainingArguments"
    ev = error_event(m, rec, "deepspeed_config_mismatch", "deepspeed",
                     f"values the DeepSpeed config fixes contradict {who} (set them to \"auto\" or make them equal)", mismatches=[])
    state["pending"] = ev
    return [held] if held is not None else []


@rule("ds-config-mismatch-line", ("- ds ",), r"^\s*- ds (?P<ds>\S{1,120}?)=(?P<dv>.{0,120}?) vs hf (?P<hf>.{1,120}?)=(?P<hv>\S{0,120})\s*$")
def _line(m, rec, state):
    held = state.get("pending")
    if held is None or held.error != "deepspeed_config_mismatch" or rec.loc.line - held.loc.line > _SPAN:
        return None
    seen = held.fields.setdefault("mismatches", [])
    same = " (the same as text: the config writes it as a string)" if m.group("dv").strip() == m.group("hv").strip() else ""
    seen.append(f"ds {m.group('ds')}={m.group('dv')} vs hf {m.group('hf')}={m.group('hv')}{same}")
    if len(seen) <= 2:
        base = held.fields["detail"].split(": ds ", 1)[0]
        held.fields["detail"] = base + ": " + "; ".join(seen[:2]) + (" ..." if len(seen) > 2 else "")
    return []


@rule("ds-config-mismatch-tail", ("The easiest method is to set these DeepSpeed config values to 'auto'",),
      r"(?<![\"'])The easiest method is to set these DeepSpeed config values to 'auto'")
def _tail(m, rec, state):
    held = state.get("pending")
    if held is None or held.error != "deepspeed_config_mismatch":
        return []
    return [state.pop("pending")]


PARSER = Parser(
    name="deepspeed_hf",
    framework="deepspeed",
    priority=40,  # before the generic exception parser (python, 80)
    description="The HF Trainer's / accelerate's DeepSpeed config checks: config values that contradict the training arguments",
    rules=[_head, _line, _tail],
)
