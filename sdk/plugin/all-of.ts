/**
 * `Promise.all` for a call's concurrent host calls, that waits for every one of them to settle
 * before it throws the first failure. With `Promise.all`, the call answers at the first failure
 * while its other branches run on; a branch that then calls the host again is code outliving
 * its call, and the host replaces the plugin's isolate for it (failing the other calls in flight
 * with `plugin_crashed`). A database failover fails many host calls at once, which is when
 * that happened.
 */
export async function allOf<T extends readonly unknown[]>(promises: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((outcome) => outcome.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
  return settled.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
