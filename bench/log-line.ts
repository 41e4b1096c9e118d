// What one access-log line costs, taken apart (issue 27; a development aid, not a benchmark with a
// budget): CPU µs per line of this process (user + system, so the write(2) is in it) and of the
// process reading the pipe (`cat` into /dev/null, a collector that keeps up), for
//   child    Fastify's per-request child logger alone (pino child with the reqId binding)
//   format   the line formatted by pino into a destination that drops it (child included)
//   pipe     the line written to a pipe, one write(2) each (pino's default destination)
//   buffered the line written through src/http/log-destination.ts BufferedLog (this build's)
//   root     as buffered, with the root logger and reqId a field of the line (no child logger)
//   node --import tsx bench/log-line.ts [lines=200000]
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { BufferedLog } from '../src/http/log-destination.ts';
import { cpuMs } from './support/processes.ts';

const LINES = Number(process.argv[2] ?? 200_000);
const line = { method: 'GET', route: '/api/tables/:table/rows/:rowId', status: 200, ms: 1.3, keyId: randomUUID() };
const ids = Array.from({ length: 1024 }, () => randomUUID());

/** A pipe to `cat > /dev/null`: its write end's fd and the reader's pid. */
function pipeToCat(): { fd: number; pid: number; stop(): Promise<void> } {
  const cat = spawn('cat', [], { stdio: ['pipe', 'ignore', 'inherit'] });
  const fd = (cat.stdin as unknown as { _handle: { fd: number } })._handle.fd;
  return { fd, pid: cat.pid as number, stop: () => new Promise((r) => { cat.once('close', r); cat.stdin.end(); }) };
}

const sink = { write(_s: string) {} };
const cases: Record<string, () => { run: (i: number) => void; reader?: number; done?: () => void | Promise<void> }> = {
  child: () => {
    const root = pino({ level: 'info' }, sink);
    let keep: unknown;
    return { run: (i) => (keep = root.child({ reqId: ids[i & 1023] }, {})) , done: () => void keep };
  },
  format: () => {
    const root = pino({ level: 'info' }, sink);
    return { run: (i) => root.child({ reqId: ids[i & 1023] }, {}).info(line, 'request') };
  },
  pipe: () => {
    const p = pipeToCat();
    const root = pino({ level: 'info' }, pino.destination({ dest: p.fd, sync: true, minLength: 0 }));
    return { run: (i) => root.child({ reqId: ids[i & 1023] }, {}).info(line, 'request'), reader: p.pid, done: p.stop };
  },
  buffered: () => {
    const p = pipeToCat();
    const out = new BufferedLog(p.fd);
    const root = pino({ level: 'info' }, out);
    return { run: (i) => root.child({ reqId: ids[i & 1023] }, {}).info(line, 'request'), reader: p.pid, done: () => (out.flush(), p.stop()) };
  },
  root: () => {
    const p = pipeToCat();
    const out = new BufferedLog(p.fd);
    const root = pino({ level: 'info' }, out);
    return { run: (i) => root.info({ reqId: ids[i & 1023], ...line }, 'request'), reader: p.pid, done: () => (out.flush(), p.stop()) };
  },
};

const us = (cpu: NodeJS.CpuUsage) => cpu.user + cpu.system;
console.log(`${LINES} lines each; CPU µs per line, this process : the reader`);
for (const [name, make] of Object.entries(cases)) {
  const c = make();
  for (let i = 0; i < 20_000; i++) c.run(i); // warm-up
  await new Promise((r) => setTimeout(r, 200));
  const reader0 = c.reader ? cpuMs(c.reader).total : 0;
  const start = process.cpuUsage();
  for (let i = 0; i < LINES; i++) {
    c.run(i);
    // An event-loop turn now and then, as a server has between requests (timers run).
    if (i % 64 === 63) await new Promise((r) => setImmediate(r));
  }
  const self = us(process.cpuUsage(start)) / LINES;
  await new Promise((r) => setTimeout(r, 300));
  const reader = c.reader ? ((cpuMs(c.reader).total - reader0) * 1000) / LINES : 0;
  await c.done?.();
  console.log(`  ${name.padEnd(9)} ${self.toFixed(2).padStart(7)} : ${reader.toFixed(2)}`);
}
