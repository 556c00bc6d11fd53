/** The SMS area's table of the /admin sub-app (src/auth/admin.ts guards it): the preview of a text before sending. */
import { errorAnswerSchema } from '../http/error-answer.js';
import { readJsonBody } from '../http/json-body.js';
import { describeFirstIssue } from '../http/zod-issue.js';
import { route, type MountableRoute } from '../http/route-table.js';
import { previewAnswerSchema, previewRequestSchema, previewText, type PreviewDeps } from './preview.js';

export function smsAdminRoutes(deps: PreviewDeps): MountableRoute[] {
  return [
    route({
      method: 'post',
      path: '/sms/preview',
      doc: {
        tag: 'admin',
        summary: 'Preview a text: encoding, segments, characters left, characters that force UCS-2, and its cost per provider',
        security: ['adminBearer'],
        request: { schema: previewRequestSchema },
        responses: {
          200: { description: 'The preview', schema: previewAnswerSchema },
          400: { description: 'The body is not JSON or a field is not valid (the error names it)', schema: errorAnswerSchema },
          401: { description: 'Bearer token missing or not admin.api_key', schema: errorAnswerSchema },
          403: { description: 'The admin API is disabled (admin.api_key is not set)', schema: errorAnswerSchema },
          415: { description: 'Not application/json', schema: errorAnswerSchema },
        },
      },
      handlers: [
        async (c) => {
          const body = await readJsonBody(c, { refusePrototypeKeys: true });
          if (!body.ok) return c.json({ error: body.error, code: body.status }, body.status);
          const parsed = previewRequestSchema.safeParse(body.value);
          if (!parsed.success) return c.json({ error: describeFirstIssue(parsed.error, body.value), code: 400 }, 400);
          const preview = previewText(parsed.data, deps);
          if (!preview.ok) return c.json({ error: preview.error, code: 400 }, 400);
          return c.json(preview.answer);
        },
      ],
    }),
  ];
}
