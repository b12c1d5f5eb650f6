// idempotentHttp with `auth`: the token is checked before the body is read, and a refused
// push reaches neither the store nor the handler. The verifier itself is pinned in
// push-auth/verifier.test.ts; here it is the surface's wiring, on real servers.
import { createServer } from "node:http";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { InvalidConfiguration } from "../../src/core/errors.js";
import {
  type HttpRequestLike,
  type HttpResponseLike,
  idempotentHttp,
} from "../../src/surfaces/index.js";
import { pushBody } from "../../src/testing/index.js";
import {
  createTestIdentity,
  FORGED_PUSH_AUTH_STATUS,
  type ForgedPushAuthKind,
} from "../../src/testing/push-auth.js";
import { captureLogger, listen } from "./helpers.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

type Handler = (req: HttpRequestLike, res: HttpResponseLike) => Promise<void>;

const mounts: Record<string, (fn: Handler) => Promise<string>> = {
  "node:http (body read from the stream)": async (fn) => {
    const server = await listen(createServer((req, res) => void fn(req, res)));
    closers.push(server.close);
    return server.url;
  },
  "express json": async (fn) => {
    const app = express();
    app.use(express.json());
    app.post("/push", fn);
    const server = await listen(createServer(app));
    closers.push(server.close);
    return `${server.url}push`;
  },
};

const identity = createTestIdentity({ audience: "https://orders.example.test/push" });

async function push(url: string, body: unknown, authorization: string | undefined) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (authorization !== undefined) headers.authorization = authorization;
  const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  return {
    status: response.status,
    text: await response.text(),
    challenge: response.headers.get("www-authenticate"),
  };
}

describe.each(Object.entries(mounts))("idempotentHttp auth on %s", (_name, mount) => {
  it("runs the handler once for a valid token; a redelivery is a duplicate", async () => {
    const backend = new InMemoryLock();
    const runs: string[] = [];
    const url = await mount(
      idempotentHttp({ backend, auth: identity.auth, logger: captureLogger() }, (m) => {
        runs.push(m.messageId);
      }),
    );
    const body = pushBody("order 1", { messageId: "auth-1" });
    expect((await push(url, body, identity.authorization())).status).toBe(204);
    expect((await push(url, body, identity.authorization())).status).toBe(204);
    expect(runs).toEqual(["auth-1"]);
  });

  it("refuses every forged kind with its status, writing nothing and running nothing", async () => {
    const backend = new InMemoryLock();
    const logger = captureLogger();
    const { lines } = logger;
    let runs = 0;
    const url = await mount(
      idempotentHttp({ backend, auth: identity.auth, logger }, () => {
        runs += 1;
      }),
    );
    const kinds = Object.keys(FORGED_PUSH_AUTH_STATUS) as ForgedPushAuthKind[];
    expect(kinds.length).toBeGreaterThanOrEqual(14);
    for (const [index, kind] of kinds.entries()) {
      const authorization = identity.forge(kind);
      const answer = await push(url, pushBody({ messageId: `forged-${index}` }), authorization);
      const expected = FORGED_PUSH_AUTH_STATUS[kind];
      expect({ kind, status: answer.status }).toEqual({ kind, status: expected });
      expect({ kind, challenge: answer.challenge }).toEqual({
        kind,
        challenge: expected === 401 ? "Bearer" : null,
      });
      // The answer says what kind of refusal, never the token or the verifier's reason.
      if (authorization !== undefined)
        expect(answer.text).not.toContain(authorization.slice(7, 40));
    }
    expect(runs).toBe(0);
    expect(backend.size).toBe(0);
    // One WARNING line per refusal, none of them quoting a token.
    const warnings = lines.filter((line) => line.severity === "WARNING");
    expect(warnings).toHaveLength(kinds.length);
  });
});

describe("idempotentHttp auth options", () => {
  it("refuses a bad auth option when the handler is built, naming the field", () => {
    const backend = new InMemoryLock();
    const build = (auth: unknown) => () =>
      idempotentHttp({ backend, auth: auth as never }, () => {});
    expect(build({})).toThrow(InvalidConfiguration);
    expect(build({})).toThrow(/options\.auth\.audience is required/);
    expect(build({ audience: "https://x.test", serviceAccountEmails: "a@b" })).toThrow(
      "`serviceAccountEmails` is not an option of idempotentHttp options.auth; did you mean `serviceAccountEmail`?",
    );
    expect(build({ audience: "https://x.test", certificates: "pem" })).toThrow(
      /options\.auth\.certificates/,
    );
  });

  it("answers 503 (retried) when the certificates cannot be had, and writes nothing", async () => {
    const backend = new InMemoryLock();
    const logger = captureLogger();
    const { lines } = logger;
    let runs = 0;
    const auth = {
      ...identity.auth,
      certificates: async () => {
        throw new Error("certificate mirror down");
      },
    };
    const server = await listen(
      createServer(
        (req, res) =>
          void idempotentHttp({ backend, auth, logger }, () => {
            runs += 1;
          })(req, res),
      ),
    );
    closers.push(server.close);
    const answer = await push(
      server.url,
      pushBody("x", { messageId: "m" }),
      identity.authorization(),
    );
    expect(answer.status).toBe(503);
    expect(runs).toBe(0);
    expect(backend.size).toBe(0);
    expect(
      lines.some(
        (line) => line.severity === "ERROR" && /certificate mirror down/.test(String(line.message)),
      ),
    ).toBe(true);
  });

  it("refuses a push that carries two Authorization values", async () => {
    const backend = new InMemoryLock();
    let runs = 0;
    const handler = idempotentHttp(
      { backend, auth: identity.auth, logger: captureLogger() },
      () => {
        runs += 1;
      },
    );
    let status = 0;
    const headers: Record<string, string> = {};
    const token = identity.authorization();
    await handler(
      { headers: { authorization: [token, token] }, body: pushBody("x", { messageId: "twice" }) },
      {
        set statusCode(value: number) {
          status = value;
        },
        get statusCode() {
          return status;
        },
        setHeader: (name: string, value: string) => {
          headers[name] = value;
        },
        end: () => {},
      },
    );
    expect(status).toBe(401);
    expect(headers["www-authenticate"]).toBe("Bearer");
    expect(runs).toBe(0);
  });
});
