import type { Field, FieldType } from '../api.ts';
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
export function FieldEditor({ draft, index, onChange, onRemove }: { draft: FieldDraft; index: number; onChange: (d: FieldDraft) => void; onRemove: () => void }) {
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
      <button type="button" className="danger" onClick={onRemove}>Remove field {index + 1}</button>
    </fieldset>
  );
}
