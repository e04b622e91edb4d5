"""podracer.runs.tools: what works on run directories, whichever runtime wrote them.

`podracer plot RUN ...` (curves and summaries over seeds), `podracer launch` (a local
multi-process run); each reads only run directories (config.json, metrics.jsonl,
checkpoints), so runs of Anakin and Sebulba mix. The command is `tools.cli`.
"""
