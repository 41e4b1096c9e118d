import { Readable, finished } from 'node:stream';
import { CsvError, Parser } from 'csv-parse';
import iconv from 'iconv-lite';
import { ServiceError, badRequest } from '../domain/errors.ts';
import type { FileFormat, TextEncoding } from '../domain/file-formats.ts';

/**
 * An imported file read as records, streamed: bytes → text (in the file's encoding, within the
 * byte limit) → one record per CSV/TSV record or JSONL line, each with the line it starts on.
 * The shapes are the ones rows-export writes (CONTRACT §7, issue "Spreadsheet round trip").
 */

/** One record of the file: a CSV/TSV record's cells, or a JSONL line's JSON value. */
export type FileRecord = { line: number; cells: string[] } | { line: number; json: unknown };

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** A problem with the file as a whole or at a line: a 400 naming the line. */
export const fileProblem = (line: number, message: string) => badRequest(`line ${line}: ${message}`, [{ path: `line ${line}`, message }]);

const newlines = (text: string) => {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
};

type Decode = (chunk: Buffer, end: boolean) => string;

/** A streaming decoder; `line` says where a problem is. */
function decoderFor(encoding: TextEncoding, line: () => number): Decode {
  if (encoding !== 'shiftJis') {
    const utf8 = new TextDecoder('utf-8', { fatal: true });
    return (chunk, end) => {
      try {
        return utf8.decode(chunk, { stream: !end });
      } catch {
        // Where: the first replacement character a lenient decoding of the chunk puts in.
        const lenient = new TextDecoder('utf-8').decode(chunk);
        throw fileProblem(line() + newlines(lenient.slice(0, Math.max(0, lenient.indexOf('\uFFFD')))), 'bytes that are not UTF-8 text');
      }
    };
  }
  // Windows-31J writes no U+FFFD: iconv-lite's decoder puts one where bytes are not CP932 text.
  const cp932 = iconv.getDecoder('cp932');
  return (chunk, end) => {
    const text = cp932.write(chunk) + (end ? (cp932.end() ?? '') : '');
    const bad = text.indexOf('\uFFFD');
    if (bad !== -1) throw fileProblem(line() + newlines(text.slice(0, bad)), 'bytes that are not Shift_JIS (Windows-31J) text');
    return text;
  };
}

/**
 * The file's text, a chunk at a time. A UTF-8 BOM is dropped and means UTF-8, whatever `encoding`
 * says; `shiftJis` is Windows-31J (CP932), as exports write it. Bytes that are not text in the
 * encoding, and more than `maxBytes` of them, end the file with an error.
 */
async function* decoded(body: AsyncIterable<Buffer>, encoding: TextEncoding, maxBytes: number): AsyncGenerator<string> {
  let bytes = 0;
  let line = 1;
  let decode: Decode | null = null;
  // The first bytes wait until there are three of them: enough to tell a BOM.
  let head: Buffer | null = Buffer.alloc(0);
  const text = (chunk: Buffer, end: boolean): string => {
    if (!decode) {
      const bom = chunk.subarray(0, 3).equals(UTF8_BOM);
      decode = decoderFor(bom ? 'utf8' : encoding, () => line);
      if (bom) chunk = chunk.subarray(3);
    }
    const out = decode(chunk, end);
    line += newlines(out);
    return out;
  };
  for await (const chunk of body) {
    bytes += chunk.length;
    if (bytes > maxBytes) throw new ServiceError('payload_too_large', `The file is larger than the limit of ${maxBytes} bytes (ROWHOUSE_MAX_FILE_BYTES)`);
    let next = chunk;
    if (head) {
      head = Buffer.concat([head, chunk]);
      if (head.length < 3) continue;
      next = head;
      head = null;
    }
    const out = text(next, false);
    if (out) yield out;
  }
  const out = text(head ?? Buffer.alloc(0), true);
  if (out) yield out;
}

const CSV_MESSAGES: Record<string, string> = {
  CSV_QUOTE_NOT_CLOSED: 'a quoted cell is not closed before the end of the file',
  CSV_RECORD_INCONSISTENT_FIELDS_LENGTH: 'this record has another number of cells than the header',
  CSV_INVALID_CLOSING_QUOTE: 'a quote inside a quoted cell must be doubled ("")',
  CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE: 'text after the closing quote of a cell',
  INVALID_OPENING_QUOTE: 'a quote inside a cell that does not start with one: quote the whole cell and double the quote ("")',
};

