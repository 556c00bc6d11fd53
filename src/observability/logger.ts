/** pino logger. Lines about a message carry sms_id and activity_id; phone numbers are masked, content never logged. */
import pino, { type Logger } from 'pino';
import { maskPhoneNumber } from '../sms/recipient.js';

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

/** Provider error texts sometimes quote the recipient; mask every run of 7 or more digits before logging one. */
export function maskPhoneNumbersIn(text: string): string {
  return text.replace(/\+?\d(?:[\s.-]?\d){6,}/g, (run) => maskPhoneNumber(run.replace(/[\s.-]/g, '')));
}
