import { Buffer } from "node:buffer";
import {
  createHmac,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  sign as signBytes,
} from "node:crypto";
import type { PushAuthOptions } from "../surfaces/push-auth/options.js";

// Tokens shaped like the OIDC tokens Pub/Sub attaches to an authenticated push, signed with a
// key pair made here, so push authentication can be tested offline: hand `certificates` to the
// `auth` option in place of Google's certificates.

/**
 * Options of {@link createTestIdentity}; each has a default.
 *
 * @example
 * ```ts
 * import { createFakeClock, createTestIdentity, type TestIdentityOptions } from "gcp-pubsub-idempotency/testing";
 *
 * const clock = createFakeClock();
 * const options: TestIdentityOptions = { audience: "https://orders.example.com/push", now: clock.now };
 * const identity = createTestIdentity(options);
 * ```
 */
export interface TestIdentityOptions {
  /** The `aud` of the tokens; default `https://push.example.test/pubsub`. */
  audience?: string;
  /** The push service account; default `push-test@test-project.iam.gserviceaccount.com`. */
  email?: string;
  /** The key id in the token header and in `certificates`; default random. */
  kid?: string;
  /** The clock the tokens' `iat`/`exp` are set by, epoch ms; default `Date.now`. */
  now?: () => number;
}

/**
 * Claims of a test token, over the defaults of a valid push token (`iss`, `aud`, `sub`,
 * `azp`, `email`, `email_verified`, `iat`, `exp`); a claim set to `undefined` is left out.
 *
 * @example
 * ```ts
 * import { createTestIdentity, type TestTokenClaims } from "gcp-pubsub-idempotency/testing";
 *
 * const claims: TestTokenClaims = { email_verified: undefined, exp: Math.floor(Date.now() / 1000) + 60 };
 * const token = createTestIdentity().sign(claims);
 * ```
 */
export type TestTokenClaims = {
  /** Issuer; default `https://accounts.google.com`. */
  iss?: string | undefined;
  /** Audience; default the identity's `audience`. */
  aud?: string | string[] | undefined;
  /** The account's numeric id; default one made for the identity. */
  sub?: string | undefined;
  /** Authorized party; default the same as `sub`. */
  azp?: string | undefined;
  /** The push service account; default the identity's `email`. */
  email?: string | undefined;
  /** Default true. */
  email_verified?: boolean | undefined;
  /** Epoch seconds. */
  iat?: number | undefined;
  /** Epoch seconds. */
  exp?: number | undefined;
  /** Epoch seconds; left out by default, as Google does. */
  nbf?: number | undefined;
  [claim: string]: unknown;
};

/**
 * Header fields of a test token, over `{ alg: "RS256", kid, typ: "JWT" }`; a field set to
 * `undefined` is left out. The signature is RS256 whatever `alg` says.
 *
 * @example
 * ```ts
 * import { createTestIdentity, type TestTokenHeader } from "gcp-pubsub-idempotency/testing";
 *
 * const header: TestTokenHeader = { kid: undefined }; // a token without a key id
 * const token = createTestIdentity().sign({}, header);
 * ```
 */
export type TestTokenHeader = {
  /** Default `RS256`. */
  alg?: string | undefined;
  /** Default the identity's `kid`. */
  kid?: string | undefined;
  /** Default `JWT`. */
  typ?: string | undefined;
  [field: string]: unknown;
};

/**
 * The forged or unwelcome `Authorization` headers {@link TestIdentity.forge} makes, each
 * with the status push authentication must answer, in {@link FORGED_PUSH_AUTH_STATUS}.
 *
 * @example
 * ```ts
 * import type { ForgedPushAuthKind } from "gcp-pubsub-idempotency/testing";
 *
 * const kinds: ForgedPushAuthKind[] = ["alg-none", "expired", "other-service-account"];
 * ```
 */
export type ForgedPushAuthKind =
  /** No header at all. */
  | "missing"
  /** `Basic …` credentials. */
  | "not-bearer"
  /** `Bearer` and text that is no JWT. */
  | "garbage"
  /** An unsigned token, `alg: none`, under the identity's `kid`. */
  | "alg-none"
  /** HS256, with the public key PEM as the HMAC secret (the classic key-confusion attack). */
  | "hs256-public-key"
  /** A `kid` not among the certificates. */
  | "unknown-kid"
  /** No `kid` in the header. */
  | "no-kid"
  /** Signed by another key under the identity's `kid`. */
  | "bad-signature"
  /** `exp` an hour ago. */
  | "expired"
  /** `nbf` ten minutes ahead. */
  | "not-yet-valid"
  /** `iat` ten minutes ahead. */
  | "issued-in-future"
  /** Another `aud`. */
  | "wrong-audience"
  /** An `iss` other than Google's. */
  | "wrong-issuer"
  /** A genuine token of a personal account, not the service account. */
  | "wrong-email"
  /** A genuine token whose `email_verified` is false. */
  | "email-unverified"
  /** A genuine token without `email`. */
  | "no-email"
  /** A genuine token of a service account in another project. */
  | "other-service-account";

