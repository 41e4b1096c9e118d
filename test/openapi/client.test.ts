import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { after, before, it } from 'node:test';
import openapiTS, { type OpenAPI3, astToString } from 'openapi-typescript';
import { TEST_KEY, type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import { EVERY_TYPE } from './conformance.ts';

/**
 * Issue 14, "Real tools": TypeScript types generated from a table's document by openapi-typescript,
 * a client program on openapi-fetch that tsc type-checks (and a wrong one that it rejects), and the
 * same program run against the listening service, on both databases.
 */

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);


const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    lib: ['ES2022', 'DOM'],
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noEmit: true,
    types: ['node'],
    // Checking @types/node and the DOM library would triple the time; the generated types are
    // checked all the same, as rowhouse.ts (a source file).
    skipLibCheck: true,
  },
  files: ['rowhouse.ts', 'client.ts', 'wrong.ts', 'invoices.d.ts', 'example.ts'],
};

/** The client program: type-checked by tsc, then imported and run by the test. */
function clientProgram(tableId: string): string {
  return `import createClient from 'openapi-fetch';
import type { components, paths } from './rowhouse.js';

type Filter = components['schemas']['Filter'];
type Sort = components['schemas']['Sort'];
type Row = components['schemas']['Row'];
type CreateRow = components['schemas']['CreateRow'];

const rows = '/api/tables/${tableId}/rows';
const row = '/api/tables/${tableId}/rows/{rowId}';

/** Creates, lists, pages through, updates and deletes rows; returns what it saw. */
export async function exercise(baseUrl: string, apiKey: string) {
  const client = createClient<paths>({ baseUrl, headers: { 'X-API-Key': apiKey } });

  // A file for inv-1's scan field: an upload URL, then the bytes (the URL is signed: no key).
  const issued = await client.POST('/api/tables/${tableId}/rows/{rowId}/file-upload-url', {
    params: { path: { rowId: 'inv-1' } },
    body: { count: 1 },
  });
  if (!issued.data) throw new Error(\`file-upload-url: \${issued.response.status} \${issued.error?.message}\`);
  const file = issued.data.data[0]!;
  // The URL is on the service's public URL; this server listens at baseUrl.
  const uploadUrl = new URL(file.url);
  const put = await fetch(new URL(uploadUrl.pathname + uploadUrl.search, baseUrl), {
    method: 'PUT',
    headers: { 'content-type': 'application/pdf' },
    body: '%PDF- not really',
  });
  if (put.status !== 200) throw new Error(\`upload: \${put.status}\`);

  const created = await client.POST(rows, {
    body: {
      id: 'inv-1',
      values: {
        title: 'Invoice 1', amount: 12.5, paid: false, at: '2024-05-01T09:30:00+09:00', day: '2024-02-29',
        clock: '23:59:59', month: '2024-12', status: 'paid', meta: { a: [1, 'x'] }, tags: ['x', 2],
        scan: { id: file.id, name: '請求書.pdf' },
      },
    } satisfies CreateRow, // openapi-fetch alone lets a misspelled optional field code through
  });
  if (!created.data) throw new Error(\`create: \${created.response.status} \${created.error?.message}\`);
  const title: string = created.data.values.title; // required: never null

  const more = await client.POST('/api/tables/${tableId}/rows-bulk', {
    body: {
      data: [
        { id: 'inv-2', values: { title: 'Invoice 2', amount: 40, status: 'paid' } },
        { id: 'inv-3', values: { title: 'Invoice 3', amount: 7, status: 'open' } },
        { id: 'inv-4', values: { title: 'Invoice 4', status: 'paid' } },
        { id: 'inv-5', values: { title: 'Invoice 5', amount: 3, status: 'void' } },
      ],
    },
  });
  if (!more.data) throw new Error(\`createRows: \${more.response.status} \${more.error?.message}\`);

  // filter and sort are JSON text; typing them first catches mistakes in them too.
  const paid: Filter = { values: { status: { _eq: 'paid' } } };
  const byAmount: Sort = [{ amount: { direction: 'desc', nulls: 'nullsLast' } }];
  const listed = await client.GET(rows, { params: { query: { filter: JSON.stringify(paid), sort: JSON.stringify(byAmount) } } });
  if (!listed.data) throw new Error(\`list: \${listed.response.status} \${listed.error?.message}\`);

  // Every row, one per page: each page's nextUrl carries the cursor of the next one.
  const everyRow: Filter = { _or: [{ values: { amount: { _gte: 0 } } }, { values: { amount: { _isNull: true } } }] };
  const filter = JSON.stringify(everyRow);
  const sort = JSON.stringify([{ amount: { direction: 'asc', nulls: 'nullsFirst' } }] satisfies Sort);
  const walked: Row[] = [];
  let pages = 0;
  let cursor: string | undefined;
  do {
    const page = await client.GET(rows, { params: { query: { pageSize: 1, filter, sort, cursor } } });
    if (!page.data) throw new Error(\`page \${pages}: \${page.response.status} \${page.error?.message}\`);
    pages += 1;
    walked.push(...page.data.data);
    cursor = page.data.nextUrl === null ? undefined : new URL(page.data.nextUrl).searchParams.get('cursor') ?? undefined;
  } while (cursor !== undefined);

  const updated = await client.PATCH(row, { params: { path: { rowId: 'inv-2' } }, body: { values: { paid: true, amount: 41, tags: null } } });
  if (!updated.data) throw new Error(\`update: \${updated.response.status} \${updated.error?.message}\`);

  const deleted = await client.DELETE(row, { params: { path: { rowId: 'inv-3' } } });
  const gone = await client.GET(row, { params: { path: { rowId: 'inv-3' } } });
  const first = await client.GET(row, { params: { path: { rowId: 'inv-1' } } });
  if (!first.data) throw new Error(\`get: \${first.response.status} \${first.error?.message}\`);

  return {
    created: { status: created.response.status, row: created.data, title },
    bulkIds: more.data.data.map((r) => r.id),
    listedIds: listed.data.data.map((r) => r.id),
    walkedIds: walked.map((r) => r.id),
    pages,
    updated: updated.data,
    deletedStatus: deleted.response.status,
    gone: { status: gone.response.status, error: gone.error },
    first: first.data,
    scanUrl: first.data.values.scan?.url ?? null,
  };
}
`;
}

