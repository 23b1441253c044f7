"""Run machinery every evaluation shares: result logs, output-folder checks and RunLock
(``output``), sharding, resume and merged reports (``shard``), the HTML page writer
(``report_html``) and the repository's import graph (``imports``). It imports no benchmark or
domain package (docs/architecture.md)."""
