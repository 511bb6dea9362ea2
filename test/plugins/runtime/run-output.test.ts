import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunServer } from '../../fixtures/run-server.ts';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { processAgent, runWhen, wakeOk } from './helpers.ts';

/**
 * What a run's output may cost the kernel, and what of it is kept: a process printing one
 * endless line and many short ones (the line is cut in the stored log, with the cut said, the
 * complete output kept on disk), and runs that print back the credentials Keel handed them
 * (their token, a vault secret of their environment, the key sent to a run server): none of
 * them is stored or streamed, the mask is.
 */
const LONG_BYTES = 64 * 1024 * 1024;
const SHORT_LINES = 5_000;
const MAX_LINE_BYTES = 64 * 1024;
const SECRET = 'vault-"secret"\\value-4711';
const RUNNER_KEY = 'rk-live-echoed-0123456789abcdef';

const SCRIPTS: Record<string, string> = {
  // Many short lines, one line of LONG_BYTES, then a line and a result: written as the pipe takes them.
  'flood.cjs': `const write = (s) => new Promise((r) => process.stdout.write(s) ? r() : process.stdout.once('drain', r));
    (async () => {
      let batch = ''; for (let i = 0; i < ${SHORT_LINES}; i++) batch += 'line ' + i + '\\n';
      await write(batch);
      const block = 'x'.repeat(1 << 20);
      for (let n = 0; n < Number(process.env.LONG_BYTES); n += block.length) await write(block);
      await write('\\nafter the long line\\n');
      await write(JSON.stringify({ type: 'service.result', result: { done: true } }) + '\\n');
    })();`,
  // Prints its token and its vault secret in every form output carries them: plain, in JSON, split across writes, across a line cut.
  'leaky.cjs': `const fs = require('node:fs'); const token = process.env.SERVICE_API_KEY; const secret = process.env.LEAKY_SECRET;
    const write = (s) => new Promise((r) => process.stdout.write(s) ? r() : process.stdout.once('drain', r));
    const pause = () => new Promise((r) => setTimeout(r, 30));
    (async () => {
      fs.writeFileSync(process.env.TOKEN_FILE, token);
      await write('token ' + token + ' secret ' + secret + '\\n');
      process.stderr.write('on stderr: Bearer ' + token + '\\n');
      await write(JSON.stringify({ type: 'service.note', token, secret, [secret]: 'as a key' }) + '\\n');
      await write('split ' + token.slice(0, 12)); await pause(); await write(token.slice(12) + ' end\\n');
      await write('y'.repeat(${MAX_LINE_BYTES} - 8) + token + ' tail\\n');
      await write(JSON.stringify({ type: 'service.result', result: { token, secret, nested: { [secret]: [token] } } }) + '\\n');
    })();`,
};

let t: TestKernel;
let company: any;
let scripts: string;
let tokens: string;
let runServer: RunServer;
let echo: Server;
let echoUrl: string;

beforeAll(async () => {
  scripts = await mkdtemp(join(tmpdir(), 'keel-output-agents-'));
  await chmod(scripts, 0o755);
  for (const [name, text] of Object.entries(SCRIPTS)) await writeFile(join(scripts, name), text, { mode: 0o644 });
  tokens = await mkdtemp(join(tmpdir(), 'keel-output-tokens-'));
  await chmod(tokens, 0o777);
  runServer = new RunServer(RUNNER_KEY);
  await runServer.start();
  // An http agent's server that answers with the headers it was sent (the run token among them).
  echo = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true, echoed: { authorization: req.headers.authorization, team: req.headers['x-team'] } }));
    });
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', () => resolve()));
  echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
  t = await startTestKernel({ plugins: { privateNetworkHosts: ['runtime@127.0.0.1', 'remote-runner@127.0.0.1'] } }, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Output Co' });
});
afterAll(async () => {
  await t?.stop();
  await runServer?.stop();
  echo?.close();
  for (const dir of [scripts, tokens]) if (dir) await rm(dir, { recursive: true, force: true });
});

