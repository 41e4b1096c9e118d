import { useState } from 'react';
import { Dialog } from '../Dialog.tsx';

/**
 * A value the service answers once (an API key, a flow's signing secret): shown in this dialog
 * only, to be copied now. It lives in this dialog's state and nowhere else: not in the URL, not in
 * any storage; closing the dialog forgets it.
 */
export function SecretDialog({ title, label, value, note, onClose }: { title: string; label: string; value: string; note: string; onClose: () => void }) {
  const [copied, setCopied] = useState('');
  async function copy() {
    try {
      await navigator.clipboard.writeText(value);
      setCopied('Copied to the clipboard.');
    } catch {
      // No clipboard (an insecure origin, a refused permission): the text is selected for Ctrl+C.
      (document.getElementById('secret-value') as HTMLInputElement | null)?.select();
      setCopied('Selected: press Ctrl+C (or ⌘C) to copy it.');
    }
  }
  return (
    <Dialog title={title} onClose={onClose}>
      <p>{note} It is shown this once: copy it now.</p>
      <label className="wide">
        {label}
        <input id="secret-value" className="secret" readOnly value={value} spellCheck={false} autoComplete="off" onFocus={(e) => e.currentTarget.select()} />
      </label>
      <p role="status" className="status">{copied}</p>
      <div className="actions">
        <button type="button" onClick={copy}>Copy</button>
        <button type="button" onClick={onClose}>Done</button>
      </div>
    </Dialog>
  );
}
