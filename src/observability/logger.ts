/** pino logger. Lines about a message carry sms_id and activity_id; phone numbers are masked, content never logged. */
import pino, { type Logger } from 'pino';

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'crm-sms-gateway' },
      redact: { paths: ['*.content', '*.api_key', '*.authorization', '*.password', '*.client_secret'], censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
