import { type FormEvent, useEffect, useState } from 'react';
import { type Api, ApiError, type Change, type Field, type Row, type Table } from '../api.ts';
import type { ApiKey } from '../scopes.ts';
import { useRights } from '../rights.tsx';
import { uploadTarget } from '../upload-target.ts';
import { ROW_NEEDS } from './row-needs.ts';
import { LinkChips } from './Cell.tsx';
import { percent, sendWithProgress } from '../transfer.ts';
import { detailTarget } from '../error-details.ts';
import { Dialog } from '../Dialog.tsx';
import { ErrorBox } from '../ErrorBox.tsx';
import { type FileValue, editableAsText, textValue, valueText } from '../field-types.ts';

/**
 * One row as a form, every field a labelled control (a new row when `row` is null), with its links,
 * its history and its files' uploads. A 400's details are shown beside the fields they name. For a
 * key that may not write the row (rows:update, or rows:create for a new one), the form is read only
 * and says why.
 */
export function RowPanel({ api, me, table, row, onSaved, onClose, onOpenLink }: { api: Api; me: ApiKey; table: Table; row: Row | null; onSaved: (r: Row, created: boolean) => void; onClose: () => void; onOpenLink: (f: Field, id: string) => void }) {
  const rights = useRights(me, table, { save: row ? ROW_NEEDS.update : ROW_NEEDS.create });
  const refused = rights.refused('save');
  const [id, setId] = useState('');
  const [texts, setTexts] = useState<Record<string, string>>(() => Object.fromEntries(table.fields.map((f) => [f.code, row ? valueText(f, row.values[f.code]) : ''])));
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  async function save(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setFieldErrors({});
    const values: Record<string, unknown> = {};
    for (const f of table.fields) {
      if (!editableAsText(f)) continue;
      const text = texts[f.code];
      if (row ? text === valueText(f, row.values[f.code]) : text === '') continue;
      values[f.code] = textValue(f, text);
    }
    try {
      const saved = row ? await api.updateRow(table.id, row.id, values) : await api.createRow(table.id, { ...(id.trim() ? { id: id.trim() } : {}), values });
      onSaved(saved, row === null);
    } catch (err) {
      if (err instanceof ApiError) {
        const byField: Record<string, string> = {};
        for (const d of err.details) {
          const t = detailTarget(d.path);
          if (t) byField[t.field] = d.message;
        }
        setFieldErrors(byField);
      }
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <Dialog title={row ? `Row ${row.id}` : `New row in ${table.name}`} onClose={onClose} className="panel">
      {rights.note}
      <form onSubmit={save}>
        <fieldset className="plain" disabled={refused !== null} aria-describedby={refused ? rights.reasonId('save') : undefined}>
          <legend className="visually-hidden">Values</legend>
          {row ? (
            <dl className="system">
              <dt>Id</dt><dd>{row.id}</dd>
              <dt>Created</dt><dd>{row.createdAt}</dd>
              <dt>Updated</dt><dd>{row.updatedAt}</dd>
            </dl>
          ) : (
            <label>
              Id (optional)
              <input value={id} onChange={(e) => setId(e.target.value)} spellCheck={false} />
            </label>
          )}
          {table.fields.map((f) => {
            const errId = `row-err-${f.code}`;
            const invalid = fieldErrors[f.code] !== undefined;
            const common = {
              'aria-invalid': invalid || undefined,
              'aria-describedby': invalid ? errId : undefined,
              value: texts[f.code],
              onChange: (e: { target: { value: string } }) => setTexts({ ...texts, [f.code]: e.target.value }),
            };
            const label = `${f.name}${f.required ? ' (required)' : ''}`;
            let control;
            if (f.type === 'file') {
              const file = row?.values[f.code] as FileValue | null | undefined;
              control = (
                <div className="file-field">
                  <span className="label-text">{label}</span>
                  {file ? (file.url ? <a href={file.url} download={file.name}>{file.name}</a> : <span>{file.name}</span>) : <span className="empty-text">no file</span>}
                  {row ? <FileUpload api={api} table={table} row={row} field={f} onSaved={(r) => onSaved(r, false)} /> : <span className="note">Add the row first, then upload its file.</span>}
                </div>
              );
            } else if (f.type === 'select' || f.type === 'boolean') {
              const choices = f.type === 'boolean' ? ['true', 'false'] : ((f.options.choices as string[]) ?? []);
              control = (
                <label>
                  {label}
                  <select {...common}>
                    <option value="">(empty)</option>
                    {choices.map((c) => (
                      <option key={c} value={c}>{c}</option>
                    ))}
                  </select>
                </label>
              );
            } else if (f.type === 'record' || f.type === 'list' || (f.type === 'text' && (texts[f.code]?.length ?? 0) > 60)) {
              control = (
                <label className="wide">
                  {label}
                  <textarea rows={3} spellCheck={false} {...common} />
                </label>
              );
            } else {
              control = (
                <label>
                  {label}
                  <input spellCheck={false} {...common} />
                </label>
              );
            }
            return (
              <div key={f.code} className="form-field">
                {control}
                {invalid && <span id={errId} className="field-error">{fieldErrors[f.code]}</span>}
              </div>
            );
          })}
        </fieldset>
        <ErrorBox error={error} />
        <div className="actions">
          <button type="submit" disabled={busy} {...rights.off('save')}>{row ? 'Save row' : 'Add row'}</button>
          <button type="button" onClick={onClose}>Close</button>
        </div>
      </form>
      {row && table.fields.some((f) => f.type === 'link') && (
        <section aria-labelledby="row-links">
          <h3 id="row-links">Links</h3>
          <dl className="links">
            {table.fields.filter((f) => f.type === 'link').map((f) => (
              <div key={f.code}>
                <dt>{f.name}</dt>
                <dd><LinkChips field={f} value={row.values[f.code]} onOpen={onOpenLink} /></dd>
              </div>
            ))}
          </dl>
        </section>
      )}
      {row && <RowHistory api={api} table={table} row={row} />}
    </Dialog>
  );
}

/** The row's changes, newest first (GET …/rows/{rowId}/history, CONTRACT §14): what, when, which fields, by whom. */
function RowHistory({ api, table, row }: { api: Api; table: Table; row: Row }) {
  const [changes, setChanges] = useState<Change[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api.history(table.id, row.id).then(
      (page) => setChanges(page.data),
      (err) => (err instanceof ApiError && err.status === 404 ? setChanges([]) : setError(err)),
    );
  }, [api, table.id, row.id, row.updatedAt]);
  const names = new Map(table.fields.map((f) => [f.code, f.name]));
  return (
    <section aria-labelledby="row-history">
      <h3 id="row-history">History</h3>
      <ErrorBox error={error} />
      {changes === null && !error && <p role="status">Loading history…</p>}
      {changes?.length === 0 && <p>No changes kept for this row.</p>}
      {changes && changes.length > 0 && (
        <ol className="history" aria-label={`History of row ${row.id}`}>
          {changes.map((c) => (
            <li key={c.sequence}>
              <time dateTime={c.occurredAt}>{c.occurredAt.replace('T', ' ').replace(/\.\d+Z$/, 'Z')}</time>{' '}
              <strong>{c.type === 'create' ? 'created' : c.type === 'delete' ? 'deleted' : 'updated'}</strong>
              {c.changedFields && c.changedFields.length > 0 && <> {c.changedFields.map((code) => names.get(code) ?? code).join(', ')}</>}
              {' '}<span className="note">#{c.sequence}</span>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

/** The origins uploads may go to, as the service wrote them into the page (console-routes.ts), besides the page's own. */
function pageOrigins() {
  const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content || null;
  return { page: location.origin, service: meta('rowhouse-service-origin'), bucket: meta('rowhouse-bucket-origin') };
}

/**
 * A file field's upload, in the three steps of CONTRACT §8: an upload URL for this row, the bytes
 * PUT to it (with a progress bar; the URL is signed, so no key goes with them), then the row
 * written with the file's id and name.
 */
function FileUpload({ api, table, row, field, onSaved }: { api: Api; table: Table; row: Row; field: Field; onSaved: (r: Row) => void }) {
  const [progress, setProgress] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  async function upload(file: File | null) {
    if (!file) return;
    setError(null);
    setProgress(0);
    try {
      const [issued] = (await api.fileUploadUrl(table.id, row.id)).data;
      const target = uploadTarget(issued.url, pageOrigins());
      await sendWithProgress('PUT', target, file, { 'content-type': file.type || 'application/octet-stream' }, setProgress);
      onSaved(await api.updateRow(table.id, row.id, { [field.code]: { id: issued.id, name: file.name } }));
    } catch (err) {
      setError(err);
    }
  }
  return (
    <>
      <label>
        Upload a file to {field.name}
        <input type="file" onChange={(e) => void upload(e.target.files?.[0] ?? null)} />
      </label>
      {progress !== null && (
        <label>
          Upload progress of {field.name}
          <progress max={100} value={percent(progress)}>{percent(progress)}%</progress>
        </label>
      )}
      <ErrorBox error={error} />
    </>
  );
}
