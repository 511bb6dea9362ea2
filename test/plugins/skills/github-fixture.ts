import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server speaking the subset of the GitHub REST API the skills plugin uses:
 * repository, commit of a ref (refs may contain '/'), recursive tree, contents (base64).
 * Also serves raw files under /raw/<path>.
 */
/** `token`: the repository is private, served only with `Authorization: Bearer <token>` (404 otherwise, as GitHub answers). */
export interface FixtureRepo { defaultBranch: string; refs: Record<string, string>; files: Record<string, Buffer | string>; token?: string }

export class GithubFixture {
  server: Server;
  port = 0;
  requests: string[] = [];
  /** The Authorization header of every API request, in order. */
  authorizations: Array<string | null> = [];
  readonly repos: Record<string, FixtureRepo>;
  readonly raw: Record<string, string>;
  constructor(repos: Record<string, FixtureRepo>, raw: Record<string, string> = {}) {
    this.repos = repos;
    this.raw = raw;
    this.server = createServer((req, res) => this.handle(req, res));
  }

  async start(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this.port;
  }

  stop(): void {
    this.server.closeAllConnections();
    this.server.close();
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fixture');
    this.requests.push(url.pathname + url.search);
    const send = (status: number, body: unknown) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
    if (url.pathname.startsWith('/raw/')) {
      const text = this.raw[url.pathname.slice('/raw/'.length)];
      if (text === undefined) { res.writeHead(404); res.end('not found'); return; }
      res.writeHead(200, { 'content-type': 'text/plain' }); res.end(text); return;
    }
    const match = /^\/repos\/([^/]+)\/([^/]+)(?:\/(.*))?$/.exec(url.pathname);
    const repo = match ? this.repos[`${match[1]}/${match[2]}`] : undefined;
    this.authorizations.push(req.headers.authorization ?? null);
    if (!match || !repo || (repo.token && req.headers.authorization !== `Bearer ${repo.token}`)) { send(404, { message: 'Not Found' }); return; }
    const rest = match[3] ?? '';
    if (rest === '') { send(200, { name: match[2], owner: { login: match[1] }, default_branch: repo.defaultBranch }); return; }
    if (rest.startsWith('commits/')) {
      const ref = decodeURIComponent(rest.slice('commits/'.length));
      const sha = repo.refs[ref] ?? (Object.values(repo.refs).includes(ref) ? ref : undefined);
      if (!sha) { send(422, { message: 'No commit found for SHA' }); return; }
      send(200, { sha }); return;
    }
    if (rest.startsWith('git/trees/')) {
      const tree = Object.entries(repo.files).map(([path, content]) => ({ path, type: 'blob', size: Buffer.byteLength(content) }));
      send(200, { sha: rest.slice('git/trees/'.length), tree, truncated: false }); return;
    }
    if (rest.startsWith('contents/')) {
      const path = rest.slice('contents/'.length).split('/').map(decodeURIComponent).join('/');
      const content = repo.files[path];
      if (content === undefined) { send(404, { message: 'Not Found' }); return; }
      send(200, { path, encoding: 'base64', content: Buffer.from(content).toString('base64') }); return;
    }
    send(404, { message: 'Not Found' });
  }
}
