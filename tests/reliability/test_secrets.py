"""Secrets never reach a report: tokens ML logs really contain are masked in every output.

Token values are built at test time (never committed as literals); look-alikes that must stay
as they are come from documentation placeholders and ordinary log text.
"""

from __future__ import annotations

import json
import random
import string

import pytest

from conftest import run_cli
from nanscope.redact import redact

_rng = random.Random(1234)


def _rand(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


HF = "hf_" + _rand(string.ascii_letters, 34)
HF_ORG = "api_org_" + _rand(string.ascii_letters, 34)
WANDB_HEX = _rand("0123456789abcdef", 40)
WANDB_V2 = "wandb_v1_" + _rand(string.ascii_letters + string.digits, 27) + "_" + _rand(string.ascii_letters + string.digits, 49)
AWS = "AKIA" + _rand(string.ascii_uppercase + string.digits, 16)
GH = "ghp_" + _rand(string.ascii_letters + string.digits, 36)
BEARER = _rand(string.ascii_letters + string.digits, 32)
AWS_SECRET = _rand(string.ascii_letters, 12) + "/" + _rand(string.ascii_letters + string.digits, 14) + "+" + _rand(string.digits, 12)
PLAIN_KEY = _rand(string.ascii_letters, 10) + _rand(string.digits, 10)
SK = "sk-proj-" + _rand(string.ascii_letters + string.digits, 40)
PEM_BODY = "MIIE" + _rand(string.ascii_letters + string.digits + "+/", 60)
URL_PW = _rand(string.ascii_letters, 6) + _rand(string.digits, 4)

SECRET_LINES = [
    (f"HF_TOKEN={HF} python train.py", HF),
    (f"huggingface-cli login --token {HF}", HF),
    (f"Authorization: Bearer {BEARER}", BEARER),
    (f"WANDB_API_KEY={WANDB_HEX}", WANDB_HEX),
    (f"wandb: Appending key for api.wandb.ai to your netrc file: {WANDB_HEX}", WANDB_HEX),
    (f"wandb login {WANDB_V2}", WANDB_V2),
    (f"aws_access_key_id = {AWS}", AWS),
    (f"git clone https://x:{GH}@github.com/org/repo", GH),
    (f"{{'hub_token': '{HF_ORG}', 'push_to_hub': True}}", HF_ORG),
    (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET} aws s3 cp ckpt s3://bucket/", AWS_SECRET),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    (f'{{"aws_secret_access_key": "{AWS_SECRET}"}}', AWS_SECRET),
    (f"SECRET_KEY={PLAIN_KEY}", PLAIN_KEY),
    (f"ENCRYPTION_KEY={PLAIN_KEY}", PLAIN_KEY),
    (f"ACCESS_KEY={PLAIN_KEY}", PLAIN_KEY),
    (f"PRIVATE_KEY={PLAIN_KEY}", PLAIN_KEY),
    (f"key: {PLAIN_KEY}", PLAIN_KEY),
    (f"openai.AuthenticationError: Incorrect API key provided: {SK}", SK),
    (f"ValueError: could not load -----BEGIN RSA PRIVATE KEY-----\\n{PEM_BODY}\\n-----END RSA PRIVATE KEY-----", PEM_BODY),
    (f"fatal: unable to access 'https://trainer:{URL_PW}@git.internal.example/repo.git/'", URL_PW),
]

KEEP_LINES = [
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "'hub_token': '<HUB_TOKEN>'",
    "step 12 | loss 2.3012 | grad_norm 0.9134 | tokens_per_sec 10432.5",
    "Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.52s/it]",
    "[2024-05-01 10:00:05,001] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=2, lr=[0.0001]",
    "max_tokens: 4096, tokenizer: /models/llama/tokenizer.json",
    "sha256: 3f2a9c0d1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d",
    "tokenizer: meta-llama/Llama-2-7b-hf",
    "INFO: Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
    "task-sk-1 finished",
    "secret_file: /etc/secrets/aws_credentials_2024",
    # c10d's store-based barrier (sample_logs/public/2240.log): the key's name, not a secret
    "RuntimeError: Timed out initializing process group in store based barrier on rank: 7, for key: store_based_barrier_key:32 (world_size=8, worker_count=4, timeout=0:00:30)",
]


@pytest.mark.parametrize("line,secret", SECRET_LINES, ids=[s[0].split()[0][:20] for s in SECRET_LINES])
def test_token_shapes_are_masked(line, secret):
    out = redact(line)
    assert secret not in out
    assert "[REDACTED len=" in out


@pytest.mark.parametrize("line", KEEP_LINES)
def test_look_alikes_stay(line):
    assert redact(line) == line


def _nan_log_with_secrets() -> bytes:
    lines = ["step 1 | loss 2.30 | grad_norm 0.5"]
    for i, (line, _) in enumerate(SECRET_LINES):
        lines.append(f"step {i + 2} | loss nan | grad_norm nan | {line}")
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_no_secret_reaches_a_report(fmt):
    p = run_cli("diagnose", "-", "--format", fmt, "--color", "never", stdin=_nan_log_with_secrets())
    out = p.stdout.decode()
    assert "nan-persistent" in out
    for _, secret in SECRET_LINES:
        assert secret not in out
    assert "[REDACTED len=" in out


def test_no_secret_reaches_the_events_export():
    p = run_cli("events", "-", stdin=_nan_log_with_secrets())
    out = p.stdout.decode()
    assert len(out.splitlines()) == len(SECRET_LINES) + 1
    for _, secret in SECRET_LINES:
        assert secret not in out


def test_no_redact_opts_out():
    p = run_cli("diagnose", "-", "--format", "json", "--no-redact", stdin=_nan_log_with_secrets())
    report = json.loads(p.stdout)
    texts = " ".join(e["text"] for f in report["findings"] for e in f["evidence"])
    assert HF in texts
