"""cutctx inside the agent frameworks people already use: one module per framework.

Each module is an optional extra and imports its framework when it is imported itself:

* ``integrations.openai_agents`` (``cutctx[openai-agents]``): ``compacting_input_filter(...)``
  for ``RunConfig(call_model_input_filter=...)``;
* ``integrations.langchain`` (``cutctx[langchain]``): ``CompactionMiddleware(...)`` for
  ``create_agent(..., middleware=[...])``;
* ``integrations.pydantic_ai`` (``cutctx[pydantic-ai]``): ``CompactionCapability(...)`` for
  ``Agent(capabilities=[...])``, and ``compacting_history_processor(...)`` for
  ``ProcessHistory(...)``;
* ``integrations.agent_framework`` (``cutctx[agent-framework]``): ``CompactingStrategy(...)``
  for Microsoft Agent Framework's ``compaction_strategy=`` (per agent, client or run).

Every hook takes the same arguments: the settings of ``CompactionSession`` (a
``CompactionSettings`` as ``settings=`` and/or its fields as keywords, ``store=`` included) and
``model=`` (the model name counts and the window are for), and keeps one sticky session
per format, whose compacted views are keyed by each conversation's own history: every
conversation it serves sends the same prefix between compactions, so the provider's prompt
cache keeps hitting.
"""

__all__: list[str] = []
