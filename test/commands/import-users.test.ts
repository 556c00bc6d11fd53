import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { runImportUsers } from '../../src/commands/import-users.js';
import { migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import { crmConsents, crmUserDetails, sampleUser } from '../helpers/crm-schemas.js';
import { startTestGateway, testConfigDocument } from '../helpers/gateway.js';

function capture() {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
}

let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-import-'));
  // import users never migrates (src/ledger/engine/schema-check.ts): the schema is brought up first, as `migrate` does.
  const ledger = openLedger(parseConfig(testConfigDocument(dir), {}).database);
  await migrateToLatest(ledger.db);
  await ledger.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('crm-sms-gateway import users FILE', () => {
  it('loads good lines, reports bad ones by line number, and prints a summary', async () => {
    const lines = [
      JSON.stringify(sampleUser('imp-1', { consents: [{ type: 'email', opted_in: true }] })),
      '',
      '{"user_id": "imp-broken",',
      JSON.stringify({ ...sampleUser('imp-3'), birth_date: '31.12.1990' }),
      JSON.stringify({ ...sampleUser('x'), user_id: undefined }),
      ...Array.from({ length: 5_000 }, (_, i) => JSON.stringify(sampleUser(`bulk-${i}`, { is_excluded: i % 2 === 0 }))),
      JSON.stringify(sampleUser('imp-1', { city: 'Sliema' })),
    ];
    const file = join(dir, 'users.ndjson');
    writeFileSync(file, lines.join('\r\n') + '\n');
    const config = parseConfig(testConfigDocument(dir), {});
    const out = capture();
    const err = capture();

    const code = await runImportUsers(config, file, { out: out.stream, err: err.stream });

    expect(code).toBe(1);
    expect(out.text()).toBe(`loaded 5002 users from ${file} (5006 lines, 3 bad)\n`);
    expect(err.text()).toContain(`${file}:3: not valid JSON`);
    expect(err.text()).toContain(`${file}:4: birth_date`);
    expect(err.text()).toContain(`${file}:5: user_id: is required`);
    expect(err.text()).toMatch(/import users: 5006 lines read, 5002 users loaded, 3 bad/);
    // Progress: lines, rate and the share of the file read (the ETA comes from it).
    expect(err.text()).toMatch(/^import users: 5,006 lines, [\d,]+ lines\/s, \d+ s elapsed, 100 % \(ETA 0 s\)$/m);

    const gw = await startTestGateway({}, { dir });
    try {
      const user = crmUserDetails.parse((await gw.get('/userdetails/imp-1')).json);
      expect(user.city).toBe('Sliema');
      const consents = crmConsents.parse((await gw.get('/userconsents/imp-1')).json).consents;
      expect(consents.find((c) => c.type === 'email')!.opted_in).toBe(true);
      expect((await gw.get('/userdetails/imp-3')).status).toBe(404);
      const excluded = await gw.post('/reconciliation', { field: 'excluded' });
      expect(excluded.json.users).toHaveLength(2_500);
    } finally {
      await gw.close();
    }
  });

  it('refuses a line the CRM would reject, naming its line and field, and imports the rest', async () => {
    const file = join(dir, 'crm-rules.ndjson');
    const lines = [
      sampleUser('rules-1'),
      sampleUser('rules-2', { username: 'ab' }),
      sampleUser('rules-3', { sex: 'M' }),
      sampleUser('rules-4', { email: 'nobody-at-example' }),
      sampleUser('rules-5', { registration_date: '2015-03-02 08:27' }),
      sampleUser('rules-6', { verified_at: null, consents: [{ type: 'email', opted_in: true, products: ['casino'] }] }),
    ];
    writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const config = parseConfig(testConfigDocument(dir), {});
    const out = capture();
    const err = capture();
    expect(await runImportUsers(config, file, { out: out.stream, err: err.stream })).toBe(1);
    expect(out.text()).toBe(`loaded 2 users from ${file} (6 lines, 4 bad)\n`);
    expect(err.text()).toContain(`${file}:2: username: must be 3 to 255 characters`);
    expect(err.text()).toContain(`${file}:3: sex: must be one of`);
    expect(err.text()).toContain(`${file}:4: email: must be an e-mail address`);
    expect(err.text()).toContain(`${file}:5: registration_date: must be an RFC 3339`);
    const gw = await startTestGateway({}, { dir });
    try {
      expect(crmUserDetails.parse((await gw.get('/userdetails/rules-6')).json).verified_at).toBe('');
      const consents = crmConsents.parse((await gw.get('/userconsents/rules-6')).json).consents;
      expect(consents.find((c) => c.type === 'email')).toEqual({ opted_in: true, type: 'email', products: ['casino'] });
    } finally {
      await gw.close();
    }
  });

  it('exits 0 for a clean file and 1 for a file it cannot read', async () => {
    const file = join(dir, 'clean.ndjson');
    writeFileSync(file, JSON.stringify(sampleUser('clean-1')) + '\n');
    const config = parseConfig(testConfigDocument(dir), {});
    const io = { out: capture().stream, err: capture().stream };
    expect(await runImportUsers(config, file, io)).toBe(0);
    const err = capture();
    expect(await runImportUsers(config, join(dir, 'missing.ndjson'), { out: capture().stream, err: err.stream })).toBe(1);
    expect(err.text()).toMatch(/cannot read/);
  });
});
