import { request } from 'node:http';

export interface RawAnswer { status: number | null; body: any; error: string | null; sentBytes: number }

/**
 * Sends a multipart upload of `bytes` bytes through node:http, writing the whole body whatever
 * the server answers meanwhile, the way a real client does: a refusal must still reach it as its
 * status and JSON error, not as EPIPE or ECONNRESET. Without `contentLength` the body is
 * chunked (no Content-Length). `pauseMs` between pieces makes a slow upload.
 */
export function sendLargeUpload(url: string, options: { bytes: number; token?: string; field?: string; partType?: string; filename?: string; contentLength?: boolean; pieceBytes?: number; pauseMs?: number }): Promise<RawAnswer> {
  const boundary = 'keel-test-boundary-7f3a';
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${options.field ?? 'file'}"; filename="${options.filename ?? 'big.bin'}"\r\nContent-Type: ${options.partType ?? 'application/octet-stream'}\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const total = head.length + options.bytes + tail.length;
  const headers: Record<string, string | number> = { 'content-type': `multipart/form-data; boundary=${boundary}` };
  if (options.contentLength !== false) headers['content-length'] = total;
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const piece = Buffer.alloc(options.pieceBytes ?? 64 * 1024, 0x61);
  return new Promise((resolve) => {
    let status: number | null = null;
    let text = '';
    let error: string | null = null;
    let sent = 0;
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      let body: any = text;
      try { body = JSON.parse(text); } catch { /* not JSON */ }
      resolve({ status, body, error, sentBytes: sent });
    };
    const req = request(url, { method: 'POST', headers }, (res) => {
      status = res.statusCode ?? null;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { text += chunk; });
      res.on('end', done);
      res.on('error', (e: NodeJS.ErrnoException) => { error = e.code ?? e.message; done(); });
    });
    req.on('error', (e: NodeJS.ErrnoException) => { error = e.code ?? e.message; done(); });
    void (async () => {
      const write = async (buffer: Buffer) => {
        if (error || req.destroyed) return;
        sent += buffer.length;
        if (!req.write(buffer)) await new Promise((resolve) => { req.once('drain', resolve); req.once('close', resolve); });
      };
      await write(head);
      let left = options.bytes;
      while (left > 0 && !error && !req.destroyed) {
        const size = Math.min(left, piece.length);
        await write(piece.subarray(0, size));
        left -= size;
        if (options.pauseMs) await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
      }
      await write(tail);
      if (!req.destroyed) req.end();
    })();
  });
}
