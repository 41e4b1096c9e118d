import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { parse as parseDisposition } from 'content-disposition';
import { eachDatabase, uploadFile } from '../support/harness.ts';
import { type ListeningApp, startListening } from '../support/listening.ts';

/**
 * File names as people have them (issue 32, item 8), over HTTP: a name holding `"` or a leading
 * space is stored and read back exactly, and its download's Content-Disposition quotes the plain
 * name and carries `filename*` with the stored name whenever the plain one differs.
 */
eachDatabase('files: names as people have them', (kind) => {
  let t: ListeningApp;
  let base: string;

  before(async () => {
    t = await startListening(kind);
    base = t.base;
    const made = await t.post('/api/tables', { code: 'docs', name: 'Docs', fields: [{ code: 'doc', type: 'file' }] });
    assert.equal(made.status, 201, made.text);
  });
  after(() => t.close());

  const local = (url: string) => {
    const u = new URL(url);
    return base + u.pathname + u.search;
  };

  const cases: { name: string; header: string }[] = [
    { name: 'report "final".pdf', header: `attachment; filename="report 'final'.pdf"; filename*=UTF-8''report%20%22final%22.pdf` },
    { name: ' leading space.txt', header: `attachment; filename="leading space.txt"; filename*=UTF-8''%20leading%20space.txt` },
    { name: 'plain.txt', header: 'attachment; filename="plain.txt"' },
  ];
  for (const [i, { name, header }] of cases.entries()) {
    it(`stores ${JSON.stringify(name)}, reads it back exactly and downloads under it`, async () => {
      const rowId = `r${i}`;
      const id = await uploadFile(t, 'docs', rowId, `bytes of ${name}`, 'application/pdf');
      const created = await t.post('/api/tables/docs/rows', { id: rowId, values: { doc: { id, name } } });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.body.values.doc.name, name);
      const got = await t.get(`/api/tables/docs/rows/${rowId}`);
      assert.equal(got.body.values.doc.name, name);
      const listed = await t.get('/api/tables/docs/rows', { query: { filter: { id: { _eq: rowId } } } });
      assert.equal(listed.body.data[0].values.doc.name, name);

      const res = await fetch(local(got.body.values.doc.url));
      assert.equal(res.status, 200);
      const disposition = res.headers.get('content-disposition') as string;
      assert.equal(disposition, header);
      assert.equal(parseDisposition(disposition).parameters.filename, name, 'filename* (or the plain name) is the stored name');
      assert.equal(await res.text(), `bytes of ${name}`);
    });
  }
});
