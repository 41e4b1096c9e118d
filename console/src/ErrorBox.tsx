import { ApiError } from './api.ts';

/**
 * An error as the service put it: its message and every detail, each with the path at fault. A 403
 * says plainly that the key was refused, with the service's message, which names the scope (and
 * table) the key lacks.
 */
export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const message = (error as Error).message ?? String(error);
  const details = error instanceof ApiError ? error.details : [];
  const refused = error instanceof ApiError && error.status === 403;
  return (
    <div role="alert" className={refused ? 'error refused' : 'error'}>
      <p>
        {refused ? (
          <>
            <strong>Refused (403):</strong> {message}
          </>
        ) : (
          message
        )}
      </p>
      {details.length > 0 && (
        <ul>
          {details.map((d, i) => (
            <li key={i}>
              <code>{d.path}</code>: {d.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
