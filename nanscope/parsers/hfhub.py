"""A model the Hugging Face Hub would not hand over, and a model whose own code transformers will not run
unasked. (The refusals' wordings below are read by setup_checks.py's hf-hub-refusal rule, with the reason
the Hub gives; this file reads the Hub out of reach and trust_remote_code. One signature for all:
hf-hub-access-failed.) Every server (vLLM, SGLang, TGI, Xinference) and trainer loads configs, tokenizers and weights
through transformers / huggingface_hub, so these come out of all of them, usually as the last lines of a
traceback:

  Access to the repository (huggingface_hub/utils/_http.py hf_raise_for_status; transformers/utils/hub.py
  cached_file(s), which re-raises with its own first line):
      GatedRepoError: "Cannot access gated repo for url {url}.\nAccess to model {repo} is restricted ..."
                      (older hub: "Repo model {repo} is gated. You must be authenticated to access it.")
      transformers:  "You are trying to access a gated repo.\nMake sure to have access to it at https://huggingface.co/{repo}."
      RepositoryNotFoundError: "Repository Not Found for url: {url}." ; transformers: "{repo} is not a local folder
                      and is not a valid model identifier listed on 'https://huggingface.co/models'"
      no connection:  transformers "We couldn't connect to '{endpoint}' to load this file, couldn't find it in the
                      cached files and it looks like {repo} is not the path to a directory containing a file named
                      {file}."; LocalEntryNotFoundError "An error happened while trying to locate the file on the
                      Hub and we cannot find the requested files in the local cache. ..." / offline: "Cannot find
                      the requested files in the disk cache and outgoing traffic has been disabled."; transformers
                      4.4x+ (utils/hub.py cached_files): "We couldn't connect to '{endpoint}' to load the files, and
                      couldn't find them in the cached files."; older huggingface_hub / transformers file_utils:
                      "Connection error, and we cannot find the requested files in the disk cache" / "... in the
                      cached path. Please try again or make sure your Internet connection is on."
      rate limit:     "429 Client Error: Too Many Requests for url: {url}" (requests), "Client error '429 Too Many
                      Requests' for url '{url}'" (httpx), "429 Too Many Requests: you have reached your '{resource}'
                      rate limit." (huggingface_hub 1.2+); read by hub-rate-limit below
      a revision the repository does not have (utils/hub.py, RevisionNotFoundError; diffusers alike):
                      "{revision} is not a valid git identifier (branch name, tag name or commit id) that exists for
                      this model name. Check the model page at 'https://huggingface.co/{repo}' for available
                      revisions." ("None" when the Hub resolved no revision at all: an outage, a proxy)
  A repository with custom modelling code (transformers/dynamic_module_utils.py resolve_trust_remote_code,
  earlier configuration_auto.py / tokenization_auto.py):
      f"Loading {name} requires you to execute the configuration file in that repo on your local machine. Make
      sure you have read the code there to avoid malicious use, then set the option `trust_remote_code=True` to
      remove this error."   (also `the tokenizer file` / `the modeling file`)
      4.3x+: f"The repository for {name} contains custom code which must be executed to correctly load the model.
      ... Please pass the argument `trust_remote_code=True` to allow custom code to be run."
      vLLM's wrapper: "Failed to load the model config. If the model is a custom model not yet available in the
      HuggingFace transformers library, consider setting `trust_remote_code=True` ..." (and the tokenizer's)
  datasets' FutureWarning that a *dataset* repository has custom code ("to correctly load the dataset") is a
  warning, not this.
  A tokenizer class transformers cannot find (src/transformers/models/auto/tokenization_auto.py
  AutoTokenizer.from_pretrained, 4.x):
      raise ValueError(f"Tokenizer class {tokenizer_class_candidate} does not exist or is not currently imported.")
  The checkpoint's tokenizer_config.json names a class this transformers does not ship (Qwen2Tokenizer before 4.37)
  or one that lives in the repository's own code (QWenTokenizer) and was loaded without trust_remote_code: read
  as model_arch_unsupported (the model-architecture-unsupported signature), the detail says both.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule

FW = "hf-hub"
_REPO_URL = LazyPattern(r"huggingface\.co/(?:api/models/)?(?P<repo>[\w.-]+/[\w.-]+?)(?:/resolve/|/revision/|/auth-check|[.\s]|$)")
_EXC = LazyPattern(r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)): ")


def _event(rec, state, kind: str, key: str, fields: dict) -> list[ErrorEvent]:
    if not first_time(state, (kind,), rec.loc.line):
        return []  # the hub's error, transformers' re-raise and the server's copy of one refusal
    exc = _EXC.search(rec.text)
    return [ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error=kind, message=rec.text.strip(),
                       exc_type=exc.group("type") if exc else None, fields={"reason": key, **fields})]


# The refusals (gated, not found, not a model id) are read by setup_checks.py's hf-hub-refusal rule, which
# waits for the Hub's reason (not authenticated / not in the authorized list / awaiting review); this one
# reads the Hub out of reach.
# huggingface_hub 0.20+ (utils/_http.py, the session's offline guard; #1899): every HTTP call under HF_HUB_OFFLINE raises
# OfflineModeIsEnabled(f"Cannot reach {request.url}: offline mode is enabled. To disable it, please unset the
# `HF_HUB_OFFLINE` environment variable.") - a caller that asked the Hub for what it did not find in the cache (or
# did not look there). The f-string's source line in a traceback has `{request.url}`, no URL.
@rule(
    "hub-unreachable",
    ("We couldn't connect to '", "we cannot find the requested files in the local cache", "outgoing traffic has been disabled",
     "we cannot find the requested files in the", ": offline mode is enabled"),
    r"We couldn't connect to '[^']+' to load (?:this file|the files)"
    r"|we cannot find the requested files in the (?:local cache|disk cache|cached path)"
    r"|outgoing traffic has been disabled"
    r"|(?<![\"'{])Cannot reach (?P<offurl>[^\s{}]{1,600}): offline mode is enabled",
)
def _hub_access(m, rec, state):
    um = _REPO_URL.search(rec.text)
    if m.group("offurl"):
        return _event(rec, state, "hf_hub_access", "offline_mode", {
            "repo": um.group("repo") if um else None,
            "detail": f"offline mode is on (HF_HUB_OFFLINE) and {m.group('offurl')} was still requested: what was asked"
                      " for is not in the local cache (or the caller does not look there)"})
    return _event(rec, state, "hf_hub_access", "no_connection", {
        "repo": um.group("repo") if um else None,
        "detail": "the Hub could not be reached and the files are not in the local cache"})


# The Hub's rate limit (HTTP 429), the same failure in each client's words:
#   requests (huggingface_hub < 1.0, transformers' old file_utils; requests/models.py raise_for_status):
#       f"{status_code} Client Error: {reason} for url: {url}"  ->  429 Client Error: Too Many Requests for url: ...
#       (HfHubHTTPError's str() starts with it, `(Request ID: ...)` may follow)
#   httpx (huggingface_hub 1.0-1.1; httpx/_models.py raise_for_status): "Client error '429 Too Many Requests' for url '{url}'"
#   huggingface_hub 1.2+ (utils/_http.py hf_raise_for_status): "429 Too Many Requests: you have reached your
#       '{resource_type}' rate limit." (+ "Retry after N seconds ...", "Url: ...") or "429 Too Many Requests for url: {url}."
#   reqwest (hf_xet / hf_transfer): "HTTP status client error (429 Too Many Requests) for url ({url})"
# Any other server answers 429 too: a URL form counts when the URL is the Hub's (or its CDN, Xet storage, a
# mirror), or when huggingface_hub's own HfHubHTTPError carries it.
_HUB_HOST = LazyPattern(r"^[(']?https?://(?:[\w-]{1,63}\.){0,6}(?:huggingface\.co|hf\.co|hf-mirror\.com)(?:[/:'?)]|$)")


@rule(
    "hub-rate-limit",
    ("429 Client Error: Too Many Requests", "'429 Too Many Requests'", "(429 Too Many Requests)",
     "429 Too Many Requests for url", "429 Too Many Requests: you have reached your"),
    r"(?P<hub>HfHubHTTPError: )?(?:429 Client Error: Too Many Requests for (?i:url): |Client error '429 Too Many Requests' for url "
    r"|HTTP status client error \(429 Too Many Requests\) for url |429 Too Many Requests for (?i:url): )(?P<url>\S{1,600})"
    r"|429 Too Many Requests: you have reached your '(?P<res>[^'\s]{1,60})' rate limit",
)
def _hub_rate_limit(m, rec, state):
    url = m.group("url")
    if url is not None and not m.group("hub") and not _HUB_HOST.match(url):
        return []  # another server's 429
    um = _REPO_URL.search(url or "")
    repo = um.group("repo") if um else None
    limit = f"the Hub's '{m.group('res')}' rate limit" if m.group("res") else "the Hub's rate limit"
    on = f" on {repo}" if repo else ""
    return _event(rec, state, "hf_hub_access", "rate_limited", {
        "repo": repo,
        "detail": f"the downloads hit {limit} (429 Too Many Requests{on}): too many requests, unauthenticated or from"
                  " many processes at once"})


@rule(
    "hub-revision",
    ("is not a valid git identifier (branch name, tag name or commit id)",),
    r"(?<![{\w])(?P<rev>[^\s'\"{}]{1,120}) is not a valid git identifier \(branch name, tag name or commit id\) that exists for"
    r" this model name\. Check the model page at '(?:https://huggingface\.co/)?(?P<repo>[^'\s]+)'",
)
def _hub_revision(m, rec, state):
    rev, repo = m.group("rev"), m.group("repo")
    why = ("no revision was resolved (the Hub answered without one: an outage or a proxy)" if rev == "None"
           else f"the revision '{rev}' (a branch, tag or commit) does not exist in {repo}")
    return _event(rec, state, "hf_hub_access", "revision_not_found", {"repo": repo, "detail": why})


@rule(
    "trust-remote-code",
    ("set the option `trust_remote_code=True` to remove this error", "contains custom code which must be executed",
     "consider setting `trust_remote_code=True`"),
    r"Loading (?P<name>\S+) requires you to execute the (?P<what>configuration|tokenizer|modeling) file in that repo"
    r"|The repository (?:for )?(?P<rname>\S+) contains custom code which must be executed to correctly load the model"
    r"|(?P<vllm>Failed to load the (?:model config|tokenizer))\. If the \w+ is a custom",
)
def _trust_remote_code(m, rec, state):
    name = m.group("name") or m.group("rname")
    what = f" {name}" if name else ""
    return _event(rec, state, "trust_remote_code_required", "custom_code", {
        "model": name, "detail": f"the model{what} ships its own Python code and trust_remote_code is off"})


@rule(
    "tokenizer-class-missing",
    ("does not exist or is not currently imported",),
    r"Tokenizer class (?P<cls>\S+) does not exist or is not currently imported",
)
def _tokenizer_class(m, rec, state):
    cls = m.group("cls")
    if not first_time(state, ("tokenizer_class", cls), rec.loc.line):
        return []
    exc = _EXC.search(rec.text)
    return [ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="model_arch_unsupported", message=rec.text.strip(),
                       exc_type=exc.group("type") if exc else None,
                       fields={"architecture": cls, "engine": "the installed transformers", "reason": "tokenizer_class",
                               "detail": f"the installed transformers has no tokenizer class {cls} (a release older than"
                                         " the model, or a class of the repository's own code loaded without"
                                         " trust_remote_code)"})]


PARSER = Parser(
    name="hfhub",
    framework=FW,
    priority=37,  # before python's exception reader (80): these lines are the exception's
    description="Hugging Face Hub: a gated / missing repository or no connection; a model whose custom code needs trust_remote_code;"
                " a tokenizer class transformers does not have",
    rules=[_hub_access, _hub_rate_limit, _hub_revision, _trust_remote_code, _tokenizer_class],
)
