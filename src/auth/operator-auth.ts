/** The authentication the operator API uses, picked by auth.mode (docs/crm-interface.md, Authentication). */
import type { Hono, MiddlewareHandler } from 'hono';
import type { Config } from '../config/schema.js';
import { requireApiKey } from './api-key.js';
import { requireBasic } from './basic.js';
import { createTokenIssuer, oauthTokenRoutes, requireBearerToken } from './oauth.js';

export interface OperatorAuth {
  middleware: MiddlewareHandler;
  /** The token endpoint to mount at /oauth, in oauth mode only. */
  tokenRoutes?: Hono;
}

export function createOperatorAuth(auth: Config['auth'], now: () => number, processSecret: Buffer): OperatorAuth {
  switch (auth.mode) {
    case 'api_key':
      return { middleware: requireApiKey(auth.api_keys) };
    case 'basic':
      // The config schema requires auth.basic in this mode.
      return { middleware: requireBasic(auth.basic!.username, auth.basic!.password) };
    case 'oauth': {
      const issuer = createTokenIssuer(auth.oauth!, now, processSecret);
      return { middleware: requireBearerToken(issuer), tokenRoutes: oauthTokenRoutes(auth.oauth!, issuer) };
    }
  }
}
