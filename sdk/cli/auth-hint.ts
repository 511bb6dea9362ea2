/**
 * What to do after a 401. Without a key the server is in authenticated mode (local_trusted
 * answers keyless requests as the local board); with one, the key was refused. Either way the
 * way to a key is the CLI auth challenge of docs/api/auth.md: no other route mints board API
 * keys, and approving needs a browser session (board API keys cannot approve).
 */
export function unauthorizedHint(apiKeySent: boolean): string[] {
  const first = apiKeySent
    ? 'The server refused the API key (unknown or revoked): pass a valid board API key with --api-key <key> or KEEL_API_KEY (a server in local_trusted mode needs none).'
    : 'This server runs in authenticated mode and needs a board API key: pass --api-key <key> or set KEEL_API_KEY.';
  return [
    first,
    'To get a key: POST /api/cli-auth/challenges (it returns an id and, once, a secret); a board user signed in',
    'with POST /api/auth/sign-in approves it with POST /api/cli-auth/challenges/{id}/approve using that session;',
    'then GET /api/cli-auth/challenges/{id} with the header "X-Challenge-Secret: <secret>" returns the key once.',
    'Managing plugins needs the key of an instance admin (the first admin claims the instance with',
    'POST /api/bootstrap/claim from a browser session). See docs/api/auth.md.',
  ];
}
