import { ApiError } from '../api.ts';
import { ErrorBox } from '../ErrorBox.tsx';

/**
 * An error of an administration request. A 403 says plainly that the key was refused, with the
 * service's message, which names the scope (and table) the key lacks; anything else as ErrorBox.
 */
export function AdminError({ error }: { error: unknown }) {
  if (error instanceof ApiError && error.status === 403) {
    return (
      <div role="alert" className="error refused">
        <p>
          <strong>Refused (403):</strong> {error.message}
        </p>
      </div>
    );
  }
  return <ErrorBox error={error} />;
}
