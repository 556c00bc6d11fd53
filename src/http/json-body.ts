/** Reads a JSON request body with the answers DESIGN §4 asks for: 415 wrong type, 400 unparsable. */
import type { Context } from 'hono';

/** `text` is the body as received, for the rare reader that needs more than the parsed value (exact-json.ts). */
export type JsonBody = { ok: true; value: unknown; text: string } | { ok: false; status: 400 | 415; error: string };

export async function readJsonBody(c: Context): Promise<JsonBody> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
    return { ok: false, status: 415, error: `Content-Type must be application/json (got ${type ? JSON.stringify(type) : 'none'})` };
  }
  const text = await c.req.text();
  try {
    return { ok: true, value: JSON.parse(text) as unknown, text };
  } catch (error) {
    return { ok: false, status: 400, error: `body is not valid JSON: ${(error as Error).message}` };
  }
}
