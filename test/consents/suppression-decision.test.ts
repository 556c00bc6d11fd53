import { describe, expect, it } from 'vitest';
import { keywordAction } from '../../src/consents/keywords.js';
import { playerE164 } from '../../src/operator/players/player-phone.js';
import { decideSuppression, suppressionError, type PlayerStanding } from '../../src/consents/suppression.js';

describe('decideSuppression', () => {
  it.each<[string, PlayerStanding | undefined, ReturnType<typeof decideSuppression>]>([
    ['an unknown player is sent to', undefined, null],
    ['an opted-in player is sent to', { blocked: false, excluded: false, sms: 'in' }, null],
    ['a blocked player is refused', { blocked: true, excluded: false, sms: 'in' }, 'blocked'],
    ['an excluded player is refused', { blocked: false, excluded: true, sms: 'in' }, 'excluded'],
    ['a block is named before an exclusion', { blocked: true, excluded: true, sms: 'in' }, 'blocked'],
    ['an exclusion is named before an opt-out', { blocked: false, excluded: true, sms: 'out' }, 'excluded'],
    ['an opted-out player is refused', { blocked: false, excluded: false, sms: 'out' }, 'opted_out'],
    ['a player without an sms consent on record is refused', { blocked: false, excluded: false, sms: 'unset' }, 'no_consent'],
  ])('%s', (_label, standing, expected) => {
    expect(decideSuppression(standing)).toBe(expected);
  });

  it.each([
    ['blocked', 'recipient: player "42" is blocked'],
    ['excluded', 'recipient: player "42" is excluded'],
    ['opted_out', 'recipient: player "42" has opted out of sms'],
    ['no_consent', 'recipient: player "42" has no sms consent on record'],
  ] as const)('words the %s refusal for the CRM', (reason, text) => {
    expect(suppressionError('42', reason)).toBe(text);
  });
});

describe('keywordAction', () => {
  const lists = { optOut: ['STOP', 'UNSUBSCRIBE', 'BAJA'], optIn: ['START', 'YES'] };
  it.each([
    ['STOP', 'opt_out'],
    ['  stop\n', 'opt_out'],
    ['Baja', 'opt_out'],
    ['start', 'opt_in'],
    ['Yes ', 'opt_in'],
    ['please stop', null],
    ['STOP!', null],
    ['', null],
    ['   ', null],
    ['constructor', null],
    ['__proto__', null],
  ] as const)('reads %j as %s', (text, action) => {
    expect(keywordAction(text, lists)).toBe(action);
  });
});

describe('playerE164', () => {
  it.each([
    ['+356', '79123456', '+35679123456'],
    ['+44', '07700 900123', '+447700900123'],
    ['+44', '(0)7700-900-123', '+447700900123'],
    ['', '+447700900123', '+447700900123'],
    ['+1', '0044 7700 900123', '+447700900123'],
    ['', '7700900123', null],
    ['+44', '', null],
    ['+44', 'n/a', null],
  ])('mobile_prefix %j and mobile %j make %s', (prefix, mobile, e164) => {
    expect(playerE164(prefix, mobile)).toBe(e164);
  });
});
