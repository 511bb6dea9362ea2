import { deleteBlob, writeBlobFromBuffer } from '../../../blobs/blob-store.ts';
import { blobQuota } from '../../../blobs/blob-quota.ts';
import { KeelError } from '../../../http/errors.ts';
import { blobsWrite as spec, MAX_TEXT_BYTES } from '../../../../sdk/capabilities/blobs.ts';
import { mediaType } from '../../../blobs/content-types.ts';
import { cleanFilename } from '../../../blobs/file-names.ts';
import { reachable } from '../blobs-read/kernel.ts';
import { callCompany } from '../scope.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

const TEXT_TYPES = /^(text\/[a-z0-9.+-]+|application\/(json|x-ndjson|[a-z0-9.+-]+\+json))$/;
const PLUGIN_KEY = /^[a-z][a-z0-9]*([-_.][a-z0-9]+)*$/;

/**
 * `ctx.blobs` writes (blobs.write): blobs from text, links to another plugin and deletes, in the
 * company the call serves, of blobs this plugin reaches as blobs.read does (blobs-read/kernel.ts).
 */
const blobsWrite: KernelCapability<'config' | 'db'> = {
  methods: {
    createText: {
      run: async (call) => {
        const input = call.args[0] as { text?: unknown; contentType?: unknown; filename?: unknown } | null;
        if (!input || typeof input.text !== 'string') throw new KeelError(400, 'invalid_arguments', 'createText({ text, contentType?, filename? }): text must be a string');
        const contentType = input.contentType === undefined || input.contentType === null ? 'text/plain' : mediaType(String(input.contentType));
        if (!TEXT_TYPES.test(contentType)) throw new KeelError(400, 'invalid_arguments', 'createText: contentType must be a text/* or JSON type');
        // Measured before it is copied: a UTF-8 encoding has at least one byte per UTF-16 unit.
        const tooLarge = () => new KeelError(413, 'blob_too_large', `createText writes at most ${MAX_TEXT_BYTES} bytes`);
        if (input.text.length > MAX_TEXT_BYTES || Buffer.byteLength(input.text, 'utf8') > MAX_TEXT_BYTES) throw tooLarge();
        const data = Buffer.from(input.text, 'utf8');
        const filename = typeof input.filename === 'string' ? cleanFilename(input.filename) : null;
        const companyId = callCompany(call);
        return call.kernel.db.transaction((tx) => writeBlobFromBuffer(tx, { companyId, owner: call.plugin, contentType, filename }, data, blobQuota(call.kernel.config)));
      },
    },
    link: {
      run: async (call) => {
        const blob = await reachable(call, call.args[0]);
        const target = call.args[1];
        if (typeof target !== 'string' || !PLUGIN_KEY.test(target)) throw new KeelError(400, 'invalid_arguments', 'link(blobId, pluginKey): pluginKey must be a plugin key');
        if (target === blob.owner) return { linked: true };
        await call.kernel.db.exec('insert into blob_links (blob_id, plugin_key, linked_by) values (?, ?, ?) on conflict do nothing', [blob.id, target, call.plugin]);
        return { linked: true };
      },
    },
    delete: {
      run: async (call) => {
        const blob = await reachable(call, call.args[0]);
        // The owner deletes the blob; a plugin it was handed to only lets go of it.
        if (blob.owned) return { deleted: await deleteBlob(call.kernel.db, blob.id) };
        return { deleted: (await call.kernel.db.exec('delete from blob_links where blob_id = ? and plugin_key = ?', [blob.id, call.plugin])) > 0 };
      },
    },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['config', 'db'] }, serves: { blobs: blobsWrite.methods } });
