import { type FormEvent, useEffect, useState } from 'react';
import type { Api, Table } from '../api.ts';
import { Dialog } from '../Dialog.tsx';
import { ErrorBox } from '../ErrorBox.tsx';
import { type FieldDraft, FieldEditor, draftOf, fieldOf } from './FieldEditor.tsx';

/** Creating a table, or editing one: name, code, description and the whole list of fields (CONTRACT §4). */
export function TableDialog({ api, table, onDone, onClose }: { api: Api; table: Table | null; onDone: (t: Table) => void; onClose: () => void }) {
  const [name, setName] = useState(table?.name ?? '');
  const [code, setCode] = useState(table?.code ?? '');
  const [description, setDescription] = useState(table?.description ?? '');
  const [fields, setFields] = useState<FieldDraft[]>(() => (table ? table.fields.map(draftOf) : [draftOf()]));
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  // The tables a link field may point at (this one included, once it exists).
  const [tables, setTables] = useState<Table[]>([]);
  useEffect(() => {
    api.tables().then(setTables, setError);
  }, [api]);

  const kept = new Set(fields.map((f) => f.id));
  const removed = table?.fields.filter((f) => !kept.has(f.id)) ?? [];

  async function save(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const body = {
      name: name.trim(),
      code: code.trim() === '' ? (table ? null : undefined) : code.trim(),
      description: description.trim() === '' ? null : description,
      fields: fields.map(fieldOf),
    } as Partial<Table>;
    try {
      onDone(table ? await api.updateTable(table.id, body) : await api.createTable(body));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <Dialog title={table ? `Edit table ${table.name}` : 'New table'} onClose={onClose} className="wide-dialog">
      <form onSubmit={save}>
        <div className="row-of-inputs">
          <label>
            Table name
            <input value={name} onChange={(e) => setName(e.target.value)} required />
          </label>
          <label>
            Table code
            <input value={code} onChange={(e) => setCode(e.target.value)} spellCheck={false} />
          </label>
        </div>
        <label className="wide">
          Description
          <textarea rows={2} value={description} onChange={(e) => setDescription(e.target.value)} />
        </label>
        <h3>Fields</h3>
        {fields.map((f, i) => (
          <FieldEditor
            key={f.key}
            draft={f}
            index={i}
            tables={tables}
            onChange={(d) => setFields(fields.map((x) => (x.key === f.key ? d : x)))}
            onRemove={() => setFields(fields.filter((x) => x.key !== f.key))}
          />
        ))}
        <button type="button" onClick={() => setFields([...fields, draftOf()])}>Add field</button>
        {removed.length > 0 && (
          <p className="warning" role="status">
            Saving removes {removed.length === 1 ? 'the field' : 'the fields'} {removed.map((f) => `${f.name} (${f.code})`).join(', ')} and every value in {removed.length === 1 ? 'it' : 'them'}.
          </p>
        )}
        <ErrorBox error={error} />
        <div className="actions">
          <button type="submit" disabled={busy}>{table ? 'Save table' : 'Create table'}</button>
          <button type="button" onClick={onClose}>Cancel</button>
        </div>
      </form>
    </Dialog>
  );
}
