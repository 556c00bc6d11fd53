/**
 * The costs area's table of the /admin sub-app (src/auth/admin.ts guards it): the cost report as JSON or CSV
 * (docs/costs.md "Reports"). It reads the daily rollup only, never the messages.
 */
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { route, type MountableRoute, type ResponseDoc } from '../http/route-table.js';
import type { Database } from '../ledger/schema.js';
import { buildCostReport, costReportCsv, MAX_REPORT_ROWS, readCostQuery } from './report.js';

const costRowSchema = z.strictObject({
  day: z.string().optional().describe('YYYY-MM-DD (UTC), with group_by day'),
  provider: z.string().optional(),
  country: z.string().optional().describe("ISO 3166 alpha-2; '' when the number placed nowhere"),
  brand_id: z.string().optional(),
  activity_id: z.string().optional().describe("The CRM activity (activity.activity_id); '' when absent"),
  action_group_id: z.string().optional(),
  currency: z.string().describe("ISO 4217; '' for messages with no rate and no reported price"),
  messages: z.number().int().describe('Messages counted: claimed to send and not known to have sent nothing'),
  segments: z.number().int(),
  delivered: z.number().int(),
  delivered_share: z.number().nullable(),
  spend: z.string().describe('Exact decimal: reported prices where known, estimates otherwise'),
  reported_spend: z.string(),
  estimated_spend: z.string(),
  cost_per_delivered: z.string().nullable(),
});

const adminRefusals: Record<number, ResponseDoc> = {
  401: { description: 'Bearer token missing or not admin.api_key', schema: errorAnswerSchema },
  403: { description: 'The admin API is disabled (admin.api_key is not set)', schema: errorAnswerSchema },
};

export function costAdminRoutes(deps: { readDb: Kysely<Database>; now: () => number }): MountableRoute[] {
  return [
    route({
      method: 'get',
      path: '/costs',
      doc: {
        tag: 'admin',
        summary: 'Spend by day, provider, country, brand, CRM activity and action group, with delivered share and cost per delivered message',
        description: `From the daily rollup (docs/costs.md). CSV with format=csv or Accept: text/csv. At most ${MAX_REPORT_ROWS} rows.`,
        security: ['adminBearer'],
        parameters: [
          { name: 'from', in: 'query', description: 'First UTC day, YYYY-MM-DD (default: 29 days before `to`)', schema: z.string() },
          { name: 'to', in: 'query', description: 'Last UTC day, YYYY-MM-DD (default: today)', schema: z.string() },
          {
            name: 'group_by',
            in: 'query',
            description: 'Comma list of day, provider, country, brand, activity, action_group (default day,provider); always by currency too',
            schema: z.string(),
          },
          { name: 'format', in: 'query', schema: z.enum(['json', 'csv']) },
        ],
        responses: {
          200: {
            description: 'The report',
            schema: z.strictObject({
              from: z.string(),
              to: z.string(),
              group_by: z.array(z.string()),
              rows: z.array(costRowSchema),
              truncated: z.boolean(),
            }),
          },
          400: { description: 'A parameter is unknown, repeated or not valid (the error names it)', schema: errorAnswerSchema },
          ...adminRefusals,
        },
      },
      handlers: [
        async (c) => {
          const read = readCostQuery(new URL(c.req.url).searchParams, deps.now(), c.req.header('accept'));
          if (!read.ok) return c.json({ error: read.error, code: 400 }, 400);
          const { query } = read;
          const report = await buildCostReport(deps.readDb, query);
          if (query.format === 'csv') {
            const day = (d: number) => new Date(d).toISOString().slice(0, 10);
            return c.body(costReportCsv(query.groupBy, report.rows), 200, {
              'content-type': 'text/csv; charset=utf-8',
              'content-disposition': `attachment; filename="costs-${day(query.fromDay)}-${day(query.toDay)}.csv"`,
            });
          }
          const day = (d: number) => new Date(d).toISOString().slice(0, 10);
          return c.json({ from: day(query.fromDay), to: day(query.toDay), group_by: query.groupBy, ...report });
        },
      ],
    }),
  ];
}
