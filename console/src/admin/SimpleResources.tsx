import { useState } from 'react';
import type { Item } from '../scopes.ts';
import { type FormProps, FormShell, type ResourceKind } from './ResourceScreen.tsx';

/** Environment variables and members: resources of a few text attributes (docs/api.md, Fields of each resource). */

interface TextAttr {
  code: string;
  label: string;
  required?: boolean;
  multiline?: boolean;
  type?: 'text' | 'email';
}

/** A form of text inputs, one per attribute; an optional one left empty is null. */
function textForm<T extends Item>(resource: string, noun: string, attrs: TextAttr[]) {
  return function TextForm({ api, item, onSaved, onClose }: FormProps<T>) {
    const [texts, setTexts] = useState<Record<string, string>>(() =>
      Object.fromEntries(attrs.map((a) => [a.code, String((item as unknown as Record<string, unknown> | null)?.[a.code] ?? '')])),
    );
    const body = () => Object.fromEntries(attrs.map((a) => [a.code, a.required || texts[a.code] !== '' ? texts[a.code] : null]));
    return (
      <FormShell api={api} resource={resource} noun={noun} item={item} body={body} onSaved={onSaved} onClose={onClose}>
        {attrs.map((a) => {
          const props = {
            value: texts[a.code],
            required: a.required,
            spellCheck: false,
            onChange: (e: { currentTarget: { value: string } }) => setTexts((t) => ({ ...t, [a.code]: e.currentTarget.value })),
          };
          return (
            <label key={a.code} className="wide">
              {a.label}
              {a.multiline ? <textarea rows={3} {...props} /> : <input type={a.type ?? 'text'} {...props} />}
            </label>
          );
        })}
      </FormShell>
    );
  };
}

export interface EnvironmentVariable extends Item {
  name: string;
  value: string;
  description: string | null;
}

export interface Member extends Item {
  name: string;
  email: string | null;
}

const short = (s: string) => (s.length > 80 ? `${s.slice(0, 80)}…` : s);

export const variablesKind: ResourceKind<EnvironmentVariable> = {
  resource: 'environment-variables',
  title: 'Environment variables',
  noun: 'environment variable',
  read: 'resources:read',
  write: 'resources:write',
  sorting: { name: 'asc' },
  label: (v) => v.name,
  columns: [
    { header: 'Name', cell: (v) => <code>{v.name}</code> },
    { header: 'Value', cell: (v) => <code className="value">{short(v.value)}</code> },
    { header: 'Description', cell: (v) => v.description },
  ],
  Form: textForm<EnvironmentVariable>('environment-variables', 'environment variable', [
    { code: 'name', label: 'Name', required: true },
    { code: 'value', label: 'Value', required: true, multiline: true },
    { code: 'description', label: 'Description', multiline: true },
  ]),
};

export const membersKind: ResourceKind<Member> = {
  resource: 'members',
  title: 'Members',
  noun: 'member',
  read: 'resources:read',
  write: 'resources:write',
  sorting: { name: 'asc' },
  label: (m) => m.name,
  columns: [
    { header: 'Name', cell: (m) => m.name },
    { header: 'Email', cell: (m) => m.email },
    { header: 'Since', cell: (m) => <time dateTime={m.createdAt}>{m.createdAt.slice(0, 10)}</time> },
  ],
  Form: textForm<Member>('members', 'member', [
    { code: 'name', label: 'Name', required: true },
    { code: 'email', label: 'Email', type: 'email' },
  ]),
  deleteNote: (m) => `This deletes the member ${m.name}. A member who still owns API keys (revoked or not) cannot be deleted: delete those keys first.`,
};
