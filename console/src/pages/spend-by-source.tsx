import { api } from '../api.ts';
import { Empty, ErrorNote, money, TableFrame, useLoad } from '../ui.tsx';

interface SourceRow { source: string; provider?: string; model?: string; spendCents: number; inputTokens: number; cachedInputTokens: number; outputTokens: number; eventCount: number }

/** How each cost source reads on the page: what Keel measured itself, and what was reported to it. */
const SOURCE_LABEL: Record<string, string> = {
  gateway: 'Gateway (measured)',
  self_reported: 'Self-reported',
  adapter: 'Adapter (tool output)',
  remote_runner: 'Remote runner',
};
const label = (source: string) => SOURCE_LABEL[source] ?? source;

/**
 * Spend measured by the model gateway apart from spend reported to Keel (posted cost events, a
 * tool's usage lines, a run server's reports), and per source and model, all time.
 */
export function SpendBySource({ companyId }: { companyId: string }) {
  const base = `/api/companies/${companyId}/costs/by-source`;
  const bySource = useLoad(() => api.get<SourceRow[]>(base), [companyId]);
  const byModel = useLoad(() => api.get<SourceRow[]>(base, { groupBy: 'model' }), [companyId]);
  const measured = (bySource.data ?? []).filter((row) => row.source === 'gateway').reduce((sum, row) => sum + row.spendCents, 0);
  const reported = (bySource.data ?? []).filter((row) => row.source !== 'gateway').reduce((sum, row) => sum + row.spendCents, 0);
  const rows = byModel.data ?? [];
  return (
    <div>
      <ErrorNote error={bySource.error ?? byModel.error} />
      {bySource.data ? (
        <dl className="facts">
          <div><dt>Measured by the gateway</dt><dd data-testid="measured-spend">{money(measured)}</dd></div>
          <div><dt>Reported (self-reported, adapters, remote runners)</dt><dd data-testid="reported-spend">{money(reported)}</dd></div>
        </dl>
      ) : null}
      {byModel.data && rows.length === 0 ? <Empty>No spend yet. Spend appears when agents report costs or call models through the gateway.</Empty> : null}
      {rows.length > 0 ? (
        <TableFrame label="Spend per source and model"><table className="table">
          <caption className="sr-only">Spend per source and model</caption>
          <thead><tr><th scope="col">Source</th><th scope="col">Provider</th><th scope="col">Model</th><th scope="col">Spend</th><th scope="col">Input tokens</th><th scope="col">Cached input</th><th scope="col">Output tokens</th><th scope="col">Events</th></tr></thead>
          <tbody>{rows.map((row) => (
            <tr key={`${row.source}/${row.provider}/${row.model}`}>
              <td>{label(row.source)}</td><td>{row.provider}</td><td>{row.model}</td><td>{money(row.spendCents)}</td>
              <td>{row.inputTokens}</td><td>{row.cachedInputTokens}</td><td>{row.outputTokens}</td><td>{row.eventCount}</td>
            </tr>
          ))}</tbody>
        </table></TableFrame>
      ) : null}
    </div>
  );
}
