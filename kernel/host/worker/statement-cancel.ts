import { connect } from 'node:net';
import type pg from 'pg';

/**
 * PostgreSQL's CancelRequest for the statement a connection is running: a fresh connection to
 * the server carrying the backend's process id and secret key, which the server answers by
 * interrupting that backend and closing. No login is involved (the key is the credential),
 * so it works while every pooled connection is busy. Resolves once the server has closed the
 * request's connection, that is once it has signalled the backend; never rejects.
 */
const CANCEL_REQUEST_CODE = 80877102;
const TIMEOUT_MS = 2000;

interface ConnectedClient { processID: number | null; secretKey: number | null; host: string; port: number }

export function cancelStatement(client: pg.PoolClient): Promise<void> {
  const { processID, secretKey, host, port } = client as unknown as ConnectedClient;
  if (processID === null || secretKey === null) return Promise.resolve();
  const message = Buffer.alloc(16);
  message.writeInt32BE(16, 0);
  message.writeInt32BE(CANCEL_REQUEST_CODE, 4);
  message.writeInt32BE(processID, 8);
  message.writeInt32BE(secretKey, 12);
  return new Promise((resolve) => {
    // A host starting with / is the directory of the server's Unix socket, as for libpq.
    const socket = host.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host);
    const done = () => { clearTimeout(timer); socket.destroy(); resolve(); };
    const timer = setTimeout(done, TIMEOUT_MS);
    socket.once('connect', () => socket.end(message));
    socket.once('close', done);
    socket.once('error', done);
  });
}