/** Mistakes tsc must reject, one per marked line (and nothing else). */
function wrongProgram(tableId: string): string {
  return `import createClient from 'openapi-fetch';
import type { components, paths } from './rowhouse.js';

type CreateRow = components['schemas']['CreateRow'];

const client = createClient<paths>({ baseUrl: 'http://localhost:8080' });
const rows = '/api/tables/${tableId}/rows';
const row = '/api/tables/${tableId}/rows/{rowId}';

export async function mistakes() {
  await client.POST(rows, { body: { values: { titel: 'x' } } }); // wrong: a misspelled field code (the required title)
  await client.POST(rows, { body: { values: { title: 'x', amout: 1 } } satisfies CreateRow }); // wrong: a misspelled field code (optional)
  await client.POST(rows, { body: { values: { title: 42 } } }); // wrong: a number for a text field
  await client.POST(rows, { body: { values: { title: 'x', status: 'pending' } } }); // wrong: not one of the choices
  await client.POST(rows, { body: { values: { amount: 1 } } }); // wrong: the required field is missing
  await client.PATCH(row, { params: { path: { rowId: 'a' } }, body: { values: { paid: 'yes' } } }); // wrong: a string for a boolean
  await client.PATCH(row, { params: { path: { rowId: 'a' } }, body: { values: { title: null } } }); // wrong: null for a required field
  await client.POST(rows, { body: { values: { title: 'x', scan: { name: 'a.pdf' } } } }); // wrong: a file value without its id
  await client.GET('/api/tables/${tableId}/rowz'); // wrong: no such path
  await client.GET(row); // wrong: the rowId is missing
  await client.GET(rows, { params: { query: { pageSize: '1' } } }); // wrong: pageSize is a number
  const sort: components['schemas']['Sort'] = [{ meta: { direction: 'asc', nulls: 'nullsLast' } }]; // wrong: a record field is not a sort key
  const filter: components['schemas']['Filter'] = { values: { amount: { _contains: '1' } } }; // wrong: no _contains on a number
  const read = await client.GET(row, { params: { path: { rowId: 'a' } } });
  const n: number = read.data!.values.title; // wrong: title reads as a string
  return [sort, filter, n];
}
`;
}

