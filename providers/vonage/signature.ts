/**
 * Checks for Vonage's two webhook signing schemes (docs/providers.md §3.4, §3.6; vendor docs:
 * https://developer.vonage.com/getting-started/concepts/signing-messages and
 * https://developer.vonage.com/getting-started/concepts/webhooks).
 *
 * The SMS API `sig` check is our own code rather than @vonage/sms's `verifySignature`, because that one throws on
 * non-string values (JSON receipts carry numbers), compares in variable time and never looks at `timestamp`
 * (docs/providers.md §0.5). The test fakes sign independently and the tests check their signatures against the SDK's
 * verifier, so the algorithm is not only ours twice.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export type VonageSignatureMethod = 'md5hash' | 'md5' | 'sha1' | 'sha256' | 'sha512';

/** How far a signed webhook's time may be from ours, either way (replay window, docs/providers.md §3.4 step 6). */
export const SIGNATURE_WINDOW_SECONDS = 300;

export type SignatureCheck = { ok: true } | { ok: false; reason: string };

/**
 * The string Vonage signs: every parameter except `sig`, sorted by name, each as `&name=value` with `&` and `=`
 * inside values replaced by `_` (docs/providers.md §3.4 steps 1–3).
 */
export function vonageSignedString(params: Readonly<Record<string, string>>): string {
  return Object.keys(params)
    .filter((k) => k !== 'sig')
    .sort()
    .map((k) => `&${k}=${params[k]!.replace(/[&=]/g, '_')}`)
    .join('');
}

export function computeVonageSig(params: Readonly<Record<string, string>>, secret: string, method: VonageSignatureMethod): string {
  const signed = vonageSignedString(params);
  return method === 'md5hash'
    ? createHash('md5')
        .update(signed + secret)
        .digest('hex')
    : createHmac(method, secret).update(signed).digest('hex');
}

function equalHex(given: string, expected: string): boolean {
  const a = Buffer.from(given.toLowerCase(), 'utf8');
  const b = Buffer.from(expected.toLowerCase(), 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The length of each method's digest in hex. */
const SIG_HEX_LENGTHS: Readonly<Record<VonageSignatureMethod, number>> = { md5hash: 32, md5: 32, sha1: 40, sha256: 64, sha512: 128 };

/** SMS API `sig` on a receipt whose values are already strings; `nowMs` from the injected clock. */
export function verifyVonageSig(params: Readonly<Record<string, string>>, secret: string, method: VonageSignatureMethod, nowMs: number): SignatureCheck {
  const sig = params.sig;
  if (!sig) return { ok: false, reason: 'sig is missing (signature_secret is configured, so receipts must be signed)' };
  const timestamp = Number(params.timestamp);
  if (!params.timestamp || !Number.isFinite(timestamp)) return { ok: false, reason: 'timestamp is missing from a signed receipt' };
  if (Math.abs(nowMs / 1000 - timestamp) > SIGNATURE_WINDOW_SECONDS) {
    return { ok: false, reason: `timestamp ${params.timestamp} is outside the ${SIGNATURE_WINDOW_SECONDS}s window` };
  }
  // A sig of another length than the method's hex digest cannot match: refused before any hash is computed.
  if (sig.length !== SIG_HEX_LENGTHS[method] || !/^[0-9a-f]+$/i.test(sig)) return { ok: false, reason: `sig is not a ${method} hex digest` };
  if (!equalHex(sig, computeVonageSig(params, secret, method))) return { ok: false, reason: `sig does not match (${method})` };
  return { ok: true };
}

function equalText(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * An HS256 JWT's signature (RFC 7519 / RFC 7515: HMAC-SHA256 of `header.claims`, base64url), and `exp`/`nbf` when
 * present, with node:crypto. Any other `alg` is refused: the secret is shared, so only HMAC applies, and accepting
 * the token's own choice of algorithm is the classic JWT downgrade.
 */
function verifyJwtSignature(token: string, secret: string, nowMs: number): boolean {
  const parts = token.split('.');
  if (parts.length !== 3) return false;
  const [header, claims, signature] = parts as [string, string, string];
  let alg: unknown;
  let times: { exp?: unknown; nbf?: unknown };
  try {
    alg = (JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: unknown }).alg;
    times = JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as typeof times;
  } catch {
    return false;
  }
  if (alg !== 'HS256' || !times || typeof times !== 'object') return false;
  const expected = createHmac('sha256', secret).update(`${header}.${claims}`).digest('base64url');
  if (!equalText(signature, expected)) return false;
  const now = nowMs / 1000;
  if (times.exp !== undefined && (typeof times.exp !== 'number' || now >= times.exp)) return false;
  if (times.nbf !== undefined && (typeof times.nbf !== 'number' || now < times.nbf)) return false;
  return true;
}

/**
 * Messages-API-style webhook: `Authorization: Bearer <HS256 JWT>` signed with the signature secret (docs/providers.md §3.6).
 * Beyond the signature (and `exp`/`nbf` if present) the token must be fresh (`iat` within the window) and
 * `payload_hash` must be the SHA-256 of the exact body bytes, or an old token could be replayed with any body.
 */
export function verifyVonageJwt(authorization: string | undefined, rawBody: Buffer, secret: string, nowMs: number): SignatureCheck {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  if (!token) return { ok: false, reason: 'Authorization: Bearer token is missing' };
  if (!verifyJwtSignature(token, secret, nowMs)) return { ok: false, reason: 'JWT signature does not verify with signature_secret' };
  let claims: { iat?: unknown; payload_hash?: unknown };
  try {
    claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as typeof claims;
  } catch {
    return { ok: false, reason: 'JWT claims are not JSON' };
  }
  if (typeof claims.iat !== 'number' || Math.abs(nowMs / 1000 - claims.iat) > SIGNATURE_WINDOW_SECONDS) {
    return { ok: false, reason: `JWT iat is missing or outside the ${SIGNATURE_WINDOW_SECONDS}s window` };
  }
  const bodyHash = createHash('sha256').update(rawBody).digest('hex');
  if (typeof claims.payload_hash !== 'string' || !equalHex(claims.payload_hash, bodyHash)) {
    return { ok: false, reason: 'JWT payload_hash does not match the body' };
  }
  return { ok: true };
}
