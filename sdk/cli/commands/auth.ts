import { setTimeout as sleep } from 'node:timers/promises';
import { KeelClient } from '../../client/index.ts';
import { forgetCredential, saveCredential } from '../credentials-store.ts';
import { CliError, clientFor, emit, emitRecord, session, type GlobalOptions } from '../output.ts';

type LoginOptions = GlobalOptions & { clientName?: string; keyName?: string; save?: boolean; interval?: string };

interface Challenge { id: string; secret: string; status: string; expiresAt: string | null; approvePath: string; pollPath: string }
interface ChallengeState { status: string; token?: string; keyId?: string; approvedByUserId?: string | null }

/**
 * `keel auth login`: the command-line auth challenge of docs/api/auth.md. The CLI opens a
 * challenge, a board user signed in to the server approves it with their browser session, and
 * the CLI's next poll with the challenge secret receives a board API key, exactly once. The key
 * is stored for this server in `<data dir>/credentials.json` (owner-only) and used from then on
 * when no other key is given; `--no-save` prints it instead (shown once). Interrupting the wait
 * cancels the challenge. With --json, one line per step: `challenge`, then `logged_in`.
 */
export async function loginCommand(options: LoginOptions): Promise<void> {
  const current = session(options);
  // Logging in needs no key: a stale stored one must not be sent along.
  const client = new KeelClient({ baseUrl: current.apiBase });
  const challenge = await client.post<Challenge>('/api/cli-auth/challenges', { clientName: options.clientName ?? 'keel', ...(options.keyName ? { keyName: options.keyName } : {}) });
  const approveUrl = `${current.apiBase}${challenge.approvePath}`;
  // The console's approval page for this challenge (served by the same server).
  const browserUrl = `${current.apiBase}/cli-auth/${encodeURIComponent(challenge.id)}`;
  if (options.json) {
    process.stdout.write(`${JSON.stringify({ event: 'challenge', challengeId: challenge.id, approveUrl, browserUrl, expiresAt: challenge.expiresAt })}\n`);
  } else {
    process.stderr.write([
      `Challenge ${challenge.id} is waiting for a board user to approve it (until ${challenge.expiresAt}).`,
      'A board user signed in to this server approves it in the console:',
      `  ${browserUrl}`,
      'or with their browser session through the API:',
      `  POST ${approveUrl}`,
      'Waiting... (Ctrl-C cancels the challenge)',
      '',
    ].join('\n'));
  }
  const interval = Math.max(100, Math.round(Number(options.interval ?? '2') * 1000)) || 2000;
  const poll = () => client.request<ChallengeState>('GET', challenge.pollPath, undefined, { headers: { 'x-challenge-secret': challenge.secret } });
  const cancel = () => {
    void client.post(`/api/cli-auth/challenges/${challenge.id}/cancel`, {}, { headers: { 'x-challenge-secret': challenge.secret } })
      .catch(() => undefined)
      .finally(() => { process.stderr.write('Login cancelled\n'); process.exit(130); });
  };
  process.once('SIGINT', cancel);
  let state: ChallengeState;
  try {
    for (;;) {
      state = await poll();
      if (state.token) break;
      if (state.status === 'cancelled' || state.status === 'expired' || state.status === 'consumed') {
        throw new CliError(`challenge_${state.status}`, `The challenge was ${state.status} before the key was handed over; run keel auth login again`);
      }
      await sleep(interval);
    }
  } finally {
    process.removeListener('SIGINT', cancel);
  }
  const token = state.token!;
  const me = await new KeelClient({ baseUrl: current.apiBase, token }).get<{ user?: { email?: string | null; name?: string | null }; userId: string; companyIds: string[]; isInstanceAdmin: boolean; keyId?: string }>('/api/cli-auth/me');
  const saved = options.save !== false;
  if (saved) saveCredential(current.credentialsFile, current.apiBase, { token, keyId: state.keyId ?? me.keyId ?? null, userId: me.userId, savedAt: new Date().toISOString() });
  const result = {
    event: 'logged_in', apiBase: current.apiBase, userId: me.userId, email: me.user?.email ?? null, isInstanceAdmin: me.isInstanceAdmin, companyIds: me.companyIds,
    keyId: state.keyId ?? me.keyId ?? null, savedTo: saved ? current.credentialsFile : null, ...(saved ? {} : { token }),
  };
  const lines = [`Logged in to ${current.apiBase} as ${me.user?.email ?? me.userId}${me.isInstanceAdmin ? ' (instance admin)' : ''}`];
  lines.push(saved ? `Board API key ${result.keyId} saved in ${current.credentialsFile}; keel uses it for this server.` : `Board API key (shown once; the server keeps only its hash): ${token}`);
  emit(options, lines, result);
}

/** `auth whoami`: the board identity behind the key in use (GET /api/cli-auth/me). */
export async function whoamiCommand(options: GlobalOptions): Promise<void> {
  emitRecord(options, await clientFor(options).get('/api/cli-auth/me'));
}

/**
 * `auth logout`: revokes the board API key in use on the server (when it is one) and forgets
 * the stored key for this server.
 */
export async function logoutCommand(options: GlobalOptions): Promise<void> {
  const current = session(options);
  let revoked: { revoked: boolean; keyId: string } | null = null;
  if (current.apiKey) revoked = await clientFor(options).post('/api/cli-auth/revoke-current', {});
  const forgotten = forgetCredential(current.credentialsFile, current.apiBase);
  if (!revoked && !forgotten) throw new CliError('not_logged_in', `No board API key for ${current.apiBase}: nothing to log out of`);
  emit(options, [revoked ? `Revoked board API key ${revoked.keyId}` : 'No key was sent, nothing revoked', forgotten ? `Forgot the key stored for ${current.apiBase}` : 'No key was stored for this server'], { apiBase: current.apiBase, revoked: revoked?.revoked ?? false, keyId: revoked?.keyId ?? null, forgotten });
}
