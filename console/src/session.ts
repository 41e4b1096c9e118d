/**
 * The signed-in key, for this tab only: sessionStorage, never localStorage (kept across restarts and
 * shared by every tab), never the URL (it would land in history, logs and Referer headers).
 */
const SLOT = 'rowhouse.console.key';

export const session = {
  key: (): string | null => sessionStorage.getItem(SLOT),
  signIn: (key: string) => sessionStorage.setItem(SLOT, key),
  signOut: () => sessionStorage.removeItem(SLOT),
};
