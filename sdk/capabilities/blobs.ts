import { defineCapability, method } from './define.ts';
import { id, nullable, text } from './schemas.ts';

/** A blob's metadata; its bytes stay in the kernel's blob store. */
export interface BlobHandle {
  id: string;
  companyId: string;
  /** `kernel` or the key of the plugin that owns it. */
  owner: string;
  contentType: string;
  byteSize: number;
  sha256: string;
  filename: string | null;
  createdAt: string;
}
/**
 * Blobs of the company this call serves that the plugin owns or was handed (an upload to one
 * of its routes, a link from another plugin). Any other id, another company's or another
 * plugin's included, is not found (`get` answers null, the others 404 `blob_not_found`).
 */
export interface BlobsCapability {
  get(blobId: string): Promise<BlobHandle | null>;
  /** The blob as UTF-8 text; at most 512 KiB (413 `blob_too_large` beyond). */
  readText(blobId: string): Promise<string>;
  /**
   * A new blob owned by the plugin (text/* or JSON types, at most 512 KiB: 413 `blob_too_large`
   * beyond, refused by the text's length before it is copied); needs blobs.write. Counts against
   * the company's and the plugin's blob quotas (413 `blob_quota_exceeded` when they are full).
   * Control, bidi and invisible characters are removed from `filename`.
   */
  createText(input: { text: string; contentType?: string; filename?: string }): Promise<BlobHandle>;
  /** Hands the blob to another plugin of the same company; needs blobs.write. */
  link(blobId: string, pluginKey: string): Promise<{ linked: true }>;
  /** The owner deletes the blob; a plugin it was handed to lets go of its link. Needs blobs.write. */
  delete(blobId: string): Promise<{ deleted: boolean }>;
}


/** What a reader may call: blobs.read gives these, blobs.write gives them too. */
export interface BlobsReadCapability { get: BlobsCapability['get']; readText: BlobsCapability['readText'] }

/** Largest blob `readText` returns and `createText` writes: bigger blobs are streamed by download routes. */
export const MAX_TEXT_BYTES = 512 * 1024;

const handle = { type: 'object', required: ['id', 'companyId', 'owner', 'contentType', 'byteSize', 'sha256'] };
const get = method('kernel', [id], nullable(handle));
const readText = method('kernel', [id], { type: 'string' });

export const blobsRead = defineCapability<{ blobs: BlobsReadCapability }>()({
  id: 'blobs.read',
  summary: 'Read blobs of the company a call serves that the plugin owns or was handed, and serve them for download',
  members: { blobs: { get, readText } },
  requiredBy: (manifest) => (manifest.routes ?? []).flatMap((route, index) => (route.download ? [`routes.${index}.download`] : [])),
  satisfiedAlsoBy: ['blobs.write'],
});

export const blobsWrite = defineCapability<{ blobs: BlobsCapability }>()({
  id: 'blobs.write',
  summary: 'Receive uploads and create, hand over and delete blobs of the company a call serves',
  members: {
    blobs: {
      get,
      readText,
      // A UTF-8 text has at least as many bytes as UTF-16 units: a text past the bound is refused unread.
      createText: method('kernel', [{ type: 'object', required: ['text'], properties: { text: { type: 'string' }, contentType: { type: 'string' }, filename: { type: 'string' } } }], handle, {
        argumentsBound: { chars: MAX_TEXT_BYTES + 1024, status: 413, code: 'blob_too_large', message: `createText writes at most ${MAX_TEXT_BYTES} bytes` },
      }),
      link: method('kernel', [id, text(64)], { type: 'object', required: ['linked'] }),
      delete: method('kernel', [id], { type: 'object', required: ['deleted'] }),
    },
  },
  requiredBy: (manifest) => (manifest.routes ?? []).flatMap((route, index) => (route.upload ? [`routes.${index}.upload`] : [])),
});
