-- A run's context snapshot (runs.context: what it works on, `{"issueId": ...}`) is how other
-- parts find the runs bound to something (GET /api/issues/{issueId}/runs asks the ledger for the
-- runs whose context holds the issue, ctx.runs.withContext): a containment query, answered by
-- this index rather than by reading every run of the company.
create index runs_context_idx on runs using gin (context jsonb_path_ops);
