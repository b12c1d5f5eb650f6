#!/usr/bin/env node
// Fails unless every top-level export of every entry point (class, function, interface, type
// alias, constant) has a TSDoc comment with an @example. Converts the project with typedoc's
// own API and reads its JSON model, so it sees exactly what the API reference shows, without
// rendering the site a second time. Run by `npm run docs`, after typedoc itself.
import { Application, ReflectionKind } from "typedoc";

const app = await Application.bootstrapWithPlugins({
  // typedoc itself (the first half of `npm run docs`) reports warnings; here only @example counts.
  treatWarningsAsErrors: false,
  logLevel: "Error",
});
const project = await app.convert();
if (!project) {
  console.error("check-api-docs: typedoc could not convert the project");
  process.exit(1);
}
const json = app.serializer.projectToObject(project, process.cwd());

const hasExample = (comment) => comment?.blockTags?.some((tag) => tag.tag === "@example") ?? false;
const missing = [];
let checked = 0;
for (const module of json.children ?? []) {
  for (const child of module.children ?? []) {
    // A Reference is the same symbol exported again from another entry point: checked once.
    if (child.kind === ReflectionKind.Reference) continue;
    checked += 1;
    // Functions carry their comment on the call signature(s); everything else on itself.
    const comments = [child.comment, ...(child.signatures ?? []).map((s) => s.comment)];
    if (!comments.some(hasExample)) missing.push(`${module.name}: ${child.name}`);
  }
}
if (missing.length > 0) {
  console.error(`check-api-docs: ${missing.length} of ${checked} exported names have no @example:`);
  for (const name of missing) console.error(`  ${name}`);
  process.exit(1);
}
console.log(`check-api-docs: all ${checked} exported names have an @example`);
