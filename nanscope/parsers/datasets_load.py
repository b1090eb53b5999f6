"""Hugging Face `datasets` could not build the training data from its files: the run ends before a step.

huggingface/datasets, by module (the texts are the library's templates, filled with the user's paths):
- packaged_modules/json/json.py, csv/csv.py (`_generate_tables`): `logger.error(f"Failed to read file '{file}'
  with error {type(e)}: {e}")` (parquet: `{type(e).__name__}`), the file's pyarrow error after it
  (`ArrowInvalid: JSON parse error: Column() changed from object to array in row 0`, `Could not convert ...
  with type str: tried to convert to double`); the json loader's `Not able to read records in the JSON file at
  {file}.` (+ `You should probably indicate the field of the JSON file containing your records. ...`).
- builder.py `_prepare_split_single`: `raise DatasetGenerationError("An error occurred while generating the
  dataset") from e` (`datasets.builder.DatasetGenerationError`, `datasets.exceptions.` since 2.15), and its
  cast variant `DatasetGenerationCastError: An error occurred while generating the dataset` + `All the data
  files must have the same columns, but at some point there are N new columns (...)` (or `N missing columns`);
  table.py `cast_table_to_schema`: `datasets.table.CastError: Couldn't cast` (older `ValueError: Couldn't cast`,
  the schemas on the next lines, ending `because column names don't match`).
- arrow_writer.py `finalize`: `SchemaInferenceError: Please pass `features` or at least one example when
  writing data` (the split came out empty).
- data_files.py: `FileNotFoundError: Unable to find '{pattern}'` (older: `Unable to resolve any data file that
  matches '{pattern}'`); load.py: `DatasetNotFoundError: Dataset '{id}' doesn't exist on the Hub or cannot be
  accessed.` (older `Couldn't find a dataset script at {path} or any data file in the same directory.`).
- the fine-tuning wrappers' dataset registries, which name every dataset in a dataset_info file: LLaMA-Factory
  src/llamafactory/data/parser.py `get_dataset_list`: `Undefined dataset {name} in {DATA_CONFIG}.` (older
  `"Undefined dataset {} in {}.".format(...)`, `... in dataset_info.json.`) and `Cannot open {config_path} due to
  {err}.` (the registry not found: started outside the repo, a wrong dataset_dir); LLamaTuner's
  `Undefined dataset {} in {}` (dataset_info.yaml).

The reader's error and the DatasetGenerationError that wraps it are one failure: the first one read holds
the reason (the file and pyarrow's words), the wrapper adds nothing, so it is not reported again.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers.base import Parser, rule
from nanscope.parsers._repeats import first_time
from nanscope.parsers.setup_checks import exc_type_before

_TYPE = r"(?<![\"'])"  # a source line quoting the template is no evidence


def _event(m, rec, state, detail: str, key: str):
    if not first_time(state, ("dataset_load",), rec.loc.line):
        return []  # the wrapper (or the logger's copy) of a failure already reported
    msg = rec.text[m.start("msg"):].strip()
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="hf", error="dataset_load_failed", message=msg[:400],
                      exc_type=exc_type_before(rec.text, m.start("msg")), fields={"detail": detail, "what": key})


@rule("datasets-read-file", ("Failed to read file '",),
      _TYPE + r"(?P<msg>Failed to read file '(?P<file>[^']{1,400})' with error (?:<class '(?P<cls>[\w.]+)'>|(?P<name>\w+)): ?(?P<why>.*))$")
def _read_file(m, rec, state):
    err = (m.group("cls") or m.group("name") or "").rsplit(".", 1)[-1]
    why = m.group("why").strip()
    return _event(m, rec, state, f"datasets could not read {m.group('file')} ({err}: {why[:200]})", "read")


@rule("datasets-json-records", ("Not able to read records in the JSON file at ",),
      _TYPE + r"(?P<msg>Not able to read records in the JSON file at (?P<file>.+?)\.(?: You should probably indicate the field|$))")
def _json_records(m, rec, state):
    return _event(m, rec, state, f"datasets found no records it can read in the JSON file {m.group('file')[:300]} "
                                 "(not one object per line / a list of objects, or fields of mixed types)", "json")


@rule("datasets-generation", ("An error occurred while generating the dataset", "All the data files must have the same columns",
                               "CastError: Couldn't cast", "because column names don't match"),
      _TYPE + r"(?P<msg>(?:(?P<cast>DatasetGenerationCastError)|DatasetGenerationError): An error occurred while generating the dataset"
      r"|All the data files must have the same columns, but at some point there are (?P<new>\d{1,6}) (?:new|missing) columns"
      r"|(?P<tcast>CastError): Couldn't cast$|(?P<names>because column names don't match)$)")
def _generation(m, rec, state):
    if m.group("cast") or m.group("new") or m.group("tcast") or m.group("names"):
        detail = "the data files do not all have the same columns (datasets cannot cast them to one schema)"
    else:
        detail = "datasets failed while generating the dataset from its files (the reader's error is above it)"
    return _event(m, rec, state, detail, "generate")


# pyarrow's JSON reader under the json loader (packaged_modules/json/json.py `paj.read_json`; arrow/cpp/src/arrow/json
# parser.cc / converter.cc): `pyarrow.lib.ArrowInvalid: JSON parse error: Column(/id) changed from object to array in
# row 0`, `... JSON parse error: Missing a name for object member. in row 12`. datasets re-raises it when its
# json.load fallback fails too, so as an exception line (a traceback's, a notebook's chain) it is the load failure.
@rule("datasets-arrow-json", ("ArrowInvalid: JSON parse error: ",),
      _TYPE + r"(?:^|[\s(])(?:pyarrow\.lib\.)?ArrowInvalid: (?P<msg>JSON parse error: (?P<why>[^\n]{1,300}))$")
def _arrow_json(m, rec, state):
    return _event(m, rec, state, f"pyarrow could not parse a JSON data file ({m.group('why').strip()[:200]}): not one "
                                 "object per line with the same fields and types", "json")


# A notebook (IPython) prints the exception's class before the traceback: `DatasetGenerationError
# Traceback (most recent call last)` (the class padded to 42 columns), and the message only at the end - a paste
# cut before it still names the failure.
@rule("datasets-generation-notebook", ("DatasetGenerationError ", "DatasetGenerationCastError "),
      r"^(?P<msg>(?:datasets\.(?:builder|exceptions)\.)?DatasetGeneration(?P<cast>Cast)?Error) {2,}Traceback \(most recent call last\)")
def _generation_notebook(m, rec, state):
    detail = ("the data files do not all have the same columns (datasets cannot cast them to one schema)" if m.group("cast")
              else "datasets failed while generating the dataset from its files (the reader's error is above it)")
    return _event(m, rec, state, detail, "generate")


@rule("datasets-empty", ("Please pass `features` or at least one example when writing data",),
      _TYPE + r"(?P<msg>Please pass `features` or at least one example when writing data)")
def _empty(m, rec, state):
    return _event(m, rec, state, "the dataset came out empty: no example was read from its files", "empty")


@rule("datasets-not-found", ("Unable to find '", "Unable to resolve any data file that matches '",
                             "doesn't exist on the Hub or cannot be accessed", "Couldn't find a dataset script at "),
      _TYPE + r"(?P<msg>(?<=FileNotFoundError: )Unable to find '(?P<pat>[^']{1,400})'"
      r"|Unable to resolve any data file that matches '(?P<pat2>[^']{1,400})'"
      r"|Dataset '(?P<id>[^']{1,300})' doesn't exist on the Hub or cannot be accessed"
      r"|Couldn't find a dataset script at (?P<script>\S+) or any data file in the same directory)")
def _not_found(m, rec, state):
    if m.group("id"):
        detail = f"the dataset {m.group('id')} is not on the Hub or not accessible (a wrong id, or private / gated without a token)"
    else:
        detail = f"no data file matches {m.group('pat') or m.group('pat2') or m.group('script')} (a wrong path or pattern)"
    return _event(m, rec, state, detail, "missing")


@rule("dataset-registry", ("Undefined dataset ", "dataset_info.json due to "),
      _TYPE + r"(?P<msg>Undefined dataset (?P<name>\S{1,300}) in (?P<cfg>\S{0,300}dataset_info\.(?:json|yaml))"
      r"|Cannot open (?P<open>\S{0,300}dataset_info\.json) due to (?P<err>.{1,300}?)\.?$)")
def _registry(m, rec, state):
    if m.group("name"):
        detail = (f"the dataset {m.group('name')} is not defined in {m.group('cfg')} (a name or file the registry does not "
                  "list, or the run started in another directory than the one holding that registry)")
    else:
        detail = (f"the dataset registry {m.group('open')} cannot be opened ({m.group('err')[:160]}): the run started "
                  "outside the project directory, or dataset_dir points elsewhere")
    return _event(m, rec, state, detail, "registry")


PARSER = Parser(
    name="datasets_load",
    framework="hf",
    priority=40,  # before the generic exception parser (python, 80)
    description="Hugging Face datasets failing to build the data: unreadable files, mixed columns, empty splits, missing files, "
                "and the fine-tuning wrappers' dataset registries (dataset_info.json)",
    rules=[_read_file, _json_records, _arrow_json, _generation, _generation_notebook, _empty, _not_found, _registry],
)
