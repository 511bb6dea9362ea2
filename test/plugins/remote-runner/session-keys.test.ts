import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { sha256Hex } from '../../../plugins/remote-runner/src/sha256.ts';

it('hashes as node:crypto does (the isolate has no crypto module)', () => {
  for (const text of ['', 'abc', 'a'.repeat(100), 'héllo ✓ 𝄞'.repeat(9), 'x'.repeat(55), 'y'.repeat(56), 'z'.repeat(64)]) {
    expect(sha256Hex(text)).toBe(createHash('sha256').update(text).digest('hex'));
  }
});
