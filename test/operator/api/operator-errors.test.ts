import { describe, expect, it } from 'vitest';
import { decideOperatorError, isOperatorPath } from '../../../src/http/operator-errors.js';
import { endOfLastWholeString } from '../../../src/operator/api/id-list-cut.js';

describe('decideOperatorError', () => {
  it.each([
    ['an unknown user on GET /userdetails keeps its 404', '/userdetails/x', 404, { status: 404, code: 404 }],
    ['a credit for an unknown user is a 400 with code 404', '/bonus/credit', 404, { status: 400, code: 404 }],
    ['a credit that is not JSON is a 400 with code 415', '/bonus/credit/funds', 415, { status: 400, code: 415 }],
    ['a credit while its twin is handled is a 500 with code 503', '/bonus/credit', 503, { status: 500, code: 503 }],
    ['a credit the platform failed is a 500 with code 502', '/bonus/credit/funds', 502, { status: 500, code: 502 }],
    ['a credit with bad credentials stays 401', '/bonus/credit', 401, { status: 401, code: 401 }],
    ['a credit past the failure limit stays 429', '/bonus/credit', 429, { status: 429, code: 429 }],
    ['an authenticate body without sid is a 401 with code 400', '/authenticate', 400, { status: 401, code: 400 }],
    ['an authenticate check that timed out is a 401 with code 504', '/authenticate', 504, { status: 401, code: 504 }],
    ['authenticate past the failure limit stays 429', '/authenticate', 429, { status: 429, code: 429 }],
  ])('%s', (_label, path, status, expected) => {
    expect(decideOperatorError(path, status)).toEqual(expected);
  });

  it.each([
    ['/userdetails/u', true],
    ['/reconciliation', true],
    ['/reconciliation/products', true],
    ['/oauth/token', true],
    ['/admin/users/u', false],
    ['/channels/sms/single', false],
    ['/reconciliationx', false],
  ])('%s is an operator API path: %s', (path, expected) => {
    expect(isOperatorPath(path)).toBe(expected);
  });
});

describe('endOfLastWholeString', () => {
  it.each([
    ['nothing sent yet', '', 0],
    ['one whole id', '"a"', 3],
    ['a whole id and a comma', '"a",', 3],
    ['a whole id and the start of the next', '"a","b', 3],
    ['an escaped quote inside an id', '"a\\"b"', 6],
    ['an escaped backslash before the closing quote', '"a\\\\"', 5],
    ['a cut just after a backslash', '"a","b\\', 3],
    ['only the start of an id', '"abc', 0],
  ])('%s', (_label, text, expected) => {
    expect(endOfLastWholeString(text)).toBe(expected);
  });
});