/**
 * The status push authentication answers each {@link ForgedPushAuthKind} with: 401 for a
 * token that proves nothing, 403 for a genuine token of an identity that is not allowed.
 *
 * @example
 * ```ts
 * import { createTestIdentity, FORGED_PUSH_AUTH_STATUS, type ForgedPushAuthKind } from "gcp-pubsub-idempotency/testing";
 *
 * const identity = createTestIdentity();
 * for (const kind of Object.keys(FORGED_PUSH_AUTH_STATUS) as ForgedPushAuthKind[]) {
 *   const authorization = identity.forge(kind); // send it; expect FORGED_PUSH_AUTH_STATUS[kind]
 * }
 * ```
 */
export const FORGED_PUSH_AUTH_STATUS: Readonly<Record<ForgedPushAuthKind, 401 | 403>> =
  Object.freeze({
    missing: 401,
    "not-bearer": 401,
    garbage: 401,
    "alg-none": 401,
    "hs256-public-key": 401,
    "unknown-kid": 401,
    "no-kid": 401,
    "bad-signature": 401,
    expired: 401,
    "not-yet-valid": 401,
    "issued-in-future": 401,
    "wrong-audience": 401,
    "wrong-issuer": 401,
    "wrong-email": 403,
    "email-unverified": 403,
    "no-email": 403,
    "other-service-account": 403,
  });

/**
 * A stand-in for Google's token issuer and a push service account: an RSA key pair made
 * with node:crypto, the tokens it signs, and the `certificates` that verify them.
 *
 * @example
 * ```ts
 * import { createPushVerifier } from "gcp-pubsub-idempotency";
 * import { createTestIdentity, type TestIdentity } from "gcp-pubsub-idempotency/testing";
 *
 * const identity: TestIdentity = createTestIdentity();
 * const verify = createPushVerifier(identity.auth);
 * console.log((await verify(identity.authorization())).ok); // true
 * console.log((await verify(identity.forge("expired"))).ok); // false
 * ```
 */
export interface TestIdentity {
  /** The `aud` of the tokens. */
  readonly audience: string;
  /** The push service account the tokens name. */
  readonly email: string;
  /** The key id the tokens carry. */
  readonly kid: string;
  /** The public key, PEM (SPKI). */
  readonly publicKeyPem: string;
  /** `{ audience, serviceAccountEmail, certificates }`: the `auth` option that accepts these tokens. */
  readonly auth: PushAuthOptions;
  /** The public key PEM by `kid`, as the `certificates` option takes it. */
  certificates(): Promise<Record<string, string>>;
  /** A signed token: the defaults of a valid push token, then `claims` and `header` over them. */
  sign(claims?: TestTokenClaims, header?: TestTokenHeader): string;
  /** `Bearer <token>`, the header value of an authenticated push. */
  authorization(claims?: TestTokenClaims): string;
  /** The `Authorization` value of a forged kind; undefined for `missing`. */
  forge(kind: ForgedPushAuthKind): string | undefined;
}

/**
 * Make a {@link TestIdentity} (one 2048-bit RSA key pair, tens of milliseconds): a stand-in
 * for Google's token issuer, to test an endpoint with `auth` set offline. Give the endpoint
 * `identity.auth` (the audience, the service account, and the identity's certificates in
 * place of Google's), and send `identity.authorization()` as the push's `Authorization`
 * header; `identity.forge(kind)` makes the headers it must refuse.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 * import { createTestIdentity, simulatePushDeliveries } from "gcp-pubsub-idempotency/testing";
 *
 * const identity = createTestIdentity({ audience: "https://orders.example.com/pubsub/push" });
 * let runs = 0;
 * // In production: auth: { audience, serviceAccountEmail }, verified with Google's certificates.
 * const handler = idempotentHttp({ backend: new InMemoryLock(), auth: identity.auth }, async () => {
 *   runs += 1;
 * });
 * const signed = await simulatePushDeliveries({
 *   handler,
 *   messages: [{ orderId: "4711" }],
 *   authorization: () => identity.authorization(),
 * });
 * console.log(runs, signed.unacked); // 1 []
 * const forged = await simulatePushDeliveries({
 *   handler,
 *   messages: [{ orderId: "4712" }],
 *   authorization: identity.forge("wrong-audience"),
 *   maxRedeliveries: 0,
 * });
 * console.log(runs, forged.statusCounts); // 1 { '401': 3 }
 * ```
 */
