/**
 * The X-Crm-* headers as docs/connecting-the-crm.md spells them ("One action, one credit") are the ones the code
 * reads: the table's names are src/crm/references.ts's, a repeat sent with exactly the documented key headers is
 * answered as the first credit, one without any of them credits again, and the stored `crm_references` carry the
 * documented names.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRM_HEADERS, crmSpelling } from '../../src/crm/references.js';
import { sampleUser } from '../helpers/crm-schemas.js';
import { startTestGateway, TEST_ADMIN_KEY, type TestGateway } from '../helpers/gateway.js';
import { readRepoFile, withoutCode } from '../helpers/markdown.js';

interface DocumentedHeader {
  header: string;
  stored: string;
  key: boolean;
}

/** The rows of the table whose first column is a backticked `X-Crm-…` header. */
function documentedHeaders(): DocumentedHeader[] {
  const prose = withoutCode(readRepoFile('docs/connecting-the-crm.md'));
  return [...prose.matchAll(/^\| `(X-Crm-[A-Za-z]+)` \| `([a-z_]+)` \| (yes|no) \|$/gm)].map((m) => ({ header: m[1]!, stored: m[2]!, key: m[3] === 'yes' }));
}

const documented = documentedHeaders();

describe('docs/connecting-the-crm.md names the X-Crm-* headers the code reads', () => {
  it('lists each header the code reads, spelt as the CRM does, with the crm_references key it is stored under', () => {
    expect(documented.map((d) => [d.header, d.stored]).sort()).toEqual(
      Object.entries(CRM_HEADERS)
        .map(([stored, name]) => [crmSpelling(name), stored])
        .sort(),
    );
    expect(documented.filter((d) => d.key)).toHaveLength(3);
  });

  describe('against a running gateway', () => {
    let gw: TestGateway;
    const values = new Map(documented.map((d, i) => [d.header, d.stored === 'id' || d.stored === 'trigger_hash' ? `value-${i}` : String(100 + i)]));
    const credits = async (userId: string) =>
      (
        (await (await fetch(`${gw.url}/admin/credits?user_id=${userId}`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } })).json()) as {
          credits: any[];
        }
      ).credits;
    beforeAll(async () => {
      gw = await startTestGateway();
      for (const id of ['doc-1', 'doc-2', 'doc-3']) await gw.adminPut(`/admin/users/${id}`, sampleUser(id));
      await gw.adminPut('/admin/bonuses', [{ text: 'FS50: Fifty spins', value: 'FS50' }]);
    });
    afterAll(async () => gw?.close());

    it('answers a repeat with the documented key headers as the first credit', async () => {
      const keyOnly = Object.fromEntries(documented.filter((d) => d.key).map((d) => [d.header, values.get(d.header)!]));
      const first = await gw.post('/bonus/credit', { user_id: 'doc-1', bonus_code: 'FS50' }, keyOnly);
      const again = await gw.post('/bonus/credit', { user_id: 'doc-1', bonus_code: 'FS50' }, keyOnly);
      expect(first.status).toBe(200);
      expect(again.json.credit_id).toBe(first.json.credit_id);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await credits('doc-1')).toHaveLength(1);
    });

    it.each(documented.filter((d) => d.key).map((d) => d.header))('credits again without %s: nothing identifies the repeat', async (left) => {
      const user = `doc-2-${left}`;
      await gw.adminPut(`/admin/users/${user}`, sampleUser(user));
      const headers = Object.fromEntries(documented.filter((d) => d.key && d.header !== left).map((d) => [d.header, values.get(d.header)!]));
      await gw.post('/bonus/credit', { user_id: user, bonus_code: 'FS50' }, headers);
      await gw.post('/bonus/credit', { user_id: user, bonus_code: 'FS50' }, headers);
      expect(await credits(user)).toHaveLength(2);
    });

    it('stores every documented header under its documented crm_references key', async () => {
      const all = Object.fromEntries(documented.map((d) => [d.header, values.get(d.header)!]));
      expect((await gw.post('/bonus/credit', { user_id: 'doc-3', bonus_code: 'FS50' }, all)).status).toBe(200);
      const [credit] = await credits('doc-3');
      expect(Object.fromEntries(Object.entries(credit.crm_references as Record<string, unknown>).map(([k, v]) => [k, String(v)]))).toEqual(
        Object.fromEntries(documented.map((d) => [d.stored, values.get(d.header)!])),
      );
    });
  });
});
