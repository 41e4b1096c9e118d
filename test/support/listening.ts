import type { AddressInfo } from 'node:net';
import { type AppOptions, type DbKind, type TestApp, startApp } from './harness.ts';

/** Something a test opened against the server (a stream, a socket) that close() cuts first. */
export interface Closable {
  close(): void;
}

/** The app of startApp (inject works as ever), listening on a free port of 127.0.0.1 too, for real HTTP clients. */
export interface ListeningApp extends TestApp {
  /** http://127.0.0.1:<port> */
  base: string;
  /** Keeps `c` to cut it in close(), before the app closes; answers it. */
  track<T extends Closable>(c: T): T;
}

/** startApp, then listen on a free port: what each test that talks to the service over a socket sets up. */
export async function startListening(kind: DbKind, env: Record<string, string> = {}, options: AppOptions = {}): Promise<ListeningApp> {
  const t = await startApp(kind, env, options);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const opened: Closable[] = [];
  const closeApp = t.close;
  return Object.assign(t, {
    base: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`,
    track<T extends Closable>(c: T): T {
      opened.push(c);
      return c;
    },
    async close() {
      for (const c of opened.splice(0)) c.close();
      await closeApp();
    },
  });
}
