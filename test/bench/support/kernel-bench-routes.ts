import type { RouteModule } from '../../../kernel/http/app.ts';
import { readJsonBody } from '../../../kernel/http/body.ts';
import { declareRoutes } from '../../../kernel/http/route-spec.ts';
import { companyForRequest } from '../../../kernel/tenancy/company-access.ts';
import { findBlob, readBlobStream } from '../../../kernel/blobs/blob-store.ts';
import { streamUpload } from '../../../kernel/blobs/multipart-upload.ts';
import { blobQuota } from '../../../kernel/blobs/blob-quota.ts';
import { notFound } from '../../../kernel/http/errors.ts';

/**
 * The same two routes as the benchmark plugin, served by the kernel itself: the baseline the
 * extension host is measured against. Mounted only by the benchmark's kernel entry point.
 */
export const kernelBenchRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Benchmark');

  route({ method: 'POST', path: '/api/bench/echo', auth: 'any', success: 200, summary: 'Answers its JSON body' }, async (ctx) => {
    // Changes nothing, like the plugin's readOnly echo route: no activity entry.
    ctx.state.skipAudit = true;
    ctx.body = await readJsonBody(ctx, kernel.config.limits.jsonBodyBytes);
  });

  route({ method: 'POST', path: '/api/bench/companies/:companyId/rows', auth: 'any', success: 200, summary: 'Writes one row of the company' }, async (ctx) => {
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

  route({ method: 'GET', path: '/api/bench/companies/:companyId/rows/:key', auth: 'any', success: 200, summary: 'Reads one row of the company' }, async (ctx) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    ctx.body = await kernel.db.maybeOne('select key, value from bench_rows where key = ? and company_id = ?', [ctx.params.key, company.id]) ?? null;
  });

  // The issue baseline: the same numbered insert the work plugin makes (the company counter
  // taken under its row lock, the row, an activity entry), in a kernel transaction.
  route({ method: 'POST', path: '/api/bench/companies/:companyId/issues', auth: 'any', success: 201, summary: 'Creates one numbered issue row' }, async (ctx) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const body = await readJsonBody(ctx, kernel.config.limits.jsonBodyBytes) as { title: string };
    ctx.status = 201;
    ctx.body = await kernel.db.transaction(async (tx) => {
      const counter = await tx.maybeOne<{ n: number; prefix: string }>('update companies set issue_counter = issue_counter + 1 where id = ? returning issue_counter as n, issue_prefix as prefix', [company.id]);
      const row = await tx.maybeOne<{ id: string }>(
        "insert into bench_issues (company_id, issue_number, identifier, title, status) values (?, ?, ?, ?, 'backlog') returning *",
        [company.id, counter!.n, `${counter!.prefix}-${counter!.n}`, body.title]);
      await kernel.activity.recordFor(ctx, tx, { companyId: company.id, action: 'bench.issue_created', entityType: 'issue', entityId: row!.id });
      return row;
    });
  });

  // The comment baseline: the same comment insert the work plugin makes (the issue read, the
  // row, an activity entry), in a kernel transaction.
  route({ method: 'POST', path: '/api/bench/issues/:issueId/comments', auth: 'any', success: 201, summary: 'Adds one comment to a benchmark issue' }, async (ctx) => {
    const issue = await kernel.db.maybeOne<{ id: string; company_id: string }>('select id, company_id from bench_issues where id = ?', [ctx.params.issueId]);
    if (!issue) throw notFound('Issue not found');
    const { company } = await companyForRequest(ctx, kernel.db, issue.company_id);
    const body = await readJsonBody(ctx, kernel.config.limits.jsonBodyBytes) as { body: string };
    ctx.status = 201;
    ctx.body = await kernel.db.transaction(async (tx) => {
      const row = await tx.maybeOne<{ id: string }>(
        "insert into bench_comments (company_id, issue_id, author_type, body) values (?, ?, 'user', ?) returning *", [company.id, issue.id, body.body]);
      await kernel.activity.recordFor(ctx, tx, { companyId: company.id, action: 'bench.comment_added', entityType: 'issue', entityId: issue.id });
      return row;
    });
  });

  // The blob baseline: the same streamed upload and download, without a plugin in between.
  route({ method: 'POST', path: '/api/bench/companies/:companyId/blobs', auth: 'any', success: 201, summary: 'Stores one uploaded file in the blob store' }, async (ctx) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    ctx.state.skipAudit = true;
    ctx.status = 201;
    ctx.body = await streamUpload(ctx, kernel.db, { companyId: company.id, owner: 'kernel', field: 'file', limit: kernel.config.limits.attachmentBytes, contentTypes: ['application/octet-stream'], deadlineMs: 300_000, quota: blobQuota(kernel.config) });
  });

  route({ method: 'GET', path: '/api/bench/companies/:companyId/blobs/:blobId', auth: 'any', success: 200, summary: 'Streams one blob' }, async (ctx) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const blob = await findBlob(kernel.db, ctx.params.blobId!);
    if (!blob || blob.companyId !== company.id) throw notFound('Blob not found');
    ctx.set('Content-Type', blob.contentType);
    ctx.body = readBlobStream(kernel.db, blob);
    ctx.length = blob.byteSize;
  });
};
