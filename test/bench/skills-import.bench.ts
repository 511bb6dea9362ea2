import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GithubFixture } from '../plugins/skills/github-fixture.ts';
import { startKernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';

const SKILLS = 10;
const FILES_PER_SKILL = 20;
const RUNS = Number(process.env.SKILLS_IMPORT_BENCH_RUNS ?? 5);
const PLUGINS = fileURLToPath(new URL('../../plugins', import.meta.url));

/** A repository of 200 files: ten skills, each a SKILL.md and nineteen reference files of about 2 KB. */
function bigRepository(): Record<string, string> {
  const files: Record<string, string> = {};
  for (let s = 0; s < SKILLS; s++) {
    files[`skills/skill-${s}/SKILL.md`] = `---\nname: Skill ${s}\ndescription: Bench skill ${s}\n---\n# Skill ${s}\n`;
    for (let f = 1; f < FILES_PER_SKILL; f++) files[`skills/skill-${s}/references/ref-${f}.md`] = `# Reference ${f}\n${'lorem ipsum dolor sit amet '.repeat(80)}\n`;
  }
  return files;
}

/**
 * Import of a 200-file repository through `POST /api/companies/{id}/skills/import`, from a local
 * server speaking the GitHub REST subset the skills plugin uses (repository, commit, tree, one
 * contents call per file): the whole import as the client sees it, each run replacing the last.
 */
export async function run(): Promise<void> {
  const files = bigRepository();
  const fixture = new GithubFixture({ 'acme/big': { defaultBranch: 'main', refs: { main: 'a'.repeat(40) }, files } });
  const port = await fixture.start();
  // The skills manifest allows only GitHub's hosts: a copy of plugins/ also allows the fixture.
  const work = await mkdtemp(join(tmpdir(), 'keel-bench-plugins-'));
  await cp(PLUGINS, work, { recursive: true });
  const manifestPath = join(work, 'skills', 'plugin.json');
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8'));
  manifest.network = { allow: [...manifest.network.allow, `localhost:${port}`] };
  await writeFile(manifestPath, JSON.stringify(manifest));
  const kernel = await startKernelProcess({ KEEL_BENCH_FIRST_PARTY_DIR: work }, ['test/bench/support/bench-kernel-main.ts'], { plugins: { privateNetworkHosts: ['skills@localhost'] } });
  try {
    await kernel.call('POST', '/api/plugins/skills/config', { config: { githubApiBase: `http://localhost:${port}` } });
    const company = await kernel.call('POST', '/api/companies', { name: 'Import Bench' });
    const durations: number[] = [];
    let imported = 0;
    let requests = 0;
    for (let i = 0; i < RUNS; i++) {
      const before = fixture.requests.length;
      const started = performance.now();
      const answer = await kernel.call('POST', `/api/companies/${company.id}/skills/import`, { source: 'acme/big' });
      durations.push(performance.now() - started);
      imported = answer.imported.length;
      requests = fixture.requests.length - before;
    }
    const sorted = [...durations].sort((a, b) => a - b);
    printTable(`skill import of a ${Object.keys(files).length}-file repository (${SKILLS} skills) from a local GitHub REST fixture, ${RUNS} runs`, [{
      'skills imported': imported, 'API requests per import': requests,
      'median ms': Math.round(sorted[Math.floor(sorted.length / 2)]!), 'min ms': Math.round(sorted[0]!), 'max ms': Math.round(sorted[sorted.length - 1]!),
      'ms per file (median)': Math.round((sorted[Math.floor(sorted.length / 2)]! / Object.keys(files).length) * 100) / 100,
    }]);
  } finally {
    await kernel.stop();
    fixture.stop();
    await rm(work, { recursive: true, force: true });
  }
}
