import { createHmac, randomBytes } from 'node:crypto';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { SignJWT, jwtVerify, decodeJwt } from 'jose';

/**
 * Local agent JWTs (HS256). Each company signs with its own key, derived from the instance
 * secret with HMAC, so a token minted for one company can never verify under another's key
 * even if its claims were rewritten.
 */
export interface AgentJwtClaims {
  sub: string;
  company_id: string;
  adapter_type: string;
  run_id?: string;
  iat: number;
  exp: number;
}

export class AgentJwt {
  private readonly secret: Buffer;
  private readonly keys = new Map<string, Uint8Array>();
  /** Tokens already verified, until they expire: signature checks dominate an authenticated request otherwise. */
  private readonly verified = new Map<string, AgentJwtClaims>();
  readonly ttlSeconds: number;

  constructor(secret: string | Buffer, ttlSeconds = 3600) {
    this.secret = Buffer.isBuffer(secret) ? secret : Buffer.from(secret, 'utf8');
    this.ttlSeconds = ttlSeconds;
  }

  /** The configured secret, or one generated once into the data directory (mode 0600). */
  static async load(dataDir: string, configured: string | undefined, ttlSeconds?: number): Promise<AgentJwt> {
    if (configured) return new AgentJwt(configured, ttlSeconds);
    const file = join(dataDir, 'agent-jwt.secret');
    try {
      return new AgentJwt(Buffer.from((await readFile(file, 'utf8')).trim(), 'base64url'), ttlSeconds);
    } catch {
      await mkdir(dataDir, { recursive: true });
      const secret = randomBytes(32);
      await writeFile(file, secret.toString('base64url'), { mode: 0o600, flag: 'wx' }).catch(async () => undefined);
      return new AgentJwt(Buffer.from((await readFile(file, 'utf8')).trim(), 'base64url'), ttlSeconds);
    }
  }

  /** A key for another purpose, derived from the same instance secret (never the JWT keys themselves). */
  derive(label: string): Buffer {
    return createHmac('sha256', this.secret).update(`derive:${label}`).digest();
  }

  private keyFor(companyId: string): Uint8Array {
    let key = this.keys.get(companyId);
    if (!key) {
      key = createHmac('sha256', this.secret).update(`agent-jwt:${companyId}`).digest();
      this.keys.set(companyId, key);
    }
    return key;
  }

  async sign(input: { agentId: string; companyId: string; adapterType: string; runId?: string; ttlSeconds?: number }): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const payload: Record<string, unknown> = { company_id: input.companyId, adapter_type: input.adapterType };
    if (input.runId) payload.run_id = input.runId;
    return new SignJWT(payload)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(input.agentId)
      .setIssuedAt(now)
      .setExpirationTime(now + (input.ttlSeconds ?? this.ttlSeconds))
      .sign(this.keyFor(input.companyId));
  }

  /** Verifies signature and expiry; returns undefined for anything that is not a valid agent JWT. */
  async verify(token: string): Promise<AgentJwtClaims | undefined> {
    const known = this.verified.get(token);
    if (known) {
      if (known.exp * 1000 > Date.now()) return known;
      this.verified.delete(token);
      return undefined;
    }
    let unverified: Record<string, unknown>;
    try { unverified = decodeJwt(token); } catch { return undefined; }
    const companyId = unverified.company_id;
    if (typeof companyId !== 'string' || companyId.length === 0) return undefined;
    try {
      const { payload } = await jwtVerify(token, this.keyFor(companyId), { algorithms: ['HS256'] });
      if (typeof payload.sub !== 'string' || payload.company_id !== companyId || typeof payload.exp !== 'number') return undefined;
      const claims = payload as unknown as AgentJwtClaims;
      if (this.verified.size >= 10_000) this.verified.delete(this.verified.keys().next().value as string);
      this.verified.set(token, claims);
      return claims;
    } catch {
      return undefined;
    }
  }
}

export const looksLikeJwt = (token: string): boolean => /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token);
