"""The framework hooks count a Gemini model's history as Gemini counts it: tiktoken times
Gemini's calibration, in a session of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from cutctx_adapters.counting import tokenizer_factor as calibration_of
from cutctx_adapters.gemini import contents
from cutctx_adapters.integrations._hooks import HookSessions
from cutctx_adapters.openai import chat


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "models/gemini-3-pro-preview",
                                   "google-gla:gemini-2.5-pro"])
def test_a_gemini_model_takes_geminis_calibration(model: str) -> None:
    assert calibration_of(model) == contents.CALIBRATION


def test_a_hook_counts_a_gemini_model_in_a_calibrated_session(tiktoken_cache: Path) -> None:
    sessions = HookSessions(None, {})
    gemini, plain = (sessions.session(chat.FORMAT, model)
                     for model in ("gemini-2.5-flash", "gpt-4o"))
    assert gemini is not plain
    text = "def parse(line):\n    return line.split(',')\n" * 20
    assert gemini.estimator is not None and plain.estimator is None
    counted = gemini.estimator.estimate_tokens(text)
    assert counted == contents.text_estimator(None).estimate_tokens(text)
