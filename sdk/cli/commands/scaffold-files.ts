/**
 * The files `keel plugin create` writes: a small but complete plugin (a table of its own,
 * two routes, a tool, activity) and a test of it on sdk/testing that passes as generated.
 */
export interface ScaffoldInput {
  key: string;
  namespace: string;
  displayName: string;
  tag: 'example' | 'first-party' | null;
  /** Import path of sdk/testing from the plugin folder. */
  testingImport: string;
}

export function scaffoldFiles(input: ScaffoldInput): Record<string, string> {
  return {
    'plugin.json': `${JSON.stringify(manifest(input), null, 2)}\n`,
    'src/index.ts': source(input),
    'migrations/0001-notes.sql': migration(),
    [`${input.key}.test.ts`]: test(input),
    'README.md': readme(input),
  };
}

function manifest({ key, namespace, displayName, tag }: ScaffoldInput): Record<string, unknown> {
  return {
    key,
    version: '0.1.0',
    sdkApiVersion: 1,
    displayName,
    description: `${displayName}: keeps short notes per company and greets agents.`,
    entry: 'src/index.ts',
    ...(tag ? { tag } : {}),
    capabilities: [
      { id: 'http.routes', reason: 'Serves the notes routes' },
      { id: 'database.namespace.write', reason: 'Stores notes in its own table' },
      { id: 'database.namespace.migrate', reason: 'Creates its notes table' },
      { id: 'activity.write', reason: 'Records each note it creates' },
      { id: 'tools.register', reason: 'Offers the greet tool to agents' },
    ],
    database: { namespace, migrations: 'migrations' },
    routes: [
      { key: 'list-notes', method: 'GET', path: '/companies/:companyId/notes', auth: 'any', companyParam: 'companyId', description: 'Notes of the company, oldest first.' },
      {
        key: 'create-note', method: 'POST', path: '/companies/:companyId/notes', auth: 'board', companyParam: 'companyId', successStatus: 201,
        description: 'Adds a note.',
        body: { type: 'object', required: ['text'], properties: { text: { type: 'string', minLength: 1, maxLength: 1000 } } },
      },
    ],
    tools: [
      { key: 'greet', description: 'Greets someone by name.', inputSchema: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1, maxLength: 100 } } } },
    ],
  };
}

function source({ key }: ScaffoldInput): string {
  return `import { definePlugin } from '@keel/sdk/plugin';

interface NoteRow { id: string; text: string; created_at: string }

// The capabilities this code uses, from plugin.json: ctx.db and ctx.activity are then typed
// and present (the host refuses to run this code if plugin.json stops declaring one).
export default definePlugin({
  capabilities: ['database.namespace.write', 'activity.write'],
  routes: {
    'list-notes': async (req, ctx) => {
      const { rows } = await ctx.db.query<NoteRow>('select id, text, created_at from notes where company_id = $1 order by id', [req.companyId]);
      // bigint ids arrive as strings from PostgreSQL.
      return rows.map((row) => ({ id: Number(row.id), text: row.text, createdAt: row.created_at }));
    },
    'create-note': async (req, ctx) => {
      const { text } = req.body as { text: string };
      const { rows } = await ctx.db.query<{ id: string }>('insert into notes (company_id, text) values ($1, $2) returning id', [req.companyId, text]);
      const id = String(rows[0]!.id);
      // Same transaction as the insert: a failure after this line leaves neither behind.
      await ctx.activity.record({ action: '${key}.note_created', entityType: 'note', entityId: id, details: { length: text.length } });
      return { id: Number(id), text };
    },
  },
  tools: {
    greet: (input) => ({ greeting: \`Hello, \${(input as { name: string }).name}!\` }),
  },
});
`;
}

function migration(): string {
  return `-- Runs in the plugin's own schema, as the plugin's migrator role.
create table notes (
  id bigserial primary key,
  company_id uuid not null,
  text text not null,
  created_at timestamptz not null default now()
);
create index notes_company_idx on notes (company_id, id);
`;
}

function test({ key, testingImport }: ScaffoldInput): string {
  return `import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestHost, type TestHost } from '${testingImport}';

const COMPANY = '00000000-0000-4000-8000-000000000001';
let host: TestHost;

beforeAll(async () => {
  host = await createTestHost(new URL('.', import.meta.url));
});
afterAll(() => host?.dispose());

describe('${key}', () => {
  it('stores a note in its own table and records activity', async () => {
    host.db.on(/^insert into notes/, () => [{ id: '1' }]);
    const answer = await host.callRoute('create-note', { params: { companyId: COMPANY }, body: { text: 'first' } });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({ id: 1, text: 'first' });
    expect(host.db.queries.at(-1)?.params).toEqual([COMPANY, 'first']);
    expect(host.activity.at(-1)).toMatchObject({ action: '${key}.note_created', entityId: '1', companyId: COMPANY, byHost: false });
  });

  it('lists the company\\'s notes', async () => {
    host.db.on(/^select id, text, created_at from notes/, ([companyId]) => (companyId === COMPANY ? [{ id: '1', text: 'first', created_at: '2030-01-01T00:00:00.000Z' }] : []));
    const answer = await host.callRoute('list-notes', { params: { companyId: COMPANY } });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual([{ id: 1, text: 'first', createdAt: '2030-01-01T00:00:00.000Z' }]);
  });

  it('refuses an empty note before the plugin runs', async () => {
    const before = host.db.queries.length;
    const answer = await host.callRoute('create-note', { params: { companyId: COMPANY }, body: { text: '' } });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'validation_failed' });
    expect(host.db.queries.length).toBe(before);
  });

  it('greets through its tool', async () => {
    expect(await host.callTool('greet', { name: 'Ada' })).toEqual({ greeting: 'Hello, Ada!' });
  });
});
`;
}

function readme({ key, displayName }: ScaffoldInput): string {
  return `# ${displayName}

A Keel plugin (\`${key}\`): it keeps short notes per company in its own table and offers a
\`greet\` tool to agents.

| file | what it is |
| --- | --- |
| \`plugin.json\` | the manifest: capabilities (each with the reason the operator sees), routes, tools, database namespace |
| \`src/index.ts\` | the handlers, registered with \`definePlugin\`; the only import is \`@keel/sdk/plugin\` |
| \`migrations/\` | SQL migrations of the plugin's own schema, applied in name order on enable and upgrade |
| \`${key}.test.ts\` | unit tests on \`sdk/testing\`: the plugin runs in a real isolate against fakes, no database needed |

## Routes and tools

| call | what it does |
| --- | --- |
| \`GET /api/plugins/${key}/companies/{companyId}/notes\` | the company's notes, oldest first |
| \`POST /api/plugins/${key}/companies/{companyId}/notes\` \`{text}\` | adds a note (201), with an activity entry \`${key}.note_created\` |
| tool \`${key}.greet\` \`{name}\` | answers \`{greeting}\` |

## Working on it

\`\`\`sh
npm run keel -- plugin build <folder>     # validate plugin.json and bundle to dist/plugin.js
npm run keel -- plugin test <folder>      # run ${key}.test.ts
npm run keel -- plugin dev <folder>       # install into the running kernel, rebuild and hot-swap on every change
\`\`\`
`;
}
