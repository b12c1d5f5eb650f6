// `node --import tsx --import ./sql-text-loader.mjs child.ts`: .sql imports become text.
import { register } from "node:module";

register("./sql-text-hooks.mjs", import.meta.url);
