import { type FormEvent, useState } from 'react';
import { Api, ApiError } from './api.ts';

/** Signing in: an API key, checked by one read, then kept for this tab only (session.ts). */
export function SignIn({ onSignedIn }: { onSignedIn: (key: string) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    const k = key.trim();
    if (k === '') return setError('Enter an API key.');
    setBusy(true);
    setError(null);
    try {
      await new Api(k).check();
      onSignedIn(k);
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? 'The service refused this key (unknown, revoked or expired).' : (err as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <main className="sign-in">
      <h1>Rowhouse console</h1>
      <form onSubmit={submit} aria-describedby="sign-in-help">
        <p id="sign-in-help">Sign in with an API key. It is kept for this browser tab only, and sent with each request to the API.</p>
        <label>
          API key
          <input type="password" autoComplete="off" spellCheck={false} value={key} onChange={(e) => setKey(e.target.value)} aria-invalid={error ? true : undefined} />
        </label>
        <button type="submit" disabled={busy}>Sign in</button>
        {error && <p role="alert" className="error">{error}</p>}
      </form>
    </main>
  );
}
