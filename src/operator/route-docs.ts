/** Pieces of the operator API's and its admin routes' OpenAPI documentation that the three jobs share. */
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import type { ParameterDoc, ResponseDoc } from '../http/route-table.js';

export const error = (description: string): ResponseDoc => ({ description, schema: errorAnswerSchema });
export const userParam: ParameterDoc = { name: 'userid', in: 'path', description: 'The operator’s user id', schema: z.string() };
export const notJson = { 415: error('Content-Type is not application/json') };
