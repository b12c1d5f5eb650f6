// Push authentication: real RS256 tokens, signed by a key pair made in the test, through the
// real google-auth-library. Certificates come from `certificates` or from a loopback server,
// never from Google (the network guard would fail the test).
import { Buffer } from "node:buffer";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { OAuth2Client } from "google-auth-library";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { PushAuthOptions } from "../../../src/surfaces/push-auth/options.js";
import type { PushAuthResult } from "../../../src/surfaces/push-auth/verdict.js";
import { createPushVerifier } from "../../../src/surfaces/push-auth/verifier.js";
import { simulatePushDeliveries } from "../../../src/testing/index.js";
import {
  createTestIdentity,
  FORGED_PUSH_AUTH_STATUS,
  type ForgedPushAuthKind,
} from "../../../src/testing/push-auth.js";
import { captureLogger } from "../../support/logger.js";

// One key pair for the file: RSA key generation is the slow part on a busy machine.
const identity = createTestIdentity({ audience: "https://orders.example.test/push" });
const KINDS = Object.keys(FORGED_PUSH_AUTH_STATUS) as ForgedPushAuthKind[];

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function listen(server: Server): Promise<string> {
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  closers.push(
    () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

function verifier(auth: PushAuthOptions = identity.auth, now?: () => number) {
  const logger = captureLogger();
  const verify = createPushVerifier(auth, now === undefined ? { logger } : { logger, now });
  return { verify, logger };
}

function refusal(result: PushAuthResult) {
  if (result.ok) throw new Error(`accepted: ${JSON.stringify(result)}`);
  return result;
}

describe("push authentication", () => {
  it("accepts a valid token and says whose it is, logging nothing", async () => {
    const { verify, logger } = verifier();
    const result = await verify(identity.authorization());
    expect(result).toMatchObject({ ok: true, email: identity.email });
    if (result.ok) {
      expect(result.subject).toMatch(/^\d+$/);
      expect(result.expiresAt).toBeGreaterThan(Date.now());
    }
    expect(logger.lines).toEqual([]);
  });

  it("accepts a lower-case scheme, spaces around the token, and a listed email in any case", async () => {
    const { verify } = verifier({
      ...identity.auth,
      serviceAccountEmail: ["other@x.iam.gserviceaccount.com", identity.email.toUpperCase()],
    });
    const token = identity.sign();
    for (const header of [`bearer ${token}`, `Bearer   ${token}  `, `BEARER ${token}`]) {
      expect((await verify(header)).ok).toBe(true);
    }
  });

  it("refuses each forged kind with its status, one WARNING line naming why, never the token", async () => {
    expect(KINDS.length).toBeGreaterThanOrEqual(14);
    for (const kind of KINDS) {
      const { verify, logger } = verifier();
      const authorization = identity.forge(kind);
      const result = refusal(await verify(authorization));
      expect({ kind, status: result.status }).toEqual({
        kind,
        status: FORGED_PUSH_AUTH_STATUS[kind],
      });
      expect(result.headers).toEqual(result.status === 401 ? { "www-authenticate": "Bearer" } : {});
      expect(logger.lines.map((line) => line.severity)).toEqual(["WARNING"]);
      expect(logger.lines[0]?.message).toContain(result.reason);
      const logged = JSON.stringify(logger.lines);
      const token = authorization?.replace(/^\S+ /, "") ?? "";
      for (const part of [token, ...token.split(".")].filter((p) => p.length >= 8)) {
        expect(logged).not.toContain(part);
        expect(result.reason).not.toContain(part);
      }
    }
  });

  it.each([
    ["alg-none", /algorithm/],
    ["hs256-public-key", /algorithm/],
    ["unknown-kid", /key id/],
    ["no-kid", /key id/],
    ["bad-signature", /signature/],
    ["expired", /expired/],
    ["not-yet-valid", /not yet valid/],
    ["issued-in-future", /future/],
    ["wrong-audience", /audience/],
    ["wrong-issuer", /issuer/],
    ["wrong-email", /someone@example\.test is not an allowed/],
    ["other-service-account", /intruder@another-project\S+ is not an allowed/],
    ["email-unverified", /not verified/],
    ["no-email", /no email/],
  ] as const)("says why it refused %s", async (kind, reason) => {
    const { verify } = verifier();
    expect(refusal(await verify(identity.forge(kind))).reason).toMatch(reason);
  });

  it.each([
    ["an audience list", identity.sign({ aud: [identity.audience, "https://x.test"] })],
    [
      "iat as a string",
      identity.sign({ iat: String(Math.floor(Date.now() / 1000)) as unknown as number }),
    ],
    ["no exp", identity.sign({ exp: undefined })],
    ["an invalid nbf", identity.sign({ nbf: "soon" as unknown as number })],
    ["padding", `${identity.sign()}=`],
    ["standard base64", identity.sign().replace(/-/g, "+").replace(/_/g, "/")],
    ["four segments", `${identity.sign()}.x`],
    ["a payload that is an array", `${identity.sign().split(".")[0]}.WzFd.${"A".repeat(342)}`],
    ["an oversized header", `x${"A".repeat(10_000)}`],
    ["an empty bearer", ""],
  ])("refuses a token with %s (401)", async (_what, token) => {
    const { verify } = verifier();
    const result = refusal(await verify(`Bearer ${token}`));
    expect(result.status).toBe(401);
  });

  it("refuses a non-string header value without throwing", async () => {
    const { verify } = verifier();
    const values: unknown[] = [["Bearer x"], 42, null];
    for (const value of values) {
      expect(refusal(await verify(value as string)).status).toBe(401);
    }
  });

  it("without serviceAccountEmail accepts any verified account, and warns once when built", async () => {
    const { verify, logger } = verifier({
      audience: identity.audience,
      certificates: identity.certificates,
    });
    expect(logger.at("WARNING").map((line) => line.message)).toEqual([
      expect.stringContaining("without serviceAccountEmail"),
    ]);
    const result = await verify(identity.forge("other-service-account"));
    expect(result).toMatchObject({ ok: true, email: expect.stringMatching(/^intruder@/) });
    expect(refusal(await verify(identity.forge("email-unverified"))).status).toBe(403);
  });

  it("refuses a missing, non-Bearer or malformed header without asking for certificates", async () => {
    const certificates = vi.fn(identity.certificates);
    const { verify } = verifier({ ...identity.auth, certificates });
    const cheap: ForgedPushAuthKind[] = [
      "missing",
      "not-bearer",
      "garbage",
      "alg-none",
      "hs256-public-key",
      "no-kid",
      "expired",
      "wrong-audience",
      "wrong-issuer",
    ];
    for (const kind of cheap) expect((await verify(identity.forge(kind))).ok).toBe(false);
    expect(certificates).not.toHaveBeenCalled();
    expect((await verify(identity.authorization())).ok).toBe(true);
    expect(certificates).toHaveBeenCalledTimes(1);
  });

  it("honours exp and nbf to the millisecond of a one-minute skew on the injected clock", async () => {
    // Times near the real clock: google-auth-library checks them against it (5 min skew).
    const iat = Math.floor(Date.now() / 1000);
    const exp = iat + 120;
    const nbf = iat + 60;
    let now = 0;
    const { verify } = verifier(identity.auth, () => now);
    const token = identity.authorization({ iat, exp, nbf });
    const at = async (ms: number) => {
      now = ms;
      const result = await verify(token);
      return result.ok ? "ok" : result.reason;
    };
    expect(await at(nbf * 1000 - 60_001)).toBe("token not yet valid");
    expect(await at(nbf * 1000 - 60_000)).toBe("ok");
    expect(await at(exp * 1000 + 59_999)).toBe("ok");
    expect(await at(exp * 1000 + 60_000)).toBe("token expired");
  });

  it("refuses a signature re-spelt in its unused bits, which decodes to the same bytes", async () => {
    const [header, payload, signature] = identity.sign().split(".") as [string, string, string];
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    // 256 bytes take 342 characters; the last one carries 2 bits, so its lowest bit is unused.
    const last = alphabet.indexOf(signature.at(-1) ?? "");
    const respelt = `${signature.slice(0, -1)}${alphabet[last ^ 1]}`;
    expect(Buffer.from(respelt, "base64url")).toEqual(Buffer.from(signature, "base64url"));
    const token = `${header}.${payload}.${respelt}`;
    const certs = await identity.certificates();
    const library = await new OAuth2Client().verifySignedJwtWithCertsAsync(
      token,
      certs,
      identity.audience,
    );
    expect(library.getPayload()?.email).toBe(identity.email); // the library alone accepts it
    const { verify } = verifier();
    expect(refusal(await verify(`Bearer ${token}`))).toMatchObject({
      status: 401,
      reason: "malformed token",
    });
  });

  it("any mutation of a valid token is refused with 401: never accepted, never thrown", async () => {
    const { verify } = verifier();
    const token = identity.sign();
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ \t%";
    const char = fc.oneof(
      fc.constantFrom(...alphabet.split("")),
      fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
    );
    const edit: fc.Arbitrary<Edit> = fc.oneof(
      fc.record({ op: fc.constant("replace" as const), at: fc.nat(), char }),
      fc.record({ op: fc.constant("insert" as const), at: fc.nat(), char }),
      fc.record({ op: fc.constant("delete" as const), at: fc.nat() }),
      fc.record({ op: fc.constant("truncate" as const), at: fc.nat() }),
      // A bit of a decoded segment, re-encoded canonically: reaches the signature check.
      fc.record({
        op: fc.constant("flip" as const),
        segment: fc.nat(2),
        at: fc.nat(),
        bit: fc.nat(7),
      }),
    );
    const apply = (text: string, e: Edit): string => {
      switch (e.op) {
        case "replace": {
          const i = e.at % text.length;
          return text.slice(0, i) + e.char + text.slice(i + 1);
        }
        case "insert": {
          const i = e.at % (text.length + 1);
          return text.slice(0, i) + e.char + text.slice(i);
        }
        case "delete": {
          const i = e.at % text.length;
          return text.slice(0, i) + text.slice(i + 1);
        }
        case "truncate":
          return text.slice(0, e.at % text.length);
        case "flip": {
          const parts = text.split(".");
          const index = e.segment % parts.length;
          const bytes = Buffer.from(parts[index] ?? "", "base64url");
          if (bytes.length === 0) return text;
          const at = e.at % bytes.length;
          bytes[at] = (bytes[at] ?? 0) ^ (1 << e.bit);
          parts[index] = bytes.toString("base64url");
          return parts.join(".");
        }
      }
    };
    await fc.assert(
      fc.asyncProperty(fc.array(edit, { minLength: 1, maxLength: 3 }), async (edits) => {
        const mutated = edits.reduce<string>(
          (text, e) => (text === "" ? text : apply(text, e)),
          token,
        );
        fc.pre(mutated !== token);
        const result = await verify(`Bearer ${mutated}`);
        expect(result.ok).toBe(false);
        expect(refusal(result).status).toBe(401);
      }),
      { numRuns: 300, seed: 20260115 },
    );
  });
});

type Edit =
  | { op: "replace" | "insert"; at: number; char: string }
  | { op: "delete" | "truncate"; at: number }
  | { op: "flip"; segment: number; at: number; bit: number };

describe("push authentication when the token cannot be checked", () => {
  it("answers 503 (retried by Pub/Sub and Eventarc) with an ERROR line when certificates() fails", async () => {
    const { verify, logger } = verifier({
      ...identity.auth,
      certificates: async () => {
        throw new Error("vault sealed");
      },
    });
    const result = refusal(await verify(identity.authorization()));
    expect(result).toMatchObject({ status: 503, headers: {} });
    expect(result.reason).toMatch(/signing certificates unavailable: Error: vault sealed/);
    expect(logger.at("ERROR")).toHaveLength(1);
  });

  it("answers 503 when certificates() returns something that is not PEM strings by kid", async () => {
    for (const value of [null, "pem", { [identity.kid]: 42 }]) {
      const { verify } = verifier({
        ...identity.auth,
        certificates: async () => value as unknown as Record<string, string>,
      });
      expect(refusal(await verify(identity.authorization())).status).toBe(503);
    }
  });

  it("answers 503 for a certificate node:crypto cannot read, without the token in the reason", async () => {
    const { verify, logger } = verifier({
      ...identity.auth,
      certificates: async () => ({ [identity.kid]: "not a PEM" }),
    });
    const authorization = identity.authorization();
    const result = refusal(await verify(authorization));
    expect(result.status).toBe(503);
    expect(JSON.stringify(logger.lines)).not.toContain(authorization.slice(7));
  });
});

describe("google-auth-library on its own (what the checks added here cover)", () => {
  const client = new OAuth2Client();
  const check = async (token: string) => {
    const certs = await identity.certificates();
    return client
      .verifySignedJwtWithCertsAsync(token, certs, identity.audience, [
        "https://accounts.google.com",
      ])
      .then(
        () => "accepted",
        (error: Error) => error.message,
      );
  };
  const token = (kind: ForgedPushAuthKind) => identity.forge(kind)?.slice("Bearer ".length) ?? "";

  it("refuses alg none and HS256 with the public key: it verifies every token as RSA-SHA256", async () => {
    expect(await check(token("alg-none"))).toMatch(/^Invalid token signature/);
    expect(await check(token("hs256-public-key"))).toMatch(/^Invalid token signature/);
  });

  it("does not read alg, nbf, email or email_verified, and quotes the token in its errors", async () => {
    expect(await check(identity.sign({}, { alg: "HS256" }))).toBe("accepted");
    expect(await check(token("not-yet-valid"))).toBe("accepted");
    expect(await check(token("email-unverified"))).toBe("accepted");
    expect(await check(token("other-service-account"))).toBe("accepted");
    const bad = token("bad-signature");
    expect(await check(bad)).toContain(bad);
  });

  it("is refused by the verifier where the library alone would accept", async () => {
    const { verify } = verifier();
    expect(refusal(await verify(`Bearer ${identity.sign({}, { alg: "HS256" })}`)).status).toBe(401);
    expect(refusal(await verify(identity.forge("not-yet-valid"))).status).toBe(401);
    expect(refusal(await verify(identity.forge("email-unverified"))).status).toBe(403);
  });
});

describe("the default certificate source (google-auth-library's fetch and cache)", () => {
  async function certificateServer(cacheControl: string | undefined) {
    const certs = await identity.certificates();
    let fetches = 0;
    const url = await listen(
      createServer((_req, res) => {
        fetches += 1;
        res.setHeader("content-type", "application/json");
        if (cacheControl !== undefined) res.setHeader("cache-control", cacheControl);
        res.end(JSON.stringify(certs));
      }),
    );
    return { url, fetches: () => fetches };
  }

  it("fetches once for concurrent pushes and keeps the certificates for their max-age", async () => {
    const server = await certificateServer("public, max-age=300, must-revalidate");
    const logger = captureLogger();
    const verify = createPushVerifier(
      { audience: identity.audience, serviceAccountEmail: identity.email },
      { logger, certificatesUrl: server.url },
    );
    const first = await Promise.all(
      Array.from({ length: 5 }, () => verify(identity.authorization())),
    );
    expect(first.every((result) => result.ok)).toBe(true);
    expect((await verify(identity.authorization())).ok).toBe(true);
    expect(server.fetches()).toBe(1);
  });

  it("fetches again for each push when no max-age allows caching", async () => {
    const server = await certificateServer(undefined);
    const verify = createPushVerifier(
      { audience: identity.audience, serviceAccountEmail: identity.email },
      { logger: captureLogger(), certificatesUrl: server.url },
    );
    // Two different tokens: a token already verified would not need the certificates again.
    const iat = Math.floor(Date.now() / 1000);
    expect((await verify(identity.authorization({ iat }))).ok).toBe(true);
    expect((await verify(identity.authorization({ iat: iat - 1 }))).ok).toBe(true);
    expect(server.fetches()).toBe(2);
  });

  it("verifies a token once; its next pushes skip the signature check but not the expiry", async () => {
    let clock = Date.now();
    let fetches = 0;
    const verify = createPushVerifier(
      {
        ...identity.auth,
        certificates: async () => {
          fetches += 1;
          return identity.certificates();
        },
      },
      { logger: captureLogger(), now: () => clock },
    );
    const iat = Math.floor(clock / 1000);
    const token = identity.authorization({ iat, exp: iat + 120 });
    expect((await verify(token)).ok).toBe(true);
    expect((await verify(token)).ok).toBe(true);
    expect((await verify(token)).ok).toBe(true);
    expect(fetches).toBe(1);
    // Past exp and the minute of skew: refused, although it verified before.
    clock += 181_000;
    expect(await verify(token)).toMatchObject({ ok: false, status: 401, reason: "token expired" });
    // A forged token is never served from what the genuine one left behind.
    const [header, payload] = token.slice(7).split(".");
    const forged = `Bearer ${header}.${payload}.${"A".repeat(342)}`;
    clock -= 181_000;
    expect(await verify(forged)).toMatchObject({ ok: false, status: 401 });
  });

  it("answers 503 when the certificate endpoint cannot be reached", async () => {
    const server = await certificateServer("max-age=300");
    await Promise.all(closers.splice(0).map((close) => close()));
    const logger = captureLogger();
    const verify = createPushVerifier(
      { audience: identity.audience, serviceAccountEmail: identity.email },
      { logger, certificatesUrl: server.url },
    );
    const result = refusal(await verify(identity.authorization()));
    expect(result.status).toBe(503);
    expect(result.reason).toMatch(/^signing certificates unavailable/);
  });

  it("refuses a certificatesUrl that is not an http(s) URL", () => {
    expect(() =>
      createPushVerifier(identity.auth, { certificatesUrl: "file:///etc/certs" }),
    ).toThrow("certificatesUrl must be an http(s) URL");
  });
});

describe("the push simulator signs its deliveries", () => {
  async function guardedEndpoint() {
    const { verify } = verifier();
    const statuses: number[] = [];
    const url = await listen(
      createServer(async (req, res) => {
        const result = await verify(req.headers.authorization);
        res.statusCode = result.ok ? 204 : result.status;
        statuses.push(res.statusCode);
        res.end();
      }),
    );
    return { url, statuses };
  }

  it("with the identity's tokens: every delivery accepted", async () => {
    const endpoint = await guardedEndpoint();
    const report = await simulatePushDeliveries({
      url: endpoint.url,
      messages: ["a", "b"],
      copies: 2,
      authorization: () => identity.authorization(),
    });
    expect(report.unacked).toEqual([]);
    expect(report.statusCounts).toEqual({ 204: 4 });
  });

  it("with a forged token or none: every delivery refused", async () => {
    const endpoint = await guardedEndpoint();
    for (const authorization of [identity.forge("wrong-audience"), undefined]) {
      const report = await simulatePushDeliveries({
        url: endpoint.url,
        messages: ["a"],
        copies: 1,
        maxRedeliveries: 1,
        backoffMs: 0,
        ...(authorization === undefined ? {} : { authorization }),
      });
      expect(report.statusCounts).toEqual({ 401: 2 });
    }
  });
});
