/**
 * The provider contract suite's outcome tables (beside provider-contract.test.ts, which runs every plugin against its
 * fake): for each provider, what each of its statuses becomes (one of the CRM's four delivery statuses, an
 * intermediate state, or ignored; docs/providers.md §4) and whether each refused send is permanent (the CRM skips
 * the message) or transient (it retries). One section per provider in one shape, each row labelled with its reason.
 */
import { describe, expect, it } from 'vitest';
import { classifyInfobipFailure, type InfobipFailure, mapInfobipStatus } from '../../providers/infobip.js';
import { classifySinchFailure, mapSinchStatus, type SinchFailure } from '../../providers/sinch.js';
import { classifySubmitStatus } from '../../providers/smpp/status.js';
import { classifyTwilioFailure, mapTwilioStatus, type TwilioFailure } from '../../providers/twilio/index.js';
import type { MappedStatus } from '../../providers/types.js';
import { classifyVonageParts, classifyVonageSubmitStatus, mapVonageDlrStatus, mapVonageMessagesStatus } from '../../providers/vonage/index.js';

describe('twilio', () => {
  describe('statuses (docs/providers.md §4.1)', () => {
    it.each<[string, MappedStatus | 'ignore']>([
      ['accepted', 'intermediate'],
      ['scheduled', 'intermediate'],
      ['queued', 'intermediate'],
      ['sending', 'intermediate'],
      ['sent', 'intermediate'],
      ['delivered', 'delivered'],
      ['read', 'delivered'],
      ['undelivered', 'undelivered'],
      ['failed', 'failed'],
      ['canceled', 'failed'],
      ['partially_delivered', 'delivery_unknown'],
      ['receiving', 'ignore'],
      ['received', 'ignore'],
      ['some_new_status', 'intermediate'],
      ['DELIVERED', 'delivered'],
    ])('%s → %s', (status, expected) => expect(mapTwilioStatus(status)).toBe(expected));
  });
  describe('send failures', () => {
    it.each<[string, TwilioFailure, 'permanent' | 'transient']>([
      ['21211 invalid To', { httpStatus: 400, code: 21211 }, 'permanent'],
      ['21610 unsubscribed recipient', { httpStatus: 400, code: 21610 }, 'permanent'],
      ['21612 unroutable', { httpStatus: 400, code: 21612 }, 'permanent'],
      ['21408 region not enabled', { httpStatus: 400, code: 21408 }, 'permanent'],
      ['21614 not a mobile number', { httpStatus: 400, code: 21614 }, 'permanent'],
      ['an unknown 4xx code', { httpStatus: 400, code: 21999 }, 'permanent'],
      ['a 404 without a body', { httpStatus: 404 }, 'permanent'],
      ['HTTP 429', { httpStatus: 429 }, 'transient'],
      ['20429 too many requests', { httpStatus: 429, code: 20429 }, 'transient'],
      ['21611 sender queue full (sent as HTTP 400)', { httpStatus: 400, code: 21611 }, 'transient'],
      ['20003 authentication failed: our config, not the message', { httpStatus: 401, code: 20003 }, 'transient'],
      ['HTTP 500 with 20500', { httpStatus: 500, code: 20500 }, 'transient'],
      ['HTTP 503 without a body', { httpStatus: 503 }, 'transient'],
      ['connection refused', { network: 'ECONNREFUSED' }, 'transient'],
      ['our timeout', { network: 'timeout' }, 'transient'],
      ['a 2xx we cannot read', { httpStatus: 200 }, 'transient'],
    ])('%s is %s', (_label, failure, expected) => {
      expect(classifyTwilioFailure(failure)).toBe(expected);
    });
  });
});

describe('vonage', () => {
  describe('statuses (docs/providers.md §4.2)', () => {
    it.each<[string, MappedStatus]>([
      ['accepted', 'intermediate'],
      ['buffered', 'intermediate'],
      ['delivered', 'delivered'],
      ['expired', 'undelivered'],
      ['failed', 'undelivered'],
      ['undelivered', 'undelivered'],
      ['rejected', 'failed'],
      ['unknown', 'delivery_unknown'],
      ['deleted', 'delivery_unknown'],
      ['DELIVRD', 'delivery_unknown'],
      ['Delivered', 'delivered'],
    ])('%s → %s', (status, expected) => expect(mapVonageDlrStatus(status)).toBe(expected));

    it.each<[string, string | undefined, MappedStatus]>([
      ['submitted', undefined, 'intermediate'],
      ['delivered', undefined, 'delivered'],
      ['read', undefined, 'delivered'],
      ['rejected', '1360', 'undelivered'],
      ['rejected', '1330', 'delivery_unknown'],
      ['rejected', undefined, 'undelivered'],
      ['undeliverable', undefined, 'failed'],
      ['something_new', undefined, 'delivery_unknown'],
    ])('Messages API %s (error %s) → %s', (status, code, expected) => expect(mapVonageMessagesStatus(status, code)).toBe(expected));
  });
  describe('send failures', () => {
    it.each([
      ['0', 'accepted'],
      ['1', 'transient'],
      ['5', 'transient'],
      ['10', 'transient'],
      ['2', 'permanent'],
      ['3', 'permanent'],
      ['4', 'permanent'],
      ['6', 'permanent'],
      ['7', 'permanent'],
      ['8', 'permanent'],
      ['9', 'permanent'],
      ['11', 'permanent'],
      ['12', 'permanent'],
      ['14', 'permanent'],
      ['15', 'permanent'],
      ['17', 'permanent'],
      ['22', 'permanent'],
      ['23', 'permanent'],
      ['29', 'permanent'],
      ['32', 'permanent'],
      ['33', 'permanent'],
      ['99', 'permanent'],
    ])('submit status %s is %s', (status, expected) => expect(classifyVonageSubmitStatus(status)).toBe(expected));

    it.each<[string, string[], string]>([
      ['every part accepted', ['0', '0'], 'accepted'],
      ['every part throttled', ['1', '1'], 'transient'],
      ['throttled and internal error', ['1', '5'], 'transient'],
      ['one part barred', ['7'], 'permanent'],
      ['transient and permanent refusals', ['1', '7'], 'permanent'],
      ['some parts accepted: a retry would resend them', ['0', '5'], 'permanent'],
      ['no parts in the answer', [], 'transient'],
    ])('parts: %s → %s', (_label, statuses, expected) => expect(classifyVonageParts(statuses)).toBe(expected));
  });
});

