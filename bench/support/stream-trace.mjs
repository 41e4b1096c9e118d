// Loaded into the service by bench/stream.ts with BENCH_STREAM_TRACE (node --import): listens to the
// change streams' rounds (src/stream/round-trace.ts) and, when the process exits, writes them to
// the file BENCH_STREAM_TRACE_FILE names: each round's reads and commits, and each client port's
// writes (the last sequence a write carried, and when it returned). Plain JavaScript: the service
// runs from its build.
import diagnostics_channel from 'node:diagnostics_channel';
import fs from 'node:fs';

const file = process.env.BENCH_STREAM_TRACE_FILE;
const rounds = [];
/** By client port: [last sequence, write time] pairs, flat. */
const writes = new Map();
diagnostics_channel.subscribe('rowhouse:change-streams:round', (trace) => {
  rounds.push({ after: trace.after, last: trace.last, commits: trace.commits, readStart: trace.readStart, readEnd: trace.readEnd, textEnd: trace.textEnd, passEnd: trace.passEnd, passCpuMs: trace.passCpuMs, written: trace.ports.length });
  for (let k = 0; k < trace.ports.length; k++) {
    let w = writes.get(trace.ports[k]);
    if (!w) writes.set(trace.ports[k], (w = []));
    w.push(trace.last, trace.writes[k]);
  }
});
process.on('exit', () => {
  if (file) fs.writeFileSync(file, JSON.stringify({ rounds, writes: Object.fromEntries(writes) }));
});
