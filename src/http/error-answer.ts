/** Every error body the gateway answers (docs/design.md §3): one sentence naming the field or value that is wrong. */
import { z } from 'zod';

export const errorAnswerSchema = z.strictObject({
  error: z.string().describe('What is wrong, naming the field or value'),
  code: z.number().int().optional().describe('The HTTP status of the answer, unless a stable code of its own is given (the public doors always give it)'),
});
