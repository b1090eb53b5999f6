"""The Hugging Face stack refused to start because a package it needs is missing or too old.

huggingface/transformers, by module (the texts are the library's templates):
- training_args.py `TrainingArguments._setup_devices`: `Using the `Trainer` with `PyTorch` requires
  `accelerate>=0.20.1`: Please run `pip install transformers[torch]` or `pip install accelerate -U`` (later
  `... or `pip install 'accelerate>={ACCELERATE_MIN_VERSION}'``).
- quantizers/quantizer_bnb_4bit.py, quantizer_bnb_8bit.py `validate_environment`: `Using `bitsandbytes` 4-bit
  quantization requires Accelerate: ...`, `Using `bitsandbytes` 8-bit quantization requires the latest version of
  bitsandbytes: `pip install -U bitsandbytes``; 4.3x: `Using `bitsandbytes` 8-bit quantization requires Accelerate:
  `pip install accelerate` and the latest version of bitsandbytes: ...`, `Using `load_in_8bit=True` requires
  Accelerate: ...`; utils/quantization_config.py `BitsAndBytesConfig.post_init`: `4 bit quantization requires
  bitsandbytes>=0.39.0 - please upgrade your bitsandbytes version`. (`is_bitsandbytes_available()` is also False
  without a CUDA GPU, so the bitsandbytes-only message is read as bitsandbytes being unusable.)
- dynamic_module_utils.py `check_imports` (trust_remote_code models): `This modeling file requires the following
  packages that were not found in your environment: {names}. Run `pip install {names}`` (a package that is
  installed but fails to import is "not found" too); flash_attn among them is flash-attention-unavailable.
- utils/versions.py `require_version`: `{requirement} is required for a normal functioning of this module, but
  found {pkg}=={version}.`; utils/import_utils.py `requires_backends`: `{obj} requires the {library} library but it
  was not found in your environment.` (protobuf, SentencePiece, tokenizers, timm, ...).

OpenMMLab packages check their dependencies' versions at import (mmdet/__init__.py, mmseg, mmpose, mmdet3d, mmocr,
mmrotate): `assert (mmcv_version >= digit_version(mmcv_minimum_version) and mmcv_version < ...), f'MMCV=={mmcv.__version__}
is used but incompatible. Please install mmcv>={mmcv_minimum_version}, <{mmcv_maximum_version}.'` (1.x: `<=`; some
print the version tuples, `mmcv>=(1, 3, 13, 0, 0, 0), <(1, 7, 0, 0, 0, 0).`), and the same for MMEngine: the installed
mmcv / mmengine is outside the range this release supports (too old, or a newer major such as mmcv 2.x under a 1.x
package).

Python's own import errors say the same for any package (CPython Python/import.c, importlib._bootstrap):
`ModuleNotFoundError: No module named 'deepspeed'` (3.6+; `ImportError: No module named deepspeed` before), a dotted
name when the package exists but this release has no such module (`No module named 'transformers.deepspeed'`, moved to
transformers.integrations in 4.46), and `ImportError: cannot import name 'EncoderDecoderCache' from 'transformers'
(/.../transformers/__init__.py)` (3.7+; `cannot import name X` before) when a package imports a name another release of
its dependency removed or has not added yet.

huggingface/tokenizers reads tokenizer.json with serde (tokenizers/src/models/mod.rs `#[serde(untagged)] pub enum
ModelWrapper`, bindings/python/src/normalizers.rs / pre_tokenizers.rs `PyNormalizerTypeWrapper`,
`PyPreTokenizerTypeWrapper`, the decoders' and post-processors' wrappers): a file written by a newer tokenizers (a
model type, normalizer or pre-tokenizer this release does not have) fails in serde_derive's untagged-enum fallback,
`data did not match any variant of untagged enum {Enum} at line {l} column {c}` (serde_json adds the position), raised
by the Python binding as `Exception: ...` from `Tokenizer.from_file` / `TokenizerFast.from_file` (transformers'
tokenization_utils_fast.py), printed bare by some front ends: the installed tokenizers is too old for the model. `flash_attn` missing is flash-attention-unavailable; a circular import in
the user's code (`... from partially initialized module ...`) is no dependency and is left to the generic exception.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers._repeats import first_time
from nanscope.parsers.setup_checks import error_event, exc_type_before


def _event(m, rec, state, kind: str, detail: str, framework: str = "hf"):
    if not first_time(state, ("dependency", kind), rec.loc.line):
        return []
    return error_event(m, rec, kind, framework, detail)


@rule("hf-dependency", ("with `PyTorch` requires `accelerate", "quantization requires Accelerate", "requires Accelerate: `pip install",
                        "quantization requires the latest version of bitsandbytes", "4 bit quantization requires bitsandbytes>=",
                        "requires the following packages that were not found in your environment",
                        "is required for a normal functioning of this module, but found ",
                        "library but it was not found in your environment"),
      r"(?<![\"'])(?P<msg>Using the `Trainer` with `PyTorch` requires `accelerate>=(?P<acc>[\w.]+)`"
      r"|Using `(?:bitsandbytes` (?P<bits>\d)-bit quantization|load_in_8bit=True`) requires (?:(?P<needacc>Accelerate)|the latest version of bitsandbytes)"
      r"|(?P<b4>4) bit quantization requires bitsandbytes>=(?P<bver>[\w.]+)"
      r"|This modeling file requires the following packages that were not found in your environment: (?P<pkgs>[\w.\-, ]{1,300}?)\. Run"
      r"|(?<![\w.\-])(?P<req>[\w.\-]{1,100}(?:[<>=!]=?[\w.]{1,40})?) is required for a normal functioning of this module, but found (?P<found>[\w.\-]{1,100}==[\w.+\-]{1,40})"
      r"|(?<!\w)(?P<obj>\w{1,120}) requires the (?P<lib>[\w\-]{1,60}(?: [\w\-]{1,60})?) library but it was not found in your environment)")
def _dependency(m, rec, state):
    g = m.group
    if g("acc"):
        return _event(m, rec, state, "dependency_missing",
                      f"the HF Trainer needs accelerate>={g('acc')}, and it is missing or older (or the notebook runtime was not restarted after installing it)")
    if g("msg").startswith("Using `"):
        if g("needacc"):
            return _event(m, rec, state, "dependency_missing",
                          "loading a bitsandbytes-quantized model needs accelerate (and a working bitsandbytes), and one of them is missing")
        return _event(m, rec, state, "bitsandbytes_setup_failed",
                      f"transformers finds bitsandbytes unusable for {g('bits') or 8}-bit loading (not installed, too old, or no CUDA GPU)",
                      framework="bitsandbytes")
    if g("b4"):
        return _event(m, rec, state, "dependency_missing",
                      f"4-bit quantization needs bitsandbytes>={g('bver')}, and the installed one is older")
    if g("pkgs"):
        pkgs = [p.strip() for p in g("pkgs").split(",") if p.strip()]
        if "flash_attn" in pkgs:
            return _event(m, rec, state, "flash_attention_unavailable",
                          "the model's remote code imports flash_attn, which is not installed here (or a build that does not import with this torch / CUDA)")
        return _event(m, rec, state, "dependency_missing",
                      f"the model's remote code imports {', '.join(pkgs)[:200]}, not installed here (or not importable)")
    if g("req"):
        return _event(m, rec, state, "dependency_missing", f"this code needs {g('req')} but {g('found').rstrip('.')} is installed")
    return _event(m, rec, state, "dependency_missing", f"{g('obj')} needs the {g('lib')} library, which is not installed")


@rule("openmmlab-version", (" is used but incompatible. Please install ",),
      r"(?<![\w{])(?P<msg>(?P<pkg>MMCV|MMEngine|MMDetection|MMSegmentation)==(?P<ver>[\w.+\-]{1,40}) is used but incompatible\. "
      r"Please install (?P<need>[^\n]{1,160}?))\.?\s*$")
def _openmmlab_version(m, rec, state):
    return _event(m, rec, state, "dependency_missing",
                  f"{m.group('pkg')} {m.group('ver')} is installed, outside the range this OpenMMLab release supports ({m.group('need')})",
                  framework="mmengine")


@rule("tokenizers-format", ("did not match any variant of untagged enum",),
      r"(?<![\"'])(?P<msg>data did not match any variant of untagged enum (?P<enum>\w{1,80}Wrapper)\b)")
def _tokenizers_format(m, rec, state):
    return _event(m, rec, state, "dependency_missing",
                  f"the installed tokenizers library cannot read this tokenizer.json ({m.group('enum')}): the file was written by "
                  "a newer tokenizers release, so tokenizers (and transformers) must be upgraded", framework="hf")



# transformers' model configs before 4.43 (LlamaConfig, MistralConfig, Phi / Qwen / Falcon copies, vLLM's and remote
# code's copies) validate rope_scaling as the two-field {type, factor} dict of 2023:
#   _rope_scaling_validation: raise ValueError("`rope_scaling` must be a dictionary with with two fields, `type` and
#       `factor`, " f"got {self.rope_scaling}")   (some copies: "... `type` and `factor` or `type` and `alpha`, ...")
#   and: raise ValueError(f"`rope_scaling`'s type field must be one of ['linear', 'dynamic'], got {rope_scaling_type}")
# A config written for a newer transformers (Llama 3.1's {rope_type: llama3, factor, low_freq_factor, high_freq_factor,
# original_max_position_embeddings}, YaRN's, Phi-3's su / longrope) fails them: the installed transformers is too old
# for the model. Only such newer keys or types are read so: another dict is a config's own mistake.
_NEW_ROPE = r"(?:rope_type|low_freq_factor|high_freq_factor|original_max_position_embeddings|beta_fast|short_factor|mrope_section)"


@rule("rope-scaling-format", ("must be a dictionary with with two fields", "must be a dictionary with two fields",
                              "type field must be one of ['linear', 'dynamic']"),
      r"(?P<msg>`?rope_scaling`? must be a dictionary with(?: with)? two fields, `?type`? and `?factor`?.{0,40}?, got (?P<got>\{.*))"
      r"|(?P<msg2>`?rope_scaling`?'s type field must be one of \['linear', 'dynamic'\], got (?P<type>\w+))")
def _rope_scaling(m, rec, state):
    got, typ = m.group("got"), m.group("type")
    if got is not None:
        key = re.search(r"'" + _NEW_ROPE + r"'", got)
        if key is None:
            return []
        rtype = re.search(r"'rope_type': '(\w+)'", got)
        shown = f"rope_type {rtype.group(1)}" if rtype else f"the key {key.group(0)}"
        detail = (f"the model's rope_scaling uses the newer format ({shown}), which this transformers release does not"
                  " read: transformers is older than the model's config (4.43+ reads Llama 3.1's)")
    else:
        if typ not in ("yarn", "su", "longrope", "llama3", "dynamic_ntk", "mrope", "default", "None"):
            return []
        detail = (f"the model's rope_scaling type {typ} is newer than this transformers release, which knows linear and "
                  "dynamic only: transformers is older than the model's config")
    if not first_time(state, ("dependency", "rope_scaling"), rec.loc.line):
        return []
    start = m.start("msg") if m.group("msg") is not None else m.start("msg2")
    msg = rec.text[start:].strip()
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="hf", error="dependency_missing", message=msg[:400],
                      exc_type=exc_type_before(rec.text, start), fields={"detail": detail})

# torch._dynamo prints the backend's exception on the line after `BackendCompilerFailed: backend='inductor' raised:`; that
# inner ImportError is part of the compile failure (torch-compile-failed, whose event takes the line), not a second one
@rule("compile-raised", ("BackendCompilerFailed: backend=",), r"BackendCompilerFailed: backend=\S+ raised:\s*$")
def _compile_raised(m, rec, state):
    state["compile_raised_line"] = rec.loc.line
    return None  # not this parser's line: the generic exception parser reads it


@rule("python-import", ("ModuleNotFoundError: No module named ", "ImportError: No module named ", "ImportError: cannot import name "),
      r"(?<![\w.])(?:ModuleNotFoundError|ImportError): (?P<msg>No module named '?(?P<mod>[\w.\-]{1,200})'?"
      r"|cannot import name '?(?P<name>\w{1,200})'?(?: from '(?P<src>[\w.\-]{1,200})')?)")
def _python_import(m, rec, state):
    if "partially initialized module" in rec.text:
        return []  # a circular import in the code itself
    if state.get("compile_raised_line") == rec.loc.line - 1:
        return None  # the backend compiler's inner exception (see _compile_raised)
    mod = m.group("mod")
    if mod is not None:
        root = mod.split(".")[0]
        if root == "flash_attn":
            return _event(m, rec, state, "flash_attention_unavailable",
                          "flash_attn is not installed here (or a build that does not import with this torch / CUDA)")
        if "." in mod:
            detail = (f"the module {mod} cannot be imported: {root} is not installed, or the installed {root} release has no "
                      f"such module (the code was written for another release)")
        else:
            detail = (f"the module {mod} is not installed in this environment (for the project's own modules: the script "
                      "runs from another directory or PYTHONPATH)")
        return _event(m, rec, state, "dependency_missing", detail, framework="python")
    src = m.group("src")
    if src is None:
        detail = f"{m.group('name')} cannot be imported: the installed package is another release than the code importing it expects"
    else:
        detail = (f"{src} has no {m.group('name')}: the installed {src.split('.')[0]} is another release than the code importing it "
                  "expects (the name was removed, renamed or not added yet)")
    return _event(m, rec, state, "dependency_missing", detail, framework="python")


# PaddlePaddle's dynamic loader (paddle/fluid/platform/dynload/dynamic_loader.cc, 2.x paddle/phi/backends/dynload/
# dynamic_loader.cc): a CUDA library it dlopen()s / LoadLibrary()s is not found, "The third-party dynamic library (%s)
# that Paddle depends on is not configured correctly. (error code is %s)" then "  Suggestions:" (check the CUDA /
# cuDNN install, LD_LIBRARY_PATH / PATH). Raised (PreconditionNotMet, RuntimeError / PreconditionNotMetError) when the
# library is required; logged as a glog warning (`W0508 21:40:15.979074  1551 dynamic_loader.cc:412] ...`) when Paddle
# can go on without it (libcuda.so by that name under WSL2, whose driver lives in /usr/lib/wsl/lib): the warning is no
# failure.
_GLOG_WARNING = LazyPattern(r"^\s*W\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+\]")


@rule("paddle-dynload", ("that Paddle depends on is not configured correctly",),
      r"(?P<msg>The third-party dynamic library \((?P<lib>[^)]{1,200})\) that Paddle depends on is not configured correctly\."
      r"(?: \(error code is (?P<err>[^)]{1,200})\))?)")
def _paddle_dynload(m, rec, state):
    if _GLOG_WARNING.match(rec.text):
        return []  # Paddle goes on without it
    err = m.group("err")
    detail = f"PaddlePaddle cannot load the CUDA library {m.group('lib')}" + (f" ({err})" if err else "")
    return _event(m, rec, state, "dependency_missing", detail, framework="paddlepaddle")


PARSER = Parser(
    name="dependencies",
    framework="hf",
    priority=40,  # before the generic exception parser (python, 80)
    description="The HF stack's dependency checks: accelerate for the Trainer, bitsandbytes for quantization, remote code's imports, require_version; OpenMMLab's mmcv / mmengine version checks; tokenizer.json files too new for tokenizers; rope_scaling configs too new for transformers; failed imports",
    rules=[_dependency, _openmmlab_version, _tokenizers_format, _rope_scaling, _compile_raised, _python_import,
           _paddle_dynload],
)
