import type { Api } from '../api.ts';
import { WithMe } from '../rights.tsx';
import { DeliveriesScreen } from './DeliveriesScreen.tsx';
import { FlowsScreen } from './FlowsScreen.tsx';
import { KeysScreen } from './KeysScreen.tsx';
import type { AdminPlace } from './place.ts';
import { ResourceScreen } from './ResourceScreen.tsx';
import { membersKind, variablesKind } from './SimpleResources.tsx';

/**
 * The administration (issue 32, item 7): API keys, flows and their deliveries, environment
 * variables, members. Loaded on demand (its own script file), so the tables and the grid open
 * without it.
 */
export function AdminScreen({ api, place, onSignedOut }: { api: Api; place: AdminPlace; onSignedOut: () => void }) {
  return (
    <WithMe api={api} onSignedOut={onSignedOut}>
      {(me) => {
        switch (place.screen) {
          case 'flows':
            return <FlowsScreen api={api} me={me} onSignedOut={onSignedOut} />;
          case 'deliveries':
            return <DeliveriesScreen key={place.flow ?? ''} api={api} me={me} flow={place.flow} onSignedOut={onSignedOut} />;
          case 'variables':
            return <ResourceScreen key="variables" api={api} me={me} kind={variablesKind} onSignedOut={onSignedOut} />;
          case 'members':
            return <ResourceScreen key="members" api={api} me={me} kind={membersKind} onSignedOut={onSignedOut} />;
          default:
            return <KeysScreen api={api} me={me} onSignedOut={onSignedOut} />;
        }
      }}
    </WithMe>
  );
}
