import { describe, expect, it } from "vitest";
import { readQuietly } from "../../../src/surfaces/formats/fields.js";

describe("the shared field readers", () => {
  it("readQuietly reads data properties only and survives throwing proxies", () => {
    const proxy = new Proxy(
      {},
      {
        getOwnPropertyDescriptor() {
          throw new Error("trap");
        },
      },
    );
    expect(readQuietly(proxy, "traceparent")).toBeUndefined();
    expect(readQuietly({ traceparent: "x" }, "traceparent")).toBe("x");
    expect(readQuietly(null, "traceparent")).toBeUndefined();
    expect(readQuietly("text", "length")).toBeUndefined();
  });
});
