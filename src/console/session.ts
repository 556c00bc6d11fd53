/**
 * Console sessions: the cookie holds `v1.<expires>.<nonce>.<mac>`, an HMAC-SHA256 over the expiry and a random
 * nonce; the only server-side state is the nonces of sessions signed out early (src/ledger/console-sessions.ts). The signing key is derived from admin.api_key, so rotating the key ends every
 * session, and several instances behind one load balancer accept each other's cookies. The CSRF token of a
 * session is another HMAC of its nonce, so it needs no storage either.
 */
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

export interface Session {
  nonce: string;
  expiresAt: number;
}

function mac(key: Buffer, text: string): string {
  return createHmac('sha256', key).update(text).digest('base64url');
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

export function createSessionCodec(adminKey: string, ttlMs: number, now: () => number) {
  const key = Buffer.from(hkdfSync('sha256', adminKey, 'crm-sms-gateway', 'console session v1', 32));

  return {
    ttlMs,
    issue(): { token: string; session: Session } {
      const session = { nonce: randomBytes(18).toString('base64url'), expiresAt: now() + ttlMs };
      const body = `v1.${session.expiresAt}.${session.nonce}`;
      return { token: `${body}.${mac(key, body)}`, session };
    },
    /** The session a cookie proves, or null when it is missing, forged, altered or expired. */
    verify(token: string | undefined): Session | null {
      const parts = token?.split('.');
      if (!parts || parts.length !== 4 || parts[0] !== 'v1') return null;
      const [, expires, nonce, signature] = parts as [string, string, string, string];
      if (!sameText(signature, mac(key, `v1.${expires}.${nonce}`))) return null;
      const expiresAt = Number(expires);
      if (!Number.isSafeInteger(expiresAt) || expiresAt <= now()) return null;
      return { nonce, expiresAt };
    },
    csrfToken(session: Session): string {
      return mac(key, `csrf.${session.nonce}`);
    },
    checkCsrf(session: Session, given: unknown): boolean {
      return typeof given === 'string' && sameText(given, mac(key, `csrf.${session.nonce}`));
    },
  };
}
