import { PluginError } from '@keel/sdk/plugin';
import { definePlugin } from './plugin.gen.ts';

/**
 * The kernel streams each upload into the blob store before this code runs; the plugin only
 * sees the handle (`request.upload`) and never holds the bytes. Receipts are small text blobs
 * the plugin writes itself, named after the drop so that they can be found again.
 */
export default definePlugin({
  routes: {
    drop: async (req, ctx) => {
      const file = req.upload;
      if (!file) throw new PluginError(400, 'no_file', 'Upload one file in the part named "file"');
      const receipt = await ctx.blobs.createText({
        text: `Received ${file.filename ?? 'a file'} (${file.contentType}, ${file.byteSize} bytes, sha256 ${file.sha256}) at ${file.createdAt}`,
        filename: `receipt-${file.id}.txt`,
      });
      return { file, receiptId: receipt.id };
    },
    fetch: async (req, ctx) => {
      // An id of another company or another plugin is null here, and 404 from the host anyway.
      const file = await ctx.blobs.get(req.params.id!);
      if (!file) throw new PluginError(404, 'drop_not_found', 'No such drop');
      return { blob: file.id, disposition: 'inline' };
    },
    receipt: async (req, ctx) => ({ text: await ctx.blobs.readText(req.params.id!) }),
    discard: async (req, ctx) => ctx.blobs.delete(req.params.id!),
  },
});
