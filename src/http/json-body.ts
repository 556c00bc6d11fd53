/** Reads a JSON request body with the answers DESIGN §4 asks for: 415 wrong type, 400 unparsable. */
import type { Context } from 'hono';

export type JsonBody = { ok: true; value: unknown } | { ok: false; status: 400 | 415; error: string };

export async function readJsonBody(c: Context): Promise<JsonBody> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
    return { ok: false, status: 415, error: `Content-Type must be application/json (got ${type ? JSON.stringify(type) : 'none'})` };
  }
  const text = await c.req.text();
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, status: 400, error: `body is not valid JSON: ${(error as Error).message}` };
  }
}
