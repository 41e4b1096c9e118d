// Preloaded with `node --import` into a process under test: its wall clock (Date.now() and
// new Date()) reads CLOCK_AHEAD_MS milliseconds later than the machine's. Timers, setTimeout and
// performance.now() are untouched, and every Date is still a Date (the constructor is the same one,
// behind a proxy that only fills in the time of an argument-less call).
//
// test/changes/crash.test.ts restarts a SIGKILLed service with it, as if the restart came that much
// later: the webhook leases the killed process held (ROWHOUSE_WEBHOOK_TIMEOUT_MS + 30 s) have then
// run out, and the redelivery they promise is seen without the test waiting half a minute for it.
const ahead = Number(process.env.CLOCK_AHEAD_MS ?? 0);
if (Number.isFinite(ahead) && ahead !== 0) {
  const RealDate = Date;
  const now = () => RealDate.now() + ahead;
  globalThis.Date = new Proxy(RealDate, {
    construct(target, args, newTarget) {
      return Reflect.construct(target, args.length === 0 ? [now()] : args, newTarget);
    },
    // Date() called without new answers the current time as text.
    apply() {
      return new RealDate(now()).toString();
    },
    get(target, property, receiver) {
      return property === 'now' ? now : Reflect.get(target, property, receiver);
    },
  });
}
