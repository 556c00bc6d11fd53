/** pino logger. Lines about a message carry sms_id and activity_id; phone numbers are masked, content never logged. */
import pino, { type Logger } from 'pino';

/** The active span's ids, for log lines; set by the OpenTelemetry side (otel.ts) only while tracing is on. */
let traceFields: (() => Record<string, string> | undefined) | undefined;

export function setLogTraceFields(fields: typeof traceFields): void {
  traceFields = fields;
}

const NO_FIELDS = {};

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      // trace_id and span_id of the active span when tracing is on (docs/tracing.md "Logs"). Off, the line's own
      // object is used as it is: the shared empty answer is recognised, never merged into.
      mixin: () => traceFields?.() ?? NO_FIELDS,
      mixinMergeStrategy: (line, fields) => (fields === NO_FIELDS ? line : Object.assign(fields, line)),
      base: { service: 'crm-sms-gateway' },
      redact: { paths: ['*.content', '*.api_key', '*.authorization', '*.password', '*.client_secret'], censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Values can come from outside (a provider's error text, a receipt's status): no line carries a huge one.
      formatters: { log: shortenLongValues },
    },
    destination,
  );
}

/** For logs: keep the country code and the last two digits (`+44*******01`). */
export function maskPhoneNumber(e164: string): string {
  if (e164.length <= 6) return '*'.repeat(e164.length);
  return `${e164.slice(0, 3)}${'*'.repeat(e164.length - 5)}${e164.slice(-2)}`;
}

/** Provider error texts sometimes quote the recipient; mask every run of 7 or more digits before logging one. */
export function maskPhoneNumbersIn(text: string): string {
  return text.replace(/\+?\d(?:[\s.-]?\d){6,}/g, (run) => maskPhoneNumber(run.replace(/[\s.-]/g, '')));
}

/** Longest string value (and error message) a log line carries; longer ones are cut and marked. */
export const MAX_LOGGED_VALUE_LENGTH = 1_000;

/** Top-level values only: log objects are built by our code, and nothing recurses into outside data. */
export function shortenLongValues(object: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(object)) {
    let shortened: unknown;
    if (typeof value === 'string' && value.length > MAX_LOGGED_VALUE_LENGTH) shortened = shorten(value);
    else if (value instanceof Error && value.message.length > MAX_LOGGED_VALUE_LENGTH) {
      shortened = Object.assign(new Error(shorten(value.message)), { name: value.name, stack: shorten(value.stack ?? '') });
    }
    if (shortened !== undefined) (out ??= { ...object })[key] = shortened;
  }
  return out ?? object;
}

function shorten(text: string): string {
  return `${text.slice(0, MAX_LOGGED_VALUE_LENGTH)}… (${text.length} characters)`;
}
