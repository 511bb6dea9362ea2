import type { RouteModule } from '../../../kernel/http/app.ts';
import { readJsonBody } from '../../../kernel/http/body.ts';
import { requireActor } from '../../../kernel/http/guards.ts';
import { companyForRequest } from '../../../kernel/tenancy/company-access.ts';

/**
 * The same two routes as the benchmark plugin, served by the kernel itself: the baseline the
 * extension host is measured against. Mounted only by the benchmark's kernel entry point.
 */
export const kernelBenchRoutes: RouteModule = (router, kernel) => {
  router.post('/api/bench/echo', async (ctx) => {
    requireActor(ctx);
    // Changes nothing, like the plugin's readOnly echo route: no activity entry.
    ctx.state.skipAudit = true;
    ctx.body = await readJsonBody(ctx, kernel.config.limits.jsonBodyBytes);
  });

  router.post('/api/bench/companies/:companyId/rows', async (ctx) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const body = await readJsonBody(ctx, kernel.config.limits.jsonBodyBytes) as { key: string; value: string };
    ctx.body = await kernel.db.transaction(async (tx) => {
      await tx.query(
        'insert into bench_rows (key, company_id, value) values (?, ?, ?) on conflict (key) do update set value = excluded.value, updated_at = now()',
        [body.key, company.id, body.value]);
      const row = await tx.maybeOne('select key, value from bench_rows where key = ?', [body.key]);
      await kernel.activity.recordFor(ctx, tx, { companyId: company.id, action: 'bench.row_written', entityType: 'bench_row', entityId: body.key });
      return row;
    });
  });
};
