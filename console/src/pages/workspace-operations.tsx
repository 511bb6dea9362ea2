import { useEffect, useState } from 'react';
import { api } from '../api.ts';
import { ErrorNote, Status, when } from '../ui.tsx';

export interface Operation {
  id: string; kind: string; action: string | null; status: string; message: string | null; executionId: string | null;
  details: { workspaceCommandId?: string; runtimeServiceId?: string; exitCode?: number | null; signal?: string | null; errorCode?: string | null; durationMs?: number } | null;
  createdAt: string; finishedAt: string | null;
}
interface LogLine { seq: number; stream: 'stdout' | 'stderr' | 'system'; line: string }
interface LogPage { lines: LogLine[]; nextOffset: number; eof: boolean }

/** What an operation did, in words: the command or service, and how it ended. */
export function operationSummary(op: Operation): string {
  const subject = op.details?.workspaceCommandId ?? op.details?.runtimeServiceId;
  // create, update and close operations have no action.
  const parts = [[op.kind.replace(/_/g, ' '), op.action, subject].filter(Boolean).join(' ')];
  if (op.details?.exitCode !== undefined && op.details.exitCode !== null) parts.push(`exit code ${op.details.exitCode}`);
  if (op.details?.signal) parts.push(`signal ${op.details.signal}`);
  if (op.details?.durationMs !== undefined) parts.push(`${(op.details.durationMs / 1000).toFixed(1)} s`);
  return parts.join(' · ');
}

/**
 * An operation's output, read page by page from offset 0 to the end, and read on every second
 * while the operation still runs (its log grows until the process ends).
 */
function OperationLog({ workspaceId, op }: { workspaceId: string; op: Operation }) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [error, setError] = useState<unknown>(null);
  const running = op.status === 'running';
  useEffect(() => {
    let live = true;
    let offset = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = async () => {
      try {
        for (;;) {
          const page = await api.get<LogPage>(`/api/execution-workspaces/${workspaceId}/workspace-operations/${op.id}/log`, { offset: String(offset) });
          if (!live) return;
          offset = page.nextOffset;
          if (page.lines.length) setLines((before) => [...before, ...page.lines]);
          if (page.eof) break;
        }
        setError(null);
      } catch (caught) {
        if (live) setError(caught);
      }
      if (live && running) timer = setTimeout(read, 1000);
    };
    setLines([]);
    void read();
    return () => { live = false; clearTimeout(timer); };
  }, [workspaceId, op.id, running]);
  return (
    <div>
      <ErrorNote error={error} />
      <pre className="log" role="log" aria-label={`Output of ${operationSummary(op)}`} tabIndex={0}>
        {lines.length === 0 ? <span className="muted">{running ? 'Waiting for output…' : 'No output.'}</span> : null}
        {lines.map((line) => <div key={line.seq} className={line.stream === 'stderr' ? 'log-stderr' : line.stream === 'system' ? 'muted' : undefined}>{line.line}</div>)}
      </pre>
    </div>
  );
}

/** The workspace's recorded operations, newest first; an operation that ran a process opens its output. */
export function OperationsList({ workspaceId, operations }: { workspaceId: string; operations: Operation[] }) {
  const [openId, setOpenId] = useState<string | null>(null);
  const open = operations.find((op) => op.id === openId) ?? null;
  if (operations.length === 0) return <p className="muted">No operations yet.</p>;
  return (
    <>
      <ul className="rows" aria-label="Operations">{operations.map((op) => (
        <li key={op.id} className="row-item">
          <Status value={op.status} /> <span className="wrap-anywhere">{operationSummary(op)}</span>
          <span className="muted wrap-anywhere">{op.message ?? ''} · {when(op.createdAt)}</span>
          {op.executionId ? <button type="button" aria-pressed={op.id === openId} onClick={() => setOpenId(op.id === openId ? null : op.id)}>Output<span className="sr-only"> of {operationSummary(op)} at {when(op.createdAt)}</span></button> : null}
        </li>))}
      </ul>
      {open ? <OperationLog key={open.id} workspaceId={workspaceId} op={open} /> : null}
    </>
  );
}
