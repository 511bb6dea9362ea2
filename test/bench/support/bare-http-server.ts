import { createServer } from 'node:http';

/**
 * The physical ceiling: bare node:http answering a fixed JSON body (the same bytes the kernel
 * returns for the benchmarked route). Started as its own process by the benchmarks.
 */
const body = process.env.BARE_BODY ?? '{"ok":true}';
const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  console.log(`listening on http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`);
});
process.on('SIGINT', () => server.close(() => process.exit(0)));
