"""The scheduler or the container runtime would not start the job: Slurm refused the submission or
the step, Kubernetes cannot pull the pod's image or mount its volumes.

Slurm (the reason is slurm_strerror() of the error code, src/common/slurm_errno.c):
  sbatch (src/sbatch/sbatch.c):   sbatch: error: Batch job submission failed: Requested node configuration is not available
  srun / salloc allocation (src/common/slurm_opt / srun allocate.c, salloc.c):
                                  srun: error: Unable to allocate resources: Requested time limit is invalid (missing or exceeds some limit)
                                  salloc: error: Job submit/allocate failed: Invalid account or account/partition combination specified
  a step inside an allocation (src/srun/step_ctx.c / launch.c):
                                  srun: error: Unable to create step for job 16413634: Invalid generic resource (gres) specification
  A site's wrapper may rename the client (Biowulf: `sbatch.exe: error: Batch job submission failed: ...`).
  Not a refusal: `Unable to create step for job N: Job/step already completing or completed` (the job was
  already ending: cancelled, at its time limit) and srun's `step creation temporarily disabled, retrying`.
Kubernetes (kubelet pkg/kubelet/images, kuberuntime; kubectl):
  the container's waiting reason ImagePullBackOff / ErrImagePull / ErrImageNeverPull / InvalidImageName
  (kubectl get pods STATUS, kubectl describe `Reason:`, events `Error: ErrImagePull`), the kubelet's
  `failed to "StartContainer" for "c" with ImagePullBackOff: "Back-off pulling image \\"x\\""`,
  `Failed to pull image "x": ...`, and kubectl logs' `is waiting to start: trying and failing to pull image`.
Kubernetes volumes (kubelet pkg/kubelet/volumemanager, pkg/volume/util/operationexecutor), events of reason
FailedMount / FailedAttachVolume:
  MountVolume.SetUp failed for volume "x" : ...        MountVolume.MountDevice failed for volume "x" : ...
  AttachVolume.Attach failed for volume "x" : ...
  Unable to mount volumes for pod "p": timeout expired waiting for volumes to attach/mount ...   (<= 1.15)
  Unable to attach or mount volumes: unmounted volumes=[x], unattached volumes=[...]: timed out waiting ... (1.16+)
  Not a failure: `MountVolume.SetUp failed for volume "kube-api-access-..." : object "ns"/"kube-root-ca.crt"
  not registered` (kubelet's configmap / secret manager before the pod is registered; it retries and starts).
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule


def _error(rec, kind: str, fields: dict) -> ErrorEvent:
    framework = "slurm" if fields.get("source") == "slurm" else "kubernetes"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=framework, error=kind, message=rec.text.strip(), fields=fields)


@rule(
    "slurm-submit-refused",
    ("Batch job submission failed:", "Unable to allocate resources:", "Job submit/allocate failed:", "Unable to create step for job"),
    r"\b(?P<tool>sbatch|srun|salloc)(?:\.\w+)?: error: (?:Batch job submission failed|Unable to allocate resources|Job submit/allocate failed"
    r"|Unable to create step for job (?P<job>\d+)): (?P<why>[^\n]{1,300})",
)
def _slurm_refused(m, rec, state):
    why = m.group("why").strip()
    if why.startswith("Job/step already completing"):
        return None  # the job was ending anyway: its cancellation / time limit is the finding
    if not first_time(state, ("slurm_refused", why), rec.loc.line):
        return []
    return _error(rec, "slurm_submit_rejected", {"source": "slurm", "tool": m.group("tool"), "reason": why,
                                                 "step": m.group("job") is not None})


_PULL_REASONS = ("ImagePullBackOff", "ErrImagePull", "ErrImageNeverPull", "InvalidImageName")
_IMAGE = LazyPattern(r"(?:pulling|pull) image \\?\"(?P<image>[^\"\\]+)")


@rule(
    "k8s-image-pull",
    _PULL_REASONS + ("trying and failing to pull image", "Failed to pull image"),
    r"\b(?P<reason>ImagePullBackOff|ErrImagePull|ErrImageNeverPull|InvalidImageName)\b|trying and failing to pull image"
    r"|Failed to pull image \"",
)
def _image_pull(m, rec, state):
    img = _IMAGE.search(rec.text)
    image = img.group("image") if img else None
    if not first_time(state, ("image_pull", image), rec.loc.line):
        return []
    return _error(rec, "image_pull_failed", {"source": "kubernetes", "reason": m.group("reason") or "ErrImagePull",
                                             "image": image})


_VOLUME = LazyPattern(r'for volume "(?P<vol>[^"]+)"|volumes=\[(?P<vols>[^\]]*)\]')


@rule(
    "k8s-volume-mount",
    ("MountVolume.SetUp failed", "MountVolume.MountDevice failed", "AttachVolume.Attach failed", "Unable to mount volumes for pod",
     "Unable to attach or mount volumes"),
    r"\b(?P<op>MountVolume\.SetUp|MountVolume\.MountDevice|AttachVolume\.Attach) failed for volume|Unable to mount volumes for pod"
    r"|Unable to attach or mount volumes",
)
def _volume_mount(m, rec, state):
    if "not registered" in rec.text:
        return []  # the kubelet's object cache before the pod registers: retried, not a failure
    vol = _VOLUME.search(rec.text)
    name = (vol.group("vol") or vol.group("vols")) if vol else None
    if not first_time(state, ("volume", name), rec.loc.line):
        return []
    return _error(rec, "volume_mount_failed", {"source": "kubernetes", "volume": name, "operation": m.group("op") or "mount"})


PARSER = Parser(
    name="job_start",
    framework="slurm",
    priority=45,
    description="Slurm refusing a submission, allocation or step; Kubernetes failing to pull a pod's image or mount its volumes",
    rules=[_slurm_refused, _image_pull, _volume_mount],
)
