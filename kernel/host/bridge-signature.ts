import { createHash } from 'node:crypto';

/**
 * What a plugin's transaction hands back to a keel_bridge function (its invocation identity, a
 * job ticket) is signed with the instance's bridge key, which only the kernel and the bridge
 * functions (keel_private.verified_invocation) know: sha256(key || sha256(key || text)), in hex.
 */
export function signForBridge(bridgeKey: Buffer, text: string): string {
  const inner = createHash('sha256').update(Buffer.concat([bridgeKey, Buffer.from(text, 'utf8')])).digest();
  return createHash('sha256').update(Buffer.concat([bridgeKey, inner])).digest('hex');
}
