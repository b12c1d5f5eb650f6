// Shared by the edge examples and the adversarial property suite.

/** Values a careless or hostile handler can throw; each must end in a nack, never an ack. */
export function hostileThrows(): [string, () => unknown][] {
  const getterThrows = new Error("getter");
  Object.defineProperty(getterThrows, "message", {
    get() {
      throw new Error("message getter");
    },
  });
  return [
    ["undefined", () => undefined],
    ["null", () => null],
    ["0", () => 0],
    ['""', () => ""],
    ["false", () => false],
    ["NaN", () => Number.NaN],
    ["a Symbol", () => Symbol("s")],
    ["Object.create(null)", () => Object.create(null)],
    [
      "an object whose toString throws",
      () => ({
        toString() {
          throw new Error("toString");
        },
      }),
    ],
    ["an Error whose message getter throws", () => getterThrows],
    [
      "a Proxy that throws on every trap",
      () =>
        new Proxy(
          {},
          {
            get() {
              throw new Error("trap");
            },
            getPrototypeOf() {
              throw new Error("trap");
            },
          },
        ),
    ],
    ["a frozen Error", () => Object.freeze(new Error("frozen"))],
  ];
}