/** The whole stored log of a run, page by page through the log route, as records. */
async function wholeLog(runId: string): Promise<{ text: string; records: Array<{ seq: number; stream: string; line: string }> }> {
  let text = '';
  let offset = 0;
  for (;;) {
    const res = await t.api.get(`/api/heartbeat-runs/${runId}/log?offset=${offset}&limitBytes=1048576`);
    expect(res.status, res.text).toBe(200);
    text += res.body.content;
    if (res.body.eof || res.body.nextOffset === offset) break;
    offset = res.body.nextOffset;
  }
  return { text, records: text.trim().split('\n').map((line) => JSON.parse(line)) };
}

/** The run's event stream once it ended: the run, its log pages, the end. */
async function streamed(runId: string): Promise<string> {
  const res = await fetch(`${t.url}/api/heartbeat-runs/${runId}/stream`);
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  return res.text();
}

/** Every spelling of a value a stored text could hold it in: as it is, JSON-escaped once and twice. */
const spellings = (value: string) => [value, JSON.stringify(value).slice(1, -1), JSON.stringify(JSON.stringify(value)).slice(1, -1)];
function expectNone(text: string, values: string[], where: string): void {
  for (const value of values) for (const form of spellings(value)) expect(text.includes(form), `${where} holds a credential`).toBe(false);
}

