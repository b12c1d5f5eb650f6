// Telling an optional peer that is not installed from one that is there but broken, by the
// loader's own error (never a path lookup, which a bundled application would fail). The real
// loaders' errors, ESM and CommonJS, are met in peer.bundled.test.ts; here the rule itself.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InvalidConfiguration } from "../../src/core/errors.js";
import { importPeer, isMissingPackage, packageOf } from "../../src/core/peer.js";

const segment = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/);
const packageName = fc.oneof(
  segment,
  fc.tuple(segment, segment).map(([scope, name]) => `@${scope}/${name}`),
);
const subpath = fc.option(segment, { nil: undefined });

const esmMissing = (name: string) =>
  Object.assign(new Error(`Cannot find package '${name}' imported from /srv/app/index.js`), {
    code: "ERR_MODULE_NOT_FOUND",
  });
const cjsMissing = (specifier: string) =>
  Object.assign(
    new Error(`Cannot find module '${specifier}'\nRequire stack:\n- /srv/app/index.cjs`),
    { code: "MODULE_NOT_FOUND" },
  );

describe("isMissingPackage", () => {
  it("is true for the loaders' not-found of the package, with or without a subpath", () => {
    fc.assert(
      fc.property(packageName, subpath, (name, sub) => {
        const specifier = sub === undefined ? name : `${name}/${sub}`;
        expect(packageOf(specifier)).toBe(name);
        // ESM names the package even for a subpath import; require names the specifier.
        expect(isMissingPackage(esmMissing(name), specifier)).toBe(true);
        expect(isMissingPackage(cjsMissing(specifier), specifier)).toBe(true);
      }),
    );
  });

  it("is false for a module missing inside the package, whose path names the package", () => {
    fc.assert(
      fc.property(packageName, packageName, (name, inner) => {
        fc.pre(inner !== name);
        const from = `/srv/app/node_modules/${name}/build/index.js`;
        const nested = [
          Object.assign(new Error(`Cannot find package '${inner}' imported from ${from}`), {
            code: "ERR_MODULE_NOT_FOUND",
          }),
          Object.assign(new Error(`Cannot find module '${from}' imported from /srv/app/x.js`), {
            code: "ERR_MODULE_NOT_FOUND",
          }),
          Object.assign(new Error(`Cannot find module '${inner}'\nRequire stack:\n- ${from}`), {
            code: "MODULE_NOT_FOUND",
          }),
        ];
        for (const error of nested) expect(isMissingPackage(error, name)).toBe(false);
      }),
    );
  });

  it("is false without a not-found code, and for values that are not errors", () => {
    const message = "Cannot find package 'pg' imported from /srv/app/index.js";
    expect(isMissingPackage(new Error(message), "pg")).toBe(false);
    expect(isMissingPackage(Object.assign(new Error(message), { code: "EACCES" }), "pg")).toBe(
      false,
    );
    expect(isMissingPackage(undefined, "pg")).toBe(false);
    expect(isMissingPackage("Cannot find package 'pg'", "pg")).toBe(false);
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error("no");
        },
      },
    );
    expect(isMissingPackage(hostile, "pg")).toBe(false);
  });
});

describe("importPeer", () => {
  it("names who needs the package and the install command when it is not installed", async () => {
    const error = importPeer("SqlLock", "mysql2/promise", () =>
      Promise.reject(cjsMissing("mysql2/promise")),
    );
    await expect(error).rejects.toThrow(
      new InvalidConfiguration("SqlLock needs mysql2, which is not installed: npm install mysql2"),
    );
    await expect(error).rejects.toMatchObject({ cause: { code: "MODULE_NOT_FOUND" } });
  });

  it("shows the real error when the package is there but fails to load", async () => {
    const inner = Object.assign(
      new Error("Cannot find package 'gaxios' imported from /srv/node_modules/x/index.js"),
      { code: "ERR_MODULE_NOT_FOUND" },
    );
    await expect(importPeer("It", "x", () => Promise.reject(inner))).rejects.toThrow(
      "It could not load x: Error: Cannot find package 'gaxios' imported from /srv/node_modules/x/index.js",
    );
    await expect(
      importPeer("It", "x", () => Promise.reject(new SyntaxError("Unexpected token"))),
    ).rejects.toThrow("It could not load x: SyntaxError: Unexpected token");
  });

  it("resolves to the module when it loads", async () => {
    const module = { ok: true };
    await expect(importPeer("It", "x", async () => module)).resolves.toBe(module);
  });
});
