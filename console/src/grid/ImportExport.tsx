import { type FormEvent, useState } from 'react';
import { type Api, ApiError, type Table } from '../api.ts';
import { Dialog } from '../Dialog.tsx';
import { ErrorBox } from '../ErrorBox.tsx';
import type { ApiKey } from '../scopes.ts';
import { useRights } from '../rights.tsx';
import { sniffEncoding } from '../encoding-sniff.ts';
import { percent, sendWithProgress } from '../transfer.ts';

interface Problem {
  line: number;
  column: string;
  message: string;
}
interface ImportAnswer {
  created: number;
  updated: number;
  failed: number;
  problems: Problem[];
  warnings: string[];
}

/** A 400's details (`path` "line 12, column amount") as problems by line and column. */
function problemsOf(err: ApiError): Problem[] {
  return err.details.map((d) => {
    const m = /^line (\d+)(?:, column (.*))?$/.exec(d.path);
    return m ? { line: Number(m[1]), column: m[2] ?? '', message: d.message } : { line: 0, column: d.path, message: d.message };
  });
}

/**
 * Import (POST …/rows-import): a file with its format and encoding (a BOM, or bytes that are not
 * UTF-8, detected when it is chosen), mode and atomicity; a progress bar while it uploads; the
 * problems listed by line and column.
 */
export function ImportDialog({ api, me, table, onClose, onDone }: { api: Api; me: ApiKey; table: Table; onClose: () => void; onDone: () => void }) {
  // An upsert also updates rows (CONTRACT §12); create and import themselves the toolbar's Import button checked.
  const rights = useRights(me, table, { upsert: { scope: 'rows:update', without: 'an import cannot update rows by id' } });
  const [file, setFile] = useState<File | null>(null);
  const [format, setFormat] = useState('csv');
  const [encoding, setEncoding] = useState('utf8');
  const [note, setNote] = useState('');
  const [mode, setMode] = useState('create');
  const [atomic, setAtomic] = useState(true);
  const [progress, setProgress] = useState<number | null>(null);
  const [answer, setAnswer] = useState<ImportAnswer | null>(null);
  const [problems, setProblems] = useState<Problem[]>([]);
  const [error, setError] = useState<unknown>(null);

  async function choose(f: File | null) {
    setFile(f);
    setAnswer(null);
    setProblems([]);
    if (!f) return;
    const ext = f.name.toLowerCase().split('.').pop();
    if (ext === 'tsv' || ext === 'jsonl') setFormat(ext);
    else if (ext === 'csv') setFormat('csv');
    const sniffed = sniffEncoding(new Uint8Array(await f.slice(0, 64 * 1024).arrayBuffer()));
    setEncoding(sniffed.encoding);
    setNote(sniffed.note);
  }

  async function run(e: FormEvent) {
    e.preventDefault();
    if (!file) return;
    setError(null);
    setAnswer(null);
    setProblems([]);
    setProgress(0);
    const q = new URLSearchParams({ format, encoding, mode, atomic: String(atomic) });
    try {
      const a = (await sendWithProgress('POST', `/api/tables/${encodeURIComponent(table.id)}/rows-import?${q}`, file, { ...api.headers, 'content-type': file.type || 'application/octet-stream' }, setProgress)) as ImportAnswer;
      setAnswer(a);
      setProblems(a.problems);
      onDone();
    } catch (err) {
      if (err instanceof ApiError && err.status === 400 && err.details.length > 0) setProblems(problemsOf(err));
      setError(err);
    }
  }

  return (
    <Dialog title={`Import rows into ${table.name}`} onClose={onClose} className="wide-dialog">
      <form onSubmit={run}>
        <label className="wide">
          File to import
          <input type="file" accept=".csv,.tsv,.jsonl,text/csv,text/tab-separated-values" onChange={(e) => void choose(e.target.files?.[0] ?? null)} required />
        </label>
        <div className="row-of-inputs">
          <FormatSelect value={format} onChange={setFormat} />
          <EncodingSelect value={encoding} onChange={setEncoding} describedBy="import-encoding-note" />
          <label>
            Mode
            <select value={mode} onChange={(e) => setMode(e.target.value)} aria-describedby={rights.refused('upsert') ? rights.reasonId('upsert') : undefined}>
              <option value="create">create rows</option>
              <option value="upsert" disabled={rights.refused('upsert') !== null}>create or update by id</option>
            </select>
          </label>
          <label className="check">
            <input type="checkbox" checked={atomic} onChange={(e) => setAtomic(e.target.checked)} />
            All or nothing
          </label>
        </div>
        <p id="import-encoding-note" className="note" role="status">{note}</p>
        {rights.note}
        {progress !== null && (
          <label className="wide">
            Upload progress
            <progress max={100} value={percent(progress)}>{percent(progress)}%</progress>
          </label>
        )}
        {answer && (
          <p role="status">
            Imported: {answer.created} created, {answer.updated} updated, {answer.failed} failed.{answer.warnings.length > 0 ? ` ${answer.warnings.join(' ')}` : ''}
          </p>
        )}
        <ErrorBox error={error} />
        {problems.length > 0 && (
          <table className="problems" aria-label="Import problems">
            <thead>
              <tr><th scope="col">Line</th><th scope="col">Column</th><th scope="col">Problem</th></tr>
            </thead>
            <tbody>
              {problems.map((p, i) => (
                <tr key={i}><td>{p.line}</td><td>{p.column}</td><td>{p.message}</td></tr>
              ))}
            </tbody>
          </table>
        )}
        <div className="actions">
          <button type="submit" disabled={!file}>Import</button>
          <button type="button" onClick={onClose}>Close</button>
        </div>
      </form>
    </Dialog>
  );
}

