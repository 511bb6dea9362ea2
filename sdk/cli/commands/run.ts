import { setTimeout as sleep } from 'node:timers/promises';
import { clientFor, companyIdFor, emit, emitList, emitRecord, type GlobalOptions } from '../output.ts';
import { agentId, path } from './agent-ref.ts';

/** Heartbeat runs of the runtime plugin (docs/api/runtime.md): list, show, read and follow the log, cancel. */
type Options = GlobalOptions & Record<string, any>;

interface LogPage { runId: string; content: string; offset: number; nextOffset: number; eof: boolean }
interface LogEntry { seq: number; at: string; stream: string; line: string }

const ACTIVE = new Set(['queued', 'running']);

export async function listCommand(options: Options): Promise<void> {
  const client = clientFor(options);
  const agent = options.agent ? await agentId(client, options.agent, options) : undefined;
  const page = await client.get<{ runs: unknown[]; nextCursor: string | null }>(path`/api/companies/${companyIdFor(options)}/heartbeat-runs`, { agentId: agent, status: options.status, limit: options.limit, cursor: options.cursor });
  emitList(options, page.runs, ['id', 'agentId', 'status', 'invocationSource', 'startedAt', 'finishedAt', 'logBytes'], 'No runs', page);
  if (!options.json && page.nextCursor) process.stdout.write(`More: --cursor ${page.nextCursor}\n`);
}

export async function showCommand(runId: string, options: Options): Promise<void> {
  emitRecord(options, await clientFor(options).get(path`/api/heartbeat-runs/${runId}`));
}

export async function cancelCommand(runId: string, options: Options): Promise<void> {
  const run = await clientFor(options).post<Record<string, any>>(path`/api/heartbeat-runs/${runId}/cancel`, {});
  emit(options, `Run ${run.id} is ${run.status}`, run);
}

function entriesOf(content: string): LogEntry[] {
  return content.split('\n').filter((line) => line.trim()).map((line) => {
    try {
      return JSON.parse(line) as LogEntry;
    } catch {
      return { seq: -1, at: '', stream: 'unparsed', line };
    }
  });
}

/** A log line as the human reads it: stdout plain, other streams named. */
function printEntry(options: Options, entry: LogEntry): void {
  if (options.json) process.stdout.write(`${JSON.stringify({ event: 'log', ...entry })}\n`);
  else process.stdout.write(`${entry.stream === 'stdout' ? '' : `[${entry.stream}] `}${entry.line}\n`);
}

/** `run log`: the log from `--offset` to its current end (pages of `--limit-bytes`). */
export async function logCommand(runId: string, options: Options): Promise<void> {
  const client = clientFor(options);
  let offset = Number(options.offset ?? 0);
  for (;;) {
    const page = await client.get<LogPage>(path`/api/heartbeat-runs/${runId}/log`, { offset, limitBytes: options.limitBytes });
    for (const entry of entriesOf(page.content)) printEntry(options, entry);
    if (page.eof || page.nextOffset === offset) break;
    offset = page.nextOffset;
  }
}

/**
 * `run follow`: prints the log as it grows, read by byte offset (the route the runtime serves
 * plain process lines from), until the run has ended and its log is read to the end. Exits 0
 * when the run succeeded and 1 otherwise, so a script can wait on a run. With --json one line
 * per log entry (`event: log`), then `{event: "end", run}`.
 */
export async function followCommand(runId: string, options: Options): Promise<void> {
  const client = clientFor(options);
  const interval = Math.max(100, Math.round(Number(options.interval ?? '1') * 1000)) || 1000;
  let offset = Number(options.offset ?? 0);
  let ended: Record<string, any> | null = null;
  for (;;) {
    const page = await client.get<LogPage>(path`/api/heartbeat-runs/${runId}/log`, { offset });
    for (const entry of entriesOf(page.content)) printEntry(options, entry);
    const advanced = page.nextOffset !== offset;
    offset = page.nextOffset;
    if (!page.eof && advanced) continue;
    // The log was read to its end after the run was seen ended: nothing more will come.
    if (ended) break;
    const run = await client.get<Record<string, any>>(path`/api/heartbeat-runs/${runId}`);
    if (!ACTIVE.has(run.status)) { ended = run; continue; }
    await sleep(interval);
  }
  if (options.json) process.stdout.write(`${JSON.stringify({ event: 'end', run: ended })}\n`);
  else process.stderr.write(`Run ${runId} ${ended.status}${ended.errorCode ? ` (${ended.errorCode})` : ''}${ended.exitCode !== null && ended.exitCode !== undefined ? `, exit code ${ended.exitCode}` : ''}\n`);
  if (ended.status !== 'succeeded') process.exitCode = 1;
}
