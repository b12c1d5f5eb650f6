// What `npm run check:cycles` forbids in src/: any import cycle, of values or of types alone
// (a type-only cycle still ties two modules' declarations together, and tends to grow one), and
// an import against the layers docs/architecture.md draws: surfaces → verbs → engine → port ←
// backends, telemetry wrapped around the engine from outside.
/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "Move the shared declaration to a module both can import (a types or client file).",
      from: {},
      to: { circular: true },
    },
    {
      name: "engine-knows-no-caller",
      severity: "error",
      comment:
        "The claim cycle runs no telemetry code and knows no verb, surface or backend: they are handed to it (a traced port, a body).",
      from: { path: "^src/core/engine/" },
      to: { path: "^src/(core/(telemetry|verbs)|surfaces|backends|testing|cli)/" },
    },
    {
      name: "core-knows-no-adapter",
      severity: "error",
      comment:
        "The core (engine, verbs, telemetry, the port) never imports a surface, a backend, the CLI or /testing; only the registry of the backends, which is data and imports nothing.",
      from: { path: "^src/core/" },
      to: {
        path: "^src/(surfaces|backends|testing|cli)/",
        pathNot: "^src/backends/registry\\.ts$",
      },
    },
    {
      name: "registry-is-data",
      severity: "error",
      comment: "The registry of the backends is read by the core and the CLI: it imports nothing.",
      from: { path: "^src/backends/registry\\.ts$" },
      to: {},
    },
    {
      name: "backends-implement-the-port-only",
      severity: "error",
      comment:
        "A backend depends on the port and the core's helpers (transitions, validation, errors, retry), never on the engine, the verbs, telemetry or a surface.",
      from: { path: "^src/backends/" },
      to: { path: "^src/(core/(engine|verbs|telemetry)|surfaces|testing|cli)/" },
    },
    {
      name: "surfaces-know-no-backend",
      severity: "error",
      comment: "A surface works over any backend through the port.",
      from: { path: "^src/surfaces/" },
      to: { path: "^src/(backends|testing|cli)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Type-only imports count: TypeScript erases them, the dependency stays.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    exclude: { path: "\\.(lua|sql)$" },
  },
};
