import { TEST_KEY, type ScratchDatabase } from './harness.ts';
import { type Server, serve } from './served.ts';

/**
 * The crash tests' loop (test/reliability/crash.test.ts, test/access/idempotency-crash.test.ts):
 * `rowhouse serve` over one database takes writes, is killed with SIGKILL at a random moment
 * among them, and is started again over the same database, again and again; after each restart
 * the test checks what the kill may not have broken.
 */

/** `rowhouse serve` of a buildProject() over `db` (its directory the data directory), with the test key. */
export function serveOver(project: string, db: ScratchDatabase): Promise<Server> {
  return serve(project, { cwd: db.dir, env: { DATABASE_URL: db.url, ROWHOUSE_DATA_DIR: db.dir, ROWHOUSE_API_KEY: TEST_KEY } });
}

export interface KillLoop {
  /** The process of the first cycle, started (and given its tables) by the test. */
  first: Server;
  /** Starts the service again over the same database. */
  start(): Promise<Server>;
  cycles: number;
  /** How long the writes of a cycle run before the kill, in ms (drawn again each cycle). */
  killAfterMs(): number;
  /**
   * The writes of cycle `cycle` against `server`: they go on until `killed()` holds or the kill
   * cuts them off (a request without a whole answer); the promise settles once all have stopped.
   */
  write(server: Server, cycle: number, killed: () => boolean): Promise<unknown>;
  /** The killed process, gone (its writes stopped): how it ended. */
  gone?(server: Server, exit: Awaited<Server['closed']>, cycle: number): void;
  /** The new process, listening: what the restart after cycle `cycle` must show. */
  restarted(server: Server, cycle: number): Promise<void>;
}

/** Runs the cycles: writes, SIGKILL, the writes' end, the process's end, a new start, the checks. Answers the last process, running. */
export async function killLoop(loop: KillLoop): Promise<Server> {
  let server = loop.first;
  for (let cycle = 1; cycle <= loop.cycles; cycle++) {
    let killed = false;
    const writes = loop.write(server, cycle, () => killed);
    await new Promise((resolve) => setTimeout(resolve, loop.killAfterMs()));
    killed = true;
    server.child.kill('SIGKILL');
    await writes;
    const exit = await server.closed;
    loop.gone?.(server, exit, cycle);
    server = await loop.start();
    await loop.restarted(server, cycle);
  }
  return server;
}