/** Export (GET …/rows-export) of the view (its filter and sort): format, encoding and newline; saved as a file. */
export function ExportDialog({ api, table, filter, sort, onClose }: { api: Api; table: Table; filter: string | null; sort: string | null; onClose: () => void }) {
  const [format, setFormat] = useState('csv');
  const [encoding, setEncoding] = useState('utf8');
  const [newline, setNewline] = useState('crlf');
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState('');
  async function run(e: FormEvent) {
    e.preventDefault();
    setError(null);
    const q = new URLSearchParams({ format, encoding, newline });
    if (filter) q.set('filter', filter);
    if (sort) q.set('sort', sort);
    try {
      await api.download(`/api/tables/${encodeURIComponent(table.id)}/rows-export?${q}`, `${table.code ?? table.id}.${format}`);
      setDone('Exported.');
    } catch (err) {
      setError(err);
    }
  }
  return (
    <Dialog title={`Export rows of ${table.name}`} onClose={onClose}>
      <form onSubmit={run}>
        <FormatSelect value={format} onChange={setFormat} />
        <EncodingSelect value={encoding} onChange={setEncoding} />
        <label>
          Newline
          <select value={newline} onChange={(e) => setNewline(e.target.value)}>
            <option value="crlf">CRLF (Windows)</option>
            <option value="lf">LF</option>
          </select>
        </label>
        <p role="status">{done}</p>
        <ErrorBox error={error} />
        <div className="actions">
          <button type="submit">Export</button>
          <button type="button" onClick={onClose}>Close</button>
        </div>
      </form>
    </Dialog>
  );
}

/** The file formats import and export both speak (CONTRACT: csv, tsv, jsonl). */
function FormatSelect({ value, onChange }: { value: string; onChange: (value: string) => void }) {
  return (
    <label>
      Format
      <select value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="csv">CSV</option>
        <option value="tsv">TSV</option>
        <option value="jsonl">JSON Lines</option>
      </select>
    </label>
  );
}

/** The text encodings import and export both speak; `describedBy` names a note explaining the choice. */
function EncodingSelect({ value, onChange, describedBy }: { value: string; onChange: (value: string) => void; describedBy?: string }) {
  return (
    <label>
      Encoding
      <select value={value} onChange={(e) => onChange(e.target.value)} aria-describedby={describedBy}>
        <option value="utf8">UTF-8</option>
        <option value="utf8Bom">UTF-8 with BOM</option>
        <option value="shiftJis">Shift_JIS (Windows-31J)</option>
      </select>
    </label>
  );
}
