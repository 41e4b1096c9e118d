import type { Api } from '../api.ts';
import { useMe } from '../access.ts';
import { can, lacks } from '../scopes.ts';
import { type AdminName, adminHref, onAdminClick } from './place.ts';
import './admin.css';

/** The screens of the administration and the scope each needs to be seen (API keys: none, it shows your own key). */
const SCREENS: readonly (readonly [AdminName, string, string | null])[] = [
  ['keys', 'API keys', null],
  ['flows', 'Flows', 'flows:read'],
  ['deliveries', 'Deliveries', 'flows:read'],
  ['variables', 'Environment', 'resources:read'],
  ['members', 'Members', 'resources:read'],
];

/** The navigation's links to the administration; a screen the key may not read is shown turned off, saying why. */
export function AdminNav({ api, current, onSignedOut }: { api: Api; current: AdminName | null; onSignedOut: () => void }) {
  const { me } = useMe(api, onSignedOut);
  return (
    <>
      {SCREENS.map(([screen, label, scope]) =>
        scope && me && !can(me, scope) ? (
          <a key={screen} role="link" aria-disabled="true" className="off" title={lacks(scope)}>
            {label}
            <span className="visually-hidden"> ({lacks(scope)})</span>
          </a>
        ) : (
          <a key={screen} href={adminHref(screen)} onClick={onAdminClick(screen)} aria-current={current === screen ? 'page' : undefined}>
            {label}
          </a>
        ),
      )}
    </>
  );
}
