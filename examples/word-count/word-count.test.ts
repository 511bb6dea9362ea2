import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestHost, PluginCallError, type TestHost } from '@keel/sdk/testing';

let host: TestHost;

beforeAll(async () => {
  host = await createTestHost(new URL('.', import.meta.url));
});
afterAll(() => host?.dispose());

describe('word-count (sdk/testing)', () => {
  it('counts words, characters and lines, and names the most frequent words', async () => {
    const result = await host.callTool('count', { text: 'The cat saw the dog.\nThe dog ran.' });
    expect(result).toEqual({
      words: 8, characters: 33, charactersWithoutSpaces: 26, lines: 2,
      topWords: [{ word: 'the', count: 3 }, { word: 'dog', count: 2 }, { word: 'cat', count: 1 }, { word: 'ran', count: 1 }, { word: 'saw', count: 1 }],
    });
  });

  it('keeps contractions and hyphenated words whole and counts other scripts', async () => {
    const result = await host.callTool('count', { text: "don't stop well-known Straße 東京 2024", top: 0 }) as { words: number; topWords: unknown[]; characters: number };
    expect(result.words).toBe(6);
    expect(result.topWords).toEqual([]);
    expect(result.characters).toBe(36);
  });

  it('answers zeros for empty text', async () => {
    expect(await host.callTool('count', { text: '' })).toEqual({ words: 0, characters: 0, charactersWithoutSpaces: 0, lines: 0, topWords: [] });
  });

  it('records the host activity entry of a tool call', async () => {
    await host.callTool('count', { text: 'one' }, { companyId: '00000000-0000-4000-8000-000000000009' });
    expect(host.activity.at(-1)).toMatchObject({ action: 'plugin.word-count.tool.count', entityType: 'plugin_tool', entityId: 'word-count.count', byHost: true, companyId: '00000000-0000-4000-8000-000000000009' });
  });

  it('refuses input the schema refuses, before the plugin runs', async () => {
    const refused = await host.callTool('count', { top: 3 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PluginCallError);
    expect(refused).toMatchObject({ status: 400, code: 'validation_failed', message: 'Invalid tool input: text is required' });
    await expect(host.callTool('count', { text: 'x', top: 51 })).rejects.toMatchObject({ code: 'validation_failed' });
  });
});
