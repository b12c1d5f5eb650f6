// Preload (node --import) that sets this process's wall clock CLOCK_SKEW_MS away from the
// machine's: Date.now(), new Date() and Date() read the skewed time; a Date built from a value
// is untouched, and so is performance.now(). The machine's own time stays readable under
// Symbol.for("clock-skew.trueNow") on globalThis, for a log that processes with different
// skews share (the clock-skew test's holder log).
const skew = Number(process.env.CLOCK_SKEW_MS ?? "0");
if (!Number.isFinite(skew)) {
  throw new Error(`CLOCK_SKEW_MS must be a number, got ${process.env.CLOCK_SKEW_MS}`);
}
const RealDate = Date;
const realNow = RealDate.now.bind(RealDate);
globalThis[Symbol.for("clock-skew.trueNow")] = realNow;
if (skew !== 0) {
  const now = () => realNow() + skew;
  globalThis.Date = new Proxy(RealDate, {
    construct(target, args, newTarget) {
      return Reflect.construct(target, args.length === 0 ? [now()] : args, newTarget);
    },
    apply() {
      return new RealDate(now()).toString();
    },
    get(target, property, receiver) {
      return property === "now" ? now : Reflect.get(target, property, receiver);
    },
  });
}
