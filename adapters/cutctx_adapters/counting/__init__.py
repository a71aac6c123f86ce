"""Token counts: a tiktoken estimator per model, Claude's calibration, windows, image sizes,
and the correction the providers' reported usage teaches.

Every figure a plan is made from starts here: text estimates (``estimator_for``), the factor
that puts them on Claude's scale (``calibration_for``), the prompt budget a model's context
window leaves (``prompt_budget``), image dimensions read from their headers, and a model's
``Calibration`` from the input its replies report (``reported_input``).
"""

from ._cache import DEFAULT_CACHE_BYTES, CountCache
from ._calibration import (
    CALIBRATION,
    GEMINI_CALIBRATION,
    NEW_TOKENIZER_CALIBRATION,
    CalibratedEstimator,
    calibrated_estimator,
    calibration_for,
    claude_estimator,
    is_claude,
    is_gemini,
    scale_to_total,
    tokenizer_factor,
)
from ._estimators import (
    ApproximateTokensWarning,
    check_model,
    chosen_estimator,
    estimator_for,
    use_when_unavailable,
)
from ._images import Base64Bytes, data_url_bytes, image_size, image_size_from_data_url
from ._payloads import decoded_base64, opaque_tokens, pdf_pages
from ._usage import (
    Calibration,
    UsageEstimator,
    calibration_of,
    near_limit,
    reported_input,
)
from ._windows import context_window, input_limit, model_name, prompt_budget

__all__ = [
    "CALIBRATION",
    "DEFAULT_CACHE_BYTES",
    "GEMINI_CALIBRATION",
    "NEW_TOKENIZER_CALIBRATION",
    "ApproximateTokensWarning",
    "Base64Bytes",
    "CalibratedEstimator",
    "Calibration",
    "CountCache",
    "UsageEstimator",
    "calibrated_estimator",
    "calibration_for",
    "calibration_of",
    "check_model",
    "chosen_estimator",
    "claude_estimator",
    "context_window",
    "data_url_bytes",
    "decoded_base64",
    "estimator_for",
    "image_size",
    "image_size_from_data_url",
    "input_limit",
    "is_claude",
    "is_gemini",
    "model_name",
    "near_limit",
    "opaque_tokens",
    "pdf_pages",
    "prompt_budget",
    "reported_input",
    "scale_to_total",
    "tokenizer_factor",
    "use_when_unavailable",
]
