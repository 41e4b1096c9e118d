import http from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { DatasetModule } from './dataset.ts';

/** Chunks of the streamed file: about 64 KiB each. */
const CHUNK_BYTES = 64 * 1024;

/** RFC 4180 quoting, as exports write cells: a cell holding a comma, a quote, CR or LF is quoted, quotes doubled. */
const quoted = (text: string) => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);

/** The dataset's rows as the CSV file an export writes of them, and a streamed POST of it (bench/import.ts, bench/profile.ts). */
export function csvOfDataset(ds: DatasetModule) {
  const codes = ds.FIELDS.map((f) => f.code);
  /**
   * Each field's value as an export writes its cell (null: empty; record and list: JSON). Only text
   * can need quoting in this dataset besides JSON: numbers, booleans, dates and date-times cannot.
   */
  const cells = ds.FIELDS.map(({ code, type }) => {
    const plain = type === 'number' || type === 'boolean' || type === 'date' || type === 'dateTime';
    const json = type === 'record' || type === 'list';
    return (values: Record<string, unknown>) => {
      const v = values[code];
      if (v === null || v === undefined) return '';
      if (plain) return String(v);
      return quoted(json ? JSON.stringify(v) : (v as string));
    };
  });

  /** The CSV file of the first n dataset rows, in chunks, made as they are asked for. */
  function* csvFile(n: number): Generator<Buffer> {
    let text = ['id', ...codes].join(',') + '\r\n';
    for (const r of ds.rows(n)) {
      text += r.id;
      for (const cell of cells) text += ',' + cell(r.values);
      text += '\r\n';
      if (text.length >= CHUNK_BYTES) {
        yield Buffer.from(text);
        text = '';
      }
    }
    if (text) yield Buffer.from(text);
  }

  /** POSTs the CSV of n rows to `url`, streamed; answers the JSON answer. */
  function postCsv(url: string, n: number, headers: Record<string, string>): Promise<any> {
    return new Promise((resolve, reject) => {
      const req = http.request(url, { method: 'POST', agent: false, headers: { 'content-type': 'text/csv', ...headers } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (body += d));
        res.on('error', reject);
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`POST ${url} → ${res.statusCode}: ${body.slice(0, 500)}`));
          else resolve(JSON.parse(body));
        });
      });
      req.on('error', reject);
      pipeline(csvFile(n), req).catch(reject);
    });
  }

  return { csvFile, postCsv };
}