/** The TypeScript example of docs/api.md, "Generating a client", with the table id it names replaced by `tableId`. */
function docsExample(tableId: string): string {
  const docs = fs.readFileSync(path.join(repo, 'docs/api.md'), 'utf8');
  const section = docs.slice(docs.indexOf('\n## Generating a client\n'));
  const code = /\n```ts\n([\s\S]*?)\n```/.exec(section)?.[1];
  assert.ok(section.length > 30 && code, 'docs/api.md has no TypeScript example under "Generating a client"');
  const ids = new Set(code.match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g));
  assert.equal(ids.size, 1, 'the example names one table id');
  return code.replaceAll([...ids][0]!, tableId);
}

interface Row {
  id: string;
  values: Record<string, unknown> & { scan: { id: string; name: string; mimeType: string | null; url: string } | null };
}

interface Exercise {
  created: { status: number; row: Row; title: string };
  bulkIds: string[];
  listedIds: string[];
  walkedIds: string[];
  pages: number;
  updated: Row;
  deletedStatus: number;
  gone: { status: number; error: { statusCode: number; message: string } | undefined };
  first: Row;
  scanUrl: string | null;
}

eachDatabase('openapi: a generated client (openapi-typescript, openapi-fetch, tsc)', (kind) => {
  let t: TestApp;
  let tableId: string;
  let baseUrl: string;
  let dir: string;

  before(async () => {
    t = await startApp(kind);
    const made = await t.post('/api/tables', { code: 'invoices', name: 'Invoices', fields: EVERY_TYPE });
    assert.equal(made.status, 201, made.text);
    tableId = made.body.id;
    baseUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });

    const res = await fetch(`${baseUrl}/api/tables/${tableId}/openapi`, { headers: { 'X-API-Key': TEST_KEY } });
    assert.equal(res.status, 200);
    const doc = (await res.json()) as OpenAPI3;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-client-'));
    fs.symlinkSync(path.join(repo, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
    fs.writeFileSync(path.join(dir, 'rowhouse.ts'), astToString(await openapiTS(doc)));
    fs.writeFileSync(path.join(dir, 'client.ts'), clientProgram(tableId));
    fs.writeFileSync(path.join(dir, 'wrong.ts'), wrongProgram(tableId));
    // The docs' example imports the types as ./invoices.js.
    fs.copyFileSync(path.join(dir, 'rowhouse.ts'), path.join(dir, 'invoices.d.ts'));
    fs.writeFileSync(path.join(dir, 'example.ts'), docsExample(tableId));
  });
  after(async () => {
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('generates types that a client program type-checks against, and that reject its mistakes', async () => {
    const generated = fs.readFileSync(path.join(dir, 'rowhouse.ts'), 'utf8');
    assert.ok(generated.includes(`"/api/tables/${tableId}/rows/{rowId}": {`));
    for (const op of ['listRows', 'createRow', 'getRow', 'updateRow', 'deleteRow', 'createRows', 'updateRows', 'deleteRows', 'exportRows', 'fileUploadUrls', 'batch']) {
      assert.ok(generated.includes(`    ${op}: {`), `no operation ${op} in the generated types`);
    }

    const tsc = path.join(repo, 'node_modules/typescript/bin/tsc');
    const out = await run(process.execPath, [tsc, '-p', dir, '--pretty', 'false'], { cwd: dir }).then(
      (r) => r.stdout,
      (err: { stdout?: string; stderr?: string }) => `${err.stdout ?? ''}${err.stderr ?? ''}`,
    );
    const errors = [...out.matchAll(/^(\S+?)\((\d+),\d+\): error (TS\d+): (.*)$/gm)].map((m) => ({ file: m[1], line: Number(m[2]), text: `${m[1]}:${m[2]} ${m[3]} ${m[4]}` }));
    const unparsed = out.split('\n').filter((l) => l.trim() !== '' && !/^\S+\(\d+,\d+\): error /.test(l) && !/^\s/.test(l));
    assert.deepEqual(unparsed, [], out);
    // A schema of just {type: 'object'} comes out as Record<string, never>, which no object with keys is assignable to.
    assert.doesNotMatch(generated, /meta\??: Record<string, never>/, 'the record field meta is typed Record<string, never>: its schema needs additionalProperties: true');
    assert.deepEqual(errors.filter((e) => e.file !== 'wrong.ts').map((e) => e.text), [], `the client program, the docs' example and the generated types must type-check:\n${out}`);

    const marked = fs.readFileSync(path.join(dir, 'wrong.ts'), 'utf8').split('\n').flatMap((l, i) => (l.includes('// wrong:') ? [{ line: i + 1, what: l.slice(l.indexOf('// wrong:') + 10) }] : []));
    const lines = new Set(errors.map((e) => e.line));
    assert.deepEqual(marked.filter((m) => !lines.has(m.line)).map((m) => m.what), [], `tsc accepted these mistakes:\n${out}`);
    const markedLines = new Set(marked.map((m) => m.line));
    assert.deepEqual(errors.filter((e) => !markedLines.has(e.line)).map((e) => e.text), [], 'errors in wrong.ts outside the marked lines');
  });

  it('runs the same program against the service: create, list, page, update, delete', async () => {
    const program = (await import(pathToFileURL(path.join(dir, 'client.ts')).href)) as { exercise(baseUrl: string, apiKey: string): Promise<Exercise> };
    const r = await program.exercise(baseUrl, TEST_KEY);

    assert.equal(r.created.status, 201);
    assert.equal(r.created.row.id, 'inv-1');
    assert.equal(r.created.title, 'Invoice 1');
    assert.deepEqual({ ...r.created.row.values, scan: undefined }, {
      title: 'Invoice 1', amount: 12.5, paid: false, at: '2024-05-01T00:30:00.000Z', day: '2024-02-29', clock: '23:59:59',
      month: '2024-12', status: 'paid', meta: { a: [1, 'x'] }, tags: ['x', 2], scan: undefined,
    });
    assert.equal(r.created.row.values.scan?.name, '請求書.pdf');
    assert.equal(r.created.row.values.scan?.mimeType, 'application/pdf');
    assert.deepEqual(r.bulkIds, ['inv-2', 'inv-3', 'inv-4', 'inv-5']);

    // status paid, amount descending with nulls last.
    assert.deepEqual(r.listedIds, ['inv-2', 'inv-1', 'inv-4']);
    // amount ascending with nulls first, one row a page.
    assert.deepEqual(r.walkedIds, ['inv-4', 'inv-5', 'inv-3', 'inv-1', 'inv-2']);
    assert.equal(r.pages, 5);

    assert.equal(r.updated.id, 'inv-2');
    assert.equal(r.updated.values.paid, true);
    assert.equal(r.updated.values.amount, 41);
    assert.equal(r.updated.values.tags, null);
    assert.equal(r.updated.values.title, 'Invoice 2');

    assert.equal(r.deletedStatus, 204);
    assert.equal(r.gone.status, 404);
    assert.equal(r.gone.error?.statusCode, 404);
    assert.equal(r.first.values.title, 'Invoice 1');
    assert.ok(r.scanUrl?.startsWith('http://rowhouse.test/files/'), String(r.scanUrl));

    const check = await t.get(`/api/tables/${tableId}/rows`, { query: { pageSize: '200' } });
    assert.deepEqual(check.body.data.map((row: Row) => row.id).sort(), ['inv-1', 'inv-2', 'inv-4', 'inv-5']);
  });
});
