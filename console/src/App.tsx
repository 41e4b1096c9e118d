import { Suspense, lazy, useMemo, useState } from 'react';
import { AdminNav } from './admin/AdminNav.tsx';
import { adminPlace } from './admin/place.ts';
import { Api } from './api.ts';
import { GridScreen } from './grid/GridScreen.tsx';
import { go, usePlace } from './location.ts';
import { session } from './session.ts';
import { SignIn } from './SignIn.tsx';
import { TablesScreen } from './tables/TablesScreen.tsx';

// The administration's screens: a script of their own, fetched when one is opened.
const AdminScreen = lazy(() => import('./admin/AdminScreen.tsx').then((m) => ({ default: m.AdminScreen })));

/**
 * The console: signed out, the sign-in form; signed in, the tables or one table's grid, as the URL
 * says. Seams for later sessions: live updates (the change stream), links, scoped keys and the
 * other administration screens, aggregates, row history, file uploads, import and export each
 * become a screen or a panel here.
 */
export function App() {
  const [key, setKey] = useState(session.key);
  const place = usePlace();
  const admin = adminPlace(); // read at each render, which a move (usePlace) causes
  const api = useMemo(() => (key ? new Api(key) : null), [key]);

  if (!api) {
    return (
      <SignIn
        onSignedIn={(k) => {
          session.signIn(k);
          setKey(k);
        }}
      />
    );
  }
  const signOut = () => {
    session.signOut();
    setKey(null);
  };
  return (
    <>
      <header className="bar">
        <a className="brand" href="console" onClick={(e) => { e.preventDefault(); go({ table: null, filter: null, sort: null }); }}>
          Rowhouse console
        </a>
        <nav aria-label="Console">
          <a href="console" onClick={(e) => { e.preventDefault(); go({ table: null, filter: null, sort: null }); }} aria-current={place.table || admin.screen ? undefined : 'page'}>
            Tables
          </a>
          <AdminNav api={api} current={admin.screen} onSignedOut={signOut} />
        </nav>
        <button type="button" onClick={signOut}>Sign out</button>
      </header>
      <main>
        {admin.screen ? (
          <Suspense fallback={<p role="status">Loading…</p>}>
            <AdminScreen api={api} place={admin} onSignedOut={signOut} />
          </Suspense>
        ) : place.table ? <GridScreen key={place.table} api={api} place={place} onSignedOut={signOut} /> : <TablesScreen api={api} onSignedOut={signOut} />}
      </main>
    </>
  );
}
