import { readBlobBuffer, type BlobMetadata } from '../../../blobs/blob-store.ts';
import { blobForPlugin } from '../../../blobs/blob-access.ts';
import { KeelError } from '../../../http/errors.ts';
import { blobsRead as spec, MAX_TEXT_BYTES } from '../../../../sdk/capabilities/blobs.ts';
import { callCompany } from '../scope.ts';
import type { BrokeredCall, KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

const notFound = () => new KeelError(404, 'blob_not_found', 'No blob with this id is reachable by this plugin in this company');

/** A blob this plugin reaches in the call's company (also used by blobs.write), or not found. */
export async function reachable(call: BrokeredCall<'db'>, id: unknown) {
  const blob = await blobForPlugin(call.kernel.db, call.plugin, callCompany(call), id);
  if (!blob) throw notFound();
  return blob;
}

const view = ({ owned: _owned, ...blob }: BlobMetadata & { owned?: boolean }) => blob;

/**
 * `ctx.blobs` reads (blobs.read): metadata and small text (writes: blobs-write), always in the company
 * the call serves and only for blobs the plugin owns or was handed (an upload to its route, a
 * link from another plugin). Another company's or another plugin's blob is not found, exactly
 * like an unknown id. Bytes of uploads never cross into the isolate; downloads are streamed
 * by the kernel from routes declared `download`.
 */
const blobsRead: KernelCapability<'db'> = {
  methods: {
    get: {
      run: async (call) => {
        const blob = await blobForPlugin(call.kernel.db, call.plugin, callCompany(call), call.args[0]);
        return blob ? view(blob) : null;
      },
    },
    readText: {
      run: async (call) => {
        const blob = await reachable(call, call.args[0]);
        if (blob.byteSize > MAX_TEXT_BYTES) throw new KeelError(413, 'blob_too_large', `readText returns blobs of at most ${MAX_TEXT_BYTES} bytes; this one has ${blob.byteSize}: serve it from a download route`);
        return (await readBlobBuffer(call.kernel.db, blob.id)).toString('utf8');
      },
    },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['db'] }, serves: { blobs: blobsRead.methods } });
