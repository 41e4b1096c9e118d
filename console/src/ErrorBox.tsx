import { ApiError } from './api.ts';

/** An error as the service put it: its message and every detail, each with the path at fault. */
export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const message = (error as Error).message ?? String(error);
  const details = error instanceof ApiError ? error.details : [];
  return (
    <div role="alert" className="error">
      <p>{message}</p>
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
