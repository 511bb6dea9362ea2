import { loadConfig } from '../../../kernel/config/load.ts';
import { createLogger } from '../../../kernel/logger.ts';
import { startKernel } from '../../../kernel/kernel.ts';
import { kernelBenchRoutes } from './kernel-bench-routes.ts';
import type { RouteModule } from '../../../kernel/http/app.ts';
import { declareRoutes } from '../../../kernel/http/route-spec.ts';
import type { ExtensionHost } from '../../../kernel/host/extension-host.ts';

/** A kernel with the benchmark's baseline routes added; otherwise exactly what `npm start` runs. */
const config = loadConfig({ flags: { dataDir: process.argv[2], port: '0' } });
// KEEL_BENCH_FIRST_PARTY_DIR: a copy of plugins/ a benchmark adjusted (a manifest allowing its local fixture server).
const firstPartyDir = process.env.KEEL_BENCH_FIRST_PARTY_DIR || undefined;
let host: ExtensionHost | null = null;
/** What a plugin's batches sent to PostgreSQL so far (PluginProcess.batchTraffic): the costs benchmark prints round trips per batch. */
const batchTrafficRoute: RouteModule = (router, services) => {
  declareRoutes(router, services, 'Benchmark')({ method: 'GET', path: '/api/bench/batch-traffic/:plugin', auth: 'any', success: 200, summary: 'Statements and round trips of a plugin\'s batches' }, (ctx) => {
    ctx.state.skipAudit = true;
    ctx.body = host?.plugins.get(ctx.params.plugin!)?.process?.batchTraffic ?? null;
  });
};
const kernel = await startKernel(config, { log: createLogger(config.logging.level), extraRouteModules: [kernelBenchRoutes, batchTrafficRoute], firstPartyDir });
host = kernel.host;
await kernel.services.db.query('create table if not exists bench_rows (key text primary key, company_id uuid not null, value text not null, updated_at timestamptz not null default now())');
await kernel.services.db.query(`create table if not exists bench_issues (id uuid primary key default gen_random_uuid(), company_id uuid not null, issue_number integer not null,
  identifier text not null unique, title text not null, status text not null, created_at timestamptz not null default now(), updated_at timestamptz not null default now())`);
await kernel.services.db.query(`create table if not exists bench_comments (id uuid primary key default gen_random_uuid(), company_id uuid not null,
  issue_id uuid not null references bench_issues (id) on delete cascade, author_type text not null, body text not null,
  created_at timestamptz not null default now(), updated_at timestamptz not null default now())`);
await kernel.services.db.query('create index if not exists bench_comments_issue on bench_comments (issue_id, created_at, id)');
console.log(`Keel is listening on ${kernel.url}`);
process.on('SIGINT', () => { void kernel.stop().then(() => process.exit(0)); });
