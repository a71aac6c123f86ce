"""The built-in windows know the ids people send through clouds and gateways.

The ids are written from the providers' own pages: Anthropic's model ids and versioning page
(Bedrock ``anthropic.claude-{name}-{major}-{minor}-{date}-v1:0`` before the 4.6 generation,
``anthropic.claude-opus-4-6-v1``, dateless ``anthropic.claude-sonnet-4-6`` after it; Vertex
``claude-{name}-{major}-{minor}@{date}``), Amazon Bedrock's cross-Region inference profiles
(``us.``, ``eu.``, ``apac.``, ``global.`` before the model id), model ARNs, and the
``provider/model`` ids of gateways (OpenRouter's dotted Claude versions and ``:nitro``-style
variants, LiteLLM's ``bedrock/``, ``vertex_ai/``, ``azure/`` routes).
"""

from __future__ import annotations

import pytest
from openai import AzureOpenAI

import cutctx
from cutctx_adapters import CompactionSession
from cutctx_adapters.counting import (
    calibration_for,
    context_window,
    input_limit,
    model_name,
    prompt_budget,
)
from cutctx_adapters.openai import CompactingOpenAI, chat

BEDROCK: list[tuple[str, int | None]] = [
    ("anthropic.claude-3-5-sonnet-20240620-v1:0", 200_000),
    ("anthropic.claude-3-5-sonnet-20241022-v2:0", 200_000),
    ("anthropic.claude-3-5-haiku-20241022-v1:0", 200_000),
    ("anthropic.claude-3-7-sonnet-20250219-v1:0", 200_000),
    ("anthropic.claude-sonnet-4-20250514-v1:0", 200_000),
    ("anthropic.claude-opus-4-20250514-v1:0", 200_000),
    ("anthropic.claude-opus-4-1-20250805-v1:0", 200_000),
    ("anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000),
    ("anthropic.claude-haiku-4-5-20251001-v1:0", 200_000),
    ("anthropic.claude-opus-4-5-20251101-v1:0", 200_000),
    ("anthropic.claude-opus-4-6-v1", 1_000_000),
    ("anthropic.claude-sonnet-4-6", 1_000_000),
    ("anthropic.claude-opus-4-7", 1_000_000),
]
PROFILES: list[tuple[str, int | None]] = [
    ("us.anthropic.claude-sonnet-4-20250514-v1:0", 200_000),
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000),
    ("eu.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000),
    ("apac.anthropic.claude-3-7-sonnet-20250219-v1:0", 200_000),
    ("apac.anthropic.claude-3-haiku-20240307-v1:0", None),  # Claude 3 Haiku: not in the table
    ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000),
    ("global.anthropic.claude-haiku-4-5-20251001-v1:0", 200_000),
    ("us.anthropic.claude-opus-4-7", 1_000_000),
    ("eu.anthropic.claude-sonnet-4-6", 1_000_000),
    ("us-gov.anthropic.claude-3-7-sonnet-20250219-v1:0", 200_000),
    ("arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-5-sonnet-20241022-v2:0",
     200_000),
    ("arn:aws:bedrock:us-east-1:123456789012:inference-profile/"
     "us.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000),
]
VERTEX: list[tuple[str, int | None]] = [
    ("claude-3-5-sonnet-v2@20241022", 200_000),
    ("claude-3-5-haiku@20241022", 200_000),
    ("claude-3-7-sonnet@20250219", 200_000),
    ("claude-sonnet-4@20250514", 200_000),
    ("claude-opus-4@20250514", 200_000),
    ("claude-opus-4-1@20250805", 200_000),
    ("claude-sonnet-4-5@20250929", 200_000),
    ("claude-haiku-4-5@20251001", 200_000),
    ("claude-opus-4-5@20251101", 200_000),
    ("claude-sonnet-4-6", 1_000_000),
]
GATEWAYS: list[tuple[str, int | None]] = [
    ("anthropic/claude-sonnet-4-5", 200_000),
    ("anthropic/claude-sonnet-4.5", 200_000),
    ("anthropic/claude-3.5-sonnet", 200_000),
    ("anthropic/claude-3.7-sonnet:thinking", 200_000),
    ("anthropic/claude-sonnet-4.6", 1_000_000),
    ("anthropic/claude-opus-4.6", 1_000_000),
    ("openrouter/anthropic/claude-3.5-sonnet:nitro", 200_000),
    ("openai/gpt-4o", 128_000),
    ("openai/gpt-4o:online", 128_000),
    ("openai/gpt-4o-mini", 128_000),
    ("openai/gpt-5", 400_000),
    ("openai/gpt-5.4", 1_050_000),
    ("openai/gpt-5.4-mini", 400_000),
    ("openai/o3", 200_000),
    ("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000),
    ("bedrock/anthropic.claude-3-5-haiku-20241022-v1:0", 200_000),
    ("vertex_ai/claude-sonnet-4-5@20250929", 200_000),
    ("vertex_ai/claude-opus-4-1@20250805", 200_000),
    ("google/gemini-3-flash-preview", 1_048_576),
    ("google/gemini-2.5-pro", 1_048_576),
    ("vertex_ai/gemini-2.5-flash", 1_048_576),
]
UNKNOWN = [
    "my-gpt4o-deployment",  # an Azure OpenAI deployment names no model
    "azure/prod-chat",
    "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6",
    "meta.llama3-70b-instruct-v1:0",
    "openai.gpt-oss-120b-1:0",
]


@pytest.mark.parametrize(("model", "window"), BEDROCK + PROFILES + VERTEX + GATEWAYS)
def test_cloud_and_gateway_ids_have_their_models_window(model: str, window: int | None
                                                        ) -> None:
    assert context_window(model) == window


@pytest.mark.parametrize("model", UNKNOWN)
def test_a_name_that_names_no_model_is_unknown(model: str) -> None:
    assert context_window(model) is None and prompt_budget(model, 1_000) is None


@pytest.mark.parametrize(("model", "name"), [
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929-v1:0"),
    ("global.anthropic.claude-opus-4-7", "claude-opus-4-7"),
    ("anthropic/claude-3.7-sonnet", "claude-3-7-sonnet"),
    ("openai/gpt-5.4", "gpt-5.4"),  # an OpenAI version keeps its dot
    ("gpt-4o", "gpt-4o"),
    ("ft:gpt-4.1-mini:acme::abc", "gpt-4.1-mini:acme::abc"),
])
def test_the_model_an_id_names(model: str, name: str) -> None:
    assert model_name(model) == name


def test_a_gateways_id_takes_its_models_input_limit() -> None:
    assert input_limit("openai/gpt-5-mini") == input_limit("gpt-5-mini") == 272_000
    assert prompt_budget("openai/gpt-5", 4_096) == 272_000


def test_a_callers_window_for_the_cloud_id_itself_wins() -> None:
    overrides = {"us.anthropic.claude-sonnet-4-6": 200_000}
    assert context_window("us.anthropic.claude-sonnet-4-6", overrides) == 200_000
    assert context_window("eu.anthropic.claude-sonnet-4-6", overrides) == 1_000_000
    assert context_window("us.anthropic.claude-sonnet-4-6", {"claude-sonnet-4-6": 200_000}
                          ) == 200_000


def test_the_new_tokenizers_factor_follows_the_model_through_clouds() -> None:
    assert calibration_for("us.anthropic.claude-opus-4-7") == calibration_for("claude-opus-4-7")
    assert calibration_for("claude-opus-4-7@20260101") == calibration_for("claude-opus-4-7")


@pytest.mark.filterwarnings("ignore::cutctx_adapters.tiktoken.UnknownModelWarning")
def test_an_azure_deployment_name_gets_the_error_that_names_window() -> None:
    client = CompactingOpenAI(AzureOpenAI(api_key="test", api_version="2024-10-21",
                                          azure_endpoint="https://example.openai.azure.com"))
    with pytest.raises(cutctx.ValidationError) as raised:
        client.chat.completions.create(model="prod-chat",
                                       messages=[{"role": "user", "content": "Hi"}])
    assert "window=" in str(raised.value) and raised.value.details["field"] == "window"
    session = CompactionSession(chat.FORMAT, "prod-chat", window=32_000)
    report = session.prepare(messages=[{"role": "user", "content": "Hi"}]).report
    assert report.prompt_budget == 32_000 - 4_096
