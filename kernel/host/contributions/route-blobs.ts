import type { Context } from 'koa';
import type { RouteManifest } from '../../../sdk/plugin/manifest.ts';
import { blobIsActiveContent, deleteBlob, readBlobStream, type BlobMetadata } from '../../blobs/blob-store.ts';
import { blobQuota } from '../../blobs/blob-quota.ts';
import { contentDisposition } from '../../blobs/content-disposition.ts';
import { blobForPlugin } from '../../blobs/blob-access.ts';
import { servedInline } from '../../blobs/content-types.ts';
import { streamUpload } from '../../blobs/multipart-upload.ts';
import { effectiveUploadLimit } from '../../blobs/upload-limits.ts';
import { KeelError } from '../../http/errors.ts';
import { cleanFilename } from '../../blobs/file-names.ts';
import type { ExtensionHost } from '../extension-host.ts';
import type { InvokeResult } from '../plugin-process.ts';

const DEFAULT_UPLOAD_SECONDS = 300;

function assertGranted(host: ExtensionHost, plugin: string, what: string, needs: string[]): void {
  const grants: string[] = host.plugins.get(plugin)?.row.granted_capabilities ?? [];
  if (!needs.some((grant) => grants.includes(grant))) {
    throw new KeelError(403, 'capability_denied', `${plugin}: ${what} needs ${needs.join(' or ')}, which is not granted; declare it under capabilities in ${plugin}/plugin.json and enable the plugin again`);
  }
}


/**
 * A route declared `upload`: the file part is streamed into the blob store (owned by the
 * route's plugin, in the call's company) before the isolate runs; the handler gets its metadata.
 */
export async function receiveUpload(ctx: Context, host: ExtensionHost, plugin: string, route: RouteManifest, companyId: string | null): Promise<BlobMetadata> {
  assertGranted(host, plugin, 'an upload route', ['blobs.write']);
  if (!companyId) throw new KeelError(403, 'company_scope_required', `${plugin}: an upload belongs to a company, and this call serves none`);
  const upload = route.upload!;
  // The route's maxBytes within the company's limit (its own, or the instance's).
  const limit = await effectiveUploadLimit(host.kernel.db, host.kernel.config.limits.attachmentBytes, companyId, upload.maxBytes);
  return streamUpload(ctx, host.kernel.db, {
    companyId, owner: plugin, field: upload.field, contentTypes: upload.contentTypes, limit,
    deadlineMs: (host.kernel.config.limits.uploadSeconds ?? DEFAULT_UPLOAD_SECONDS) * 1000, quota: blobQuota(host.kernel.config),
  });
}

/** A handler that failed keeps nothing: the blob its upload stored is deleted. */
export async function discardUpload(host: ExtensionHost, blob: BlobMetadata): Promise<void> {
  await deleteBlob(host.kernel.db, blob.id).catch((error: unknown) => host.kernel.log.warn({ err: error, blobId: blob.id }, 'could not delete the upload of a failed call'));
}

/**
 * A route declared `download`: the handler answered `{ blob, disposition?, filename? }`; the
 * kernel streams the blob if the plugin may reach it in the call's company (404 otherwise, as
 * for an unknown id). Types a browser could run, and content that sniffs as such whatever its
 * declared type (HTML sent as text/plain), are always sent as an attachment.
 */
export async function sendDownload(ctx: Context, host: ExtensionHost, plugin: string, result: InvokeResult, companyId: string | null): Promise<boolean> {
  if (!result.ok) return false;
  assertGranted(host, plugin, 'a download route', ['blobs.read', 'blobs.write']);
  let answer: { blob?: unknown; disposition?: unknown; filename?: unknown };
  // A respond() envelope (result.envelope) names no blob either.
  try { answer = result.envelope ? {} : JSON.parse(result.value ?? 'null') ?? {}; } catch { answer = {}; }
  if (typeof answer !== 'object' || typeof answer.blob !== 'string') {
    throw new KeelError(502, 'plugin_invalid_response', `${plugin}: a download route answers { blob, disposition?, filename? }`, { expose: true });
  }
  const blob = companyId ? await blobForPlugin(host.kernel.db, plugin, companyId, answer.blob) : undefined;
  if (!blob) throw new KeelError(404, 'blob_not_found', 'No blob with this id is reachable by this plugin in this company');
  const inline = answer.disposition === 'inline' && servedInline(blob.contentType) && !(await blobIsActiveContent(host.kernel.db, blob.id));
  const filename = (typeof answer.filename === 'string' ? cleanFilename(answer.filename) : null) ?? blob.filename;
  ctx.status = 200;
  ctx.set('Content-Type', blob.contentType);
  ctx.set('Content-Disposition', contentDisposition(inline ? 'inline' : 'attachment', filename));
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Content-Security-Policy', "default-src 'none'; sandbox");
  ctx.set('Cache-Control', 'private, no-cache');
  ctx.set('ETag', `"${blob.sha256}"`);
  ctx.body = ctx.method === 'HEAD' ? null : readBlobStream(host.kernel.db, blob);
  ctx.length = blob.byteSize;
  return true;
}
