// What `npm run check:cycles` forbids in src/: any import cycle, of values or of types alone
// (a type-only cycle still ties two modules' declarations together, and tends to grow one).
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
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Type-only imports count: TypeScript erases them, the dependency stays.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    exclude: { path: "\\.(lua|sql)$" },
  },
};
