"""SDK clients: which one a caller gave (sync or async, which SDK), wrapped to compact, and the
summarizers that go through them.

``CompactingClient`` and its resources are what ``CompactingOpenAI`` and ``CompactingAnthropic``
are made of; ``ProviderSummarizer`` is what ``OpenAISummarizer`` and ``AnthropicSummarizer``
fill in.
"""

from ._counting import Count
from ._sdk import check_client, is_async_client
from ._summarizer import ProviderSummarizer
from ._wrapper import CompactingClient, CompactingResource, Namespace, SdkView

__all__ = [
    "CompactingClient",
    "CompactingResource",
    "Count",
    "Namespace",
    "ProviderSummarizer",
    "SdkView",
    "check_client",
    "is_async_client",
]
