import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { KeelClient } from '../../sdk/client/index.ts';
import { createCompany } from '../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { runCli } from './cli-support.ts';

/**
 * The command-line client's creates go with an Idempotency-Key, and the client repeats a create
 * whose answer was lost with the same key: through a real TCP relay that drops the kernel's first
 * answer (the request reached the kernel and was committed), the comment is written once.
 */
let t: TestKernel;
let home: string;
let company: any;
let issue: any;
let relay: Server;
let relayUrl: string;
let answersToDrop = 0;
const sockets = new Set<Socket>();

/** Relays connections to the kernel; while `answersToDrop` > 0, a connection whose answer starts is cut instead of relayed. */
function startRelay(target: URL): Promise<void> {
  relay = createServer((client: Socket) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    }
    client.pipe(upstream);
    upstream.once('data', (first) => {
      if (answersToDrop > 0) {
        answersToDrop--;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(first);
      upstream.pipe(client);
    });
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  return new Promise((resolve) => relay.listen(0, '127.0.0.1', () => {
    relayUrl = `http://127.0.0.1:${(relay.address() as { port: number }).port}`;
    resolve();
  }));
}

beforeAll(async () => {
  // The relay listens on another port of 127.0.0.1: the instance is told it serves that name too.
  t = await startTestKernel({ server: { allowedHostnames: ['127.0.0.1'] } }, { firstPartyDir: FIRST_PARTY_PLUGINS });
  home = await mkdtemp(join(tmpdir(), 'keel-cli-retries-'));
  company = await createCompany(t.api, { name: 'Retried Co' });
  issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Commented through a bad network' })).body;
  await startRelay(new URL(t.url));
}, 120_000);
afterAll(async () => {
  // Kept-alive connections would hold the relay (and the kernel's stop) open: they end here.
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => relay?.close(resolve));
  await t?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

const comments = async () => (await t.sql.query('select id from plugin_work.issue_comments where issue_id = $1', [issue.id])).rows.map((row) => row.id);

it('a create whose answer was lost is sent again with the same key and written once', async () => {
  const client = new KeelClient({ baseUrl: relayUrl });
  answersToDrop = 1;
  const comment = await client.create<{ id: string }>(`/api/issues/${issue.id}/comments`, { body: 'Once, whatever the network does' });
  expect(answersToDrop).toBe(0);
  expect(await comments()).toEqual([comment.id]);
  const { rows } = await t.sql.query("select count(*)::int as n from plugin_work.idempotency_keys where kind = 'comment' and entity_id = $1", [comment.id]);
  expect(rows[0].n).toBe(1);
});

it('keel issue comment sends a fresh key per comment: two runs make two comments, each under its own key', async () => {
  const before = (await comments()).length;
  for (const text of ['First from the CLI', 'Second from the CLI']) {
    const result = await runCli(['issue', 'comment', issue.id, '--body', text, '--json', '--api-base', t.url, '--data-dir', join(home, 'keel')], { env: { HOME: home } });
    expect(result.code, result.stderr).toBe(0);
  }
  expect((await comments()).length).toBe(before + 2);
  const { rows } = await t.sql.query("select count(distinct key)::int as n from plugin_work.idempotency_keys where kind = 'comment' and company_id = $1", [company.id]);
  expect(rows[0].n).toBe(before + 2);
});