describe('output size', () => {
  it('cuts a 64 MiB line to the line limit in the stored log and says so, keeps every short line, and keeps the complete output on disk', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'flood.cjs'), { env: { LONG_BYTES: String(LONG_BYTES) }, timeoutSec: 120 });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id, undefined, 120_000);
    expect(run).toMatchObject({ status: 'succeeded', exitCode: 0, resultJson: { done: true } });

    const { records } = await wholeLog(run.id);
    const stdout = records.filter((record) => record.stream === 'stdout').map((record) => record.line);
    // Every short line, in order, then the long one cut, then what followed it.
    expect(stdout.slice(0, SHORT_LINES)).toEqual(Array.from({ length: SHORT_LINES }, (_, i) => `line ${i}`));
    expect(stdout[SHORT_LINES]).toBe(`${'x'.repeat(MAX_LINE_BYTES)} [line cut: ${LONG_BYTES - MAX_LINE_BYTES} bytes omitted]`);
    expect(stdout[SHORT_LINES + 1]).toBe('after the long line');
    const note = records.find((record) => record.stream === 'system' && record.line.startsWith('output cut:'));
    expect(note?.line).toContain(`1 line(s) cut to ${MAX_LINE_BYTES} bytes (${LONG_BYTES - MAX_LINE_BYTES} bytes omitted)`);
    expect(note?.line).toContain(`execution-output/${run.executionId}/`);
    // The stored log is what was kept, not the output: well under the long line.
    expect(run.logBytes).toBeLessThan(1024 * 1024);

    // The complete output, byte for byte, in the copy on disk.
    const spool = join(t.dataDir, 'execution-output', run.executionId, 'stdout.log');
    let shortBytes = 0;
    for (let i = 0; i < SHORT_LINES; i++) shortBytes += Buffer.byteLength(`line ${i}\n`);
    const tail = `\nafter the long line\n${JSON.stringify({ type: 'service.result', result: { done: true } })}\n`;
    expect((await stat(spool)).size).toBe(shortBytes + LONG_BYTES + Buffer.byteLength(tail));
  }, 180_000);

  it('keeps no copy on disk when the stored log holds everything', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'flood.cjs'), { env: { LONG_BYTES: '0' } });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run).toMatchObject({ status: 'succeeded', resultJson: { done: true } });
    const { records } = await wholeLog(run.id);
    expect(records.some((record) => record.line.includes('line cut') || record.line.startsWith('output cut:'))).toBe(false);
    await expect(stat(join(t.dataDir, 'execution-output', run.executionId))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('credentials in output', () => {
  it('masks the run token and a vault secret of its environment in the log, the stream, resultJson, the activity and the copy on disk', async () => {
    const secret = await t.api.post(`/api/companies/${company.id}/secrets`, { name: 'leaky-secret', value: SECRET });
    expect(secret.status, secret.text).toBe(201);
    const tokenFile = join(tokens, 'leaky-token');
    const agent = await processAgent(t.api, company.id, join(scripts, 'leaky.cjs'), {
      env: { TOKEN_FILE: tokenFile, LEAKY_SECRET: { type: 'secret_ref', secretId: secret.body.id } },
    });
    const { run: queued } = await wakeOk(t.api, agent.id);
    // The live stream, opened while the run is queued or running, until it reports the end.
    const live = fetch(`${t.url}/api/heartbeat-runs/${queued.id}/stream`).then(async (res) => {
      const reader = res.body!.getReader();
      let text = '';
      while (!/"status":"(succeeded|failed)"/.test(text) && !text.includes('event: end')) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      await reader.cancel();
      return text;
    });
    const run = await runWhen(t, queued.id);
    expect(run).toMatchObject({ status: 'succeeded', exitCode: 0 });
    const token = await readFile(tokenFile, 'utf8');
    expect(token.length).toBeGreaterThan(20);
    const credentials = [token, SECRET];

    const { text, records } = await wholeLog(run.id);
    expectNone(text, credentials, 'the stored log');
    const lines = records.map((record) => record.line);
    expect(lines).toContain('token *** secret ***');
    expect(lines).toContain('on stderr: Bearer ***');
    expect(lines).toContain('split *** end');
    // The cut falls inside the token: the token is masked whole, nothing of it is kept.
    expect(lines).toContain(`${'y'.repeat(MAX_LINE_BYTES - 8)}*** [line cut: 5 bytes omitted]`);
    expect(JSON.parse(lines.find((line) => line.includes('service.note'))!)).toEqual({ type: 'service.note', token: '***', secret: '***', '***': 'as a key' });

    expect(run.resultJson).toEqual({ token: '***', secret: '***', nested: { '***': ['***'] } });
    expectNone(JSON.stringify(run), credentials, 'the run');
    expectNone(await streamed(run.id), credentials, 'the ended run\'s stream');
    const liveText = await live;
    expectNone(liveText, credentials, 'the live stream');
    expect(liveText).toContain('***');
    const activity = await t.api.get(`/api/companies/${company.id}/activity?limit=200`);
    expect(activity.status).toBe(200);
    expectNone(JSON.stringify(activity.body), credentials, 'the activity');
    // The line was cut, so the complete output is on disk: masked as well.
    const spool = await readFile(join(t.dataDir, 'execution-output', run.executionId, 'stdout.log'), 'utf8');
    expectNone(spool, credentials, 'the copy on disk');
    expect(spool).toContain(`split *** end\n${'y'.repeat(MAX_LINE_BYTES - 8)}*** tail\n`);
  });

  it('masks the run token an http agent\'s server answers with, in resultJson and the log; other header values stay', async () => {
    const agent = await createAgent(t.api, company.id, { adapterType: 'http', adapterConfig: { url: `${echoUrl}/agent/run`, headers: { 'x-team': 'blue' } } });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run).toMatchObject({ status: 'succeeded', httpStatus: 200, resultJson: { ok: true, echoed: { authorization: 'Bearer ***', team: 'blue' } } });
    const { text } = await wholeLog(run.id);
    expect(text).toContain('Bearer ***');
    expect(text).not.toMatch(/Bearer (?!\*\*\*)/);
  });

  it('masks the API key a run server echoes, in its events, result, log, stream and activity', async () => {
    runServer.reset({}, { steps: [`key ${RUNNER_KEY}`, `header "Bearer ${RUNNER_KEY}"`], result: { echoed: RUNNER_KEY, [RUNNER_KEY]: true } });
    const agent = await createAgent(t.api, company.id, { adapterType: 'eta_gateway', adapterConfig: { apiBaseUrl: `${runServer.url}/`, apiKey: RUNNER_KEY, eventReconnectMs: 50 } });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run.status).toBe('succeeded');
    // The run server did get the key, and did send it back.
    expect(runServer.runFor(run.id)?.headers.authorization).toBe(`Bearer ${RUNNER_KEY}`);

    const { text } = await wholeLog(run.id);
    expectNone(text, [RUNNER_KEY], 'the stored log');
    expect(text).toContain('key ***');
    expectNone(JSON.stringify(run), [RUNNER_KEY], 'the run');
    expect(JSON.stringify(run.resultJson)).toContain('***');
    expectNone(await streamed(run.id), [RUNNER_KEY], 'the stream');
    const activity = await t.api.get(`/api/companies/${company.id}/activity?limit=200`);
    expectNone(JSON.stringify(activity.body), [RUNNER_KEY], 'the activity');
  });
});
