/**
 * What to do after a 401. Without a key the server is in authenticated mode (local_trusted
 * answers keyless requests as the local board); with one, the key was refused. Either way the
 * way to a board key is the CLI auth challenge of docs/api/auth.md, which `keel auth login` runs:
 * no other route mints board API keys, and approving needs a browser session.
 */
export function unauthorizedHint(keySource: string | null): string[] {
  const first = keySource
    ? `The server refused the API key from ${keySource} (unknown or revoked).`
    : 'This server runs in authenticated mode and needs an API key.';
  return [
    first,
    'Get a board API key with: keel auth login (a board user signed in to the server approves it),',
    'or pass one with --api-key <key> or KEEL_API_KEY, or name the variable holding it in a profile:',
    'keel context set --api-key-env-var-name <NAME>. Agents use a key from keel agent local-cli.',
    'Managing plugins needs the key of an instance admin. See docs/api/auth.md.',
  ];
}
