#!/usr/bin/env node
// Uploads a file as an attachment of an issue and creates an artifact work product backed by it.
// Dependency-free: Node 18 or later (fetch, FormData and Blob are built in).
//
//   node upload-attachment.mjs <file> [--title <text>] [--issue <id>] [--content-type <type>]
//                                     [--status <status>] [--review] [--primary]
//
// Reads SERVICE_API_URL, SERVICE_API_KEY, SERVICE_COMPANY_ID, SERVICE_TASK_ID (the issue, unless
// --issue names one) and SERVICE_RUN_ID (sent as X-Service-Run-Id). Prints
// {"attachment": {...}, "workProduct": {...}} on success; on failure prints the reason to stderr
// and exits 1. The API key is never printed.
import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';

const TYPES = {
  '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.webp': 'image/webp', '.gif': 'image/gif',
  '.pdf': 'application/pdf', '.zip': 'application/zip', '.md': 'text/markdown', '.markdown': 'text/markdown',
  '.txt': 'text/plain', '.log': 'text/plain', '.json': 'application/json', '.csv': 'text/csv',
  '.html': 'text/html', '.htm': 'text/html', '.mp4': 'video/mp4', '.webm': 'video/webm', '.mov': 'video/quicktime',
};
const STATUSES = ['active', 'ready_for_review', 'approved', 'changes_requested', 'merged', 'closed', 'failed', 'archived', 'draft'];

function fail(message) {
  process.stderr.write(`upload-attachment: ${message}\n`);
  process.exit(1);
}

function parseArguments(argv) {
  const options = { file: null, title: null, issue: null, contentType: null, status: 'active', review: false, primary: false };
  const valued = { '--title': 'title', '--issue': 'issue', '--content-type': 'contentType', '--status': 'status' };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    if (arg in valued) {
      if (i + 1 >= argv.length) fail(`${arg} needs a value`);
      options[valued[arg]] = argv[(i += 1)];
    } else if (arg === '--review') options.review = true;
    else if (arg === '--primary') options.primary = true;
    else if (arg === '--help' || arg === '-h') {
      process.stdout.write('usage: upload-attachment.mjs <file> [--title <text>] [--issue <id>] [--content-type <type>] [--status <status>] [--review] [--primary]\n');
      process.exit(0);
    } else if (arg.startsWith('--')) fail(`unknown option ${arg}`);
    else if (options.file === null) options.file = arg;
    else fail(`one file per call (got ${options.file} and ${arg})`);
  }
  if (options.file === null) fail('name the file to upload');
  if (!STATUSES.includes(options.status)) fail(`--status must be one of ${STATUSES.join(', ')}`);
  return options;
}

function environment(name, required = true) {
  const value = (process.env[name] ?? '').trim();
  if (required && value === '') fail(`${name} is not set`);
  return value;
}

/** The server's base address with or without a trailing /api: both name the same server. */
function apiBase(url) {
  let base = url.replace(/\/+$/, '');
  if (base.endsWith('/api')) base = base.slice(0, -4);
  if (!/^https?:\/\/[^\s/]+/.test(base)) fail('SERVICE_API_URL must be an http:// or https:// address');
  return `${base}/api`;
}

/** The JSON answer of a successful call; a failure throws with the server's reason. */
async function call(url, init) {
  let response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    throw new Error(`cannot reach ${url}: ${error?.cause?.message ?? error.message}`);
  }
  const text = await response.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = text; }
  if (!response.ok) {
    const reason = body && typeof body === 'object' ? `${body.error ?? ''}${body.code ? ` (${body.code})` : ''}` : String(body).slice(0, 500);
    throw new Error(`${init.method} ${new URL(url).pathname} answered ${response.status}: ${reason}`);
  }
  return body;
}

async function main() {
  const options = parseArguments(process.argv.slice(2));
  const base = apiBase(environment('SERVICE_API_URL'));
  const apiKey = environment('SERVICE_API_KEY');
  const companyId = environment('SERVICE_COMPANY_ID');
  const runId = environment('SERVICE_RUN_ID', false);
  const issueId = options.issue ?? environment('SERVICE_TASK_ID', false);
  if (!issueId) fail('SERVICE_TASK_ID is not set and --issue names no issue');

  let bytes;
  try {
    bytes = await readFile(options.file);
  } catch (error) {
    fail(`cannot read ${options.file}: ${error.code ?? error.message}`);
  }
  const filename = basename(options.file);
  const contentType = options.contentType ?? TYPES[extname(filename).toLowerCase()];
  if (!contentType) fail(`no content type known for ${filename}; pass --content-type`);

  const headers = { Authorization: `Bearer ${apiKey}` };
  if (runId) headers['X-Service-Run-Id'] = runId;

  const form = new FormData();
  form.append('file', new Blob([bytes], { type: contentType }), filename);
  const attachment = await call(`${base}/companies/${encodeURIComponent(companyId)}/issues/${encodeURIComponent(issueId)}/attachments`, {
    method: 'POST', headers, body: form,
  }).catch((error) => fail(error.message));

  // A work product that cannot be made leaves no orphaned attachment behind.
  const workProduct = await call(`${base}/issues/${encodeURIComponent(issueId)}/work-products`, {
    method: 'POST',
    headers: { ...headers, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      type: 'artifact',
      title: (options.title ?? filename).slice(0, 500),
      status: options.status,
      reviewState: options.review ? 'needs_board_review' : 'none',
      isPrimary: options.primary,
      attachmentId: attachment.id,
      metadata: { filename, contentType, byteSize: attachment.byteSize, sha256: attachment.sha256, runId: runId || null },
    }),
  }).catch(async (error) => {
    await call(`${base}/attachments/${encodeURIComponent(attachment.id)}`, { method: 'DELETE', headers }).catch(() => undefined);
    fail(`${error.message} (the uploaded attachment was removed again)`);
  });

  process.stdout.write(`${JSON.stringify({ attachment, workProduct }, null, 2)}\n`);
}

await main();
