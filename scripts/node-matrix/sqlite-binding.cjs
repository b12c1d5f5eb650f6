// Preloaded (--require) by scripts/node-matrix.mjs into every process of a run under another
// Node major. node_modules holds better-sqlite3's addon built for the Node that installed it;
// under this Node its ABI differs, so the addon is loaded from BETTER_SQLITE3_BINDING (built
// for this Node's ABI, in the matrix cache) instead. node_modules is left as it is, so the
// installing Node keeps its own copy. A missing or wrong file fails the load loudly.
"use strict";
const { basename } = require("node:path");

const binding = process.env.BETTER_SQLITE3_BINDING;
if (binding) {
  const dlopen = process.dlopen;
  process.dlopen = function dlopenMatrixBinding(module, filename, ...rest) {
    const file = basename(filename) === "better_sqlite3.node" ? binding : filename;
    return dlopen.call(this, module, file, ...rest);
  };
}
