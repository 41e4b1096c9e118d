import { type ReactNode, useState } from 'react';
import { Dialog } from './Dialog.tsx';
import { ErrorBox } from './ErrorBox.tsx';

/**
 * A confirmation before a change that cannot be undone (deleting rows, a table, an item; revoking
 * a key): what is lost, then the change run on confirming, its error shown in the dialog (which
 * stays open), Cancel focused first.
 */
export function ConfirmDialog({ title, note, confirm, run, onClose, onDone }: { title: string; note: ReactNode; confirm: string; run: () => Promise<unknown>; onClose: () => void; onDone: () => void }) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  async function go() {
    setBusy(true);
    try {
      await run();
      onDone();
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }
  return (
    <Dialog title={title} onClose={onClose}>
      <p>{note}</p>
      <ErrorBox error={error} />
      <div className="actions">
        <button type="button" className="danger" onClick={go} disabled={busy}>{confirm}</button>
        <button type="button" onClick={onClose} autoFocus>Cancel</button>
      </div>
    </Dialog>
  );
}
