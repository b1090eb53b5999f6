"""The training data has no samples: the sampler or the fine-tuning tool refuses to start on an empty dataset.

- torch/utils/data/sampler.py `RandomSampler.__init__` (DataLoader(shuffle=True), the HF Trainer, accelerate):
  `ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")`
  (torch 1.3+; torch 1.0-1.2: `"num_samples should be a positive integeral value, but got num_samples={}"`),
  raised with num_samples=0 when len(dataset) is 0.
- LLaMA-Factory src/llamafactory/data/loader.py `_get_preprocessed_dataset` (older src/llmtuner/data/loader.py,
  utils.py): `RuntimeError("Cannot find valid samples, check `data/README.md` for the data format.")` (later
  `... check the data format.`) and, for pre-training, `Cannot find sufficient samples, consider increasing
  dataset size.`: every example was dropped by preprocessing (wrong columns / format, all longer than cutoff_len).
- trl trl/trainer/sft_trainer.py `SFTTrainer._prepare_packed_dataloader` (trl 0.7-0.11, packing=True): the
  ConstantLengthDataset generator yielded nothing, datasets' DatasetGenerationError / SchemaInferenceError re-raised as
  `ValueError("Error occurred while packing the dataset. Make sure that your dataset has enough samples to at least
  yield one packed sequence.")` (too little text for one max_seq_length sequence, or a formatting that gives none).
- axolotl src/axolotl/utils/data.py `prepare_dataset` (later utils/trainer.py): the eval split packs into no batch,
  `raise ValueError("eval dataset split is too small for sample_packing. You should set `eval_sample_packing: False`. ")`.

- detectron2 detectron2/data/build.py `filter_images_with_only_crowd_annotations`: `Removed {n} images with no usable
  annotations. {m} images left.` (info) and `get_detection_dataset_dicts`: `assert len(dataset_dicts), "No valid data
  found in {names}."`: with 0 images left (every instance filtered out: no valid segmentation, category ids outside
  the metadata) the training data is empty.

A positive num_samples is another error (a wrong num_samples argument), not an empty dataset, and is not read.
"""

from __future__ import annotations

from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.setup_checks import error_event


@rule("dataset-empty", ("but got num_samples=0", "Cannot find valid samples, check", "Cannot find sufficient samples, consider",
                        "Error occurred while packing the dataset", "dataset split is too small for sample_packing"),
      r"(?<![\"'])(?P<msg>num_samples should be a positive (?:integer|integeral) value, but got num_samples=0\b"
      r"|Cannot find (?P<lf>valid samples, check|sufficient samples, consider increasing dataset size)"
      r"|(?P<packing>Error occurred while packing the dataset)\. Make sure that your dataset has enough samples"
      r"|(?P<axolotl>eval dataset split is too small for sample_packing))")
def _dataset_empty(m, rec, state):
    if m.group("axolotl"):
        detail = ("the eval split is too small to pack one batch with sample_packing: set eval_sample_packing: false "
                  "or give the evaluation more data (val_set_size)")
        return error_event(m, rec, "dataset_empty", "axolotl", detail)
    if m.group("packing"):
        detail = ("SFTTrainer's packing (packing=True) produced no packed sequence: the dataset's text does not fill one "
                  "max_seq_length sequence, or the text field / formatting_func yields no text")
        return error_event(m, rec, "dataset_empty", "trl", detail)
    if m.group("lf"):
        detail = ("preprocessing kept no sample of the training data (the dataset's columns or format do not match its "
                  "dataset_info entry, or every example was filtered out)")
        return error_event(m, rec, "dataset_empty", "llamafactory", detail)
    return error_event(m, rec, "dataset_empty", "pytorch",
                       "the DataLoader's sampler got a dataset of length 0: the data path or pattern matched no sample")


# detectron2's dataset build: the info line with 0 images left, then (or alone) the assertion
@rule("detectron2-no-valid-data", ("images with no usable annotations. 0 images left", "No valid data found in "),
      r"(?P<msg>Removed (?P<n>\d+) images with no usable annotations\. 0 images left\.?"
      r"|(?<![\"'])No valid data found in (?P<names>[^\s\"']{1,200}?)\.?$)")
def _detectron2_no_valid_data(m, rec, state):
    if not first_time(state, ("dataset_empty", "detectron2"), rec.loc.line):
        return []
    if m.group("n"):
        detail = (f"detectron2 removed all {m.group('n')} images of the training set as having no usable annotations "
                  "(their instances were filtered out: no valid segmentation for a mask model, crowd-only, or category "
                  "ids outside the dataset's metadata)")
    else:
        detail = (f"detectron2 found no usable image in {m.group('names')}: every image was filtered out for having no "
                  "usable annotations, or the registered dataset is empty")
    return error_event(m, rec, "dataset_empty", "detectron2", detail)


PARSER = Parser(
    name="empty_dataset",
    framework="pytorch",
    priority=40,  # before the generic exception parser (python, 80)
    description="Training data with no samples (RandomSampler's num_samples=0, LLaMA-Factory's no valid samples, detectron2's 0 images left, trl's packing that yields no sequence)",
    rules=[_dataset_empty, _detectron2_no_valid_data],
)
