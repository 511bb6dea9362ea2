import { randomBytes } from 'node:crypto';
import { hashToken } from '../../kernel/auth/tokens.ts';
import type { TestKernel } from '../support/harness.ts';
import { addMember, boardToken, insertUser } from '../support/fixtures.ts';

export { addMember, boardToken, insertUser };

/**
 * Rows the company tests need from areas built elsewhere (agents, users, keys), inserted
 * directly so that these tests exercise only the company routes.
 */
export async function insertAgent(t: TestKernel, companyId: string, options: { role?: string; status?: string; name?: string; pauseReason?: string } = {}): Promise<string> {
  const name = options.name ?? `Agent ${randomBytes(3).toString('hex')}`;
  const { rows } = await t.sql.query(
    `insert into agents (company_id, name, url_key, role, status, pause_reason, paused_at)
     values ($1, $2, $3, $4, $5, $6, case when $5 = 'paused' then now() end) returning id`,
    [companyId, name, name.toLowerCase().replace(/[^a-z0-9]+/g, '-'), options.role ?? 'general', options.status ?? 'idle', options.pauseReason ?? null]);
  // A paused agent is held (migration 0020): a pause inserted as a row is the board's.
  if (options.status === 'paused') {
    await t.sql.query(`insert into scope_holds (company_id, scope, scope_id, holder, reason) values ($1, 'agent', $2, 'operator', $3)`, [companyId, rows[0].id, options.pauseReason ?? 'manual']);
  }
  return rows[0].id;
}

/** An agent API key for the agent, stored hashed as the kernel stores them. */
export async function agentToken(t: TestKernel, agentId: string, companyId: string): Promise<string> {
  const token = `svc_agent_${randomBytes(24).toString('base64url')}`;
  await t.sql.query(
    `insert into agent_api_keys (agent_id, company_id, name, key_hash, key_prefix) values ($1, $2, 'test', $3, $4)`,
    [agentId, companyId, hashToken(token), token.slice(0, 16)]);
  return token;
}

/** A board API key of a user (user_id null makes it a key of the implicit local board). */
/** Row counts of everything a company route may touch, to prove that refused input changed nothing. */
export async function snapshot(t: TestKernel): Promise<Record<string, number>> {
  const tables = ['companies', 'company_memberships', 'agents', 'assets', 'activity_log', 'activity_chain_heads'];
  const out: Record<string, number> = {};
  for (const table of tables) {
    const { rows } = await t.sql.query(`select count(*)::int as n from ${table}`);
    out[table] = rows[0].n;
  }
  const { rows } = await t.sql.query(`select coalesce(max(updated_at)::text, '') as latest from companies`);
  out.latestCompanyUpdate = rows[0].latest ? Date.parse(rows[0].latest) : 0;
  return out;
}

export const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');
export const GIF_1X1 = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
export const JPEG_HEAD = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('JFIF test body')]);
export const WEBP_HEAD = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x20, 0, 0, 0]), Buffer.from('WEBPVP8 test body')]);

export function logoForm(data: Buffer | string, type: string, filename = 'logo.png', field = 'file'): FormData {
  const form = new FormData();
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  form.append(field, new Blob([new Uint8Array(bytes)], { type }), filename);
  return form;
}

export async function createCompany(t: TestKernel, body: Record<string, unknown> = {}, token?: string): Promise<any> {
  const res = await t.api.post('/api/companies', { name: `Company ${randomBytes(3).toString('hex')}`, ...body }, { token });
  if (res.status !== 201) throw new Error(`company create failed: ${res.status} ${res.text}`);
  return res.body;
}

export async function uploadLogo(t: TestKernel, companyId: string, data: Buffer | string = PNG_1X1, type = 'image/png', token?: string): Promise<any> {
  const res = await t.api.post(`/api/companies/${companyId}/logo`, undefined, { rawBody: logoForm(data, type), token });
  if (res.status !== 201) throw new Error(`logo upload failed: ${res.status} ${res.text}`);
  return res.body;
}
