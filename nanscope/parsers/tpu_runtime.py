"""The TPU runtime does not start (JAX / Flax, torch_xla, TensorFlow on a Cloud TPU VM).

The wordings, by who prints them:
- libtpu's multi-process lock (openxla/xla xla/pjrt tpu client, the lockfile /tmp/libtpu_lockfile): one process per
  TPU VM may hold the chips, a second one gets `ABORTED: The TPU is already in use by process with pid <pid>. Not
  attempting to load libtpu.so in this process.` (`The TPU is already in use by another process probably owned by
  another user. Run "$ sudo lsof -w /dev/accel0" ...` when the owner is not found; `Internal error when accessing
  libtpu multi-process lockfile.` when the lock file itself fails). JAX raises it as `RuntimeError: Unable to
  initialize backend 'tpu': ABORTED: ... (set JAX_PLATFORMS='' to automatically choose an available backend)`
  (jax/_src/xla_bridge.py backends()), older jaxlib as `jaxlib.xla_extension.XlaRuntimeError: ABORTED: ...`.
- libtpu's own start-up, under a status code: `UNKNOWN: TPU initialization failed: <why>`, <why> being
  `open(/dev/accel2): Operation not permitted` (the device held by another process, or not permitted),
  `No ba16c7433 device found.` (no TPU chip on the PCI bus of this VM), `Invalid --2a886c8_slice_builder_worker_addresses
  specified. Expected 4 worker addresses, got 1.` (a slice's worker list that does not match the topology: Kaggle's
  TPU_PROCESS_ADDRESSES); torch_xla prints it as `RuntimeError: Bad StatusOr access: UNKNOWN: TPU initialization
  failed: ...` or, unchecked, glog's `F ... statusor.cc:33] Attempting to fetch value instead of handling error UNKNOWN:
  TPU initialization failed: ...` before SIGABRT; jax's make_tpu_client as `XlaRuntimeError: NOT_FOUND: No ba16c7433
  device found.`
- the XRT / TF TPU driver (torch_xla < 2.0, TensorFlow's TPU server): `Couldn't open device: /dev/accel0 (Operation not
  permitted)` / `(Device or resource busy)` ... `could not create driver instance`.

`TPU initialization failed:` is also what user code prints around its own fallback (`TPU initialization failed: {e}.
Falling back to GPU/CPU.`): the phrase counts under a status code or with one of libtpu's reasons, never with a
fallback. JAX's INFO line `Unable to initialize backend 'tpu': ...` (xla_bridge's logger.info for a backend that may fail
quietly, a machine with libtpu installed but no TPU) is the normal order of trying backends: JAX goes on with the next
one. Only the raised form counts (`RuntimeError: Unable to initialize backend 'tpu': ...`, with JAX_PLATFORMS' hint).
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.setup_checks import exc_type_before

FW = "xla"

_REASON = (r"open\(/dev/(?:accel\d+|vfio/\d+)\): [A-Z][\w ]{2,40}|No ba16c7433 device found"
           r"|Invalid --\w{1,60}_slice_builder_worker_addresses specified")


def _cause(text: str) -> tuple[str, str]:
    if re.search(r"already in use|Device or resource busy|multi-process lockfile", text):
        return "busy", "another process holds the TPU (libtpu admits one process per TPU VM)"
    if re.search(r"Operation not permitted|Permission denied|PERMISSION_DENIED", text):
        return "not_permitted", ("this process may not open the TPU device: it is still held by another (or an "
                                 "earlier) process, or the user lacks access to /dev/accel*")
    if "No ba16c7433 device found" in text:
        return "no_device", "no TPU chip is visible on this VM (the TPU is not attached, or /dev/accel* is missing)"
    if "slice_builder_worker_addresses" in text:
        return "slice_config", ("the TPU slice's worker addresses do not match its topology (TPU_PROCESS_ADDRESSES or "
                                "the slice environment of another host)")
    return "other", "the TPU runtime (libtpu) could not start"


@rule("tpu-init-failed",
      ("TPU is already in use by", "TPU initialization failed: ", "No ba16c7433 device found", "Couldn't open device: /dev/accel",
       "libtpu multi-process lockfile"),
      r"(?P<msg>The TPU is already in use by (?:process with pid (?P<pid>\d+)|another process)"
      r"|Internal error when accessing libtpu multi-process lockfile"
      r"|(?:(?P<code>[A-Z][A-Z_]{3,30}): )?TPU initialization failed: (?P<why>.{1,300})"
      r"|No ba16c7433 device found"
      r"|Couldn't open device: /dev/accel\d+(?: \((?P<errno>[A-Za-z][\w ]{2,40})\))?)")
def _tpu_init(m, rec, state):
    text = rec.text[m.start("msg"):].strip()
    if m.group("why") is not None and (m.group("code") is None and not re.match(_REASON, m.group("why"))
                                       or re.search(r"[Ff]alling back", m.group("why"))):
        return None  # a program's own 'TPU initialization failed: {e}' around its fallback, not libtpu's status
    before = rec.text[:m.start("msg")]
    if "Unable to initialize backend '" in before and "Error" not in before \
            and "JAX_PLATFORMS" not in rec.text[m.start("msg"):]:
        return None  # xla_bridge's INFO record of a backend it tried and skipped (fail_quietly): JAX went on without it
    if not first_time(state, ("tpu_init",), rec.loc.line):
        return []
    cause, detail = _cause(rec.text)
    fields = {"detail": detail, "cause": cause}
    if m.group("pid"):
        fields["holder_pid"] = int(m.group("pid"))
    dev = re.search(r"/dev/(?:accel\d+|vfio/\d+)", text)
    if dev:
        fields["device"] = dev.group(0)
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="tpu_init_failed", message=text[:400],
                      exc_type=exc_type_before(rec.text, m.start("msg")), fields=fields)


PARSER = Parser(
    name="tpu_runtime",
    framework=FW,
    priority=40,  # before the generic exception parser (python, 80): the RuntimeError / XlaRuntimeError line is this one's
    description="The TPU runtime (libtpu, XRT's TPU driver) that does not start: the TPU busy, not permitted, absent, misconfigured",
    rules=[_tpu_init],
)