describe('infobip', () => {
  describe('statuses', () => {
    it.each<[string, string, MappedStatus]>([
      ['PENDING', 'PENDING_ACCEPTED', 'intermediate'],
      ['PENDING', 'PENDING_ENROUTE', 'intermediate'],
      ['DELIVERED', 'DELIVERED_TO_HANDSET', 'delivered'],
      ['DELIVERED', 'DELIVERED_TO_OPERATOR', 'intermediate'],
      ['UNDELIVERABLE', 'UNDELIVERABLE_NOT_DELIVERED', 'undelivered'],
      ['EXPIRED', 'EXPIRED_EXPIRED', 'undelivered'],
      ['EXPIRED', 'EXPIRED_DLR_UNKNOWN', 'delivery_unknown'],
      ['REJECTED', 'REJECTED_DESTINATION', 'failed'],
      ['SOMETHING_NEW', 'SOMETHING_NEW_X', 'intermediate'],
      ['constructor', '__proto__', 'intermediate'],
    ])('%s / %s → %s', (group, name, expected) => {
      expect(mapInfobipStatus(group, name)).toBe(expected);
    });
  });
  describe('send failures', () => {
    it.each<[string, InfobipFailure, 'permanent' | 'transient']>([
      ['a refused connection', { network: 'ECONNREFUSED' }, 'transient'],
      ['HTTP 400: the message is wrong', { httpStatus: 400 }, 'permanent'],
      ['HTTP 401: our key is wrong, not the message', { httpStatus: 401 }, 'transient'],
      ["HTTP 429: Infobip's rate limit", { httpStatus: 429 }, 'transient'],
      ['HTTP 503', { httpStatus: 503 }, 'transient'],
      ['rejected: bad destination', { rejection: 'REJECTED_DESTINATION' }, 'permanent'],
      ['rejected: not enough credits (top up, then retry)', { rejection: 'REJECTED_NOT_ENOUGH_CREDITS' }, 'transient'],
      ['rejected: a name we do not know', { rejection: 'REJECTED_SOMETHING' }, 'permanent'],
    ])('%s → %s', (_label, failure, expected) => {
      expect(classifyInfobipFailure(failure)).toBe(expected);
    });
  });
});

describe('sinch', () => {
  describe('statuses', () => {
    it.each<[string, MappedStatus]>([
      ['Queued', 'intermediate'],
      ['Dispatched', 'intermediate'],
      ['Delivered', 'delivered'],
      ['Failed', 'undelivered'],
      ['Expired', 'undelivered'],
      ['Deleted', 'undelivered'],
      ['Rejected', 'failed'],
      ['Aborted', 'failed'],
      ['Cancelled', 'failed'],
      ['Unknown', 'delivery_unknown'],
      ['SomethingNew', 'intermediate'],
      ['constructor', 'intermediate'],
    ])('%s → %s', (status, expected) => {
      expect(mapSinchStatus(status)).toBe(expected);
    });
  });
  describe('send failures', () => {
    it.each<[string, SinchFailure, 'permanent' | 'transient']>([
      ['a refused connection', { network: 'ECONNREFUSED' }, 'transient'],
      ['HTTP 400: the message is wrong', { httpStatus: 400 }, 'permanent'],
      ['HTTP 401: our token', { httpStatus: 401 }, 'transient'],
      ['HTTP 403: permissions or region of the service plan', { httpStatus: 403 }, 'transient'],
      ['HTTP 404: wrong service plan id', { httpStatus: 404 }, 'transient'],
      ['HTTP 413: too large', { httpStatus: 413 }, 'permanent'],
      ["HTTP 429: Sinch's rate limit", { httpStatus: 429 }, 'transient'],
      ['HTTP 502', { httpStatus: 502 }, 'transient'],
    ])('%s → %s', (_label, failure, expected) => {
      expect(classifySinchFailure(failure)).toBe(expected);
    });
  });
});

describe('smpp', () => {
  describe('send failures (submit_sm_resp command_status)', () => {
    it.each([
      ['ESME_ROK', 0x00, 'accepted'],
      ['throttled: nothing sent, slow down', 0x58, 'transient'],
      ['message queue full: nothing sent', 0x14, 'transient'],
      ['system error at the SMSC', 0x08, 'transient'],
      ['not bound (rebind under way)', 0x04, 'transient'],
      ['invalid destination address', 0x0b, 'permanent'],
      ['invalid source address', 0x0a, 'permanent'],
      ['invalid data_coding', 0x104, 'permanent'],
      ['a vendor-specific code nobody listed', 0x401, 'permanent'],
    ])('%s (command_status %i) is %s', (_label, status, kind) => expect(classifySubmitStatus(status).kind).toBe(kind));
  });
});
