import { type ReactNode, useEffect, useId, useRef } from 'react';

/**
 * A modal dialog: the browser's own <dialog>, which keeps focus inside, closes on Escape and gives
 * focus back where it was.
 */
export function Dialog({ title, onClose, children, className }: { title: string; onClose: () => void; children: ReactNode; className?: string }) {
  const ref = useRef<HTMLDialogElement>(null);
  const id = useId();
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
  }, []);
  return (
    <dialog ref={ref} aria-labelledby={id} className={className} onClose={onClose} onCancel={(e) => { e.preventDefault(); onClose(); }}>
      <h2 id={id}>{title}</h2>
      {children}
    </dialog>
  );
}
