/**
 * Polls `probe` until it answers something truthy, and answers that; past `timeoutMs` it fails
 * naming `what`. For state another process changes (a delivery, a run, a job) where no event
 * can be awaited from the test.
 */
export async function waitFor<T>(probe: () => Promise<T | undefined | null | false>, what: string, timeoutMs = 30_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
