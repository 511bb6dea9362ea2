import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isDatabaseUnavailable } from '../../kernel/db/connection-errors.ts';
import { newClient } from '../../kernel/db/connections.ts';
import { parseDatabaseUrl, withCredentials } from '../../kernel/db/database-url.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

/**
 * A DATABASE_URL with a host list (docs/high-availability.md), as libpq reads it: the kernel
 * walks the hosts to the one that suits target_session_attrs. The failover itself is tested
 * against pg_auto_failover in test/ha/failover.test.ts.
 */
const admin = () => new URL(inject('adminDatabaseUrl'));
const name = `t_hosts_${randomBytes(4).toString('hex')}`;
let deadPort: number;
let kernel: TestKernel | undefined;

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: inject('adminDatabaseUrl') });
  await client.connect();
  try { await client.query(sql); } finally { await client.end(); }
}

function hostsUrl(ports: number[], database: string, attrs = 'read-write'): string {
  const url = admin();
  return `postgres://${url.username}:${url.password}@${ports.map((port) => `127.0.0.1:${port}`).join(',')}/${database}?target_session_attrs=${attrs}`;
}

beforeAll(async () => {
  deadPort = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
  await adminQuery(`create database ${name} template keel_template`);
});
afterAll(async () => {
  await kernel?.stop();
  await adminQuery(`drop database if exists ${name} with (force)`);
  await adminQuery(`drop database if exists ${name}_ro with (force)`);
});

describe('a DATABASE_URL with a host list', () => {
  it('is read as libpq reads it, and keeps its host list when a plugin role takes the credentials', () => {
    const address = parseDatabaseUrl('postgres://keel:s%40cret@10.0.0.1:5433,[::1],db.internal:6000/keel?target_session_attrs=read-write&sslmode=disable');
    expect(address.endpoints).toEqual([{ host: '10.0.0.1', port: 5433 }, { host: '::1', port: 5432 }, { host: 'db.internal', port: 6000 }]);
    expect(address.sessionAttrs).toBe('read-write');
    expect(address.urlFor(address.endpoints[1]!)).toBe('postgres://keel:s%40cret@[::1]:5432/keel?sslmode=disable');
    expect(parseDatabaseUrl('postgres://keel@localhost/keel').walks).toBe(false);
    expect(() => parseDatabaseUrl('postgres://a@h1,h2/keel?target_session_attrs=prefer-standby')).toThrow(/not supported; use one of any, read-write/);
    expect(withCredentials('postgres://keel:x@h1:5432,h2:5433/keel?target_session_attrs=read-write', 'keel_p1_costs', 'p/w'))
      .toBe('postgres://keel_p1_costs:p%2Fw@h1:5432,h2:5433/keel?target_session_attrs=read-write');
  });

  it('runs a kernel whose first host is down: it walks on to the server that answers', async () => {
    kernel = await startTestKernel({}, { databaseUrl: hostsUrl([deadPort, Number(admin().port)], name), databaseName: name });
    const created = await kernel.api.post('/api/companies', { name: 'Walked Co' });
    expect(created.status).toBe(201);
    expect((await kernel.api.get(`/api/companies/${created.body.id}`)).status).toBe(200);
  });

  it('refuses, as "unavailable", a read-only server when the URL asks for read-write', async () => {
    await adminQuery(`create database ${name}_ro`);
    await adminQuery(`alter database ${name}_ro set default_transaction_read_only = on`);
    const client = newClient(hostsUrl([deadPort, Number(admin().port)], `${name}_ro`));
    const refused = await client.connect().then(() => null, (error: Error) => error);
    // (The kernel above left this host list remembering the server as read-write: it finds out again.)
    expect(refused?.message).toMatch(/127.0.0.1:\d+ is not read-write/);
    expect(isDatabaseUnavailable(refused)).toBe(true);
    // `any` takes it.
    const any = newClient(hostsUrl([deadPort, Number(admin().port)], `${name}_ro`, 'any'));
    await any.connect();
    expect((await any.query<{ ro: string }>("select current_setting('transaction_read_only') as ro")).rows[0]).toEqual({ ro: 'on' });
    await any.end();
  });
});
