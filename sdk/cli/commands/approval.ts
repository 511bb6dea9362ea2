import { clientFor, companyIdFor, emit, emitList, emitRecord, type GlobalOptions } from '../output.ts';
import { path } from './agent-ref.ts';

/** Approvals (docs/api/approvals.md): list, read, decide. */
type Options = GlobalOptions & { status?: string; note?: string };

export async function listCommand(options: Options): Promise<void> {
  const approvals = await clientFor(options).get<Array<Record<string, unknown>>>(path`/api/companies/${companyIdFor(options)}/approvals`);
  // The route lists every approval; a status filter is applied here, where it is asked for.
  const shown = options.status ? approvals.filter((a) => options.status!.split(',').includes(String(a.status))) : approvals;
  emitList(options, shown, ['id', 'type', 'status', 'requestedByAgentId', 'createdAt'], 'No approvals');
}

export async function getCommand(id: string, options: Options): Promise<void> {
  emitRecord(options, await clientFor(options).get(path`/api/approvals/${id}`));
}

export function decideCommand(decision: 'approve' | 'reject' | 'request-revision') {
  return async (id: string, options: Options): Promise<void> => {
    const approval = await clientFor(options).post<Record<string, any>>(path`/api/approvals/${id}/${decision}`, options.note ? { decisionNote: options.note } : {});
    emit(options, `Approval ${approval.id} (${approval.type}) is now ${approval.status}`, approval);
  };
}

export const approveCommand = decideCommand('approve');
export const rejectCommand = decideCommand('reject');
export const requestRevisionCommand = decideCommand('request-revision');
