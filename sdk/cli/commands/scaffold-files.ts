import { contextModuleText } from '../../build/context-module.ts';

/**
 * The files `keel plugin create` writes: a small but complete plugin (a table of its own,
 * two routes, a tool, activity) and a test of it on @keel/sdk/testing that passes as generated.
 * Outside the Keel checkout the folder is also a project of its own: a package.json depending
 * on the SDK as a package, a tsconfig.json and a vitest configuration.
 */
export interface ScaffoldInput {
  key: string;
  namespace: string;
  displayName: string;
  tag: 'example' | 'first-party' | null;
  /** Set for a folder outside the checkout, which gets project files of its own. */
  project: ProjectInput | null;
}

export interface ProjectInput {
  /** The `@keel/sdk` dependency: `file:` a packed tarball or an SDK folder, or a version range. */
  sdk: string;
  /** Versions of typescript, vitest and @types/node, as the SDK itself is developed with. */
  tools: Record<'typescript' | 'vitest' | '@types/node', string>;
}

export function scaffoldFiles(input: ScaffoldInput): Record<string, string> {
  const declared = manifest(input);
  return {
    'plugin.json': `${JSON.stringify(declared, null, 2)}\n`,
    'src/index.ts': source(input),
    // What `keel plugin build` writes again from plugin.json: the handlers' ctx type.
    'src/plugin.gen.ts': contextModuleText(declared as { capabilities: Array<{ id: string }> }),
    'migrations/0001-notes.sql': migration(),
    [`${input.key}.test.ts`]: test(input),
    'README.md': readme(input),
    ...(input.project ? projectFiles(input.key, input.project) : {}),
  };
}

function projectFiles(key: string, project: ProjectInput): Record<string, string> {
  const packageJson = {
    name: key,
    version: '0.1.0',
    private: true,
    type: 'module',
    engines: { node: '>=24' },
    scripts: {
      test: 'vitest run',
      typecheck: 'tsc --noEmit',
      build: 'keel plugin build .',
      dev: 'keel plugin dev .',
    },
    // Native and binary packages the SDK's test host runs (isolates, the bundler).
    allowScripts: { esbuild: true, 'isolated-vm': true },
    devDependencies: {
      '@keel/sdk': project.sdk,
      '@types/node': project.tools['@types/node'],
      typescript: project.tools.typescript,
      vitest: project.tools.vitest,
    },
  };
  const tsconfig = {
    compilerOptions: {
      target: 'es2024',
      lib: ['es2024'],
      module: 'nodenext',
      moduleResolution: 'nodenext',
      strict: true,
      noEmit: true,
      // Plugin files import each other with their .ts names (src/plugin.gen.ts), as the bundler reads them.
      allowImportingTsExtensions: true,
      isolatedModules: true,
      verbatimModuleSyntax: true,
      skipLibCheck: true,
      types: ['node'],
    },
    include: ['src', '*.test.ts', 'vitest.config.ts'],
  };
  return {
    'package.json': `${JSON.stringify(packageJson, null, 2)}\n`,
    'tsconfig.json': `${JSON.stringify(tsconfig, null, 2)}\n`,
    'vitest.config.ts': `import { defineConfig } from 'vitest/config';

// @keel/sdk/testing runs the plugin in a real V8 isolate (isolated-vm), which needs
// --no-node-snapshot in the test processes.
export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    pool: 'forks',
    execArgv: ['--no-node-snapshot'],
    testTimeout: 30_000,
  },
});
`,
    '.gitignore': 'node_modules/\ndist/\n',
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
  return `import { definePlugin } from './plugin.gen.ts';

interface NoteRow { id: string; text: string; created_at: string }

// ctx is typed from plugin.json's capabilities (plugin.gen.ts, written by \`keel plugin build\`):
// ctx.db and ctx.activity are present; the host refuses to run this code if plugin.json stops
// declaring one of the capabilities it was built for.
export default definePlugin({
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

function test({ key }: ScaffoldInput): string {
  return `import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestHost, type TestHost } from '@keel/sdk/testing';

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

function readme({ key, displayName, project }: ScaffoldInput): string {
  const files = project
    ? `| \`${key}.test.ts\` | unit tests on \`@keel/sdk/testing\`: the plugin runs in a real isolate against fakes, no database needed |
| \`package.json\`, \`tsconfig.json\`, \`vitest.config.ts\` | the project: \`@keel/sdk\` (types, test host, the \`keel\` command), TypeScript and vitest |`
    : `| \`${key}.test.ts\` | unit tests on \`@keel/sdk/testing\`: the plugin runs in a real isolate against fakes, no database needed |`;
  const working = project
    ? `\`\`\`sh
npm install               # @keel/sdk (${project.sdk}), TypeScript, vitest
npm test                  # run ${key}.test.ts, no server needed
npm run typecheck         # tsc against the SDK's types
npm run dev               # with a Keel server running: install the plugin into it, then rebuild and hot-swap on every change
npx keel plugin build .   # validate plugin.json and bundle to dist/plugin.js
\`\`\`

\`keel\` finds the server as the server does (\`--api-base <url>\`, else \`KEEL_API_BASE\`, \`--data-dir\`/\`KEEL_HOME\`,
\`HOST\`/\`PORT\`, default \`http://127.0.0.1:3100\`; \`--api-key\` or \`KEEL_API_KEY\` in authenticated mode).
\`@keel/sdk\` is a dev dependency: the server bundles the plugin with its own SDK. Once the SDK is
published, depend on it by name instead (\`"@keel/sdk": "^0.1.0"\`).`
    : `\`\`\`sh
npm run keel -- plugin build <folder>     # validate plugin.json and bundle to dist/plugin.js
npm run keel -- plugin test <folder>      # run ${key}.test.ts
npm run keel -- plugin dev <folder>       # install into the running kernel, rebuild and hot-swap on every change
\`\`\``;
  return `# ${displayName}

A Keel plugin (\`${key}\`): it keeps short notes per company in its own table and offers a
\`greet\` tool to agents.

| file | what it is |
| --- | --- |
| \`plugin.json\` | the manifest: capabilities (each with the reason the operator sees), routes, tools, database namespace |
| \`src/index.ts\` | the handlers, registered with \`definePlugin\`; the only import is \`@keel/sdk/plugin\` |
| \`migrations/\` | SQL migrations of the plugin's own schema, applied in name order on enable and upgrade |
${files}

## Routes and tools

| call | what it does |
| --- | --- |
| \`GET /api/plugins/${key}/companies/{companyId}/notes\` | the company's notes, oldest first |
| \`POST /api/plugins/${key}/companies/{companyId}/notes\` \`{text}\` | adds a note (201), with an activity entry \`${key}.note_created\` |
| tool \`${key}.greet\` \`{name}\` | answers \`{greeting}\` |

## Working on it

${working}

## Adding a capability later

Declare it in \`plugin.json\` (with its reason) and build (\`keel plugin build .\`, or let \`plugin dev\`
rebuild): \`src/plugin.gen.ts\` is written again from plugin.json, and \`ctx\` has the new member. The
running server keeps the old version until the operator grants it with the upgrade:
\`keel plugin upgrade ${key} --grant <capability>\` (\`plugin dev\` prints this command, filled in).
`;
}
