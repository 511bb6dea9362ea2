import { PluginError, respond } from '@keel/sdk/plugin';
import { definePlugin } from './plugin.gen.ts';

const STEP = 100;

interface ImportRow { id: string; name: string; lines: string[]; imported: number; status: string; job_id: string | null }

const view = (row: ImportRow) => ({ id: Number(row.id), name: row.name, total: row.lines.length, imported: row.imported, status: row.status, jobId: row.job_id });

export default definePlugin({
  routes: {
    // The import row and the job are one unit: the job is queued only if this transaction commits.
    start: async (req, ctx) => {
      const body = req.body as { name: string; lines: string[] };
      const { rows } = await ctx.db.query<{ id: string }>(
        'insert into imports (company_id, name, lines) values ($1, $2, $3) returning id', [req.companyId, body.name, JSON.stringify(body.lines)]);
      const importId = Number(rows[0]!.id);
      // A singletonKey per import: a retried request cannot queue the same import twice.
      const { jobId } = await ctx.jobs.enqueue('import', { importId }, { singletonKey: `import-${importId}` });
      await ctx.db.query('update imports set job_id = $1 where id = $2', [jobId, importId]);
      return respond(202, { id: importId, jobId, status: 'queued' });
    },
    show: async (req, ctx) => {
      const { rows } = await ctx.db.query<ImportRow>(
        'select id, name, lines, imported, status, job_id from imports where id = $1 and company_id = $2', [Number(req.params.importId), req.companyId]);
      if (!rows[0]) throw new PluginError(404, 'import_not_found', 'No such import in this company');
      return view(rows[0]);
    },
  },
  jobs: {
    // Runs in the company of the request that enqueued it, with a 10-minute deadline. The whole
    // job is one transaction: a failed attempt rolls back and the retry starts from the beginning.
    // payload is typed from plugin.json's payloadSchema; null when an operator triggers the job.
    import: async (ctx, payload) => {
      if (payload === null) throw new PluginError(400, 'import_not_named', 'The import job runs as enqueued, with the import to run');
      const { importId } = payload;
      const { rows } = await ctx.db.query<ImportRow>(
        'select id, name, lines, imported, status, job_id from imports where id = $1 and company_id = $2', [importId, ctx.invocation.companyId]);
      const row = rows[0];
      if (!row) return { skipped: true };
      await ctx.db.query("update imports set status = 'importing' where id = $1", [importId]);
      for (let start = 0; start < row.lines.length; start += STEP) {
        const chunk = row.lines.slice(start, start + STEP);
        await ctx.db.query(
          'insert into imported_lines (import_id, position, text) select $1, $3::int + ordinality::int - 1, value from jsonb_array_elements_text($2::jsonb) with ordinality',
          [importId, JSON.stringify(chunk), start]);
        // Operators see this on the job; a cancelled job is refused here and rolls back.
        await ctx.progress.report({ done: start + chunk.length, total: row.lines.length, message: `imported ${start + chunk.length} of ${row.lines.length} lines` });
      }
      await ctx.db.query("update imports set status = 'done', imported = $2 where id = $1", [importId, row.lines.length]);
      return { imported: row.lines.length };
    },
  },
});