/**
 * csv-parse's stream, each record pushed as a FileRecord with the line it starts on. Lines are
 * counted as the parser makes records, not as they are taken: a parse error destroys the parser,
 * and with it the records it had made and nobody had taken yet, so the error's line must not
 * depend on how far the reader had got. A record ends the lines its cells hold (quoted newlines;
 * LFs, as the text's lines are counted everywhere) and one more, its own line end (LF, CRLF or
 * CR): only the last record can lack one, and no line is counted after it. This is what
 * csv-parse's `raw` text of the record said, without building that text a character at a time
 * (a quarter of the parser's time).
 */
class LineCountingParser extends Parser {
  /** The line the next record starts on: after the last record parsed. */
  parsedThrough = 1;

  override push(record: unknown, encoding?: BufferEncoding): boolean {
    if (record === null) return super.push(null, encoding);
    const cells = record as string[];
    const line = this.parsedThrough;
    let breaks = 1;
    for (const cell of cells) {
      for (let i = cell.indexOf('\n'); i !== -1; i = cell.indexOf('\n', i + 1)) breaks++;
    }
    this.parsedThrough += breaks;
    return super.push({ line, cells } satisfies FileRecord, encoding);
  }
}

/**
 * A readable's objects, as many at a time as it holds: one turn of the consumer's loop (a promise,
 * a microtask) per batch rather than per object, as `for await` over the stream would take.
 * Reading stops where the stream's own iterator would: at its end, or with its error.
 */
async function* batches<T>(stream: Readable): AsyncGenerator<T[]> {
  let failed: { err: unknown } | null = null;
  let ended = false;
  let wake: (() => void) | null = null;
  const signal = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  stream.on('readable', signal);
  const cleanup = finished(stream, (err) => {
    if (err) failed = { err };
    ended = true;
    signal();
  });
  try {
    for (;;) {
      const batch: T[] = [];
      let item: T | null;
      while (!stream.destroyed && (item = stream.read() as T | null) !== null) batch.push(item);
      if (batch.length > 0) yield batch;
      else if (failed) throw (failed as { err: unknown }).err;
      else if (ended) return;
      else await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    cleanup();
    stream.off('readable', signal);
  }
}

/** The records of a CSV or TSV file (RFC 4180 quoting, as exports write it), parsed by csv-parse, in batches. */
async function* delimited(text: AsyncIterable<string>, delimiter: string): AsyncGenerator<FileRecord[]> {
  const source = Readable.from(text);
  const parser = new LineCountingParser({ delimiter, relax_column_count: false });
  source.pipe(parser);
  // pipe() does not pass errors on: the text's own (bytes that are not text, too many) end the parse.
  source.once('error', (err) => parser.destroy(err));
  try {
    yield* batches<FileRecord>(parser);
  } catch (err) {
    if (err instanceof ServiceError) throw err;
    // Every error of the parser is one of the file (its codes do not all start with CSV_). A quote
    // in an unquoted cell is found as the parser reads its line, which it says, before the records
    // up to there are taken from it.
    if (err instanceof CsvError) {
      const at = err.code === 'INVALID_OPENING_QUOTE' && typeof err.lines === 'number' ? err.lines : parser.parsedThrough;
      throw fileProblem(at, CSV_MESSAGES[err.code] ?? err.message);
    }
    throw err;
  } finally {
    source.destroy();
    parser.destroy();
  }
}

/** The lines of a JSONL file, each a JSON value, in batches (the lines each chunk of text completes); blank lines are skipped. */
async function* jsonLines(text: AsyncIterable<string>): AsyncGenerator<FileRecord[]> {
  let pending = '';
  let line = 1;
  const one = (source: string): FileRecord | null => {
    const at = line++;
    const trimmed = source.endsWith('\r') ? source.slice(0, -1) : source;
    if (trimmed.trim() === '') return null;
    try {
      return { line: at, json: JSON.parse(trimmed) };
    } catch {
      throw fileProblem(at, 'not a JSON value');
    }
  };
  for await (const chunk of text) {
    pending += chunk;
    const batch: FileRecord[] = [];
    let from = 0;
    for (let nl = pending.indexOf('\n'); nl !== -1; nl = pending.indexOf('\n', from)) {
      const record = one(pending.slice(from, nl));
      from = nl + 1;
      if (record) batch.push(record);
    }
    pending = pending.slice(from);
    if (batch.length > 0) yield batch;
  }
  const last = one(pending);
  if (last) yield [last];
}

/** The records of an imported file, streamed from its bytes, in batches of those read together. */
export function fileRecords(body: AsyncIterable<Buffer>, format: FileFormat, encoding: TextEncoding, maxBytes: number): AsyncGenerator<FileRecord[]> {
  const text = decoded(body, encoding, maxBytes);
  return format === 'jsonl' ? jsonLines(text) : delimited(text, format === 'csv' ? ',' : '\t');
}