export function createTestIdentity(options: TestIdentityOptions = {}): TestIdentity {
  const audience = options.audience ?? "https://push.example.test/pubsub";
  const email = options.email ?? "push-test@test-project.iam.gserviceaccount.com";
  const kid = options.kid ?? randomBytes(20).toString("hex");
  const now = options.now ?? Date.now;
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const publicKeyPem = publicKey.export({ type: "spki", format: "pem" }).toString();
  const subject = `1${randomBytes(8).readBigUInt64BE().toString().padStart(20, "0")}`;
  let strangerKey: KeyObject | undefined;

  const seconds = () => Math.floor(now() / 1000);
  const claimsOf = (overrides: TestTokenClaims): Record<string, unknown> => {
    const iat = seconds();
    return withoutUndefined({
      iss: "https://accounts.google.com",
      aud: audience,
      azp: subject,
      sub: subject,
      email,
      email_verified: true,
      iat,
      exp: iat + 3600,
      ...overrides,
    });
  };
  const encode = (header: Record<string, unknown>, claims: TestTokenClaims) =>
    `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claimsOf(claims)))}`;
  const rs256 = (claims: TestTokenClaims = {}, header: TestTokenHeader = {}, key = privateKey) => {
    const signed = encode(withoutUndefined({ alg: "RS256", kid, typ: "JWT", ...header }), claims);
    return `${signed}.${signBytes("sha256", Buffer.from(signed), key).toString("base64url")}`;
  };
  const bearer = (token: string) => `Bearer ${token}`;
  const later = (minutes: number) => seconds() + minutes * 60;

  const forgeries: Record<ForgedPushAuthKind, () => string | undefined> = {
    missing: () => undefined,
    "not-bearer": () => `Basic ${Buffer.from("pubsub:secret").toString("base64")}`,
    garbage: () => bearer("not-a-jwt"),
    "alg-none": () => bearer(`${encode({ alg: "none", kid, typ: "JWT" }, {})}.`),
    "hs256-public-key": () => {
      const signed = encode({ alg: "HS256", kid, typ: "JWT" }, {});
      const mac = createHmac("sha256", publicKeyPem).update(signed).digest("base64url");
      return bearer(`${signed}.${mac}`);
    },
    "unknown-kid": () => bearer(rs256({}, { kid: `unknown-${kid}` })),
    "no-kid": () => bearer(rs256({}, { kid: undefined })),
    "bad-signature": () => {
      strangerKey ??= generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
      return bearer(rs256({}, {}, strangerKey));
    },
    expired: () => bearer(rs256({ iat: later(-120), exp: later(-60) })),
    "not-yet-valid": () => bearer(rs256({ nbf: later(10) })),
    "issued-in-future": () => bearer(rs256({ iat: later(10), exp: later(70) })),
    "wrong-audience": () => bearer(rs256({ aud: "https://another-service.example.test/push" })),
    "wrong-issuer": () => bearer(rs256({ iss: "https://issuer.example.test" })),
    "wrong-email": () => bearer(rs256({ email: "someone@example.test" })),
    "email-unverified": () => bearer(rs256({ email_verified: false })),
    "no-email": () => bearer(rs256({ email: undefined, email_verified: undefined })),
    "other-service-account": () =>
      bearer(rs256({ email: "intruder@another-project.iam.gserviceaccount.com" })),
  };

  const certificates = async (): Promise<Record<string, string>> => ({ [kid]: publicKeyPem });
  return {
    audience,
    email,
    kid,
    publicKeyPem,
    auth: { audience, serviceAccountEmail: email, certificates },
    certificates,
    sign: (claims, header) => rs256(claims, header),
    authorization: (claims) => bearer(rs256(claims)),
    forge: (kind) => {
      const make = forgeries[kind];
      if (make === undefined) throw new TypeError(`no forged kind ${JSON.stringify(kind)}`);
      return make();
    },
  };
}

function base64url(text: string): string {
  return Buffer.from(text, "utf8").toString("base64url");
}

function withoutUndefined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}
