import type { Field, FieldType, Table } from '../api.ts';
import { FIELD_TYPES } from '../field-types.ts';

/** A field being edited: the API's field, with its options' text as typed. */
export interface FieldDraft {
  key: string; // React's key: the field id, or a made-up one for a new field
  id?: string;
  code: string;
  name: string;
  type: FieldType;
  required: boolean;
  indexed: boolean;
  choices: string; // select: one per line
  maxLength: string; // text
  min: string; // number
  max: string; // number
  target: string; // link: the target table's id
  multiple: boolean; // link
  onDelete: 'unlink' | 'restrict' | 'cascade'; // link
  inverseCode: string; // link, new fields only: the inverse field made on the target table
  inverseName: string;
  inverseMultiple: boolean;
}

let made = 0;

export function draftOf(field?: Field): FieldDraft {
  const o = field?.options ?? {};
  const text = (v: unknown) => (v === undefined || v === null ? '' : String(v));
  return {
    key: field?.id ?? `new-${++made}`,
    id: field?.id,
    code: field?.code ?? '',
    name: field?.name ?? '',
    type: field?.type ?? 'text',
    required: field?.required ?? false,
    indexed: o.indexed === true,
    choices: Array.isArray(o.choices) ? (o.choices as string[]).join('\n') : '',
    maxLength: text(o.maxLength),
    min: text(o.min),
    max: text(o.max),
    target: text(o.table),
    multiple: o.multiple === true,
    onDelete: o.onDelete === 'restrict' || o.onDelete === 'cascade' ? o.onDelete : 'unlink',
    inverseCode: '',
    inverseName: '',
    inverseMultiple: true,
  };
}

const numberOrText = (t: string) => (t.trim() !== '' && Number.isFinite(Number(t)) ? Number(t) : t);

/** The field as the API takes it (PUT /api/tables/{id} `fields`, or POST). Options the type has no use for are left out. */
export function fieldOf(d: FieldDraft): Partial<Field> {
  const options: Record<string, unknown> = {};
  if (FIELD_TYPES[d.type].sortable && d.indexed) options.indexed = true;
  if (d.type === 'select') options.choices = d.choices.split('\n').map((c) => c.trim()).filter((c) => c !== '');
  if (d.type === 'text' && d.maxLength.trim() !== '') options.maxLength = numberOrText(d.maxLength);
  if (d.type === 'number' && d.min.trim() !== '') options.min = numberOrText(d.min);
  if (d.type === 'number' && d.max.trim() !== '') options.max = numberOrText(d.max);
  if (d.type === 'link') {
    options.table = d.target;
    options.multiple = d.multiple;
    options.onDelete = d.onDelete;
    // The inverse is made with the field (CONTRACT §11); an existing pair keeps its inverseField as the service returned it.
    if (!d.id && d.inverseCode.trim() !== '') {
      options.inverse = { code: d.inverseCode.trim(), ...(d.inverseName.trim() ? { name: d.inverseName.trim() } : {}), multiple: d.inverseMultiple };
    }
  }
  return {
    ...(d.id ? { id: d.id } : {}),
    code: d.code.trim(),
    ...(d.name.trim() !== '' ? { name: d.name.trim() } : {}),
    type: d.type,
    required: d.required,
    options,
  };
}

/** One field's editor: a group of labelled controls, the options its type takes among them. */
export function FieldEditor({ draft, index, tables, onChange, onRemove }: { draft: FieldDraft; index: number; tables: Table[]; onChange: (d: FieldDraft) => void; onRemove: () => void }) {
  const set = <K extends keyof FieldDraft>(k: K, v: FieldDraft[K]) => onChange({ ...draft, [k]: v });
  const info = FIELD_TYPES[draft.type];
  return (
    <fieldset className="field-editor">
      <legend>Field {index + 1}{draft.name || draft.code ? `: ${draft.name || draft.code}` : ''}</legend>
      <label>
        Name
        <input value={draft.name} onChange={(e) => set('name', e.target.value)} />
      </label>
      <label>
        Code
        <input value={draft.code} onChange={(e) => set('code', e.target.value)} spellCheck={false} required />
      </label>
      <label>
        Type
        <select value={draft.type} onChange={(e) => set('type', e.target.value as FieldType)} disabled={draft.id !== undefined} aria-describedby={draft.id ? `${draft.key}-type-note` : undefined}>
          {Object.entries(FIELD_TYPES).map(([type, t]) => (
            <option key={type} value={type}>{t.label}</option>
          ))}
        </select>
      </label>
      {draft.id && <span id={`${draft.key}-type-note`} className="note">A field's type cannot change.</span>}
      <label className="check">
        <input type="checkbox" checked={draft.required} onChange={(e) => set('required', e.target.checked)} />
        Required
      </label>
      {info.sortable && (
        <label className="check">
          <input type="checkbox" checked={draft.indexed} onChange={(e) => set('indexed', e.target.checked)} />
          Indexed
        </label>
      )}
      {draft.type === 'select' && (
        <label className="wide">
          Choices (one per line)
          <textarea rows={3} value={draft.choices} onChange={(e) => set('choices', e.target.value)} />
        </label>
      )}
      {draft.type === 'text' && (
        <label>
          Maximum length
          <input inputMode="numeric" value={draft.maxLength} onChange={(e) => set('maxLength', e.target.value)} />
        </label>
      )}
      {draft.type === 'number' && (
        <>
          <label>
            Minimum
            <input inputMode="decimal" value={draft.min} onChange={(e) => set('min', e.target.value)} />
          </label>
          <label>
            Maximum
            <input inputMode="decimal" value={draft.max} onChange={(e) => set('max', e.target.value)} />
          </label>
        </>
      )}
      {draft.type === 'link' && (
        <>
          <label>
            Linked table
            <select value={draft.target} onChange={(e) => set('target', e.target.value)} disabled={draft.id !== undefined} required>
              <option value="">(choose a table)</option>
              {tables.map((t) => (
                <option key={t.id} value={t.id}>{t.name}</option>
              ))}
            </select>
          </label>
          <label className="check">
            <input type="checkbox" checked={draft.multiple} onChange={(e) => set('multiple', e.target.checked)} />
            Multiple rows
          </label>
          <label>
            When a linked row is deleted
            <select value={draft.onDelete} onChange={(e) => set('onDelete', e.target.value as FieldDraft['onDelete'])}>
              <option value="unlink">unlink it</option>
              <option value="restrict">refuse the delete</option>
              <option value="cascade">delete this row too</option>
            </select>
          </label>
          {!draft.id && (
            <>
              <label>
                Inverse field code
                <input value={draft.inverseCode} onChange={(e) => set('inverseCode', e.target.value)} spellCheck={false} aria-describedby={`${draft.key}-inverse-note`} />
              </label>
              <label>
                Inverse field name
                <input value={draft.inverseName} onChange={(e) => set('inverseName', e.target.value)} />
              </label>
              <label className="check">
                <input type="checkbox" checked={draft.inverseMultiple} onChange={(e) => set('inverseMultiple', e.target.checked)} />
                Inverse links multiple rows
              </label>
              <span id={`${draft.key}-inverse-note`} className="note">Optional: a field on the linked table showing the same links from its side.</span>
            </>
          )}
        </>
      )}
      <button type="button" className="danger" onClick={onRemove}>Remove field {index + 1}</button>
    </fieldset>
  );
}
