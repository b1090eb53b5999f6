"""from_pretrained found none of the files a model needs at the path or Hub id it was given: no config.json, no
tokenizer files, no preprocessor / generation config (the directory is not a model, a placeholder or somebody else's
path, an adapter-only or other library's folder, a broken cache, or a Hub id that could not be fetched). One signature:
model-files-not-found. (The same words about the weight files are model-weights-not-found, model_weights.py; the Hub's
own refusals and the Hub out of reach are hf-hub-access-failed, setup_checks.py / hfhub.py.)

Templates (huggingface/transformers, quoted from source via the search index; `{name}` is the path or repo id):
  configuration_utils.py PretrainedConfig._get_config_dict
      4.2x-5.x: "Can't load the configuration of '{name}'. If you were trying to load it from
                'https://huggingface.co/models', make sure you don't have a local directory with the same name.
                Otherwise, make sure '{name}' is the correct path to a directory containing a {configuration_file} file"
                (config.json; generation_config.json from GenerationConfig.from_pretrained)
      4.1x:     "Can't load config for '{name}'. If you were trying to load it from 'https://huggingface.co/models', ..."
      3.x-4.0:  "Can't load config for '{name}'. Make sure that:\n\n- '{name}' is a correct model identifier listed on
                'https://huggingface.co/models'\n\n- or '{name}' is the correct path to a directory containing a config.json file"
      (diffusers' configuration_utils.py load_config keeps the 4.1x wording with {cls.config_name}, and says
      "Error no file named {config_name} found in directory {path}." for a local folder)
  tokenization_utils_base.py PreTrainedTokenizerBase.from_pretrained (no vocabulary file resolved)
      4.x-5.x:  "Can't load tokenizer for '{name}'. If you were trying to load it from 'https://huggingface.co/models',
                make sure you don't have a local directory with the same name. Otherwise, make sure '{name}' is the
                correct path to a directory containing all relevant files for a {cls.__name__} tokenizer."
      3.x:      "Can't load tokenizer for '{name}'. Make sure that:\n\n- '{name}' is a correct model identifier ...
                - or '{name}' is the correct path to a directory containing relevant tokenizer files"
      2.x:      "Can't load tokenizer for '{name}'.\nPlease make sure that '{name}' is:\n- a correct model-identifier ..."
  feature_extraction_utils.py / image_processing_base.py / processing_utils.py: "Can't load feature extractor for
      '{name}'. ...", "Can't load image processor for '{name}'. ...", "Can't load processor for '{name}'. ..."
      (... containing a preprocessor_config.json file)
  utils/hub.py cached_file(s) (4.2x-5.x)
      "{path_or_repo_id} does not appear to have a file named {filename}. Checkout
       'https://huggingface.co/{path_or_repo_id}/tree/{revision}' for available files." (4.2x: '.../{revision}')
      "{path_or_repo_id} does not appear to have files named {(*missing_entries,)}. Checkout ..."
      "Could not locate {filename} inside {path_or_repo_id}."
  models/auto/configuration_auto.py AutoConfig.from_pretrained (a config.json without model_type, and a name that
      contains no known type: a GGUF-only repo, a diffusers / other library's folder, a custom model's checkpoint)
      "Unrecognized model in {name}. Should have a `model_type` key in its config.json, or contain one of the
       following strings in its name: ..."
  modeling_utils.py PreTrainedModel.from_pretrained, the weights' siblings of the above, read as model-weights-not-found:
      4.2x+ "Can't load the model for '{name}'. ... containing a file named pytorch_model.bin, tf_model.h5, ..."
      3.x-4.1x "Can't load weights for '{name}'. Make sure that: ..."
  pytorch-transformers 1.x / transformers 2.x-3.0 (configuration_utils.py, tokenization_utils.py, modeling_utils.py):
      "Couldn't reach server at '{config_file}' to download configuration file or configuration file is not a valid
       JSON file. Please check network or file content here: {resolved}." (a file that is no JSON config: a vocab.txt
       or bert_config.json given for the directory, a corrupt config.json)
      "Couldn't reach server at '{config_file}' to download pretrained model configuration file." (a shortcut name
       whose download failed)
      "Can't load '{name}'. Make sure that:\n\n- '{name}' is a correct model identifier listed on ..." (2.x)
      "Model name '{name}' was not found in model name list ({...}). We assumed '{file}' was a path or url to a
       configuration file named config.json or a directory containing such a file but couldn't find any such file at
       this path or url." (and the tokenizer's "... was not found in tokenizers model name list (...). We assumed
       '{name}' was a path, a model identifier, or url to a directory containing vocabulary files named [...] but
       couldn't find such vocabulary files at this path or url.")
      the weights' "Couldn't reach server at '{archive_file}' to download pretrained weights." is model-weights-not-found.
The apostrophe and the quotes may be typographic (a paste through a web page or a chat).

Not this: the source lines that build these messages in a traceback (`f"Can't load tokenizer for
'{pretrained_model_name_or_path}'..."`: the name would be a placeholder in braces, or a quote opens the message);
diffusers' warning "An error occurred while trying to fetch {path}: Error no file named diffusion_pytorch_model.safetensors
found in directory {path}." + "Defaulting to unsafe serialization." (it falls back to the .bin weights); PEFT's UserWarning
"Could not find a config file in {path} - will assume that the vocabulary was not modified." (the
adapter is saved); old transformers' info line "file {path}/config.json not found"; "Generation config file not found,
using a generation config created from the model config." (a fallback).
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule

FW = "hf"
_EXC = LazyPattern(r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception))(?:'>)?:[ \t]")
_WEIGHTS = LazyPattern(r"pytorch_model|model\.safetensors|diffusion_pytorch_model|tf_model\.h5|model\.ckpt|flax_model|\.safetensors|\.bin\b")
_Q = "['\u2018\u2019]"  # ' or a typographic quote
_NAME = _Q + r"(?P<name>[^'\u2018\u2019{}\n]{1,300}?)" + _Q


def _event(rec, state, start: int, kind: str, fields: dict) -> list[ErrorEvent]:
    if not first_time(state, ("model_files", kind), rec.loc.line):
        return []  # the exception, its re-raise and a wrapper's copy of one failure
    exc = _EXC.search(rec.text[max(0, start - 160):start])
    return [ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error=kind, message=rec.text[start:].strip()[:400],
                       exc_type=exc.group("type") if exc else None, fields=fields)]


def _missing(name: str, what: str) -> str:
    if re.search(r"\.(?:json|bin|safetensors|model|txt)$", name):
        return f"transformers found no {what} for '{name}': that is a file, and from_pretrained takes the model's directory"
    return f"transformers found no {what} at '{name}' (no model directory there, or a Hub id it could not fetch)"


@rule(
    "cant-load",
    ("Can't load ", "Can\u2019t load "),
    r"(?<![\"'\w])(?P<msg>Can['\u2019]t load (?:(?P<what>the configuration of|config for|tokenizer for|feature extractor for"
    r"|image processor for|processor for|the model for|weights for) " + _NAME + r"|" + _NAME.replace("name", "bare") +
    r"\. Make sure that:))"
    r"(?:.*?containing (?:a |all relevant files for a )?(?P<file>[\w.\-]+) (?:file|tokenizer))?",
)
def _cant_load(m, rec, state):
    name, what, file = m.group("name") or m.group("bare"), m.group("what") or "config for", m.group("file")
    if what in ("the model for", "weights for"):
        kind, thing = "model_weights_not_found", "weight files"
        fields = {"path": name, "loader": "transformers",
                  "detail": f"transformers found no weight files it can load for '{name}' (the directory or Hub id has no "
                            "pytorch_model.bin / model.safetensors, or they could not be fetched)"}
        return _event(rec, state, m.start("msg"), kind, fields)
    if what == "tokenizer for":
        thing = f"files for a {file} tokenizer" if file else "tokenizer files"
    elif what in ("the configuration of", "config for"):
        thing = file or "config.json"
    else:
        thing = file or "preprocessor_config.json"
    return _event(rec, state, m.start("msg"), "model_files_not_found",
                  {"path": name, "file": thing, "detail": _missing(name, thing)})


@rule(
    "no-file-named",
    ("does not appear to have a file named", "does not appear to have files named", "Could not locate ",
     "Unrecognized model in ", "Error no file named "),
    r"(?:^|(?<=[\s:]))(?P<msg>(?P<path>[^\s'\"{}]{1,400}) does not appear to have (?:a file named (?P<file>[^\s{}]+?)"
    r"|files named (?P<files>\([^)]{1,400}\)))\.?(?:\s|$)"
    r"|Could not locate (?P<lfile>[^\s{}]+) inside (?P<lpath>[^\s{}]+?)\.?(?:\s|$)"
    r"|Unrecognized model in (?P<upath>[^\s{}]+?)\. Should have a `model_type` key"
    r"|Error no file named (?P<dfile>[^\s{}]+) found in directory (?P<dpath>[^\s,{}]+?)\.?(?:\s|$))",
)
def _no_file(m, rec, state):
    if "An error occurred while trying to fetch" in rec.text:
        return []  # diffusers' warning before it falls back from .safetensors to .bin: the load goes on
    if m.group("upath"):
        path = m.group("upath")
        return _event(rec, state, m.start("msg"), "model_files_not_found",
                      {"path": path, "file": "config.json model_type",
                       "detail": f"transformers cannot tell what model '{path}' is: its config.json has no model_type "
                                 "(not a transformers model's folder)"})
    path = m.group("path") or m.group("lpath") or m.group("dpath")
    file = m.group("file") or m.group("files") or m.group("lfile") or m.group("dfile")
    if _WEIGHTS.search(file):
        # the weight files are model-weights-not-found: model_weights.py (priority 37) reads transformers' weight names;
        # a line it left (diffusers' diffusion_pytorch_model.bin, transformers 4.x's list repr) is read here
        return _event(rec, state, m.start("msg"), "model_weights_not_found",
                      {"path": path, "loader": "transformers / diffusers",
                       "detail": f"no weight file ({file.strip('[],')}) in {path}"})
    return _event(rec, state, m.start("msg"), "model_files_not_found",
                  {"path": path, "file": file, "detail": _missing(path, file)})


@rule(
    "old-loader",
    ("Couldn't reach server at '", "was not found in model name list", "was not found in tokenizers model name list"),
    r"(?<![\"'\w])(?P<msg>Couldn't reach server at '(?P<file>[^'{}\n]{1,400})' to download (?P<kind>configuration file or "
    r"configuration file is not a valid JSON file|pretrained model configuration file|pretrained weights)"
    r"|Model name '(?P<name>[^'{}\n]{1,300})' was not found in (?P<tok>tokenizers )?model name list)",
)
def _old_loader(m, rec, state):
    kind, file, name = m.group("kind"), m.group("file"), m.group("name")
    if kind == "pretrained weights":
        return _event(rec, state, m.start("msg"), "model_weights_not_found",
                      {"path": file, "loader": "transformers",
                       "detail": f"transformers could not download or find the weights at '{file}'"})
    if kind and kind.startswith("configuration file or"):
        detail = (f"transformers could not read a model configuration from '{file}': not a JSON config file (a vocabulary "
                  "or another file given where the model's directory with its config.json belongs, or a corrupt config)")
        return _event(rec, state, m.start("msg"), "model_files_not_found", {"path": file, "file": "config.json", "detail": detail})
    if kind:
        return _event(rec, state, m.start("msg"), "model_files_not_found",
                      {"path": file, "file": "config.json",
                       "detail": f"transformers could not download the configuration '{file}' (no connection to the server)"})
    what = "tokenizer vocabulary files" if m.group("tok") else "config.json"
    return _event(rec, state, m.start("msg"), "model_files_not_found",
                  {"path": name, "file": what, "detail": _missing(name, what)})


# Serving routers that load a fast tokenizer themselves (Rust):
#   huggingface/tokenizers' from_pretrained (the Rust crate and its Ruby / Java bindings), a Hub id with no
#   tokenizer.json: format!("Model \"{}\" on the Hub doesn't have a tokenizer", identifier)  (TGI's 2023 router
#   unwrapped it: `thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: "Model ..." on the Hub
#   doesn't have a tokenizer"'`, the reporter's `...` standing for the quoted name)
#   IBM's text-generation-inference launcher: resolve_tokenizer_path(...).expect("Could not find tokenizer for model")
#   -> `panicked at 'Could not find tokenizer for model: Custom { kind: InvalidInput, error: NotPresent }'` (Rust
#   1.73+ prints the message on the line after `panicked at src/main.rs:L:C:`). Other tools' warnings in the same
#   words go on with a fallback (`Could not find tokenizer for model 'x'. Using ...`): only the expect's `: <error>`
#   form is read.
@rule(
    "router-tokenizer",
    ("on the Hub doesn't have a tokenizer", "Could not find tokenizer for model: "),
    r"(?P<msg>Model (?:\\?\"(?P<name>[^\"\\\n]{1,300})\\?\"|(?P<bare>[^\s\"\\]{1,300})\\?\"?) on the Hub doesn't have a tokenizer"
    r"|Could not find tokenizer for model: (?P<err>\S[^'\n]{0,200}))",
)
def _router_tokenizer(m, rec, state):
    if m.group("name") is not None or m.group("bare") is not None:
        name = m.group("name") if m.group("name") is not None else m.group("bare")
        detail = (f"the router found no tokenizer.json for '{name}' on the Hub (a model with only a slow tokenizer, a "
                  "local path taken for a Hub id, or no access)")
        return _event(rec, state, m.start("msg"), "model_files_not_found",
                      {"path": name, "file": "tokenizer.json", "detail": detail})
    err = m.group("err").strip()
    return _event(rec, state, m.start("msg"), "model_files_not_found",
                  {"path": None, "file": "tokenizer.json",
                   "detail": f"the launcher found no tokenizer files for the model ({err})"})


PARSER = Parser(
    name="model_files",
    framework=FW,
    priority=38,  # after model_weights (37), which takes the weight files' wording; before python's exception reader (80)
    description="transformers / diffusers from_pretrained finding no config, tokenizer or processor files at the path or Hub id;"
                " serving routers finding no fast tokenizer",
    rules=[_cant_load, _no_file, _old_loader, _router_tokenizer],
)
