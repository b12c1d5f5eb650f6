import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

export { captureLogger } from "../support/logger.js";

export async function listen(server: Server): Promise<{ url: string; close: () => Promise<void> }> {
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = { "content-type": "application/json" },
): Promise<{ status: number; text: string }> {
  const response = await fetch(url, {
    method: "POST",
    headers,
    body: typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

/** A promise and its resolver, to hold a handler open while a second delivery arrives. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((done) => {
    open = done;
  });
  return { promise, open };
}
