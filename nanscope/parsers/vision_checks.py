"""Vision and diffusion stacks: the checks their own code makes, in their own words.

stable-diffusion-webui's NaN check (AUTOMATIC1111/stable-diffusion-webui modules/devices.py `test_for_nans(x, where)`,
v1.0 to v1.10; forks such as Forge and SD.Next keep the name): after the UNet step and after the VAE decode it tests
whether the whole tensor is NaN and raises `NansException(message)` with
  `A tensor with all NaNs was produced in Unet.` + (without --no-half) ` This could be either because there's not
  enough precision to represent the picture, or because your video card does not support half type. Try setting the
  "Upcast cross attention layer to float32" option in Settings > Stable Diffusion or using the --no-half commandline
  argument to fix this.`
  `A tensor with all NaNs was produced in VAE.` + (without --no-half / --no-half-vae) ` This could be because there's
  not enough precision to represent the picture. Try adding --no-half-vae commandline argument to fix this.`
  `A tensor with all NaNs was produced.` (any other `where`)
each followed by ` Use --disable-nan-check commandline argument to disable this check.` (the early-2023 releases
printed the first sentence and this one only). Printed as `modules.devices.NansException: ...`, `NansException: ...`,
or the message alone (the UI's error box). Forks word it `A tensor with NaNs was produced in {where}.` or raise a
RuntimeError with the same text. The fp16 UNet / VAE overflowed half precision: half-precision-nan.

ComfyUI's error report (Comfy-Org/ComfyUI_frontend src/utils/errorReportUtil.ts `generateErrorReport`, the frontend's
"copy report" since 2024): `# ComfyUI Error Report` / `## Error Details` / `- **Node ID:** {id}` / `- **Node Type:**
{type}` / `- **Exception Type:** {exceptionType}` / `- **Exception Message:** {exceptionMessage}` / `## Stack Trace`
with the node's frames but no exception line. The type and the message are read together and classified like any
exception (python.classify); torch.OutOfMemoryError / torch.cuda.OutOfMemoryError are the GPU running out of memory
even when the message is cut to `Allocation on device ` (the per-process-fraction wording of
c10/cuda/CUDACachingAllocator.cpp). A message the CUDA parser reads itself ("CUDA out of memory. Tried to ...", "would
exceed allowed memory") is left to it.

kohya-ss/sd-scripts library/train_util.py (`get_optimizer`, `replace_unet_modules`, the wandb logger; every release
since 2023): `raise ImportError("No {package} / {package}がインストールされていないようです")` (bitsandbytes,
lion_pytorch, dadaptation, Prodigy, schedulefree, xformers, wandb; with or without a space before が) when the
optional package the options ask for does not import: dependency-missing.

A library's class or keyword the installed release does not have (CPython Objects/moduleobject.c `module_getattro`:
`module '{name}' has no attribute '{attr}'`, 3.7+, with `. Did you mean: '{other}'?` from 3.10; Python/getargs.c,
Objects/call.c: `{qualname}() got an unexpected keyword argument '{arg}'`):
- `AttributeError: module 'diffusers' has no attribute 'DEISMultistepScheduler'` (DiffusionPipeline.from_pretrained
  does getattr(library, class_name) for each class a checkpoint's model_index.json / scheduler_config names), the same
  for transformers, accelerate, peft, timm, torchvision, huggingface_hub, mmcv / mmengine / mmdet, ultralytics;
  numpy 1.24 removing the aliases np.float / np.int / np.bool / np.object; Pillow 10 removing Image.ANTIALIAS /
  Image.LINEAR / Image.CUBIC. Only these packages: any other module (the project's own) is a bug in the code, left to
  the generic exception; `partially initialized module` (a circular import) is no version problem.
- `Accelerator.__init__() got an unexpected keyword argument 'project_dir'` (accelerate 0.17 added project_dir /
  ProjectConfiguration; 1.0 removed split_batches / dispatch_batches / even_batches for dataloader_config), also
  behind a caller's own prefix (`Exception initializing accelerator: ...`, d8ahazard/sd_dreambooth_extension).
xformers' optional-kernel probes (facebookresearch/xformers xformers/__init__.py `_is_triton_available`, and the functorch
probe next to it) catch the failed import and only warn: 0.0.1x `logger.warning(f"A matching Triton is not available, some
optimizations will not be enabled.\nError caught was: {e}")` (and `Functorch is not available, some optimizations will not
be enabled.\nError caught was: {e}`), 0.0.2x `logger.warning("A matching Triton is not available, some optimizations will
not be enabled", exc_info=True)`, which prints the caught `ModuleNotFoundError: No module named 'triton'` (or the
ImportError / AttributeError of a broken triton) with its traceback under the warning. On Windows, where Triton has no
official build, every process and DataLoader worker prints it and training goes on: the caught exception within a few
lines of the warning is the warning's, not a failure (it is claimed here, before the dependency parser reads it).
Ultralytics' dataset check (ultralytics/data/utils.py `check_det_dataset`; 8.0 to 8.3): when a val path of the data YAML
(resolved against its `path:` or the datasets directory) does not exist and the YAML has no download script, it raises
`FileNotFoundError(f"Dataset '{name}' images not found, missing path '{p}'" + f"\nNote dataset download directory is
'{DATASETS_DIR}'. You can update this in '{SETTINGS_FILE}'")` (8.0 / 8.1: `images not found ⚠️, missing path '...'`, 8.0.x
`missing paths ['...']`; a console without emoji prints ` , missing path`), and the trainer re-raises it as
`RuntimeError: Dataset '{data}' error ❌ {e}` (ultralytics/engine/trainer.py), the message on the next lines. With a
download script the same sentence is only a warning before the download: only the raised form is read (the `Note dataset
download directory` line, or the trainer's `Dataset ... error` line with it), and check_file's `'{file}' does not exist`
under that line is the YAML itself missing. YOLOv5 / v7 / v9 (utils/general.py `check_dataset`) print `Dataset not found,
missing paths: [...]` (info; `WARNING: Dataset not found, nonexistent paths: [...]` in 2020 releases) and raise
`Exception('Dataset not found ❌')` (`Dataset not found` without the emoji in forks) when nothing downloads it: the raise
is read. Both are dataset-path-not-found. Ultralytics 8.0.x raised `FileNotFoundError(f"\nDataset '{dataset}' not found ⚠️,
missing paths [...]")`, so the bare `FileNotFoundError: ` line is followed by the message: read together. A data argument
that names no existing file or folder is taken for a dataset Ultralytics ships (check_cls_dataset: `Dataset not found ⚠️,
missing path {dir}, attempting download...`, then ultralytics/utils/downloads.py `⚠️ Download failure, retrying {i}/{n}
{url}...`, `❌ Failed to download {url}...` or `❌  Download failure for {url}. Retry limit reached.`): the last retry
failing is the missing path (a download that succeeds says nothing).
pycocotools' COCO.loadRes (cocodataset/cocoapi PythonAPI/pycocotools/coco.py, every release, and the forks that vendor it):
`assert type(anns) == list, 'results in not an array of objects'` then `assert set(annsImgIds) == (set(annsImgIds) &
set(self.getImgIds())), 'Results do not correspond to current coco set'`: the detections handed to the COCO evaluation
name image ids the ground-truth annotation file does not have (another split's json, ids remapped by the data pipeline,
a results file from another run): coco-results-mismatch. The assert's source line (the message in quotes) is no error.
Images a data pipeline cannot decode: Pillow's Image.open (PIL/Image.py) raises `UnidentifiedImageError(f"cannot identify
image file {fp!r}")` (7.0+; `OSError` / `IOError: cannot identify image file ...` before), ImageFile.load `OSError: image
file is truncated ({n} bytes not processed)` (`image file is truncated` alone in old releases), `DecompressionBombError:
Image size ({n} pixels) exceeds limit of {m} pixels, could be decompression bomb DOS attack.`; OpenCV's cvtColor /
resize given the None that cv2.imread returns for a file it cannot read: `error: (-215:Assertion failed) !_src.empty()
in function 'cvtColor'` (`!ssize.empty()` in 'resize'; 4.5.3+ qualify it, `'cv::cvtColor'`; 3.x before 3.4.3 print
`(-215) !_src.empty() in function cvtColor` without quotes, 2.4 `OpenCV Error: Assertion failed (!_src.empty()) in
cvtColor, file ...`): image-decode-failed (a file missing, empty, truncated, an LFS or cloud placeholder, or a format
the library does not read).
Packages imported without their compiled part: mmcv's ops load `mmcv._ext` (mmcv/utils/ext_loader.py
`importlib.import_module('mmcv.' + name)`), so the lite mmcv or a build without ops fails `No module named 'mmcv._ext'`;
detectron2, maskrcnn-benchmark and GroundingDINO import their `_C` the same way: extension-build-mismatch (the
compiled extension does not fit this install).
mmcv's op dispatcher (mmcv/ops/csrc/common/pytorch_device_registry.hpp `Dispatch`) refuses an op the build has no
kernel for: `nms_impl: implementation for device cuda:0 not found.` (any `<op>_impl`), i.e. mmcv without its CUDA ops:
extension-build-mismatch.
A decoded image that is NaN: numpy warns `RuntimeWarning: invalid value encountered in cast` when it is cast to uint8,
and the warnings module prints the source line under it (diffusers image_processor.py `images = (images *
255).round().astype("uint8")`, the web UI's `x_sample.astype(np.uint8)`): the image comes out black, the fp16 VAE (or
UNet) overflowed: half-precision-nan. The warning alone, or over another cast, says nothing.
pycocotools' COCO(annotation_file) indexes the json directly (coco.py `createIndex`: `dataset['annotations']`,
`ann['image_id']`, `ann['id']`, `dataset['images']`, `dataset['categories']`; `getCatIds`: `self.dataset['categories']`):
a file that is not a complete COCO instances file fails with a bare `KeyError: 'categories'` / `'id'` (or `TypeError:
string indices must be integers` when a field is not a list of objects) under a pycocotools/coco.py frame:
coco-annotations-invalid. The same KeyError without that frame is the code's own.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.python import classify
from nanscope.parsers.setup_checks import error_event

_WHERE = {"unet": "the UNet", "the unet": "the UNet", "vae": "the VAE", "the vae": "the VAE"}


@rule("sd-nan-check", ("NaNs was produced",),
      r"(?<![\"'\w])(?P<msg>A tensor with (?P<all>all )?NaNs was produced(?: in (?P<where>[\w ]{1,40}?))?\.)")
def _sd_nan_check(m, rec, state):
    before = rec.text[:m.start()].rstrip()
    if before and not before.endswith(("Exception:", "Error:", ":")):
        return None  # a sentence quoting the message
    raw = (m.group("where") or "").strip()
    where = _WHERE.get(raw.lower(), raw or "the model")
    half = "--no-half" in rec.text or "half type" in rec.text or "precision" in rec.text
    if not first_time(state, ("sd-nan", where.lower()), rec.loc.line):
        return []
    detail = (f"the output of {where} was all NaN" + (" under half precision (fp16)" if half else "")
              + ": the web UI's NaN check stopped the generation")
    return error_event(m, rec, "half_precision_nan", "diffusers", detail, where=where)


_REPORT_TYPE = LazyPattern(r"^\s*-\s*\*\*Exception Type:\*\*\s*(?P<type>[\w.]{1,120})\s*$")


@rule("comfyui-report-type", ("**Exception Type:**",), r"\*\*Exception Type:\*\*")
def _comfyui_report_type(m, rec, state):
    t = _REPORT_TYPE.match(rec.text)
    if t is None:
        return None
    state["comfy_type"] = (t.group("type"), rec.loc.line)
    return []


_CUDA_READS = LazyPattern(r"out of memory|would exceed allowed memory", re.IGNORECASE)


@rule("comfyui-report-message", ("**Exception Message:**",), r"^\s*-\s*\*\*Exception Message:\*\*\s*(?P<msg>.*)$")
def _comfyui_report_message(m, rec, state):
    held = state.pop("comfy_type", None)
    if held is None or not 0 < rec.loc.line - held[1] <= 2:
        return None
    exc_type, msg = held[0], m.group("msg").strip()
    if _CUDA_READS.search(msg):
        return None  # the CUDA parser reads the allocator's own wording
    if exc_type.rsplit(".", 1)[-1] == "OutOfMemoryError" and not exc_type.startswith("ray."):
        return ErrorEvent(loc=rec.loc, text=rec.text, framework="pytorch", error="cuda_oom",
                          message=f"{exc_type}: {msg}".strip(), exc_type=exc_type,
                          fields={"detail": f"the GPU ran out of memory in a ComfyUI node ({exc_type}: {msg or 'no message'})".replace(": )", ")"),
                                  "report": "comfyui"})
    kind = classify(exc_type, msg)
    if kind in ("interrupted", "launcher_failed"):
        return []
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="python", error=kind, message=msg, exc_type=exc_type,
                      fields={"report": "comfyui"})


@rule("kohya-optional-import", ("がインストールされていないようです",),
      r"(?:ImportError: )?(?P<msg>No (?P<pkg>[\w.\-]{1,60}) / (?P=pkg) ?がインストールされていないようです)")
def _kohya_import(m, rec, state):
    pkg = m.group("pkg")
    if rec.text[max(0, m.start() - 1):m.start()] in ("\"", "'"):
        return None  # the raise statement's source line in a traceback
    return error_event(m, rec, "dependency_missing", "accelerate",
                       f"sd-scripts needs {pkg} for the options given (optimizer, attention or logger) and it does not import "
                       "(not installed in this venv, or a build that fails to load)", package=pkg)


# the packages whose classes and functions a training script names: a missing attribute is another release
_LIBRARIES = {
    "diffusers": "diffusers", "transformers": "transformers", "accelerate": "accelerate", "peft": "peft", "timm": "timm",
    "torchvision": "torchvision", "huggingface_hub": "huggingface_hub", "mmcv": "mmcv", "mmengine": "mmengine",
    "mmdet": "mmdet", "ultralytics": "ultralytics", "numpy": "numpy", "np": "numpy", "PIL.Image": "Pillow",
    "safetensors": "safetensors", "xformers": "xformers", "open_clip": "open_clip",
}
_REMOVED = {
    ("numpy", "float"): "numpy 1.24 removed the np.float alias (use float or np.float64)",
    ("numpy", "int"): "numpy 1.24 removed the np.int alias (use int or np.int64)",
    ("numpy", "bool"): "numpy 1.24 removed the np.bool alias (use bool or np.bool_)",
    ("numpy", "object"): "numpy 1.24 removed the np.object alias (use object)",
    ("Pillow", "ANTIALIAS"): "Pillow 10 removed Image.ANTIALIAS (use Image.LANCZOS / Image.Resampling.LANCZOS)",
}


@rule("library-attribute", ("has no attribute '",),
      r"(?<![\w.])AttributeError: (?P<msg>module '(?P<mod>[\w.]{1,60})' has no attribute '(?P<attr>\w{1,120})')")
def _library_attribute(m, rec, state):
    pkg = _LIBRARIES.get(m.group("mod"))
    if pkg is None or "partially initialized" in rec.text:
        return None
    attr = m.group("attr")
    hint = _REMOVED.get((pkg, attr))
    if hint is None and pkg == "Pillow" and attr in ("LINEAR", "CUBIC", "NEAREST", "BILINEAR", "BICUBIC", "LANCZOS"):
        hint = "Pillow 10 moved the resampling constants to Image.Resampling"
    detail = (f"the installed {pkg} has no {attr}: " + (hint if hint else
              "the code (or the checkpoint's config that names it) was written for another release"))
    return error_event(m, rec, "dependency_missing", "python", detail, package=pkg)


@rule("accelerator-argument", ("Accelerator.__init__() got an unexpected keyword argument '",),
      r"(?<![\w.])(?P<msg>Accelerator\.__init__\(\) got an unexpected keyword argument '(?P<arg>\w+)')")
def _accelerator_argument(m, rec, state):
    before = rec.text[:m.start()].rstrip()
    if before and not before.endswith(":"):
        return None  # prose quoting it
    arg = m.group("arg")
    return error_event(m, rec, "dependency_missing", "accelerate",
                       f"accelerate's Accelerator does not take {arg!r}: the installed accelerate is another release than the "
                       "code expects (project_dir arrived in 0.17; split_batches / dispatch_batches / even_batches moved "
                       "into dataloader_config in 1.0)", argument=arg)


# the warning's line, then (exc_info=True) the caught exception's traceback: a frame or two and the exception line
_PROBE_SPAN = 8


@rule("xformers-probe-warning", ("A matching Triton is not available, some optimizations will not be enabled",
                                 "Functorch is not available, some optimizations will not be enabled"),
      r"(?:A matching Triton|Functorch) is not available, some optimizations will not be enabled")
def _xformers_probe_warning(m, rec, state):
    state["xformers_probe"] = rec.loc.line
    return None  # a warning only; other parsers may read the line too


@rule("xformers-probe-exception", ("triton'", "functorch'"),
      r"^\s*(?:\w+\.)*(?:ModuleNotFoundError|ImportError|AttributeError): ")
def _xformers_probe_exception(m, rec, state):
    seen = state.get("xformers_probe")
    if seen is None or not 0 < rec.loc.line - seen <= _PROBE_SPAN:
        return None
    if "triton" not in rec.text and "functorch" not in rec.text:
        return None  # another import failed near the warning: not the probe's
    return []  # the probe's caught exception, printed with the warning


_MISSING = LazyPattern(r"(?:images )?not found(?: ?\S{0,3})?\s*, missing paths? \[?'(?P<path>[^']{1,300})'")


def _dataset_event(rec, state, name, path, msg, exc_type):
    if not first_time(state, ("dataset-path", name), rec.loc.line):
        return []
    what = f"the data YAML {name!r}" if name else "the data YAML"
    detail = (f"{what} points at images that do not exist ({path})" if path else
              f"{what} points at a dataset path that does not exist")
    return [ErrorEvent(loc=rec.loc, text=rec.text, framework="ultralytics", error="dataset_path_not_found",
                       message=msg[:400], exc_type=exc_type, fields={"detail": detail, "path": path, "dataset": name})]


@rule("ultralytics-dataset-error", ("Error: Dataset '",),
      r"^\s*(?P<type>(?:\w+\.)*\w*Error): (?P<msg>Dataset '(?P<name>[^']{1,300})' error\b.*)$")
def _ultralytics_dataset_error(m, rec, state):
    rest = rec.text[m.end("name"):]
    found = _MISSING.search(rest)
    if found is not None or "does not exist" in rest:
        return _dataset_event(rec, state, m.group("name"), found.group("path") if found else None,
                              m.group("msg").strip(), m.group("type"))
    # the reason is on the next line: held as the exception it is unless that line names a missing path
    out = _release(state)
    state["pending"] = ErrorEvent(loc=rec.loc, text=rec.text, framework="python", message=m.group("msg").strip(),
                                  error=classify(m.group("type"), m.group("msg")), exc_type=m.group("type"),
                                  fields={"dataset": m.group("name")})
    return out


def _release(state: dict) -> list:
    held = state.pop("pending", None)
    return [held] if held is not None else []


def _held_dataset_error(state: dict, line: int):
    held = state.get("pending")
    if held is None or "dataset" not in (held.fields or {}) or not 0 < line - held.loc.line <= 2:
        return None
    return state.pop("pending")


def _resolve(held: ErrorEvent, rec, state, path) -> list:
    name = held.fields["dataset"]
    ev = _dataset_event(rec, state, name, path, held.message + " " + rec.text.strip(), held.exc_type)
    if not ev:
        return []
    held.error, held.framework, held.message = "dataset_path_not_found", "ultralytics", ev[0].message
    held.fields = ev[0].fields
    return [held]


@rule("bare-exception-header", ("FileNotFoundError:", "RuntimeError:"),
      r"^\s*(?P<type>(?:\w+\.)*(?:FileNotFoundError|RuntimeError)):\s*$")
def _bare_exception_header(m, rec, state):
    state["bare_header"] = (m.group("type"), rec.loc.line)
    return None  # the message is on the next line (Ultralytics 8.0's f"\nDataset ..."): whoever reads it


@rule("ultralytics-dataset-missing", ("images not found", "' not found", "does not exist"),
      r"(?:Dataset '(?P<name>[^']{1,300})' (?:images )?not found|^\s*'(?P<file>[^']{1,300})' does not exist)")
def _ultralytics_dataset_missing(m, rec, state):
    header = state.pop("bare_header", None)
    if m.group("name") is not None and header is not None and rec.loc.line - header[1] == 1:
        found = _MISSING.search(rec.text)  # 8.0.x: FileNotFoundError(f"\nDataset '{name}' not found ⚠️, missing paths [...]")
        return _dataset_event(rec, state, m.group("name"), found.group("path") if found else None, rec.text.strip(), header[0])
    held = _held_dataset_error(state, rec.loc.line)
    if m.group("file") is not None:
        if held is None:
            return None
        return _resolve(held, rec, state, m.group("file"))
    found = _MISSING.search(rec.text)
    path = found.group("path") if found else None
    if held is not None:
        return _resolve(held, rec, state, path)
    state["dataset_missing"] = (m.group("name"), path, rec.text.strip(), rec.loc.line)
    return []  # raised only if the Note line follows (a download script makes it a warning)


@rule("ultralytics-dataset-note", ("Note dataset download directory is '",), r"Note dataset download directory is '")
def _ultralytics_dataset_note(m, rec, state):
    held = state.pop("dataset_missing", None)
    if held is None or not 0 < rec.loc.line - held[3] <= 2:
        return []  # the raise's tail: its error line was read
    return _dataset_event(rec, state, held[0], held[1], held[2], "FileNotFoundError")


@rule("ultralytics-dataset-download", ("attempting download...",),
      r"Dataset not found\W{0,4}, missing path (?P<path>\S{1,300}), attempting download\.\.\.")
def _ultralytics_dataset_download(m, rec, state):
    state["dataset_download"] = (m.group("path"), rec.text.strip(), rec.loc.line)
    return []  # check_cls_dataset tries to download a name it did not find: a failure only if that fails


_DOWNLOAD_FAILED = LazyPattern(r"Download failure, retrying (?P<i>\d+)/(?P<n>\d+)|Failed to download |Download failure for \S+\. Retry limit reached")


@rule("ultralytics-download-failed", ("Download failure", "Failed to download "), r"Download failure|Failed to download ")
def _ultralytics_download_failed(m, rec, state):
    held = state.get("dataset_download")
    if held is None or rec.loc.line - held[2] > 40:
        return None
    f = _DOWNLOAD_FAILED.search(rec.text)
    if f is None or (f.group("i") is not None and f.group("i") != f.group("n")):
        return []  # a retry: it may still succeed
    state.pop("dataset_download", None)
    ev = _dataset_event(rec, state, "", held[0], held[1], None)
    for e in ev:
        e.fields["detail"] = (f"the dataset {held[0]} does not exist locally and the download Ultralytics then tried "
                              "failed (a wrong data path, or no network for a dataset it ships)")
    return ev


@rule("yolov5-dataset-not-found", ("Dataset not found",),
      r"^\s*(?P<type>(?:\w+\.)*(?:Exception|\w*Error)): (?P<msg>Dataset not found\b\W*)$")
def _yolov5_dataset_not_found(m, rec, state):
    return _dataset_event(rec, state, "", None, m.group("msg").strip(), m.group("type"))


@rule("coco-results-mismatch", ("Results do not correspond to current coco set", "results in not an array of objects"),
      r"(?P<msg>Results do not correspond to current coco set|results in not an array of objects)")
def _coco_results_mismatch(m, rec, state):
    before = rec.text[:m.start()]
    if before.rstrip().endswith(("'", '"', ",")) or before.strip().startswith(("assert", "'", '"')):
        return None  # the assert's source line in a traceback
    if not first_time(state, ("coco-results",), rec.loc.line):
        return []
    if m.group("msg").startswith("results in"):
        detail = ("pycocotools' loadRes was handed results that are not a list of detections (a dict such as a whole COCO "
                  "json, or an empty / malformed results file)")
    else:
        detail = ("the detections handed to pycocotools' COCO evaluation (loadRes) name image ids that the ground-truth "
                  "annotation file does not have: the predictions and the annotation json describe different images")
    return error_event(m, rec, "coco_results_mismatch", "pytorch", detail)


_IMAGE_DECODE = (
    r"(?P<pil>cannot identify image file (?P<file>[^\n]{1,300}))"
    r"|(?P<trunc>image file is truncated(?: \(\d+ bytes not processed\))?)"
    r"|(?P<bomb>Image size \(\d+ pixels\) exceeds limit of \d+ pixels, could be decompression bomb DOS attack\.?)"
    r"|(?P<cv>\(-215(?::Assertion failed)?\) !_?s(?:rc|size)\.empty\(\) in function '?(?P<fn>[\w:]+)'?"
    r"|Assertion failed \(!_?s(?:rc|size)\.empty\(\)\) in (?P<fn2>[\w:]+))"
)


@rule("image-decode-failed", ("cannot identify image file", "image file is truncated", "could be decompression bomb",
                              ".empty() in function ", ".empty()) in "),
      r"(?<![\"'\w])(?:(?P<type>(?:\w+\.)*\w*(?:Error|Exception)): |error: )?(?:[^\n]{0,200}?)(?P<msg>" + _IMAGE_DECODE + ")")
def _image_decode_failed(m, rec, state):
    text = rec.text
    head = text[:m.start("msg")]
    if m.group("type") is None and "error" not in head.lower() and head.strip():
        return None  # prose, or a source line quoting the message
    if re.search(r"\b(?:raise|msg|message)\b[^\n]*[\"']\s*$", head) or head.rstrip().endswith(("'", '"', "(")):
        return None
    if not first_time(state, ("image-decode",), rec.loc.line):
        return []
    if m.group("pil"):
        detail = (f"Pillow cannot decode the image file {m.group('file').strip()[:160]}: not an image it knows (empty, "
                  "truncated, an HTML / LFS / cloud placeholder, or a format without a decoder)")
    elif m.group("trunc"):
        detail = "Pillow read an image file that ends early (a truncated or partly downloaded image)"
    elif m.group("bomb"):
        detail = "Pillow refused an image larger than Image.MAX_IMAGE_PIXELS (its decompression-bomb guard)"
    else:
        fn = (m.group("fn") or m.group("fn2") or "function").split("::")[-1]
        detail = (f"OpenCV's {fn} got an empty image: cv2.imread returned None for a file that is missing, "
                  "unreadable or not an image (the path the dataset built, or the file itself)")
    return error_event(m, rec, "image_decode_failed", "pytorch", detail)


# a package imported without its compiled part: OpenMMLab's ops (mmcv/ops/*.py ext_loader.load_ext('_ext', [...]):
# importlib.import_module('mmcv._ext')), detectron2 / maskrcnn-benchmark / GroundingDINO's `from . import _C`
_COMPILED = {"mmcv": "_ext", "mmcv_full": "_ext", "detectron2": "_C", "maskrcnn_benchmark": "_C", "groundingdino": "_C"}


@rule("compiled-ops-missing", ("No module named 'mmcv._ext'", "._C'"),
      r"(?<![\"'\w])(?:(?:\w+\.)*(?:ModuleNotFoundError|ImportError): )?(?P<msg>No module named '(?P<pkg>\w+)\.(?P<ext>_ext|_C)')")
def _compiled_ops_missing(m, rec, state):
    pkg, ext = m.group("pkg"), m.group("ext")
    if _COMPILED.get(pkg) != ext:
        return None
    if not first_time(state, ("compiled-ops", pkg), rec.loc.line):
        return []
    if pkg.startswith("mmcv"):
        detail = ("mmcv is installed without its compiled ops (mmcv._ext): the lite package (mmcv 1.x without -full, "
                  "mmcv-lite), a wheel for another platform / torch / CUDA, or a source build without MMCV_WITH_OPS=1")
    else:
        detail = (f"{pkg}'s compiled extension ({pkg}.{ext}) is not built: the package was not compiled for this torch "
                  "(pip install -e . / python setup.py build develop), or it is imported from a source folder without the build")
    return error_event(m, rec, "extension_build_mismatch", "pytorch", detail, package=pkg)


# mmcv's op dispatcher (mmcv/ops/csrc/common/pytorch_device_registry.hpp Dispatch: TORCH_CHECK(f_ptr != nullptr, name,
# ": implementation for device ", device, " not found.")): the op was compiled without a kernel for that device
@rule("mmcv-op-device", (": implementation for device ",),
      r"(?<![\"'\w])(?P<msg>(?P<op>\w{1,80}_impl): implementation for device (?P<dev>[\w:]{1,40}) not found\.?)")
def _mmcv_op_device(m, rec, state):
    if not first_time(state, ("mmcv-op-device", m.group("op")), rec.loc.line):
        return []
    dev = m.group("dev")
    detail = (f"mmcv's compiled op {m.group('op')} has no {dev.split(':')[0].upper()} implementation in the installed build "
              f"(it was asked to run on {dev}): an mmcv without its CUDA ops (the lite package, a CPU-only wheel or build), or "
              "one built for another CUDA / torch")
    return error_event(m, rec, "extension_build_mismatch", "mmengine", detail, package="mmcv")


# numpy's RuntimeWarning when NaN is cast to an integer type, shown by the warnings module with the source line under
# it: diffusion post-processing (diffusers image_processor.py `images = (images * 255).round().astype("uint8")`,
# stable-diffusion-webui processing.py `x_sample = x_sample.astype(np.uint8)`, a repo's own `(npimg * 255).astype(np.uint8)`)
# turning a decoded image that is NaN into a black one
@rule("nan-image-cast", ("invalid value encountered in cast",), r"RuntimeWarning: invalid value encountered in cast\b")
def _nan_image_cast(m, rec, state):
    state["nan_cast"] = rec.loc.line
    return []


_UINT8_CAST = LazyPattern(r"\.astype\(\s*(?:np\.|numpy\.)?[\"']?uint8[\"']?\s*\)")


@rule("nan-image-cast-source", ("uint8",), r"^\s*(?P<msg>\S.*\.astype\(.*)$")
def _nan_image_cast_source(m, rec, state):
    seen = state.get("nan_cast")
    if seen is None or rec.loc.line - seen != 1 or not _UINT8_CAST.search(rec.text):
        return None
    state.pop("nan_cast", None)
    if not first_time(state, ("sd-nan", "image-cast"), rec.loc.line):
        return []
    return error_event(m, rec, "half_precision_nan", "diffusers",
                       "the decoded image was NaN, so its cast to uint8 gave a black image (numpy's 'invalid value "
                       "encountered in cast'): the VAE (SDXL's and Flux's are known to) or the UNet overflowed half precision",
                       where="the VAE")


# pycocotools' COCO(annotation_file) / getCatIds / loadRes index the json's fields directly (coco.py createIndex:
# dataset['annotations'], ann['image_id'], ann['id'], dataset['images'], dataset['categories']; getCatIds:
# self.dataset['categories']): a file without them fails with the bare KeyError (or a TypeError when a field is not a
# list of objects), under a pycocotools/coco.py frame
_COCO_FRAME = LazyPattern(r"pycocotools[/\\]coco\.pyc?(?:\", line \d+,| ) ?in (?P<fn>\w+)")
_COCO_FIELDS = ("images", "annotations", "categories", "id", "image_id", "category_id", "bbox", "segmentation", "area",
                "iscrowd", "file_name", "info", "licenses", "name", "type")
_COCO_SPAN = 8


@rule("pycocotools-frame", ("pycocotools",), r"pycocotools[/\\]coco\.py")
def _pycocotools_frame(m, rec, state):
    f = _COCO_FRAME.search(rec.text)
    if f is not None:
        state["coco_frame"] = (f.group("fn"), rec.loc.line)
    return None  # a frame: other parsers read the traceback too


@rule("coco-field-missing", ("KeyError: '", "indices must be integers"),
      r"^\s*(?P<msg>KeyError: '(?P<key>\w{1,40})'(?=\s*$)|TypeError: (?P<what>string|list) indices must be integers\b)")
def _coco_field_missing(m, rec, state):
    held = state.get("coco_frame")
    if held is None or not 0 < rec.loc.line - held[1] <= _COCO_SPAN:
        return None
    key = m.group("key")
    if key is not None and key not in _COCO_FIELDS:
        return None
    state.pop("coco_frame", None)
    if not first_time(state, ("coco-annotations",), rec.loc.line):
        return []
    fn = held[0]
    if key is not None:
        detail = (f"the annotation json has no '{key}' where pycocotools reads it (coco.py {fn}): the file is not a "
                  "complete COCO instances file (images, annotations with id / image_id / category_id, categories)")
    else:
        detail = (f"a field of the annotation json is not the list of objects pycocotools expects (coco.py {fn}: "
                  f"{m.group('what')} indices): the file is not in COCO format (annotations nested under another key, "
                  "a dict where a list is expected)")
    return error_event(m, rec, "coco_annotations_invalid", "pytorch", detail, field=key or "")


PARSER = Parser(
    name="vision_checks",
    framework="diffusers",
    priority=39,  # before the dependency parser (40: xformers' caught import) and the generic exception parser (python, 80)
    description="Vision / diffusion stacks: stable-diffusion-webui's NaN check, ComfyUI's error report, kohya sd-scripts' "
                "optional imports, library attributes and Accelerator arguments another release lacks; xformers' Triton probe warning; Ultralytics / YOLOv5 data YAMLs naming paths that do not exist; "
                "pycocotools' loadRes given results for other images; images Pillow / OpenCV cannot decode; mmcv / detectron2 imported without their compiled ops, "
                "mmcv ops without a kernel for the device, NaN images cast to uint8, COCO annotation files without the fields pycocotools reads",
    rules=[_sd_nan_check, _comfyui_report_type, _comfyui_report_message, _kohya_import, _library_attribute,
           _accelerator_argument, _xformers_probe_warning, _xformers_probe_exception, _ultralytics_dataset_error,
           _bare_exception_header, _ultralytics_dataset_missing, _ultralytics_dataset_note, _ultralytics_dataset_download,
           _ultralytics_download_failed, _yolov5_dataset_not_found, _coco_results_mismatch, _image_decode_failed, _compiled_ops_missing,
           _mmcv_op_device, _nan_image_cast, _nan_image_cast_source,
           _pycocotools_frame, _coco_field_missing],
)
