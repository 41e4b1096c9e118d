/**
 * Text both databases store as given: PostgreSQL text and jsonb cannot hold U+0000, and a lone
 * UTF-16 surrogate is not Unicode (each database would silently replace it differently).
 */
export const UNSTORABLE_TEXT = 'must be valid Unicode text without the character U+0000';

const storable = (s: string) => !s.includes('\u0000') && s.isWellFormed();

/** The path of the first string in a JSON value (keys included) that cannot be stored as given, or null. */
export function unstorableTextAt(v: unknown, path: string): string | null {
  if (typeof v === 'string') return storable(v) ? null : path;
  if (typeof v !== 'object' || v === null) return null;
  return firstUnstorable(v as Container, path);
}

type Container = unknown[] | Record<string, unknown>;

/** A container being walked: its keys (null for an array) and the next entry to look at. */
interface Frame {
  node: Container;
  keys: string[] | null;
  next: number;
}

const frame = (node: Container): Frame => ({ node, keys: Array.isArray(node) ? null : Object.keys(node), next: 0 });

/** The path of the container on top of the stack's entries: `.key` and `[i]` from the outermost in. */
function pathOf(stack: Frame[], path: string, through: number): string {
  let out = path;
  for (let i = 0; i < through; i++) {
    const { keys, next } = stack[i];
    out += keys ? `.${keys[next - 1]}` : `[${next - 1}]`;
  }
  return out;
}

/**
 * The first unstorable string under a container, depth first in key order, as a path. Walked with
 * a stack of its own, not by recursion: a body may nest values deeper than the call stack goes,
 * and must get a 400 (or pass), not overflow the stack.
 */
function firstUnstorable(root: Container, path: string): string | null {
  const stack: Frame[] = [frame(root)];
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    const { node, keys } = top;
    if (top.next >= (keys ? keys.length : (node as unknown[]).length)) {
      stack.pop();
      continue;
    }
    const at = top.next++;
    let child: unknown;
    if (keys) {
      // A bad key is reported as the object that holds it.
      if (!storable(keys[at])) return pathOf(stack, path, stack.length - 1);
      child = (node as Record<string, unknown>)[keys[at]];
    } else child = (node as unknown[])[at];
    if (typeof child === 'string') {
      if (!storable(child)) return pathOf(stack, path, stack.length);
    } else if (typeof child === 'object' && child !== null) stack.push(frame(child as Container));
  }
  return null;
}
