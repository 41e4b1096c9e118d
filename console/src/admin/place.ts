/**
 * Where in the administration the console is: `/console?admin=flows` (and `&flow=<id>` for one
 * flow's deliveries), so a screen can be bookmarked and shared like a table's view. Never a key.
 * Moving here pushes the URL and tells the rest of the console as the browser's Back does (a
 * popstate, which location.ts's usePlace follows), so the one router stays location.ts's.
 */
export const ADMIN_SCREENS = ['keys', 'flows', 'deliveries', 'variables', 'members'] as const;
export type AdminName = (typeof ADMIN_SCREENS)[number];

export interface AdminPlace {
  screen: AdminName | null;
  flow: string | null;
}

export function adminPlace(): AdminPlace {
  const q = new URLSearchParams(location.search);
  const screen = q.get('admin');
  return { screen: (ADMIN_SCREENS as readonly string[]).includes(screen ?? '') ? (screen as AdminName) : null, flow: q.get('flow') };
}

/** The page's address of a screen (relative, as the console's other links: the page is /console). */
export function adminHref(screen: AdminName, flow?: string | null): string {
  const q = new URLSearchParams({ admin: screen });
  if (flow) q.set('flow', flow);
  return `console?${q}`;
}

export function goAdmin(screen: AdminName, flow?: string | null): void {
  history.pushState(null, '', adminHref(screen, flow));
  dispatchEvent(new PopStateEvent('popstate'));
}

/** A link's click: the same screen without a page load (a modified click opens a tab, as any link). */
export function onAdminClick(screen: AdminName, flow?: string | null) {
  return (e: { preventDefault(): void; ctrlKey: boolean; metaKey: boolean; shiftKey: boolean }) => {
    if (e.ctrlKey || e.metaKey || e.shiftKey) return;
    e.preventDefault();
    goAdmin(screen, flow);
  };
}
