"""The operator library. CATALOG maps each operator name to "module:Class" (imported lazily)."""

CATALOG: dict[str, str] = {
    # filters/
    "normalize_text": "operators.filters.normalize:NormalizeText",
    "sql_filter": "operators.filters.sql:SqlFilter",
    "select": "operators.filters.columns:Select",
    "rename": "operators.filters.columns:Rename",
    "cast": "operators.filters.columns:Cast",
    "gopher_quality": "operators.filters.gopher:GopherQuality",
    "c4_quality": "operators.filters.c4:C4Quality",
    "fineweb_quality": "operators.filters.fineweb:FineWebQuality",
    "language_id": "operators.filters.language_id:LanguageId",
    "url_filter": "operators.filters.url_filter:UrlFilter",
    # text/
    "pii_redact": "operators.text.pii_redact:PiiRedact",
    "token_count": "operators.text.token_count:TokenCount",
    # sample/
    "sample": "operators.sample.sample:Sample",
    "shuffle": "operators.sample.shuffle:Shuffle",
    # dedup/
    "exact_dedup": "operators.dedup.exact:ExactDedup",
    "containment_dedup": "operators.dedup.containment:ContainmentDedup",
    "minhash_dedup": "operators.dedup.minhash_dedup:MinhashDedup",
    # embed/
    "embed": "operators.embed.embed:Embed",
    # prune/
    "semantic_dedup": "operators.prune.semantic_dedup:SemanticDedup",
    "density_prune": "operators.prune.density_prune:DensityPrune",
    # score/
    "quality_heuristics": "operators.score.quality_heuristics:QualityHeuristics",
    "complexity_scores": "operators.score.complexity:Complexity",
    "perplexity": "operators.score.perplexity:Perplexity",
    "deita_complexity": "operators.score.deita:DeitaComplexity",
    "classifier_score": "operators.score.classifier:ClassifierScore",
    "llm_judge": "operators.score.llm_judge:LLMJudge",
    "novelty": "operators.score.novelty:Novelty",
    "dataset_metrics": "operators.score.dataset_metrics:DatasetMetrics",
    "qdc_select": "operators.score.qdc_select:QdcSelect",
    # agent/
    "adp_join": "operators.agent.join:AdpJoin",
    "adp_convert": "operators.agent.ops:AdpConvert",
    "adp_validate": "operators.agent.ops:AdpValidate",
    "adp_export": "operators.agent.ops:AdpExport",
    # synth/
    "chunk": "operators.synth.chunk:Chunk",
    "rephrase": "operators.synth.rephrase:Rephrase",
}
