import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../../test/support/harness.ts';
import { installAndEnable } from '../../test/support/plugins.ts';

let t: TestKernel;
let company: string;
const FOLDER = fileURLToPath(new URL('.', import.meta.url));

beforeAll(async () => {
  t = await startTestKernel();
  await installAndEnable(t, FOLDER);
  company = (await t.api.post('/api/companies', { name: 'Live notes' })).body.id;
});
afterAll(async () => { await t?.stop(); });

const url = (path = '') => `${t.url}/api/plugins/live-notes/companies/${company}/notes${path}`;

describe('live-notes (installed through HTTP)', () => {
  it('streams missed notes after Last-Event-ID, then new ones, and exports Markdown and CSV', async () => {
    const first = (await t.api.post(`/api/plugins/live-notes/companies/${company}/notes`, { text: 'first' })).body;
    expect(first).toMatchObject({ id: expect.any(Number), text: 'first' });
    const controller = new AbortController();
    const live = await fetch(url('/live'), { headers: { 'last-event-id': String(first.id - 1) }, signal: controller.signal });
    expect(live.status).toBe(200);
    expect(live.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = live.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const until = async (needle: string) => { while (!text.includes(needle)) { const chunk = await reader.read(); if (chunk.done) throw new Error(`stream ended: ${text}`); text += decoder.decode(chunk.value); } };
    await until('"text":"first"');
    expect(text).toContain(`id: ${first.id}\nevent: note\n`);
    await t.api.post(`/api/plugins/live-notes/companies/${company}/notes`, { text: 'second, with "quotes"' });
    await until('second');
    controller.abort();

    const markdown = await fetch(url());
    expect(markdown.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(await markdown.text()).toBe('# Notes\n\n- first\n- second, with "quotes"\n');
    const csv = await fetch(url('?format=csv'));
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).toBe('attachment; filename="notes.csv"');
    expect((await csv.text()).split('\r\n')[2]).toMatch(/^"\d+","second, with ""quotes""",/);
  });
});
