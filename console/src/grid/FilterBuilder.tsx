import { type FormEvent, useState } from 'react';
import type { Field } from '../api.ts';
import { FIELD_TYPES, type FilterOp, LINK_OPS, OP_LABELS, SYSTEM_COLUMNS, SYSTEM_OPS } from '../field-types.ts';
import { type Condition, type Group, emptyGroup, toApiFilter } from '../filter-model.ts';

const SYSTEM_LABELS: Record<string, string> = { id: 'Id', createdAt: 'Created at', updatedAt: 'Updated at', createdBy: 'Created by', updatedBy: 'Updated by' };

function opsOf(key: string, fields: Field[]): readonly FilterOp[] {
  const f = fields.find((x) => x.code === key);
  return f ? FIELD_TYPES[f.type].ops : SYSTEM_OPS;
}

/**
 * The filter builder: conditions on fields and system columns, with every operator their type takes,
 * in groups matching all (`_and`) or any (`_or`), a group negated (`_not`). Applying it puts the
 * API's filter into the page URL.
 */
export function FilterBuilder({ fields, initial, onApply }: { fields: Field[]; initial: Group; onApply: (filter: Record<string, unknown> | null) => void }) {
  const [root, setRoot] = useState<Group>(initial);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(toApiFilter(root, fields));
  };
  return (
    <form className="filter" aria-label="Filter" onSubmit={submit}>
      <GroupEditor group={root} fields={fields} path="1" onChange={setRoot} />
      <div className="actions">
        <button type="submit">Apply filter</button>
        <button
          type="button"
          onClick={() => {
            setRoot(emptyGroup());
            onApply(null);
          }}
        >
          Clear filter
        </button>
      </div>
    </form>
  );
}

function GroupEditor({ group, fields, path, onChange, onRemove }: { group: Group; fields: Field[]; path: string; onChange: (g: Group) => void; onRemove?: () => void }) {
  const firstKey = fields.find((f) => FIELD_TYPES[f.type].ops.length > 0)?.code ?? 'id';
  const newCondition = (): Condition => ({ kind: 'condition', key: firstKey, op: opsOf(firstKey, fields)[0], value: '' });
  const setItem = (i: number, item: Condition | Group) => onChange({ ...group, items: group.items.map((x, j) => (j === i ? item : x)) });
  const removeItem = (i: number) => onChange({ ...group, items: group.items.filter((_x, j) => j !== i) });
  const name = path === '1' ? 'Conditions' : `Group ${path}`;
  return (
    <fieldset className="filter-group">
      <legend>{name}</legend>
      <div className="row-of-inputs">
        <label>
          Match
          <select value={group.join} onChange={(e) => onChange({ ...group, join: e.target.value as 'and' | 'or' })}>
            <option value="and">all of these</option>
            <option value="or">any of these</option>
          </select>
        </label>
        <label className="check">
          <input type="checkbox" checked={group.not} onChange={(e) => onChange({ ...group, not: e.target.checked })} />
          Not (rows that do not match)
        </label>
      </div>
      {group.items.map((item, i) =>
        item.kind === 'group' ? (
          <GroupEditor key={i} group={item} fields={fields} path={`${path}.${i + 1}`} onChange={(g) => setItem(i, g)} onRemove={() => removeItem(i)} />
        ) : (
          <ConditionEditor key={i} condition={item} fields={fields} label={`Condition ${path === '1' ? '' : `${path}.`}${i + 1}`} onChange={(c) => setItem(i, c)} onRemove={() => removeItem(i)} />
        ),
      )}
      <div className="actions">
        <button type="button" onClick={() => onChange({ ...group, items: [...group.items, newCondition()] })}>Add condition</button>
        <button type="button" onClick={() => onChange({ ...group, items: [...group.items, { ...emptyGroup(), items: [newCondition()] }] })}>Add group</button>
        {onRemove && <button type="button" onClick={onRemove}>Remove {name.toLowerCase()}</button>}
      </div>
    </fieldset>
  );
}

function ConditionEditor({ condition, fields, label, onChange, onRemove }: { condition: Condition; fields: Field[]; label: string; onChange: (c: Condition) => void; onRemove: () => void }) {
  const ops = opsOf(condition.key, fields);
  const field = fields.find((f) => f.code === condition.key);
  const choices = field?.type === 'select' ? ((field.options.choices as string[]) ?? []) : field?.type === 'boolean' ? ['true', 'false'] : null;
  return (
    <fieldset className="condition">
      <legend>{label}</legend>
      <label>
        Field
        <select
          value={condition.key}
          onChange={(e) => {
            const key = e.target.value;
            const keyOps = opsOf(key, fields);
            onChange({ ...condition, key, op: keyOps.includes(condition.op) ? condition.op : keyOps[0] });
          }}
        >
          {fields.filter((f) => FIELD_TYPES[f.type].ops.length > 0).map((f) => (
            <option key={f.code} value={f.code}>{f.name}</option>
          ))}
          {SYSTEM_COLUMNS.map((c) => (
            <option key={c} value={c}>{SYSTEM_LABELS[c]}</option>
          ))}
        </select>
      </label>
      <label>
        Operator
        <select value={condition.op} onChange={(e) => onChange({ ...condition, op: e.target.value as FilterOp })}>
          {ops.map((op) => (
            <option key={op} value={op}>{OP_LABELS[op]}</option>
          ))}
        </select>
      </label>
      {condition.op === '_isNull' ? (
        <label>
          Value
          <select value={condition.value === 'false' ? 'false' : 'true'} onChange={(e) => onChange({ ...condition, value: e.target.value })}>
            <option value="true">yes, empty</option>
            <option value="false">no, not empty</option>
          </select>
        </label>
      ) : LINK_OPS.includes(condition.op) ? (
        <label className="wide">
          Filter of the linked rows (JSON)
          <input value={condition.value} onChange={(e) => onChange({ ...condition, value: e.target.value })} spellCheck={false} placeholder='{"values": {"code": {"_eq": "…"}}}' />
        </label>
      ) : choices && condition.op === '_eq' ? (
        <label>
          Value
          <select value={condition.value} onChange={(e) => onChange({ ...condition, value: e.target.value })}>
            <option value="">(choose)</option>
            {choices.map((c) => (
              <option key={c} value={c}>{c}</option>
            ))}
          </select>
        </label>
      ) : (
        <label>
          Value
          <input value={condition.value} onChange={(e) => onChange({ ...condition, value: e.target.value })} spellCheck={false} />
        </label>
      )}
      <button type="button" onClick={onRemove} aria-label={`Remove ${label.toLowerCase()}`}>Remove</button>
    </fieldset>
  );
}
