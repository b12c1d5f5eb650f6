import { createServer } from "node:net";

/** A free TCP port on 127.0.0.1: asked of the OS, then released for the caller to bind. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === "object") resolve(address.port);
        else reject(new Error("the OS gave no port"));
      });
    });
  });
}
