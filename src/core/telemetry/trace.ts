// Telemetry as a wrapper: a cycle or a delivery runs under an Observation when something
// records it, and as it is otherwise. The engine and the pipeline run no telemetry code of
// their own; they are handed a traced port, body and logger instead.
import type { Cycle, CycleMode } from "../engine/cycle.js";
import type { CycleOutcome } from "../engine/outcome.js";
import { backendName } from "../options.js";
import type { Logger } from "../types.js";
import { loadTelemetryApi, recordsNothing, telemetryApiSettled } from "./api.js";
import { type DeliveryTrace, type Ending, Observation } from "./observation.js";
import type { TelemetrySettings } from "./settings.js";

/** The verbs as telemetry names them. */
const VERB_NAMES: Readonly<Record<CycleMode, string>> = {
  lock: "lock",
  once: "once",
  mutex: "mutex",
  transaction: "lockInTransaction",
};

type RunCycle = <T>(cycle: Cycle<T>) => Promise<CycleOutcome<T>>;

/** False once the API settled and nothing can record; true until then, or when something can. */
function mayRecord(settings: TelemetrySettings): boolean {
  return !telemetryApiSettled() || !recordsNothing(settings);
}

/**
 * Run `cycle` with `run` (the engine): under a verb span and its metrics when telemetry
 * records, `under` a delivery's observation when a surface runs it; as it is otherwise.
 */
export function traceCycle<T>(
  cycle: Cycle<T>,
  run: RunCycle,
  under?: Observation,
): Promise<CycleOutcome<T>> {
  const settings = cycle.options.telemetry;
  if (settings === undefined || !mayRecord(settings)) return run(cycle);
  return observeCycle(settings, cycle, run, under);
}

async function observeCycle<T>(
  settings: TelemetrySettings,
  cycle: Cycle<T>,
  run: RunCycle,
  under: Observation | undefined,
): Promise<CycleOutcome<T>> {
  if (!telemetryApiSettled()) await loadTelemetryApi();
  if (recordsNothing(settings)) return run(cycle);
  const { options } = cycle;
  const observation = Observation.start(
    settings,
    VERB_NAMES[cycle.mode],
    backendName(options.backend, "custom"),
    cycle.key,
    under,
  );
  if (observation === undefined) return run(cycle);
  const observed: Cycle<T> = {
    ...cycle,
    options: {
      ...options,
      port: observation.port(options.port),
      logger: observation.logger(options.logger),
    },
    body: observation.timed(cycle.body),
  };
  const outcome = await observation.within(() => run(observed));
  observation.end(outcome);
  return outcome;
}

/** What a gateway tells the delivery wrapper, all known when the surface is built. */
export interface DeliveryTelemetry {
  readonly telemetry: TelemetrySettings | undefined;
  /** The verb the delivery runs, as telemetry names it: `lock` or `lockInTransaction`. */
  readonly verbName: string;
  /** The backend's class name. */
  readonly backendName: string;
  /** The logger of the delivery's own lines. */
  readonly logger: Logger;
}

/**
 * How one delivery runs: with the logger to write with (carrying the trace when a span
 * records) and the observation its cycle runs `under`. Static functions of the gateway and
 * the delivery, so an untraced delivery allocates nothing here.
 */
export type DeliveryRun<G, D, O> = (
  gateway: G,
  delivery: D,
  logger: Logger,
  under: Observation | undefined,
) => Promise<O>;

/**
 * Run one delivery: under a CONSUMER span (its lines carrying the trace, its outcome counted
 * once) when telemetry records; as it is otherwise. `traceOf` is read only when a span records.
 */
export function traceDelivery<G extends DeliveryTelemetry, D, O extends Ending>(
  gateway: G,
  delivery: D,
  run: DeliveryRun<G, D, O>,
  traceOf: (gateway: G, delivery: D) => DeliveryTrace,
): Promise<O> {
  const settings = gateway.telemetry;
  if (settings === undefined || !mayRecord(settings)) {
    return run(gateway, delivery, gateway.logger, undefined);
  }
  return observeDelivery(settings, gateway, delivery, run, traceOf);
}

async function observeDelivery<G extends DeliveryTelemetry, D, O extends Ending>(
  settings: TelemetrySettings,
  gateway: G,
  delivery: D,
  run: DeliveryRun<G, D, O>,
  traceOf: (gateway: G, delivery: D) => DeliveryTrace,
): Promise<O> {
  const { logger } = gateway;
  if (!telemetryApiSettled()) await loadTelemetryApi();
  if (recordsNothing(settings)) return run(gateway, delivery, logger, undefined);
  const observation = Observation.start(
    settings,
    gateway.verbName,
    gateway.backendName,
    undefined,
    undefined,
    () => traceOf(gateway, delivery),
  );
  if (observation === undefined) return run(gateway, delivery, logger, undefined);
  const outcome = await observation.within(() =>
    run(gateway, delivery, observation.logger(logger), observation),
  );
  observation.end(outcome);
  return outcome;
}
