"""Agent Data Protocol (ADP): agent trajectories in one schema, from many datasets, to many SFT formats.

schema.py      the ADP 1.0 pydantic models and located validation errors
converters/    one small converter per source dataset (+ OpenAI-chat and ShareGPT importers), by name
exporters/     ADP -> SFT renderings: openhands, sweagent, agentlab
environments/  per-dataset API documentation and web flag used by the renderings (JSON package data)
prompts/       our default system prompts per style, and AgentLab's prompt text
rows.py        the Arrow row layout of trajectories and SFT samples in a pipeline
ops.py         the adp_convert, adp_validate and adp_export operators
stream.py, files.py, cli.py   `curate adp convert | export | validate`, streaming files
demo.py        `curate adp demo`: made-up raw OS sessions, the input of recipes/agent-sft.yaml
"""
